// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import OperatorFiles
import StorageCore

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
    /// What a paid order of it grants: a course for ever, a membership for its period.
    public var kind: Kind
    /// The entitlement it grants (what the business checks before opening content): by default
    /// the product's own `id`; several products may grant the same one (a monthly and a yearly
    /// `vip`). Same rule as `id`.
    public var entitlement: String
    /// The keys this version does not read, kept as they were for the features that will.
    var extra: [String: JSONValue]

    /// `"type"` in the catalog: `course` (the default), `membership` (with its `"period"`) or
    /// `consumable`.
    public enum Kind: Sendable, Hashable {
        /// Bought once, open for ever (until refunded).
        case course
        /// Open for `period` from the payment, stacked after any time the user already has.
        case membership(MembershipPeriod)
        /// Used up when used (coins, credits): grants no entitlement; the business counts them.
        case consumable

        /// The catalog's word for it.
        public var name: String {
            switch self {
            case .course: "course"
            case .membership: "membership"
            case .consumable: "consumable"
            }
        }

        public var period: MembershipPeriod? {
            if case .membership(let period) = self { period } else { nil }
        }
    }

    public init(id: String, amount: Int, description: String, active: Bool = true, appleProductID: String? = nil,
                kind: Kind = .course, entitlement: String? = nil) {
        self.init(id: id, amount: amount, description: description, active: active, appleProductID: appleProductID,
                  kind: kind, entitlement: entitlement, extra: [:])
    }

    init(id: String, amount: Int, description: String, active: Bool, appleProductID: String? = nil,
         kind: Kind = .course, entitlement: String? = nil, extra: [String: JSONValue]) {
        self.id = id
        self.amount = amount
        self.description = description
        self.active = active
        self.appleProductID = appleProductID
        self.kind = kind
        self.entitlement = entitlement ?? id
        self.extra = extra
    }

    /// `{"amount","apple_product_id"?,"description","entitlement","id","period"?,"type"}`: what
    /// `GET /v1/catalog` shows of it.
    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 160)
        writer.number("amount", amount)
        writer.string("apple_product_id", appleProductID)
        writer.string("description", description)
        writer.string("entitlement", entitlement)
        writer.string("id", id)
        writer.string("period", kind.period?.text)
        writer.string("type", kind.name)
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
/// `{"products":[{"id":"swift-101","amount":990,"description":"Swift 入门课","active":true},
/// {"id":"vip-month","amount":3000,"description":"VIP 月卡","type":"membership","period":"P1M","entitlement":"vip"}]}`.
public struct Catalog: Sendable, Hashable {
    public private(set) var products: [CatalogProduct]
    private var index: [String: Int]
    private var appleIndex: [String: Int]
    /// Every product's entitlement, id and App Store product id, as `Catalog.skeleton` reads them.
    private var skeletons: Set<String>
    /// The same names word by word (`Catalog.words`), those of three letters or more.
    private var nameWords: Set<[String]>

    /// The largest catalog file read (a catalog is a few hundred products, not megabytes).
    public static let maximumFileBytes = 4 * 1024 * 1024

