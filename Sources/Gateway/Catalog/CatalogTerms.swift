// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension CatalogProduct {
    /// What it grants, as the database keeps it once an order names it (`BindingStore`):
    /// `course swift-101`, `membership P1M vip`, `consumable`. Price and description may change
    /// freely; these may not, once sold.
    public var terms: ProductTerms {
        let text =
            switch kind {
            case .course: "course \(entitlement)"
            case .membership(let period): "membership \(period.text) \(entitlement)"
            case .consumable: "consumable"
            }
        // A consumable grants nothing, yet the catalog reads ids against its entitlement too
        // (`Catalog.grantsLike`): a name it gives.
        let consumable = if case .consumable = kind { [entitlement] } else { [String]() }
        return ProductTerms(productID: id, terms: text, appleProductID: appleProductID, otherNames: consumable)
    }
}

extension Catalog {
    /// This catalog with each sold product granting what the database holds for it (`recorded`:
    /// product id → terms on record, `RecordedTerms`): itself when they agree, as they do wherever
    /// this catalog is the one bound. A product the database holds other terms for (another
    /// instance's reload changed it, unsold, and sold it), or that this catalog lacks, takes the
    /// recorded terms; terms this version cannot read leave the product as it is.
    public func holding(_ recorded: [String: String]) -> Catalog {
        var changed: [CatalogProduct] = []
        for (id, terms) in recorded {
            let product = self.product(id)
            guard product?.terms.terms != terms, let (kind, entitlement) = Self.grant(ofTerms: terms, productID: id) else {
                continue
            }
            var held = product ?? CatalogProduct(id: id, amount: 1, description: id, active: false)
            held.kind = kind
            held.entitlement = entitlement
            changed.append(held)
        }
        guard !changed.isEmpty else { return self }
        let ids = Set(changed.map(\.id))
        return Catalog(products: products.filter { !ids.contains($0.id) } + changed)
    }

    /// What terms on record grant (`CatalogProduct.terms`' text read back): `course swift-101`,
    /// `membership P1M vip`, `consumable` (granting nothing; its entitlement is its id).
    static func grant(ofTerms terms: String, productID: String) -> (CatalogProduct.Kind, String)? {
        let parts = terms.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        switch parts.first {
        case "course" where parts.count == 2 && isValidID(parts[1]): return (.course, parts[1])
        case "membership" where parts.count == 3 && isValidID(parts[2]):
            return MembershipPeriod(parts[1]).map { (.membership($0), parts[2]) }
        case "consumable" where parts.count == 1: return (.consumable, productID)
        default: return nil
        }
    }

    /// What a new order naming `productID` is sold under, for the store to check against the
    /// terms bound in the database (`SaleTerms`).
    public func saleTerms(_ productID: String?) -> SaleTerms {
        guard let productID, !productID.isEmpty else { return .unchecked }
        return product(productID).map { .catalog($0.terms.terms) } ?? .outsideCatalog(reading: Self.nameReading)
    }

    /// Binds every product's terms in `store` (`BindingStore.bindProductTerms`): nil when the
    /// catalog may be used, else the refusal naming each sold product whose grant it changes.
    /// Entitlements are computed from the catalog whenever they are read, so a sold month's
    /// pass made a year would give a year to everyone who paid for a month, and a course made a
    /// consumable would take it from everyone who bought it.
    public func bind(in store: any BindingStore, at: Date) async throws(StorageError) -> CatalogError? {
        let catalog = self
        return Self.refusal(try await store.bindProductTerms(
            products.map(\.terms), at: at, reading: Self.nameReading,
            // An App Store purchase recorded while no product sold its App Store id becomes that
            // product's sale once one does, its grant fixed from then on and announced.
            adopting: { order in
                let event = NewOrderEvent(
                    kind: "appstore_product",
                    detail: "credited to catalog product \(order.productID ?? "-"), which now sells its App Store product "
                        + (order.appleProductID ?? "-"), at: at)
                return (event, EntitlementEvents.marker(for: order, catalog: catalog, at: at))
            }))
    }

    /// The refusal naming each sold product whose grant `changes` would change, or nil for none
    /// (serve's words, and doctor's for what serve would refuse).
    public static func refusal(_ changes: [ProductTermsChange]) -> CatalogError? {
        guard !changes.isEmpty else { return nil }
        let lines = changes.map { change in
            if let apple = change.appStore {
                let now = apple.given.map { "this catalog gives it the App Store product id \($0) instead" }
                    ?? "this catalog gives it no App Store product id"
                let renewals = apple.takenBy.map { "credited to \($0), granting what \($0) grants" }
                    ?? "credited to no product, granting nothing"
                // A subscription renews under the id it was bought as; a course or a consumable is
                // bought again under it by whoever buys it next, while the app still sells it.
                let charged = change.recorded.hasPrefix("membership ")
                    ? "the renewals Apple keeps charging" : "the purchases the App Store goes on making"
                return "\(change.productID) was sold through the App Store as \(apple.soldAs); \(now)"
                    + (apple.takenBy.map { " and \(apple.soldAs) to \($0)" } ?? "")
                    + ", so \(charged) under \(apple.soldAs) would be \(renewals)"
            }
            if let name = change.readsAs {
                return "\(change.productID) was sold outside the catalog as \(Self.termsInWords(change.recorded)); this "
                    + "catalog gives the name \(name), which \(change.productID) reads as, and a product the catalog does "
                    + "not know that reads as one of its names grants nothing"
            }
            let now = change.given.map { "this catalog makes it " + Self.termsInWords($0) }
                ?? "this catalog deletes it (its buyers would be left a course's grant of its id)"
            return "\(change.productID) was sold as \(Self.termsInWords(change.recorded)); \(now)"
        }
        var remedy = ". What a sold product grants cannot change (its buyers' entitlements are computed from it): sell the new "
            + "terms under a new product id, and retire the old one with \"active\": false rather than deleting it"
        if changes.contains(where: { $0.readsAs != nil }) {
            remedy += "; give new products ids and entitlements that no product sold outside the catalog reads as"
        }
        if changes.contains(where: { $0.appStore != nil }) {
            remedy += "; a product sold through the App Store keeps its apple_product_id (retired, it still credits renewals)"
        }
        return CatalogError(message: lines.joined(separator: "; ") + remedy)
    }

    /// `membership P1M vip` as "a membership of P1M granting vip".
    static func termsInWords(_ terms: String) -> String {
        let parts = terms.split(separator: " ").map(String.init)
        switch parts.first {
        case "course" where parts.count == 2: return "a course granting \(parts[1])"
        case "membership" where parts.count == 3: return "a membership of \(parts[1]) granting \(parts[2])"
        case "consumable": return "a consumable (granting nothing)"
        default: return "\"\(terms)\""
        }
    }
}
