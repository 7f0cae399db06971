// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Synchronization

/// The terms the database holds for sold products (`BindingStore`), as entitlements read them.
/// With several instances a reload reaches each in turn: until it has, an instance's catalog may
/// say a product grants other terms than those its sales were bound under (another instance's
/// reload changed the unsold product, then sold it), and a buyer's grant would depend on which
/// instance answered. Entitlements are therefore computed from these terms wherever they differ
/// from the catalog in force (`Catalog.holding`).
///
/// A sold product's terms never change once on record (a binding that would change them is
/// refused), so what was read is kept for the process's life. A product with none on record (sold
/// outside the catalog, or a database no catalog was bound to) is asked again after `recheck`: a
/// later catalog may record it, as the course its buyers hold.
public final class RecordedTerms: Sendable {
    private struct Entry {
        var terms: String?
        var readAt: ContinuousClock.Instant
    }

    private let known = Mutex<[String: Entry]>([:])
    private let recheck: Duration
    /// Products without terms are forgotten beyond this many entries: a client's orders may name
    /// any product id.
    private static let limit = 10_000

    public init(recheck: Duration = .seconds(10)) {
        self.recheck = recheck
    }

    /// The terms on record of those of `productIDs` that have some: product id → terms.
    func terms(of productIDs: [String], in store: any EntitlementStore) async throws(StorageError) -> [String: String] {
        let now = ContinuousClock.now
        var found: [String: String] = [:]
        var missing: [String] = []
        known.withLock { known in
            for id in productIDs where found[id] == nil && !missing.contains(id) {
                if let entry = known[id], entry.terms != nil || now - entry.readAt < recheck {
                    if let terms = entry.terms { found[id] = terms }
                } else {
                    missing.append(id)
                }
            }
        }
        guard !missing.isEmpty else { return found }
        let read = try await store.productTerms(missing)
        known.withLock { known in
            if known.count >= Self.limit { known = known.filter { $0.value.terms != nil } }
            for id in missing { known[id] = Entry(terms: read[id], readAt: now) }
        }
        return found.merging(read) { first, _ in first }
    }
}
