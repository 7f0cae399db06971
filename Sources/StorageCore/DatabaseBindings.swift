// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What a database is bound to once it has been used: whose it is (demo mode's, or one merchant's
/// in production), and what each product sold from it grants. A gateway refuses to start on a
/// database bound otherwise than its configuration says, and a catalog that changes what a sold
/// product grants, because either would change the meaning of payments already on record: demo
/// mode's simulated payments delivered as real ones, or a month's pass paid for becoming a year.
public protocol BindingStore: Sendable {
    /// Records `owner` as the database's owner unless one is on record; answers the one on record
    /// (the one given, the first time).
    func bindOwner(_ owner: DatabaseOwner, at: Date) async throws(StorageError) -> DatabaseOwner

    /// In one transaction: each product's terms are recorded where none are on record, and replace
    /// those on record for a product no order names; terms that differ from those on record for a
    /// product an order names are answered, and then nothing is recorded. With `reading`, a
    /// product sold outside the catalog that reads as a name the catalog gives for the first time
    /// (it would grant nothing from then on) is answered too (`ProductTerms.decide`). With
    /// `adopting`, when nothing is refused, the App Store purchases recorded without a product
    /// (`unknown_product`) whose App Store product id a product gives for the first time are
    /// credited to that product, each with what `adopting` makes for it, in the same transaction.
    func bindProductTerms(_ terms: [ProductTerms], at: Date, reading: NameReading?, adopting: Adoption?)
        async throws(StorageError) -> [ProductTermsChange]
}

extension BindingStore {
    public func bindProductTerms(_ terms: [ProductTerms], at: Date, reading: NameReading? = nil) async throws(StorageError)
        -> [ProductTermsChange]
    {
        try await bindProductTerms(terms, at: at, reading: reading, adopting: nil)
    }
}

/// What the catalog that priced a new order said its product grants, for `OrderStore.create` to
/// hold against the terms the database has bound for it, in the order's own transaction. With
/// several instances, or a reload racing a create, the catalog a request was read against may no
/// longer be the one bound: a product another instance's reload changed or forgot (it was unsold)
/// would otherwise be sold under terms the database does not hold, and its buyers granted what
/// the bound catalog says (a course of its id, for ever, for a forgotten membership).
public enum SaleTerms: Sendable, Hashable {
    /// Not checked: an order naming no product, or a store used without a catalog.
    case unchecked
    /// A product of the catalog, granting these terms (`ProductTerms.terms`).
    case catalog(String)
    /// A product of the catalog granting `terms`, sold through the App Store as `appleProductID`:
    /// the name on record for that id, when there is one, must be this product too (another
    /// instance's catalog may have given the id to another product since, and its purchases are
    /// that product's sales everywhere once every catalog says so).
    case appStoreProduct(terms: String, appleProductID: String)
    /// A product id the catalog does not have: none may be on record for it, nor may it read
    /// (`reading`, the catalog's rule) as a name the database holds: another instance's catalog
    /// gave that name since, and a paid order of it would grant its id for ever there and nothing
    /// once every catalog gives the name.
    case outsideCatalog(reading: NameReading?)
    /// An order made for an App Store purchase of this App Store product id, which the catalog
    /// does not sell: no product on record may give it (another instance's catalog sells it since,
    /// and its purchases become that product's sales only through a binding that gives it first).
    case unknownAppleProduct(String)

    /// Whether the check reads every name on record, not only the product's own terms.
    package var readsNames: Bool {
        if case .outsideCatalog(reading: _?) = self { true } else { false }
    }

    /// By what is checked: a reading rule is the catalog's one rule, compared by its presence.
    public static func == (lhs: SaleTerms, rhs: SaleTerms) -> Bool {
        switch (lhs, rhs) {
        case (.unchecked, .unchecked): true
        case (.catalog(let left), .catalog(let right)): left == right
        case (.appStoreProduct(let left, let leftID), .appStoreProduct(let right, let rightID)): left == right && leftID == rightID
        case (.outsideCatalog, .outsideCatalog): lhs.readsNames == rhs.readsNames
        case (.unknownAppleProduct(let left), .unknownAppleProduct(let right)): left == right
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .unchecked: hasher.combine(0)
        case .catalog(let terms): hasher.combine(1); hasher.combine(terms)
        case .appStoreProduct(let terms, let id): hasher.combine(4); hasher.combine(terms); hasher.combine(id)
        case .outsideCatalog: hasher.combine(2); hasher.combine(readsNames)
        case .unknownAppleProduct(let id): hasher.combine(3); hasher.combine(id)
        }
    }
}

/// What crediting an App Store purchase recorded without a product (`unknown_product`) to the
/// catalog product `order.productID` now names writes beside the change: its timeline line, and
/// the `entitlement.changed` row when the product grants something.
public typealias Adoption = @Sendable (_ order: OrderRecord) -> (event: NewOrderEvent, outbox: OutboxEvent?)

