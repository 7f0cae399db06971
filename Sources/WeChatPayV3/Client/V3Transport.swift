// SPDX-License-Identifier: Apache-2.0
import WeChatPay

/// One v3 request as a transport sends it: the method, the URL as signed (path and query; the
/// transport owns the host and its failover), every header, the exact body bytes.
public struct V3TransportRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, url: String, headers: [String: String], body: [UInt8]) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What came back: any status, the header fields (a v3 answer's signature is in them) and the raw body.
public struct V3TransportResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// The network for API v3, behind one method, as `WeChatPayTransport` is for v2: libcurl in
/// production (`WeChatPayHTTPTransport`, which speaks both), the simulator in process for demo
/// mode and tests. Failures below HTTP are v2's `TransportError`: whether WeChat may have the
/// request is the same question for both versions.
public protocol WeChatPayV3Transport: Sendable {
    func send(_ request: V3TransportRequest) async throws(TransportError) -> V3TransportResponse
}
