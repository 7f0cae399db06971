// SPDX-License-Identifier: Apache-2.0
import StorageCore
import Synchronization

extension OrderService {
    /// The iOS purchases service, once one was made for this order service (`IAPService.init`);
    /// nil while App Store purchases are off, and then the iOS routes are 404.
    public var iap: IAPService? { iapService.withLock { $0 } }

    func attach(_ iap: IAPService) {
        iapService.withLock { $0 = iap }
    }

    /// `view(_:)` with a storage failure answered as a 500.
    func apiView(_ order: OrderRecord) async throws(APIError) -> OrderView {
        try await storage { () throws(StorageError) in try await self.view(order) }
    }
}
