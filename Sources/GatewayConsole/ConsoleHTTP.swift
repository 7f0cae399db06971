// SPDX-License-Identifier: Apache-2.0
import Gateway
import HTTP

/// What the console reads from requests (cookies, forms) and how every answer goes out: HTML or a
/// redirect, always with the security headers.
enum ConsoleHTTP {
    /// No script at all, the stylesheet from here, forms only to here, never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static func secured(_ response: HTTPServerResponse) -> HTTPServerResponse {
        var response = response
        response.headers["Content-Security-Policy"] = contentSecurityPolicy
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response
    }

    static func html(_ page: HTML, status: Int = 200, cookies: [String] = []) -> HTTPServerResponse {
        var response = HTTPServerResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: page.bytes)
        for cookie in cookies { response.headers.add(name: "Set-Cookie", value: cookie) }
        return secured(response)
    }

    /// 303 See Other: after a POST the browser GETs the page, so a reload never posts again.
    static func redirect(_ location: String, cookies: [String] = []) -> HTTPServerResponse {
        var response = HTTPServerResponse(status: 303, headers: ["Location": location, "Content-Type": "text/plain; charset=utf-8"],
                                          body: Array("see \(location)\n".utf8))
        for cookie in cookies { response.headers.add(name: "Set-Cookie", value: cookie) }
        return secured(response)
    }

    static let stylesheet = secured(HTTPServerResponse(
        status: 200, headers: ["Content-Type": "text/css; charset=utf-8"], body: Array(ConsoleStyle.css.utf8)))

    /// What every /console path answers while the console is off.
    static let notFound = secured(.text("not found\n", status: 404))

    /// An answer the gateway serves over HTTPS itself (GATEWAY_TLS_CERT): its cookies `Secure`
    /// whatever GATEWAY_CONSOLE_SECURE_COOKIE says (cookies are not scoped by port, so a plain-HTTP
    /// service on the same host name would otherwise receive the session), and HSTS, so the
    /// browser never asks for the console over plain HTTP again.
    static func overHTTPS(_ response: HTTPServerResponse) -> HTTPServerResponse {
        var secured = response
        var headers = HTTPHeaders()
        for field in response.headers {
            if field.name.lowercased() == "set-cookie", !field.value.contains("; Secure") {
                headers.add(name: field.name, value: field.value + "; Secure")
            } else {
                headers.add(name: field.name, value: field.value)
            }
        }
        headers["Strict-Transport-Security"] = "max-age=31536000"
        secured.headers = headers
        return secured
    }

    /// A cookie scoped to the console: never readable by script, never sent from another site.
    static func cookie(_ name: String, _ value: String, secure: Bool, maxAge: Int? = nil) -> String {
        var cookie = "\(name)=\(value); Path=/console; HttpOnly; SameSite=Strict"
        if secure { cookie += "; Secure" }
        if let maxAge { cookie += "; Max-Age=\(maxAge)" }
        return cookie
    }

    /// The request's cookies by name (the first of a repeated name wins).
    static func cookies(_ headers: HTTPHeaders) -> [String: String] {
        var cookies: [String: String] = [:]
        for header in headers.values(for: "Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { continue }
                let name = String(parts[0]).trimmingWhitespace()
                if cookies[name] == nil { cookies[name] = String(parts[1]).trimmingWhitespace() }
            }
        }
        return cookies
    }

    /// Why a POST's body is not a console form. Such a POST is answered 400 and changes nothing.
    enum FormRefusal: Error, Equatable {
        /// Another content type, bytes that are not UTF-8, or a malformed percent escape.
        case notAForm
        /// A field given twice: no console form has two fields of one name, and
        /// `amount=1.00&amount=20.00` means one amount to one reader and another to the next (as a
        /// JSON body repeating a name, which the API refuses).
        /// The name is given when it could be a console field's (ASCII letters and the like, at
        /// most 40 bytes); nil for anything else, which is not repeated back.
        case repeatedField(String?)
    }

    /// A POST's form fields (`application/x-www-form-urlencoded`, what an HTML form sends).
    static func readForm(_ request: HTTPServerRequest) -> Result<HTTPServerQuery, FormRefusal> {
        let type = request.headers["Content-Type"]?.split(separator: ";").first.map { String($0).trimmingWhitespace().lowercased() }
        guard type == "application/x-www-form-urlencoded" || (type == nil && request.body.isEmpty),
              let text = String(validating: request.body, as: UTF8.self),
              let fields = HTTPServerQuery(parsing: text)
        else { return .failure(.notAForm) }
        var names = Set<String>()
        for field in fields where !names.insert(field.name).inserted {
            let shown = field.name.utf8.count <= 40 && field.name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
            return .failure(.repeatedField(shown ? field.name : nil))
        }
        return .success(fields)
    }

    /// The form, or nil when `readForm` refuses it.
    static func form(_ request: HTTPServerRequest) -> HTTPServerQuery? { try? readForm(request).get() }

    /// The request's path and query again, for links back to it.
    static func here(_ request: HTTPServerRequest) -> String {
        request.path + HTML.query(request.query.map { ($0.name, $0.value) })
    }

    /// `next`/`back` values are followed only to a console page: never to another site (no
    /// scheme, no `//`, no backslash).
    static func safeReturn(_ value: String?) -> String {
        guard let value, value.hasPrefix("/console/") || value == "/console", !value.contains("//"),
              !value.contains("\\"), value.utf8.count <= 512, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              !hasUnsafeSegment(value)
        else { return "/console/" }
        return value
    }

    /// Whether the path of a return link is not a plain path of segments: a `.` or `..` segment,
    /// escaped or not (a browser resolves `/console/../v1/…` and `%2e%2e` out of the console), or
    /// an escaped slash, backslash or NUL, or a `;` (which some servers and proxies read as a
    /// segment's end). No console page has any of them.
    private static func hasUnsafeSegment(_ value: String) -> Bool {
        let path = value.prefix { $0 != "?" && $0 != "#" }.lowercased()
        if path.contains("%2f") || path.contains("%5c") || path.contains("%00") || path.contains(";") { return true }
        return path.split(separator: "/", omittingEmptySubsequences: false).contains { segment in
            let unescaped = segment.replacing("%2e", with: ".")
            return unescaped == "." || unescaped == ".."
        }
    }
}

