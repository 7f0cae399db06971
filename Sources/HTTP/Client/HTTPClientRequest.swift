// SPDX-License-Identifier: Apache-2.0

/// One HTTP request for ``HTTPClient/execute(_:)``.
///
/// ```swift
/// var request = HTTPClientRequest(method: .post, url: "https://api.mch.weixin.qq.com/pay/orderquery")
/// request.headers.add(name: "Content-Type", value: "text/xml; charset=utf-8")
/// request.body = Array(xml.utf8)
/// ```
public struct HTTPClientRequest: Sendable, Hashable {
    /// The method. `HEAD` asks for no body; any method with a non-empty body sends it.
    public var method: HTTPMethod
    /// An absolute `http://` or `https://` URL. Other schemes are refused.
    public var url: String
    /// Extra header fields. Names and values must not contain CR, LF or NUL.
    public var headers: HTTPHeaders
    /// The request body, sent with a `Content-Length`.
    public var body: [UInt8]
    /// Overrides the client's timeouts for this request.
    public var timeouts: HTTPClient.Timeouts?
    /// Overrides the client's response size cap for this request.
    public var maxResponseBodyBytes: Int?
    /// The client certificate to present; `nil` presents none.
    public var clientIdentity: TLSClientIdentity?

    /// A request; only the URL is required. Defaults: GET, no extra headers, no body, the client's
    /// timeouts and size cap, no client certificate.
    public init(
        method: HTTPMethod = .get,
        url: String,
        headers: HTTPHeaders = [:],
        body: [UInt8] = [],
        timeouts: HTTPClient.Timeouts? = nil,
        maxResponseBodyBytes: Int? = nil,
        clientIdentity: TLSClientIdentity? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeouts = timeouts
        self.maxResponseBodyBytes = maxResponseBodyBytes
        self.clientIdentity = clientIdentity
    }

    /// Rejects what libcurl would otherwise send verbatim: header injection through CR/LF, and
    /// schemes other than HTTP(S).
    func validate() throws(HTTPClientError) {
        let lowercasedURL = url.lowercased()
        guard lowercasedURL.hasPrefix("http://") || lowercasedURL.hasPrefix("https://"),
              !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
        else { throw .invalidRequest }
        for field in headers {
            guard !field.name.isEmpty,
                  !field.name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 == 0x7F }),
                  !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 })
            else { throw .invalidRequest }
        }
        guard !method.rawValue.isEmpty,
              method.rawValue.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .invalidRequest }
    }
}