    public init(products: [CatalogProduct]) {
        self.products = products
        index = Dictionary(products.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        appleIndex = Dictionary(products.enumerated().compactMap { position, product in
            product.appleProductID.map { ($0, position) }
        }, uniquingKeysWith: { first, _ in first })
        let names = products.flatMap { [$0.entitlement, $0.id] + ($0.appleProductID.map { [$0] } ?? []) }
        skeletons = Set(names.map(Self.skeleton))
        nameWords = Set(names.map(Self.words)).filter { $0.joined().count >= 3 }
    }

    public static let empty = Catalog(products: [])

    /// The product with `id`, active or not.
    public func product(_ id: String) -> CatalogProduct? {
        index[id].map { products[$0] }
    }

    /// Whether `name` reads as an entitlement a product (active or not) grants, a product's id or
    /// its App Store product id, the way a person or an app comparing loosely would read it: the
    /// same once case, width, marks, punctuation, characters that show as nothing, doubled letters
    /// and the digits and pairs that pass for letters are set aside (`vip.`, `v-i-p`, `VIP_MONTH`,
    /// `swift-1O1`, `5vvift-l01`), or holding one of them as whole words between `-`, `_` and `.`
    /// (`vip-lifetime`, `swift-101-ios`; not `vipassana`, `tv-ipad`). No rule of this kind is
    /// complete: an app must compare entitlements exactly. A product the catalog does not know
    /// must not be named so (its paid order would grant its id for ever: `CreateOrderInput`), nor
    /// does an order of one grant it (`Entitlements.rule`).
    public func grantsLike(_ name: String) -> Bool {
        let words = Self.words(name)
        if skeletons.contains(words.joined()) { return true }
        return nameWords.contains { Self.holds(words, $0) }
    }

    /// Whether `name` reads as `catalogName` the way `grantsLike` reads it against a catalog that
    /// gives that one name.
    static func reads(_ name: String, as catalogName: String) -> Bool {
        let words = Self.words(name)
        let catalogWords = Self.words(catalogName)
        if words.joined() == catalogWords.joined() { return true }
        return catalogWords.joined().count >= 3 && holds(words, catalogWords)
    }

    /// The binding's reading of a product sold outside the catalog (`BindingStore.bindProductTerms`):
    /// the first of `names` it reads as.
    public static let nameReading: NameReading = { id, names in names.first { reads(id, as: $0) } }

    /// Whether `words` hold `catalogName`'s words, one after the other.
    private static func holds(_ words: [String], _ catalogName: [String]) -> Bool {
        !catalogName.isEmpty && words.count >= catalogName.count
            && (0...(words.count - catalogName.count)).contains { Array(words[$0..<$0 + catalogName.count]) == catalogName }
    }

    /// `name` as `grantsLike` reads it, word by word (words between `-`, `_`, `.` and spaces):
    /// lower-case letters and digits after compatibility forms, marks and invisible characters;
    /// digits read as the letters they pass for (`0` o, `1` i, `2` z, `3` e, `4` a, `5` s, `7` t,
    /// `8` b, `9` g), `l` as `i`, `vv` as `w`, `rn` as `m`, and a letter doubled as one.
    static func words(_ name: String) -> [String] {
        let visible = String(String.UnicodeScalarView(name.precomposedStringWithCompatibilityMapping.unicodeScalars
            .filter { !HiddenCharacters.isHidden($0) }))
        let folded = visible.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .precomposedStringWithCompatibilityMapping.lowercased()
        let lookAlikes: [Character: Character] = ["0": "o", "1": "i", "l": "i", "2": "z", "3": "e", "4": "a", "5": "s",
                                                  "7": "t", "8": "b", "9": "g"]
        return folded.split { !($0.isLetter || $0.isNumber) }.map { word in
            var text = String(word.map { lookAlikes[$0] ?? $0 })
            text = text.replacingOccurrences(of: "vv", with: "w").replacingOccurrences(of: "rn", with: "m")
            var collapsed = ""
            for character in text where character != collapsed.last { collapsed.append(character) }
            return collapsed
        }
    }

    static func skeleton(_ name: String) -> String { words(name).joined() }

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
        let bytes: [UInt8]
        do {
            bytes = try OperatorFile.read(path, maximumBytes: maximumFileBytes)
        } catch {
            switch error {
            case .tooLarge: throw CatalogError(message: "the catalog file is larger than \(maximumFileBytes) bytes")
            case .notRegular: throw CatalogError(message: "GATEWAY_CATALOG is not a regular file (a FIFO, a device, a socket or a directory): \(path)")
            case .missing, .unreadable: throw CatalogError(message: "cannot read the catalog file \(path)")
            }
        }
        return try parse(bytes)
    }

