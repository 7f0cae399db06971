// SPDX-License-Identifier: Apache-2.0

/// What a handler answers: a status, header fields and a complete body.
///
/// ```swift
/// return .json(#"{"trade_state":"SUCCESS"}"#)
/// return HTTPServerResponse(status: 409, headers: ["Content-Type": "text/plain"], body: Array("conflict".utf8))
/// ```
///
/// The server adds `Content-Length` and `Date`; do not set them. It omits the body for `HEAD`.
public struct HTTPServerResponse: Sendable, Hashable {
    /// The status code, 200...599 (anything else is answered as 500).
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// Close the connection without sending anything. For fault injection only (the WeChat Pay
    /// simulator acting out a connection reset); a real handler always answers.
    public var abortsConnection = false

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// No answer at all: the connection is closed, as a peer that resets would.
    public static var connectionAborted: HTTPServerResponse {
        var response = HTTPServerResponse(status: 500)
        response.abortsConnection = true
        return response
    }

    /// A JSON body with `Content-Type: application/json`.
    public static func json(_ json: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(json.utf8))
    }

    /// A plain-text body with `Content-Type: text/plain; charset=utf-8`.
    public static func text(_ text: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(
            status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// A short plain-text answer the server itself gives (404, 405, 413, 503...). The text is fixed
    /// per status and never echoes anything from the request.
    static func plain(status: Int, _ reason: String) -> HTTPServerResponse {
        .text(reason + "\n", status: status)
    }

    static let notFound = plain(status: 404, "not found")
    static let badRequest = plain(status: 400, "bad request")
    static let payloadTooLarge = plain(status: 413, "payload too large")
    static let forbiddenWithoutClientCertificate = plain(status: 403, "client certificate required")
    static let internalServerError = plain(status: 500, "internal server error")
    public static let serviceUnavailable = plain(status: 503, "shutting down")

    static let methodNotAllowed = plain(status: 405, "method not allowed")
}

/// An error a handler may throw to choose its own answer (a 409 for a conflicting order, say).
/// Any other error becomes a plain 500 that says nothing about the error.
public protocol HTTPServerResponseError: Error {
    /// The response to send instead of the handler's result.
    var response: HTTPServerResponse { get }
}
