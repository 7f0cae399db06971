// SPDX-License-Identifier: Apache-2.0
import HTTP
import Testing
import WeChatPay
import WeChatPayHTTPTransport

struct TransportErrorMappingTests {
    @Test(arguments: [
        (HTTPClientError.dnsFailure, TransportError(kind: .dns, mayHaveBeenDelivered: false)),
        (.connectFailed, TransportError(kind: .connect, mayHaveBeenDelivered: false)),
        (.connectTimeout, TransportError(kind: .connect, mayHaveBeenDelivered: false)),
        (.tlsFailure, TransportError(kind: .tls, mayHaveBeenDelivered: false)),
        (.tlsConfigurationUnusable, TransportError(kind: .tls, mayHaveBeenDelivered: false)),
        (.timeout, TransportError(kind: .timeout, mayHaveBeenDelivered: true)),
        (.sendFailed, TransportError(kind: .connectionReset, mayHaveBeenDelivered: true)),
        (.receiveFailed, TransportError(kind: .connectionReset, mayHaveBeenDelivered: true)),
        (.responseTooLarge, TransportError(kind: .responseTooLarge, mayHaveBeenDelivered: true)),
        (.protocolViolation, TransportError(kind: .other, mayHaveBeenDelivered: true)),
        (.internalFailure, TransportError(kind: .other, mayHaveBeenDelivered: true)),
        (.invalidRequest, TransportError(kind: .other, mayHaveBeenDelivered: false)),
        (.cancelled, TransportError(kind: .other, mayHaveBeenDelivered: false)),
        (.shutDown, TransportError(kind: .other, mayHaveBeenDelivered: false)),
    ])
    func eachClientErrorMapsToItsKindAndKeepsTheDeliveryAnswer(_ client: HTTPClientError, _ expected: TransportError) {
        #expect(TransportError(client) == expected)
    }

    @Test func onlyReachabilityFailuresCountTowardFailover() {
        #expect(DomainFailover.Outcome(HTTPClientError.dnsFailure) == .dnsFailure)
        #expect(DomainFailover.Outcome(HTTPClientError.connectFailed) == .connectFailure)
        #expect(DomainFailover.Outcome(HTTPClientError.connectTimeout) == .connectFailure)
        #expect(DomainFailover.Outcome(HTTPClientError.timeout) == .otherFailure)
        #expect(DomainFailover.Outcome(HTTPClientError.receiveFailed) == .otherFailure)
        // These say nothing about the host.
        #expect(DomainFailover.Outcome(HTTPClientError.cancelled) == nil)
        #expect(DomainFailover.Outcome(HTTPClientError.shutDown) == nil)
        #expect(DomainFailover.Outcome(HTTPClientError.invalidRequest) == nil)
        #expect(DomainFailover.Outcome(HTTPClientError.tlsConfigurationUnusable) == nil)
    }
}