/// How the catalog reads a product id it does not have against names its products give (their
/// ids and entitlements): the name `id` reads as, or nil. A product the catalog does not know
/// that reads as one of its names grants nothing (the Gateway's `Catalog.grantsLike`).
public typealias NameReading = @Sendable (_ id: String, _ names: [String]) -> String?

/// Whose a database is: demo mode's (whose payments the simulator made) or a merchant's.
public struct DatabaseOwner: Sendable, Hashable, CustomStringConvertible {
    public var demo: Bool
    public var mchID: String

    public init(demo: Bool, mchID: String) {
        self.demo = demo
        self.mchID = mchID
    }

    /// As the database keeps it: `demo 1900000109`, `production 1230000109`.
    public var recorded: String { (demo ? "demo " : "production ") + mchID }

    public init?(recorded: String) {
        let parts = recorded.split(separator: " ", maxSplits: 1).map(String.init)
        guard parts.count == 2, parts[0] == "demo" || parts[0] == "production", !parts[1].isEmpty else { return nil }
        self.init(demo: parts[0] == "demo", mchID: parts[1])
    }

    public var description: String { demo ? "demo mode (merchant \(mchID), the simulator's payments)" : "merchant \(mchID)" }
}

/// What a catalog product grants, as the database keeps it: `course swift-101`, `membership P1M vip`,
/// `consumable`. Built by the catalog (`CatalogProduct.terms`); compared as text.
public struct ProductTerms: Sendable, Hashable {
    public var productID: String
    public var terms: String
    /// Its App Store product id: not part of its terms (an App Store order keeps the product it was
    /// credited to), but a name the catalog gives, which a product sold outside it may read as.
    public var appleProductID: String?
    /// The other names the catalog reads a product id against that the terms do not say (a
    /// consumable's `entitlement`).
    public var otherNames: [String]

    public init(productID: String, terms: String, appleProductID: String? = nil, otherNames: [String] = []) {
        self.productID = productID
        self.terms = terms
        self.appleProductID = appleProductID
        self.otherNames = otherNames
    }
}

/// A product whose terms on record (an order names it) differ from those the catalog gives now,
/// or (`given` nil) that the catalog no longer has, or (`readsAs`) that was sold outside the
/// catalog and reads as a name the catalog now gives, so that it would grant nothing, or
/// (`appStore`) that was sold through the App Store and would lose the App Store product id its
/// purchases were credited through (`recorded` and `given` then both its terms, unchanged).
public struct ProductTermsChange: Sendable, Hashable {
    public var productID: String
    public var recorded: String
    public var given: String?
    public var readsAs: String?
    public var appStore: AppStoreIDChange?

    public init(productID: String, recorded: String, given: String?, readsAs: String? = nil, appStore: AppStoreIDChange? = nil) {
        self.productID = productID
        self.recorded = recorded
        self.given = given
        self.readsAs = readsAs
        self.appStore = appStore
    }

    /// The App Store product id a sold product's App Store purchases were credited through
    /// (`soldAs`), and what the catalog makes of it: the product's App Store product id now
    /// (`given`, nil for none) and the product it gives `soldAs` to instead (`takenBy`, if any).
    /// Apple keeps renewing a subscription under the App Store product id it was bought as, and
    /// each renewal is credited to the product giving that id: to another product, its
    /// subscribers would be granted that product instead; to none, nothing.
    public struct AppStoreIDChange: Sendable, Hashable {
        public var soldAs: String
        public var given: String?
        public var takenBy: String?

        public init(soldAs: String, given: String?, takenBy: String?) {
            self.soldAs = soldAs
            self.given = given
            self.takenBy = takenBy
        }
    }
}

extension ProductTerms {
    package func validate() throws(StorageError) {
        try StoreText.validate(productID, terms, appleProductID)
        for name in otherNames { try StoreText.validate(name) }
    }

    /// The key of the row saying a catalog was bound before (`decide`'s `firstBinding` is its absence).
    package static let boundMarker = "catalog"

    /// What a product no catalog had granted to whoever bought it (a client's order may name any
    /// product id): a course of its id.
    package static func outsideTheCatalog(_ productID: String) -> String { "course \(productID)" }

