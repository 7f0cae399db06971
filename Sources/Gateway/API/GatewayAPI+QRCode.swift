// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTP
import QRCode

/// `GET /v1/orders/{out_trade_no}/qr.png` and `.svg`: a NATIVE order's `code_url` as the QR code
/// the PC page shows, for whoever may read the order (a client token, or an app token for its own
/// user). The image depends only on the `code_url`, which never changes, and on `scale`/`border`:
/// it carries an ETag and is cacheable by the payer's browser only (`private`); a request with a
/// matching `If-None-Match` gets 304 after the same checks.
extension GatewayAPI {
    /// How long a browser may show its copy without asking again: short enough that a page
    /// reloaded after the order is paid or closed soon hears `order_not_payable`.
    static let qrCodeMaxAge = 60

    func registerQRCodes(in router: inout HTTPRouter) {
        for format in QRImageFormat.allCases {
            router.add(.get, "/v1/orders/{out_trade_no}/qr.\(format.rawValue)") { request in
                try await self.handle(request, scopes: [.client, .app]) { caller in
                    let scale = try Self.qrParameter(request.query["scale"], name: "scale", default: 8, in: QRCode.scales)
                    let border = try Self.qrParameter(request.query["border"], name: "border", default: 4, in: QRCode.borders)
                    let codeURL = try await self.services.queries.qrCodeURL(request.pathParameters["out_trade_no"] ?? "",
                                                                            owner: caller.owner)
                    let tag = "\"" + Hex.encode(SHA256.hash("\(format.rawValue) \(scale) \(border) \(codeURL)").prefix(16)) + "\""
                    var headers: HTTPHeaders = ["ETag": tag, "Cache-Control": "private, max-age=\(Self.qrCodeMaxAge)"]
                    if let match = request.headers["If-None-Match"], Self.matches(match, tag) {
                        return HTTPServerResponse(status: 304, headers: headers, body: [])
                    }
                    let matrix: QRCode.Matrix
                    do {
                        matrix = try QRCode.Matrix.encode(codeURL)
                    } catch {
                        // A code_url is WeChat's short URL: one it could not encode is not the client's fault.
                        throw APIError.internalError
                    }
                    headers["Content-Type"] = format.contentType
                    let body = switch format {
                    case .png: matrix.png(scale: scale, border: border)
                    case .svg: Array(matrix.svg(scale: scale, border: border).utf8)
                    }
                    return HTTPServerResponse(status: 200, headers: headers, body: body)
                }
            }
        }
    }

    /// Whether `If-None-Match` names `tag`, by the weak comparison RFC 9110 asks of it: a
    /// proxy or browser may send the tag back as `W/"…"`, and `*` matches any.
    static func matches(_ header: String, _ tag: String) -> Bool {
        header.split(separator: ",").contains { item in
            let candidate = item.trimmingCharacters(in: .whitespaces)
            return candidate == "*" || candidate == tag || candidate == "W/" + tag
        }
    }

    /// `scale` or `border`: absent is the default; a whole number outside `range`, however large,
    /// is clamped into it (as the QR module draws it); anything else is refused naming the parameter.
    static func qrParameter(_ text: String?, name: String, default value: Int, in range: ClosedRange<Int>) throws(APIError) -> Int {
        guard let text else { return value }
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard (1...32).contains(digits.utf8.count), digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .invalid(name, "\(name) must be a whole number (\(range.lowerBound) to \(range.upperBound); others are clamped)")
        }
        // Past Int's range is as far past the bound as any other large number.
        let number = Int(text) ?? (text.hasPrefix("-") ? Int.min : Int.max)
        return min(max(number, range.lowerBound), range.upperBound)
    }
}

/// The two images of a QR code the gateway draws.
enum QRImageFormat: String, CaseIterable {
    case png, svg

    var contentType: String {
        switch self {
        case .png: "image/png"
        case .svg: "image/svg+xml"
        }
    }
}
