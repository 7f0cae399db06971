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

    @Test func headersMatchNamesCaseInsensitivelyAndKeepRepeats() {
        var headers: HTTPHeaders = ["Set-Cookie": "a=1"]
        headers.add(name: "set-cookie", value: "b=2")
        #expect(headers["SET-COOKIE"] == ["a=1", "b=2"])
        headers.replaceOrAdd(name: "Set-Cookie", value: "c=3")
        #expect(headers["set-cookie"] == ["c=3"])
        #expect(headers.first(name: "missing") == nil)
    }
}
