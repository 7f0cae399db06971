// SPDX-License-Identifier: Apache-2.0
import HTTP
import Testing

struct HTTPMethodTests {
    @Test func unknownMethodsAreKeptVerbatimSoTheRouterCanAnswer405() {
        #expect(HTTPMethod(rawValue: "PROPFIND").description == "PROPFIND")
        #expect(HTTPMethod(rawValue: "GET") == .get)
    }
}