    /// The rule both stores apply inside their transaction, given every product's terms on
    /// record: a product with none on record takes `terms`, unless it was sold before a catalog
    /// had it (then its buyers hold `outsideTheCatalog`'s course, and other terms are a change to
    /// refuse; not on the `firstBinding`, a database's from before bindings, where every product
    /// was sold under the catalog of its day); one whose terms on record differ takes them only if
    /// no order names it (`sold`: a mistake fixed before anyone bought it), else it is a change
    /// to refuse; and a product on record that the catalog no longer has is a change to refuse if
    /// an order names it (its buyers' grant would become a course's: retire it with
    /// `"active": false` instead). Answers the changes (then nothing may be written) and the terms
    /// to write.
    ///
    /// With `reading`, one more change to refuse: a product sold outside the catalog (an order
    /// names it; neither on record nor in `terms`) that reads as a name `terms` give and no terms
    /// on record gave (its buyers' course of its id would become nothing). `soldIDs` (every
    /// product id an order names: a scan of the orders) is read only when `terms` give a new name.
    ///
    /// And a product sold through the App Store keeps the App Store product id its App Store
    /// purchases were credited through (`soldThrough(product, appleID)`: an order of that product
    /// bought as that App Store product): a catalog taking it away, or giving it to another
    /// product, is a change to refuse (`ProductTermsChange.AppStoreIDChange`). Asked only for a
    /// name on record that its product no longer gives.
    ///
    /// `recordedNames` are the names on record beside the terms (`name:` rows), each with the
    /// product that last gave it.
    package static func decide(
        _ terms: [ProductTerms], recorded: [String: String], recordedNames: [String: String] = [:], firstBinding: Bool,
        sold: (String) throws(StorageError) -> Bool,
        soldThrough: (_ productID: String, _ appleProductID: String) throws(StorageError) -> Bool = { _, _ in false },
        reading: NameReading? = nil, soldIDs: () throws(StorageError) -> [String] = { [] }
    ) throws(StorageError) -> (changes: [ProductTermsChange], writes: [ProductTerms], forget: [String]) {
        var changes: [ProductTermsChange] = []
        var writes: [ProductTerms] = []
        for product in terms {
            guard let onRecord = recorded[product.productID] else {
                let held = outsideTheCatalog(product.productID)
                if !firstBinding, product.terms != held, try sold(product.productID) {
                    changes.append(ProductTermsChange(productID: product.productID, recorded: held, given: product.terms))
                } else {
                    writes.append(product)
                }
                continue
            }
            guard onRecord != product.terms else { continue }
            if try sold(product.productID) {
                changes.append(ProductTermsChange(productID: product.productID, recorded: onRecord, given: product.terms))
            } else {
                writes.append(product)
            }
        }
        changes += try appStoreIDChanges(terms, recorded: recorded, recordedNames: recordedNames, soldThrough: soldThrough)
        let given = Set(terms.map(\.productID))
        // A product that leaves unsold is forgotten: sold outside the catalog later, its buyers
        // hold a course of its id, which its old terms must not come back to replace.
        var forget: [String] = []
        for (productID, onRecord) in recorded.sorted(by: { $0.key < $1.key }) where !given.contains(productID) {
            if try sold(productID) {
                changes.append(ProductTermsChange(productID: productID, recorded: onRecord, given: nil))
            } else {
                forget.append(productID)
            }
        }
        if !firstBinding, let reading {
            let namesOnRecord = names(recorded.map { ProductTerms(productID: $0.key, terms: $0.value) })
                .union(recordedNames.keys)
            let newNames = names(terms).subtracting(namesOnRecord).sorted()
            if !newNames.isEmpty {
                let known = given.union(recorded.keys)
                for productID in try soldIDs().sorted() where !known.contains(productID) {
                    guard let name = reading(productID, newNames), reading(productID, namesOnRecord.sorted()) == nil else { continue }
                    changes.append(ProductTermsChange(productID: productID, recorded: outsideTheCatalog(productID), given: nil,
                                                      readsAs: name))
                }
            }
        }
        return changes.isEmpty ? ([], writes, forget) : (changes, [], [])
    }

    /// `decide`'s App Store rule: each name on record that the product which gave it no longer
    /// gives, and that the product's App Store purchases were bought as. (A product the catalog
    /// no longer has is refused as deleted when sold, and its names are forgotten when not.)
    private static func appStoreIDChanges(
        _ terms: [ProductTerms], recorded: [String: String], recordedNames: [String: String],
        soldThrough: (String, String) throws(StorageError) -> Bool
    ) throws(StorageError) -> [ProductTermsChange] {
        let byID = Dictionary(terms.map { ($0.productID, $0) }, uniquingKeysWith: { first, _ in first })
        var changes: [ProductTermsChange] = []
        for (name, productID) in recordedNames.sorted(by: { $0.key < $1.key }) {
            guard let product = byID[productID], product.appleProductID != name, !product.otherNames.contains(name),
                  try soldThrough(productID, name)
            else { continue }
            let takenBy = terms.first { $0.appleProductID == name }?.productID
            changes.append(ProductTermsChange(
                productID: productID, recorded: recorded[productID] ?? product.terms, given: product.terms,
                appStore: ProductTermsChange.AppStoreIDChange(soldAs: name, given: product.appleProductID, takenBy: takenBy)))
        }
        return changes
    }

