// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// The simulator as a `WeChatPayTransport`, with no socket in between: the in-process half of
/// "one test body, two transports". Injected latency is slept in real time, an injected reset
/// becomes the transport error a dropped connection gives, and an injected timeout the one a
/// client gets when it stops waiting (after the fault's `timeoutSeconds`).
public struct SimulatorTransport: WeChatPayTransport {
    public let simulator: WeChatPaySimulator
    /// Whether requests count as carrying a verified client certificate (as a correctly configured
    /// merchant's would).
    public var presentsClientCertificate: Bool

    public init(simulator: WeChatPaySimulator, presentsClientCertificate: Bool = true) {
        self.simulator = simulator
        self.presentsClientCertificate = presentsClientCertificate
    }

    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let response = simulator.handle(SimulatorRequest(
            path: request.path, body: request.body,
            clientCertificateVerified: presentsClientCertificate && request.needsClientCertificate))
        if response.delay > 0 {
            do { try await Task.sleep(for: .seconds(response.delay)) } catch { throw TransportError(kind: .timeout, mayHaveBeenDelivered: true) }
        }
        if response.timesOut { throw TransportError(kind: .timeout, mayHaveBeenDelivered: true) }
        if response.resetConnection { throw TransportError(kind: .connectionReset, mayHaveBeenDelivered: true) }
        return TransportResponse(status: response.status, body: response.body)
    }
}
