// SPDX-License-Identifier: Apache-2.0

/// The requests whose length two HTTP parsers could read two ways — the primitives of request
/// smuggling — and the request-targets too large to parse safely, decided before any handler runs.
///
/// A proxy that frames a body by `Content-Length` while this server frames it by
/// `Transfer-Encoding: chunked` (or the reverse, or each by another of two `Content-Length`s)
/// disagrees on where the next request starts: the bytes one of them calls body, the other runs
/// as a request. RFC 9112 §6.3 makes every such request an unrecoverable framing error: answer 400
/// and close the connection. libmicrohttpd 0.9.75 instead reads chunked and keeps the connection,
/// takes the first of two lengths, and waits for the end of a body in any other coding until the
/// connection times out, and keeps `Transfer-Encoding : chunked` as a header of another name; the
/// server refuses all of them here, with `Connection: close`, so nothing after them on that
/// connection is ever read. (A `Content-Length` that is not one number libmicrohttpd refuses
/// itself, before this code runs: 400, or 413 when too large, and the connection closed.)
enum HTTPRequestFraming {
    /// The refusal for a request head whose body framing is ambiguous or unknown, or nil when it is
    /// sound: no header name with whitespace in it (`Transfer-Encoding : chunked` is a different
    /// name to libmicrohttpd and the same one to lenient proxies, RFC 9112 §5.1); at most one
    /// `Content-Length`; `Transfer-Encoding` only without one, never in HTTP/1.0,
    /// and then exactly `chunked` (in any case). A list whose final coding is not `chunked`, or that
    /// names it twice, has no determinable length (400); a known-length list with another coding
    /// before `chunked` is one this server does not implement (501, RFC 9112 §6.1).
    static func refusal(version: String, contentLengths: [String], transferEncodings: [String],
                        whitespaceInAName: Bool = false, hosts: Int = 1, authorizations: Int = 0,
                        lineBreakInAValue: Bool = false) -> HTTPServerResponse? {
        if whitespaceInAName { return refused(400, "bad request: whitespace in a header name, or a folded (obs-fold) field") }
        // A bare CR inside a value is a line end to some proxies (RFC 9112 §2.2: invalid, or read as
        // SP): `X-A: 1<CR>Content-Length: 5` would be a second Content-Length there and none here.
        if lineBreakInAValue { return refused(400, "bad request: a CR or LF inside a header value") }
        // A field that must be single, sent twice, is read one way here and another by a proxy that
        // keeps the last one (RFC 9112 §3.2 for Host; Authorization names one set of credentials).
        if hosts > 1 { return refused(400, "bad request: more than one Host") }
        if authorizations > 1 { return refused(400, "bad request: more than one Authorization") }
        if contentLengths.count > 1 { return refused(400, "bad request: more than one Content-Length") }
        guard !transferEncodings.isEmpty else { return nil }
        if !contentLengths.isEmpty { return refused(400, "bad request: Content-Length and Transfer-Encoding together") }
        // An HTTP/1.0 recipient does not know chunked: the framing is faulty (RFC 9112 §6.1).
        if version == "HTTP/1.0" { return refused(400, "bad request: Transfer-Encoding in an HTTP/1.0 request") }
        // Several fields are one comma-separated list (RFC 9110 §5.3).
        let codings = transferEncodings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingSpacesAndTabs().lowercased() }
        guard codings.last == "chunked", codings.filter({ $0 == "chunked" }).count == 1 else {
            return refused(400, "bad request: chunked must be the final transfer coding, named once")
        }
        guard codings.count == 1 else { return refused(501, "not implemented: a transfer coding other than chunked") }
        // libmicrohttpd reads a body as chunked only when the field's value is exactly `chunked`:
        // with whitespace kept around it (trailing OWS, a folded line) it would wait for a body it
        // never frames, and answer nothing. Refused rather than read two ways.
        guard transferEncodings.count == 1, transferEncodings[0].lowercased() == "chunked" else {
            return refused(400, "bad request: Transfer-Encoding must be exactly chunked, on one line")
        }
        return nil
    }

    /// A request-target the server refuses before libmicrohttpd splits its query (414).
    /// libmicrohttpd keeps every query parameter in the connection's fixed memory and, when they do
    /// not fit, neither answers nor closes (0.9.75): the limits keep them well inside it.
    enum TargetRefusal: Int, Sendable {
        case tooLong = 2
        case tooManyParameters = 3

        /// Whether a request-target (path and query, as sent) is longer than `maxBytes` or has more
        /// than `maxParameters` query parameters (counted as libmicrohttpd splits them, at `&`).
        init?(target: UnsafeBufferPointer<UInt8>, maxBytes: Int, maxParameters: Int) {
            if target.count > maxBytes {
                self = .tooLong
                return
            }
            guard let question = target.firstIndex(of: UInt8(ascii: "?")) else { return nil }
            let query = target[(question + 1)...]
            let parameters = query.isEmpty ? 0 : 1 + query.count(where: { $0 == UInt8(ascii: "&") })
            guard parameters > maxParameters else { return nil }
            self = .tooManyParameters
        }

        /// The request's context while it waits for its answer: a small integer, never the address
        /// of an object (objects are 16-byte aligned), so it cannot be taken for an exchange.
        var marker: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: rawValue)! }

        init?(marker: UnsafeMutableRawPointer) {
            self.init(rawValue: Int(bitPattern: marker))
        }

        func response(_ configuration: HTTPServerConfiguration) -> HTTPServerResponse {
            switch self {
            case .tooLong: HTTPRequestFraming.refused(414, "uri too long: more than \(configuration.maxTargetBytes) bytes")
            case .tooManyParameters: HTTPRequestFraming.refused(414, "uri too long: more than \(configuration.maxQueryParameters) query parameters")
            }
        }
    }

    /// A fixed answer (never echoing the request) that closes the connection.
    fileprivate static func refused(_ status: Int, _ reason: String) -> HTTPServerResponse {
        var response = HTTPServerResponse.plain(status: status, reason)
        response.headers["Connection"] = "close"
        return response
    }
}

extension Substring {
    /// Without the optional whitespace (spaces and tabs) HTTP allows around list elements.
    fileprivate func trimmingSpacesAndTabs() -> Substring {
        var trimmed = self
        while let first = trimmed.first, first == " " || first == "\t" { trimmed.removeFirst() }
        while let last = trimmed.last, last == " " || last == "\t" { trimmed.removeLast() }
        return trimmed
    }
}
