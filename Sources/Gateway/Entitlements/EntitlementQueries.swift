// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// "What may this user open?": the user's paid orders (and the states of their App Store
/// subscriptions) read fresh from the store and handed to `Entitlements` with the catalog in force. Nothing is cached, so the answer is never older than
/// the last committed payment or refund.
public struct EntitlementQueries: OrderFlow {
    public let context: GatewayContext

    public init(context: GatewayContext) {
        self.context = context
    }

    /// The user's entitlements, computed now from every payment the store holds for them.
    public func entitlements(of userID: String) async throws(APIError) -> Entitlements {
        guard UserID.isValid(userID) else { throw .invalid("user_id", "user_id must be \(UserID.rule)") }
        let catalog = context.catalog.catalog
        return try await storage { () throws(StorageError) in
            try await Entitlements.read(userID: userID, from: self.store, catalog: catalog, recorded: self.context.catalog.recorded)
        }
    }

    /// `GET /v1/users/{user_id}/entitlements`' answer. An app token may ask only of its own user;
    /// another user is `user_not_found`, as another user's order is `order_not_found`.
    public func json(of userID: String, owner: String?) async throws(APIError) -> [UInt8] {
        if let owner, !sameUser(owner, userID) { throw .userNotFound }
        return try await entitlements(of: userID).json(userID: userID, at: now())
    }
}
