// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP

/// Delivers notifies by calling a closure, for tests and for a gateway running in the same process.
public struct ClosureNotifySender: NotifySender {
    private let deliver: @Sendable ([UInt8], [String: String], String) async -> [UInt8]?

    public init(_ deliver: @escaping @Sendable (_ body: [UInt8], _ url: String) async -> [UInt8]?) {
        self.deliver = { body, _, url in await deliver(body, url) }
    }

    /// A sender whose closure sees each attempt's headers too (WeChat Pay v3's signatures).
    public init(withHeaders deliver: @escaping @Sendable (_ body: [UInt8], _ headers: [String: String], _ url: String) async -> [UInt8]?) {
        self.deliver = deliver
    }

    public func post(_ body: [UInt8], to url: String, timeout: TimeInterval) async -> [UInt8]? {
        await deliver(body, [:], url)
    }

    public func post(_ body: [UInt8], headers: [String: String], to url: String, timeout: TimeInterval) async -> [UInt8]? {
        await deliver(body, headers, url)
    }
}

/// Posts notifications to the merchant over HTTP, as WeChat and Apple do.
public struct HTTPNotifySender: NotifySender {
    private let client: HTTPClient
    private let contentType: String

    /// - Parameters:
    ///   - client: owned by the caller, who shuts it down.
    ///   - contentType: WeChat's XML (default) or Apple's `application/json`.
    public init(client: HTTPClient, contentType: String = "text/xml; charset=utf-8") {
        self.client = client
        self.contentType = contentType
    }

    public func post(_ body: [UInt8], to url: String, timeout: TimeInterval) async -> [UInt8]? {
        await post(body, headers: [:], to: url, timeout: timeout)
    }

    /// `headers` win over the sender's own Content-Type.
    public func post(_ body: [UInt8], headers: [String: String], to url: String, timeout: TimeInterval) async -> [UInt8]? {
        var fields: [(String, String)] = [("Content-Type", headers["Content-Type"] ?? contentType)]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) where name != "Content-Type" { fields.append((name, value)) }
        let request = HTTPClientRequest(
            method: .post, url: url, headers: HTTPHeaders(fields), body: body,
            timeouts: HTTPClient.Timeouts(connect: .seconds(min(timeout, 5)), total: .seconds(timeout)),
            maxResponseBodyBytes: 64 * 1024)
        guard let response = try? await client.execute(request), (200..<300).contains(response.status) else {
            return nil
        }
        return response.body
    }
}
