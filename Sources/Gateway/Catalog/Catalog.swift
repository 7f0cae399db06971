// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// One thing the app can buy, with the price the gateway charges for it.
public struct CatalogProduct: Sendable, Hashable {
    /// 1–32 of `[0-9A-Za-z_.-]`; what an app create names as `product_id`.
    public var id: String
    /// Fen, 1 to 1,000,000,000.
    public var amount: Int
    /// 1–127 bytes of UTF-8, sent to WeChat as `body`.
    public var description: String
    /// Only active products are listed and sold to app tokens.
    public var active: Bool
    /// The product's id in App Store Connect, when the iOS app sells it: 1–100 of
    /// `[0-9A-Za-z_.-]`, unique in the catalog (a transaction's `productId` names one product).
    public var appleProductID: String?
    /// The keys this version does not read, kept as they were for the features that will.
    var extra: [String: JSONValue]

    public init(id: String, amount: Int, description: String, active: Bool = true, appleProductID: String? = nil) {
        self.init(id: id, amount: amount, description: description, active: active, appleProductID: appleProductID,
                  extra: [:])
    }

    init(id: String, amount: Int, description: String, active: Bool, appleProductID: String? = nil,
         extra: [String: JSONValue]) {
        self.id = id
        self.amount = amount
        self.description = description
        self.active = active
        self.appleProductID = appleProductID
        self.extra = extra
    }

    /// `{"amount","apple_product_id"?,"description","id"}`: what `GET /v1/catalog` shows of it.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 128)
        writer.number("amount", amount)
        writer.string("apple_product_id", appleProductID)
        writer.string("description", description)
        writer.string("id", id)
        return writer.finish()
    }
}

/// Why a catalog file was refused: which product and which rule (the file's content is the
/// operator's own, so naming the product id is safe).
public struct CatalogError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The products and their prices, from the JSON file `GATEWAY_CATALOG` names:
/// `{"products":[{"id":"swift-101","amount":990,"description":"Swift 入门课","active":true}]}`.
public struct Catalog: Sendable, Hashable {
    public private(set) var products: [CatalogProduct]
    private var index: [String: Int]
    private var appleIndex: [String: Int]

    /// The largest catalog file read (a catalog is a few hundred products, not megabytes).
    public static let maximumFileBytes = 4 * 1024 * 1024

    public init(products: [CatalogProduct]) {
        self.products = products
        index = Dictionary(products.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        appleIndex = Dictionary(products.enumerated().compactMap { position, product in
            product.appleProductID.map { ($0, position) }
        }, uniquingKeysWith: { first, _ in first })
    }

    public static let empty = Catalog(products: [])

    /// The product with `id`, active or not.
    public func product(_ id: String) -> CatalogProduct? {
        index[id].map { products[$0] }
    }

    /// The product whose App Store product id is `appleProductID`, active or not.
    public func product(appleProductID: String) -> CatalogProduct? {
        appleIndex[appleProductID].map { products[$0] }
    }

    /// `{"products":[…]}` with the active products, in file order.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 64 + products.count * 96)
        writer.array("products", products.filter(\.active).map(\.json))
        return writer.finish()
    }

    /// Reads and validates the file at `path`.
    public static func load(path: String) throws(CatalogError) -> Catalog {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CatalogError(message: "cannot read the catalog file \(path)")
        }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumFileBytes + 1)) ?? nil
        guard let data else { throw CatalogError(message: "cannot read the catalog file \(path)") }
        guard data.count <= maximumFileBytes else {
            throw CatalogError(message: "the catalog file is larger than \(maximumFileBytes) bytes")
        }
        return try parse(Array(data))
    }

    /// Validates a catalog document: every rule broken is named with its product.
    public static func parse(_ bytes: [UInt8]) throws(CatalogError) -> Catalog {
        let document: [String: JSONValue]
        do {
            document = try JSONValue.parseObject(bytes)
        } catch {
            throw CatalogError(message: error.reason == .duplicateKey
                ? "the catalog repeats a JSON key in one object" : "the catalog is not a JSON object")
        }
        guard case .array(let entries)? = document["products"] else {
            throw CatalogError(message: "the catalog must have a \"products\" array")
        }
        var products: [CatalogProduct] = []
        var seen: Set<String> = []
        var seenApple: Set<String> = []
        for (position, entry) in entries.enumerated() {
            let product = try self.product(entry, position: position)
            guard seen.insert(product.id).inserted else {
                throw CatalogError(message: "product \"\(product.id)\": id appears more than once")
            }
            if let apple = product.appleProductID, !seenApple.insert(apple).inserted {
                throw CatalogError(message: "product \"\(product.id)\": apple_product_id is another product's too")
            }
            products.append(product)
        }
        return Catalog(products: products)
    }

    private static func product(_ entry: JSONValue, position: Int) throws(CatalogError) -> CatalogProduct {
        guard case .object(var fields) = entry else {
            throw CatalogError(message: "product #\(position + 1): must be a JSON object")
        }
        guard let id = fields.removeValue(forKey: "id")?.stringValue, isValidID(id) else {
            throw CatalogError(message: "product #\(position + 1): id must be 1 to 32 of 0-9 A-Z a-z _ . -")
        }
        let name = "product \"\(id)\""
        guard case .int(let amount)? = fields.removeValue(forKey: "amount"), (1...1_000_000_000).contains(amount) else {
            throw CatalogError(message: "\(name): amount must be an integer number of fen from 1 to 1000000000")
        }
        guard let description = fields.removeValue(forKey: "description")?.stringValue,
              (1...127).contains(description.utf8.count),
              !description.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            throw CatalogError(message: "\(name): description must be 1 to 127 bytes of UTF-8 without control characters")
        }
        var active = true
        if let value = fields.removeValue(forKey: "active") {
            guard case .bool(let flag) = value else { throw CatalogError(message: "\(name): active must be true or false") }
            active = flag
        }
        var appleProductID: String?
        if let value = fields.removeValue(forKey: "apple_product_id") {
            guard let text = value.stringValue, isValidAppleProductID(text) else {
                throw CatalogError(message: "\(name): apple_product_id must be 1 to 100 of 0-9 A-Z a-z _ . -")
            }
            appleProductID = text
        }
        return CatalogProduct(id: id, amount: amount, description: description, active: active,
                              appleProductID: appleProductID, extra: fields)
    }

    static func isValidID(_ id: String) -> Bool {
        (1...32).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    /// App Store product ids follow App Store Connect's rule (letters, digits, `_`, `.`; `-` too here).
    static func isValidAppleProductID(_ id: String) -> Bool {
        (1...100).contains(id.utf8.count) && id.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }

    /// What demo mode sells when no GATEWAY_CATALOG is given (to both apps: each product has its
    /// App Store twin in the embedded App Store simulator's app).
    public static let demo = Catalog(products: [
        CatalogProduct(id: "swift-101", amount: 990, description: "Swift 入门课", appleProductID: "com.example.courses.swift101"),
        CatalogProduct(id: "swift-201", amount: 4990, description: "Swift 并发进阶", appleProductID: "com.example.courses.swift201"),
        CatalogProduct(id: "ios-iap-301", amount: 9900, description: "iOS 内购实战", appleProductID: "com.example.courses.iap301"),
        CatalogProduct(id: "retired-100", amount: 100, description: "已下架课程", active: false,
                       appleProductID: "com.example.courses.retired100"),
    ])
}