    /// Validates a catalog document: every rule broken is named with its product.
    public static func parse(_ bytes: [UInt8]) throws(CatalogError) -> Catalog {
        let document: [String: JSONValue]
        do {
            document = try JSONValue.parseObject(bytes)
        } catch {
            let message =
                switch error.reason {
                case .duplicateKey: "the catalog repeats a JSON key in one object"
                case .invalidUTF8: "the catalog is not UTF-8 (at byte \(error.offset))"
                case .notAnObject where bytes.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }): "the catalog file is empty"
                case .notAnObject: "the catalog is not a JSON object"
                // A file cut short (written in place rather than moved in) ends mid-document.
                default: "the catalog is not valid JSON at byte \(error.offset) of \(bytes.count)"
                }
            throw CatalogError(message: message)
        }
        guard case .array(let entries)? = document["products"] else {
            throw CatalogError(message: "the catalog must have a \"products\" array")
        }
        // Every problem of every product, in file order, in one message: an operator fixes the
        // file once instead of once per start.
        var problems: [String] = []
        var products: [CatalogProduct] = []
        var seen: Set<String> = []
        var seenApple: Set<String> = []
        for (position, entry) in entries.enumerated() {
            guard let product = self.product(entry, position: position, problems: &problems) else { continue }
            guard seen.insert(product.id).inserted else {
                problems.append("product \"\(product.id)\": id appears more than once")
                continue
            }
            if let apple = product.appleProductID, !seenApple.insert(apple).inserted {
                problems.append("product \"\(product.id)\": apple_product_id is another product's too")
                continue
            }
            products.append(product)
        }
        guard problems.isEmpty else { throw CatalogError(message: problems.joined(separator: "; ")) }
        return Catalog(products: products)
    }

    /// The product `entry` describes, or nil with each rule it breaks appended to `problems`.
    private static func product(_ entry: JSONValue, position: Int, problems: inout [String]) -> CatalogProduct? {
        guard case .object(var fields) = entry else {
            problems.append("product #\(position + 1): must be a JSON object")
            return nil
        }
        guard let id = fields.removeValue(forKey: "id")?.stringValue, isValidID(id) else {
            problems.append("product #\(position + 1): id must be 1 to 32 of 0-9 A-Z a-z _ . -")
            return nil
        }
        let name = "product \"\(id)\""
        let before = problems.count
        var amount = 0
        if case .int(let value)? = fields.removeValue(forKey: "amount"), (1...1_000_000_000).contains(value) {
            amount = value
        } else {
            problems.append("\(name): amount must be an integer number of fen from 1 to 1000000000")
        }
        var description = ""
        if let text = fields.removeValue(forKey: "description")?.stringValue,
           (1...127).contains(text.utf8.count),
           !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            description = text
        } else {
            problems.append("\(name): description must be 1 to 127 bytes of UTF-8 without control characters")
        }
        var active = true
        if let value = fields.removeValue(forKey: "active") {
            if case .bool(let flag) = value { active = flag } else { problems.append("\(name): active must be true or false") }
        }
        var appleProductID: String?
        if let value = fields.removeValue(forKey: "apple_product_id") {
            if let text = value.stringValue, isValidAppleProductID(text) {
                appleProductID = text
            } else {
                problems.append("\(name): apple_product_id must be 1 to 100 of 0-9 A-Z a-z _ . -")
            }
        }
        var entitlement: String?
        if let value = fields.removeValue(forKey: "entitlement") {
            if let text = value.stringValue, isValidID(text) {
                entitlement = text
            } else {
                problems.append("\(name): entitlement must be 1 to 32 of 0-9 A-Z a-z _ . -")
            }
        }
        let kind = self.kind(type: fields.removeValue(forKey: "type"), period: fields.removeValue(forKey: "period"),
                             name: name, problems: &problems)
        guard problems.count == before, let kind else { return nil }
        return CatalogProduct(id: id, amount: amount, description: description, active: active,
                              appleProductID: appleProductID, kind: kind, entitlement: entitlement, extra: fields)
    }

    /// `"type"` and `"period"` together: a membership needs a period, nothing else takes one.
    private static func kind(type: JSONValue?, period: JSONValue?, name: String, problems: inout [String]) -> CatalogProduct.Kind? {
        let typeName: String
        switch type {
        case nil: typeName = "course"
        case .string(let text)? where ["course", "membership", "consumable"].contains(text): typeName = text
        default:
            problems.append("\(name): type must be \"course\", \"membership\" or \"consumable\"")
            return nil
        }
        if typeName != "membership" {
            guard period == nil else {
                problems.append("\(name): period is for a membership only (add \"type\":\"membership\")")
                return nil
            }
            return typeName == "course" ? .course : .consumable
        }
        guard let period else {
            problems.append("\(name): a membership needs a period (P1M, P3M, P1Y; PnD, PnW, PnM or PnY)")
            return nil
        }
        guard let text = period.stringValue, let parsed = MembershipPeriod(text) else {
            problems.append("\(name): period must be one ISO 8601 unit, PnD, PnW, PnM or PnY, of up to 10 years (P1M, P3M, P1Y)")
            return nil
        }
        return .membership(parsed)
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
        // Coins the business counts: on iOS a consumable, which StoreKit may sell several at once.
        CatalogProduct(id: "coins-60", amount: 600, description: "60 学币", appleProductID: "com.example.coins.60",
                       kind: .consumable),
        CatalogProduct(id: "vip-month", amount: 3000, description: "VIP 月卡", kind: .membership(MembershipPeriod("P1M")!),
                       entitlement: "vip"),
        CatalogProduct(id: "vip-year", amount: 29800, description: "VIP 年卡", kind: .membership(MembershipPeriod("P1Y")!),
                       entitlement: "vip"),
        // The same membership on iOS: auto-renewable subscriptions of one group in the embedded App Store.
        CatalogProduct(id: "vip-month-ios", amount: 3000, description: "VIP 月卡（iOS 自动续期）", appleProductID: "com.example.vip.monthly",
                       kind: .membership(MembershipPeriod("P1M")!), entitlement: "vip"),
        CatalogProduct(id: "vip-year-ios", amount: 29800, description: "VIP 年卡（iOS 自动续期）", appleProductID: "com.example.vip.yearly",
                       kind: .membership(MembershipPeriod("P1Y")!), entitlement: "vip"),
    ])
}
