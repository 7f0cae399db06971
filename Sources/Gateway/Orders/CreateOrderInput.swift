// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
import JSON
#endif
import StorageCore
import WeChatPayV3

/// A validated `POST /v1/orders` body. Everything WeChat would refuse is refused here first, so
/// invalid requests never reach WeChat.
public struct CreateOrderInput: Sendable, Hashable {
    public var amount: Int
    public var description: String
    public var clientIP: String
    /// Whether `clientIP` is the request's own address (an app-token create without `client_ip`):
    /// then it is no parameter the client chose, and a retry from another network (Wi-Fi to
    /// mobile data, a new NAT address) is the same create.
    public var clientIPFromPeer = false
    public var outTradeNo: String?
    public var attach: String?
    public var userID: String?
    public var productID: String?
    public var expiresIn: Int
    /// The merchant's app to pay through (its name in WXPAY_APPS); nil is the default app.
    public var app: String?
    /// The payer's openid under the app's id: required for JSAPI apps, refused for the others.
    public var openID: String?
    /// What the catalog the request was read against says the product grants: the store refuses
    /// the new order when the database has since bound other terms for it (`SaleTerms`).
    public var terms: SaleTerms = .unchecked
    /// H5 only: where WeChat's payment page sends the browser back to, appended to `mweb_url`.
    public var redirectURL: String?

    public static let defaultExpiresIn = 7200
    static let allowedFields: Set<String> = [
        "amount", "description", "client_ip", "out_trade_no", "attach", "user_id", "product_id", "expires_in",
        "app", "openid", "redirect_url",
    ]

    public init(amount: Int, description: String, clientIP: String, outTradeNo: String? = nil, attach: String? = nil,
                userID: String? = nil, productID: String? = nil, expiresIn: Int = CreateOrderInput.defaultExpiresIn,
                app: String? = nil, openID: String? = nil, redirectURL: String? = nil) {
        self.amount = amount
        self.description = description
        self.clientIP = clientIP
        self.outTradeNo = outTradeNo
        self.attach = attach
        self.userID = userID
        self.productID = productID
        self.expiresIn = expiresIn
        self.app = app
        self.openID = openID
        self.redirectURL = redirectURL
    }

    /// Parses and validates a JSON body; the error names the first offending field.
    public init(json body: [UInt8]) throws(APIError) {
        try self.init(members: try Self.members(of: body), product: nil)
    }

    /// Validates a body's members. With `product` (the catalog's entry for its `product_id`), a
    /// missing amount or description is the catalog's, and another amount is `amount_mismatch`
    /// (CreateOrderInput+Catalog.swift).
    init(members object: [String: JSONValue], product: CatalogProduct?) throws(APIError) {
        if let unknown = object.keys.sorted().first(where: { !Self.allowedFields.contains($0) }) {
            throw .invalid(Self.printableField(unknown), "unknown field")
        }
        let required = product == nil
        let givenAmount = try Self.integer(object, "amount", required: required, range: 1...1_000_000_000)
        if let product, let givenAmount, givenAmount != product.amount { throw .amountMismatch(catalog: product.amount) }
        amount = givenAmount ?? product?.amount ?? 0
        description = try Self.string(object, "description", required: required, bytes: 1...127)
            ?? product?.description ?? ""
        clientIP = try Self.string(object, "client_ip", required: true, bytes: 2...45) ?? ""
        guard Self.isIPAddress(clientIP) else { throw .invalid("client_ip", "client_ip must be an IPv4 or IPv6 address") }
        outTradeNo = try Self.outTradeNo(object)
        attach = try Self.string(object, "attach", required: false, bytes: 0...127)
        userID = try UserID.member(of: object, required: false)
        // Any length here: the rule below says what a product id is in one message.
        productID = try Self.string(object, "product_id", required: false, bytes: 0...16 * 1024)
        // Named as the catalog names products: a paid order of a product the catalog does not
        // know grants its id for ever, so an id of other scripts (Cyrillic `вip`), invisible or
        // look-alike characters would sell something that reads as a membership (`Entitlements`).
        if let productID, !Catalog.isValidID(productID) {
            throw .invalid("product_id", "product_id must be 1 to 32 of 0-9 A-Z a-z _ . -, as catalog ids are")
        }
        expiresIn = try Self.integer(object, "expires_in", required: false, range: 300...86400) ?? Self.defaultExpiresIn
        (app, openID, redirectURL) = try Self.channel(object)
    }

