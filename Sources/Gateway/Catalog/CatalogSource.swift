// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
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

    /// Reads the file again; on success the new catalog is in force for every later request.
    /// - Returns: the new catalog, or why the old one stays.
    @discardableResult
    public func reload() -> Result<Catalog, CatalogError> {
        guard let path else { return .success(catalog) }
        do {
            let fresh = try Catalog.load(path: path)
            current.withLock { $0 = fresh }
            return .success(fresh)
        } catch {
            return .failure(error)
        }
    }
}

extension CatalogSource {
    /// Registers what this source re-reads on SIGHUP: the catalog file. A new catalog is logged
    /// with its product count; a bad one is logged with why, and the old one stays.
    public func addReloadHooks(to hooks: ReloadHooks, logger: Logger) {
        let catalog = self
        hooks.add("catalog") {
            guard let path = catalog.path else { return }
            switch catalog.reload() {
            case .success(let fresh):
                logger.notice("catalog reloaded", ["path": path, "products": String(fresh.products.count)])
            case .failure(let error):
                logger.error("catalog reload refused; the previous catalog stays in force", ["path": path, "reason": "\(error)"])
            }
        }
    }
}
