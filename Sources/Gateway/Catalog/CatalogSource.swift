// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization

/// The catalog in force, replaced whole on reload: a request sees the old catalog or the new one,
/// never a mix. A file that does not validate leaves the old one in force and says why.
public final class CatalogSource: Sendable {
    /// The file reloads read (`GATEWAY_CATALOG`); nil for a fixed catalog (demo mode, tests).
    public let path: String?
    private let current: Mutex<Catalog>
    /// The catalog a reload is binding, until it is in force or refused: a create checks its
    /// product id against it too (`readsAsACatalogName`).
    private let pending = Mutex<Catalog?>(nil)
    /// The terms the database holds for sold products, which entitlements are computed from where
    /// this catalog differs (`Catalog.holding`).
    public let recorded = RecordedTerms()

    public init(_ catalog: Catalog, path: String?) {
        self.path = path
        current = Mutex(catalog)
    }

    public var catalog: Catalog { current.withLock { $0 } }

    /// Whether `productID`, no product of the catalog in force, reads as a name it or the catalog
    /// a reload is binding gives (`Catalog.grantsLike`). A create checks this once its order is
    /// stored and before it can be paid: its first check read the catalog of its request, and a
    /// reload's scan of the orders' product ids may have run between that check and the insert.
    /// Whatever the interleaving, the order is either seen by the scan (the reload is refused) or
    /// sees the new catalog here (the create is refused before any prepay).
    public func readsAsACatalogName(_ productID: String) -> Bool {
        func reads(_ catalog: Catalog) -> Bool { catalog.product(productID) == nil && catalog.grantsLike(productID) }
        if reads(catalog) { return true }
        guard let binding = pending.withLock({ $0 }) else { return false }
        return reads(binding)
    }

    /// Reads the file again and, with `store`, binds what its products grant there
    /// (`Catalog.bind`: a sold product's grant cannot change); on success the new catalog is in
    /// force for every later request.
    /// - Returns: the new catalog, or why the old one stays.
    @discardableResult
    public func reload(binding store: (any BindingStore)? = nil, at: Date = Date()) async -> Result<Catalog, CatalogError> {
        guard let path else { return .success(catalog) }
        let fresh: Catalog
        do {
            fresh = try Catalog.load(path: path)
        } catch {
            return .failure(error)
        }
        if let store {
            pending.withLock { $0 = fresh }
            defer { pending.withLock { $0 = nil } }
            do throws(StorageError) {
                if let refusal = try await fresh.bind(in: store, at: at) { return .failure(refusal) }
                current.withLock { $0 = fresh }
                return .success(fresh)
            } catch {
                return .failure(CatalogError(
                    message: "what its products grant could not be checked against the database (\(error.shortDescription))"))
            }
        }
        current.withLock { $0 = fresh }
        return .success(fresh)
    }
}

extension CatalogSource {
    /// Registers what this source re-reads on SIGHUP: the catalog file, bound in `store`. A new
    /// catalog is logged with its product count; a bad one is logged with why, and the old one stays.
    public func addReloadHooks(to hooks: ReloadHooks, logger: Logger, binding store: (any BindingStore)? = nil,
                               now: @escaping @Sendable () -> Date = { Date() }) {
        let catalog = self
        hooks.add("catalog") {
            guard let path = catalog.path else { return true }
            switch await catalog.reload(binding: store, at: now()) {
            case .success(let fresh):
                logger.notice("catalog reloaded", ["path": path, "products": String(fresh.products.count)])
                return true
            case .failure(let error):
                logger.error("catalog reload refused; the previous catalog stays in force", ["path": path, "reason": "\(error)"])
                return false
            }
        }
    }
}