    /// The key prefix of a name on record beside the terms (`name:<name>`, its value the product
    /// that gave it): an App Store product id or another name (`otherNames`) a catalog gave.
    package static let namePrefix = "name:"

    /// The key of the row holding a product's terms.
    package static func recordKey(_ productID: String) -> String { "product:" + productID }

    /// The keys of the three rows `saleAgrees` needs (beside every product's and name's when
    /// `terms.readsNames`; a key may repeat), or nil when nothing is checked: unchecked terms, or
    /// an order naming no product that was not made for an App Store product.
    package static func saleKeys(_ terms: SaleTerms, _ productID: String?) -> [String]? {
        switch terms {
        case .unchecked: nil
        case .unknownAppleProduct(let id): [boundMarker, namePrefix + id, namePrefix + id]
        case .appStoreProduct(_, let id): productID.map { [boundMarker, recordKey($0), namePrefix + id] }
        case .catalog, .outsideCatalog: productID.map { [boundMarker, recordKey($0), recordKey($0)] }
        }
    }

    /// Whether a new order naming `productID` (empty for none), priced under `terms`, may be
    /// stored, given the rows read in its transaction (`rows`: key and value): those of `saleKeys`,
    /// and every product's and name's when `terms.readsNames`. Always until a
    /// catalog is bound (a database used without one); else a catalog product's terms must be
    /// those on record, and a product sold outside the catalog must have none and read as no name
    /// on record.
    package static func saleAgrees(_ terms: SaleTerms, _ productID: String, rows: [(key: String, value: String)]) -> Bool {
        guard rows.contains(where: { $0.key == boundMarker }) else { return true }
        let recorded = rows.first(where: { $0.key == recordKey(productID) })?.value
        switch terms {
        case .unchecked: return true
        case .unknownAppleProduct(let id): return !rows.contains { $0.key == namePrefix + id }
        case .catalog(let given): return recorded == given
        case .appStoreProduct(let given, let id):
            return recorded == given && rows.first(where: { $0.key == namePrefix + id }).map { $0.value == productID } ?? true
        case .outsideCatalog(let reading):
            guard recorded == nil else { return false }
            guard let reading else { return true }
            let prefix = recordKey("")
            let products = rows.filter { $0.key.hasPrefix(prefix) }
                .map { ProductTerms(productID: String($0.key.dropFirst(prefix.count)), terms: $0.value) }
            let given = rows.filter { $0.key.hasPrefix(namePrefix) }.map { String($0.key.dropFirst(namePrefix.count)) }
            return reading(productID, names(products).union(given).sorted()) == nil
        }
    }

    /// The App Store product ids `terms` give that no `name:` row holds yet (`onRecord`), each with
    /// the product giving it: whose `unknown_product` purchases a binding makes that product's sales.
    package static func newlyGivenAppleIDs(_ terms: [ProductTerms], onRecord: Set<String>) -> [String: String] {
        var given: [String: String] = [:]
        for product in terms {
            if let apple = product.appleProductID, !onRecord.contains(apple) { given[apple] = product.productID }
        }
        return given
    }

    /// The `name:` rows `terms` make: each name the terms do not say, with the product giving it.
    package static func recordedNames(_ terms: [ProductTerms]) -> [(name: String, productID: String)] {
        var seen: Set<String> = []
        return terms.flatMap { product in
            ((product.appleProductID.map { [$0] } ?? []) + product.otherNames).map { ($0, product.productID) }
        }.filter { seen.insert($0.name).inserted }
    }

    /// The names products give: their ids, their App Store product ids, and what their courses and
    /// memberships grant.
    static func names(_ products: [ProductTerms]) -> Set<String> {
        var names = Set(products.map(\.productID)).union(products.compactMap(\.appleProductID))
            .union(products.flatMap(\.otherNames))
        for product in products {
            let parts = product.terms.split(separator: " ")
            switch parts.first {
            case "course" where parts.count == 2: names.insert(String(parts[1]))
            case "membership" where parts.count == 3: names.insert(String(parts[2]))
            default: break
            }
        }
        return names
    }
}

extension OrderRecord {
    /// This App Store purchase, recorded without a product (`unknown_product`), made the sale of
    /// `productID` by a binding (`BindingStore`'s `adopting`): the product named, and its
    /// `unknown_product` flag marked handled, since the catalog has its product now and nothing is
    /// left for a person to decide (the order leaves the attention list and still says what it was).
    package func adopted(by productID: String) -> OrderRecord {
        var order = self
        order.productID = productID
        order.flags = Self.flags(flags, handling: [.unknownProduct]) ?? flags
        return order
    }
}

extension DatabaseOwner {
    package func validate() throws(StorageError) {
        try StoreText.validate(mchID)
    }
}
