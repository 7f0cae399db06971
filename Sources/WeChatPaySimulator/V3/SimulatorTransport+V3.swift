// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay
import WeChatPayV3

/// The simulator's v3 side in process: the request routed as the HTTP routes route it (the same
/// templates, `{id}` one path segment, decoded), answered by the same `handleV3`, faults acted out
/// as the v2 transport acts them out.
extension SimulatorTransport: WeChatPayV3Transport {
    public func send(_ request: V3TransportRequest) async throws(TransportError) -> V3TransportResponse {
        let parts = request.url.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0]), query = parts.count > 1 ? String(parts[1]) : ""
        let incoming = SimulatorRequest(method: request.method, path: path, body: request.body, headers: request.headers, query: query)
        let response: SimulatorResponse
        if let (template, parameter) = WeChatPaySimulator.matchV3(method: request.method, path: path) {
            response = simulator.handleV3(incoming, template: template, parameter: parameter)
        } else {
            response = SimulatorResponse(status: 404, body: Array(#"{"code":"NOT_FOUND","message":"no such route"}"#.utf8),
                                         contentType: "application/json")
        }
        if response.delay > 0 {
            do { try await Task.sleep(for: .seconds(response.delay)) } catch { throw TransportError(kind: .timeout, mayHaveBeenDelivered: true) }
        }
        if response.timesOut { throw TransportError(kind: .timeout, mayHaveBeenDelivered: true) }
        if response.resetConnection { throw TransportError(kind: .connectionReset, mayHaveBeenDelivered: true) }
        var headers = response.headers
        headers["Content-Type"] = response.contentType
        return V3TransportResponse(status: response.status, headers: headers, body: response.body)
    }
}

extension WeChatPaySimulator {
    /// The v3 route `path` (as sent, percent-encoded) matches, with its decoded `{id}`.
    static func matchV3(method: String, path: String) -> (template: String, parameter: String?)? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        for (routeMethod, template) in v3Routes where routeMethod == method {
            let pattern = template.split(separator: "/", omittingEmptySubsequences: false)
            guard pattern.count == segments.count else { continue }
            var parameter: String?
            var matches = true
            for (expected, actual) in zip(pattern, segments) {
                if expected == "{id}" {
                    guard !actual.isEmpty, let decoded = V3URLComponent.decode(actual) else { matches = false; break }
                    parameter = decoded
                } else if expected != actual {
                    matches = false
                    break
                }
            }
            if matches { return (template, parameter) }
        }
        return nil
    }
}
