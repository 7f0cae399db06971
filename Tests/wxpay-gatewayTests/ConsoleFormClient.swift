// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP

/// A browser without a browser, for gateway processes: it keeps the console's cookies (of any
/// instance: they are one site behind a load balancer), and posts forms with the CSRF token of the
/// last page it read, as an HTML form would.
final class ConsoleFormClient: @unchecked Sendable {
    // Touched only by the test that owns it, one request at a time.
    private let client: HTTPClient
    var cookies: [String: String] = [:]
    private(set) var page = ""
    static let timeouts = HTTPClient.Timeouts(connect: .seconds(10), total: .seconds(120))

    init() throws {
        client = try HTTPClient()
    }

    func shutdown() async {
        await client.shutdown()
    }

    @discardableResult
    func get(_ url: String) async throws -> Int {
        try await send(HTTPClientRequest(method: .get, url: url, headers: HTTPHeaders(cookieHeader), timeouts: Self.timeouts))
    }

    /// Posts `fields` and the `csrf` field of the last page read.
    @discardableResult
    func post(_ url: String, _ fields: [(String, String)]) async throws -> Int {
        let token = page.components(separatedBy: "name=\"csrf\" value=\"").dropFirst().first?.split(separator: "\"").first ?? ""
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text }
        let body = (fields + [("csrf", String(token))]).map { "\($0.0)=\(encode($0.1))" }.joined(separator: "&")
        return try await send(HTTPClientRequest(
            method: .post, url: url, headers: HTTPHeaders(cookieHeader + [("Content-Type", "application/x-www-form-urlencoded")]),
            body: Array(body.utf8), timeouts: Self.timeouts))
    }

    /// The login form, then its POST; the status of the POST (303 when signed in).
    func signIn(_ base: String, name: String, password: String) async throws -> Int {
        try await get(base + "/console/login")
        return try await post(base + "/console/login", [("username", name), ("password", password)])
    }

    private var cookieHeader: [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))]
    }

    private func send(_ request: HTTPClientRequest) async throws -> Int {
        let answer = try await client.execute(request)
        for header in answer.headers.values(for: "Set-Cookie") {
            guard let pair = header.split(separator: ";").first else { continue }
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2 else { continue }
            if parts[1].isEmpty || header.contains("Max-Age=0") { cookies[parts[0]] = nil } else { cookies[parts[0]] = parts[1] }
        }
        page = String(decoding: answer.body, as: UTF8.self)
        return answer.status
    }
}