    /// The channel's members, which both kinds of token may give: `app` (a name as WXPAY_APPS
    /// writes them), `openid` (WeChat's: letters, digits, `-` and `_`) and `redirect_url` (an
    /// http(s) URL). Whether the app exists and takes an openid is the creation's to decide.
    static func channel(_ object: [String: JSONValue]) throws(APIError)
        -> (app: String?, openID: String?, redirectURL: String?)
    {
        let app = try Self.string(object, "app", required: false, bytes: 1...32)
        if let app, !GatewayConfiguration.isAppName(app) {
            throw .invalid("app", "app must be the name of one of the merchant's apps (lower-case letters, digits, - and _)")
        }
        let openID = try Self.string(object, "openid", required: false, bytes: 1...128)
        if let openID, !openID.utf8.allSatisfy({ Self.isWordByte($0) || $0 == UInt8(ascii: "-") }) {
            throw .invalid("openid", "openid may contain only letters, digits, - and _")
        }
        let redirectURL = try Self.string(object, "redirect_url", required: false, bytes: 1...512)
        if let redirectURL {
            let lowered = redirectURL.lowercased()
            guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), URL(string: redirectURL)?.host != nil,
                  !redirectURL.contains(" ")
            else { throw .invalid("redirect_url", "redirect_url must be an http(s) URL") }
        }
        return (app, openID, redirectURL)
    }

    static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == UInt8(ascii: "_")
    }

    /// The members of a body that must be one JSON object. A name given twice is refused, as in
    /// app tokens and the catalog: `{"amount":990,…,"amount":1}` means one amount to one reader
    /// and another to the next (a proxy, a log, the backend's own validation), and the battery's
    /// T5 found the first silently winning.
    ///
    /// Numbers are read as written: `1.0` and `1e3` are not integers here (`amount must be an
    /// integer`, as the API promises), and an integer too large to read names its member
    /// (`amount is out of range`) rather than calling the body malformed.
    static func members(of body: [UInt8]) throws(APIError) -> [String: JSONValue] {
        do {
            return try JSONValue.parseObject(body, numbers: .integersAsWritten)
        } catch {
            switch error.reason {
            case .duplicateKey:
                throw .invalid(nil, "the body gives a member name twice")
            case .numberOutOfRange:
                let field = error.member.flatMap(Self.printableField)
                throw .invalid(field, "\(field ?? "a number in the body") is out of range")
            case .invalidUTF8:
                throw .invalid(nil, "the body must be UTF-8: the string at byte \(error.offset) holds a byte that is not")
            case .loneSurrogate:
                throw .invalid(nil, "the escape at byte \(error.offset) is half a surrogate pair, which is no character")
            case .tooDeep:
                throw .invalid(nil, "the body nests arrays and objects more than \(JSONValue.defaultMaximumDepth) deep (at byte \(error.offset))")
            case .syntax:
                throw .invalid(nil, "the body must be a JSON object: it is not valid JSON at byte \(error.offset)")
            case .notAnObject:
                throw .invalid(nil, "the body must be a JSON object")
            }
        }
    }

    static func outTradeNo(_ object: [String: JSONValue]) throws(APIError) -> String? {
        let outTradeNo = try Self.string(object, "out_trade_no", required: false, bytes: 6...32)
        if let outTradeNo, !Self.isValidOutTradeNo(outTradeNo) {
            throw .invalid("out_trade_no", "out_trade_no may contain only 0-9 A-Z a-z _ - | *")
        }
        return outTradeNo
    }

    /// The canonical form of every parameter the client chose, for idempotency: the same
    /// out_trade_no with a different digest is a conflict.
    public var parametersDigest: String { digest(clientIP: clientIPFromPeer ? "" : clientIP) }

    /// The digest as it was before the peer's address was left out (orders created then, from the
    /// same address, still replay).
    var legacyParametersDigest: String { digest(clientIP: clientIP) }

    private func digest(clientIP: String) -> String {
        var parts = [String(amount), description, clientIP, attach ?? "", userID ?? "", productID ?? "", String(expiresIn)]
        // The channel only when one is named, so the digest of a create naming none is what it
        // was before apps had names (an old order's identical replay still matches).
        if app != nil || openID != nil || redirectURL != nil {
            parts += ["app=" + (app ?? ""), openID ?? "", redirectURL ?? ""]
        }
        // Length-prefixed so no two different parameter sets join to the same text.
        return parts.map { "\($0.utf8.count):\($0)" }.joined(separator: "|")
    }

    // MARK: - Field rules

    static func integer(_ object: [String: JSONValue], _ name: String, required: Bool,
                                range: ClosedRange<Int>) throws(APIError) -> Int? {
        guard let raw = object[name], raw != .null else {
            if required { throw .invalid(name, "\(name) is required") }
            return nil
        }
        // Fen are integers: 1.5, "100" and true are client bugs, not amounts.
        guard case .int(let value) = raw else { throw .invalid(name, "\(name) must be an integer") }
        guard range.contains(value) else {
            throw .invalid(name, "\(name) must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    /// - Parameter anyCharacters: leave the characters to the caller's own rule and message
    ///   (`UserID`), rather than refusing control, text-direction and invisible characters here.
    static func string(_ object: [String: JSONValue], _ name: String, required: Bool,
                               bytes: ClosedRange<Int>, anyCharacters: Bool = false) throws(APIError) -> String? {
        guard let raw = object[name], raw != .null else {
            if required { throw .invalid(name, "\(name) is required") }
            return nil
        }
        guard case .string(let value) = raw else { throw .invalid(name, "\(name) must be a string") }
        guard bytes.contains(value.utf8.count) else {
            throw .invalid(name, "\(name) must be \(bytes.lowerBound) to \(bytes.upperBound) bytes of UTF-8")
        }
        // WeChat's XML cannot carry most control characters, and they have no business in these
        // fields; nor text-direction overrides, which turn a line around where it is shown, nor
        // invisible characters (`HiddenCharacters.refusedInFreeText`).
        guard anyCharacters || !HiddenCharacters.refusedInFreeText(value) else {
            throw .invalid(name, "\(name) must not contain control, text-direction or invisible characters")
        }
        guard anyCharacters || value.isEmpty || HiddenCharacters.showsSomething(value) else {
            throw .invalid(name, "\(name) must not be blank")
        }
        return value.isEmpty && !required ? nil : value
    }

    /// API v3's rule, the narrower of the two versions' (v2 also takes `@`), so an order can be
    /// created, queried and refunded through either.
    static func isValidOutTradeNo(_ value: String) -> Bool { OutTradeNo.isValid(value) }

    static func isIPAddress(_ value: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, value, &v4) == 1 || inet_pton(AF_INET6, value, &v6) == 1
    }

    /// An unknown field's name is echoed only when it is short and plain.
    static func printableField(_ name: String) -> String? {
        name.utf8.count <= 32 && name.utf8.allSatisfy({ $0 >= 0x21 && $0 < 0x7F }) ? name : nil
    }
}
