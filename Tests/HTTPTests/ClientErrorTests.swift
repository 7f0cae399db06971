// SPDX-License-Identifier: Apache-2.0
import HTTP
import Testing

struct ClientErrorTests {
    @Test func errorsCompareByCaseNotByDeliveryOrDetail() {
        #expect(HTTPClientError.timeout == .timeout)
        #expect(HTTPClientError.timeout != .connectTimeout)
        #expect(HTTPClientError.dnsFailure.mayHaveBeenDelivered == false)
        #expect(HTTPClientError.connectFailed.mayHaveBeenDelivered == false)
        #expect(HTTPClientError.receiveFailed.mayHaveBeenDelivered == true)
    }

    @Test func shortDescriptionsAreStableMetricLabels() {
        #expect(HTTPClientError.connectTimeout.shortDescription == "connectTimeout")
        #expect(HTTPClientError.tlsConfigurationUnusable.shortDescription == "tlsConfigurationUnusable")
        #expect(HTTPClientError.responseTooLarge.description == "HTTP client error: responseTooLarge (request may have been delivered)")
        #expect(HTTPClientError.dnsFailure.description == "HTTP client error: dnsFailure")
    }
}
