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

    public init(_ catalog: Catalog, path: String?) {
        self.path = path
        current = Mutex(catalog)
    }

    public var catalog: Catalog { current.withLock { $0 } }

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
            do throws(StorageError) {
                if let refusal = try await fresh.bind(in: store, at: at) { return .failure(refusal) }
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
