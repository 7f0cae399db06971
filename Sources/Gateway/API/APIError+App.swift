// SPDX-License-Identifier: Apache-2.0

/// The error answers of app tokens, the catalog and the per-user limits.
extension APIError {
    /// 401: an app token that broke a rule; the message names the rule, never the token.
    static func invalidToken(_ error: AppTokenError) -> APIError {
        APIError(status: 401, code: "invalid_token", message: error.description)
    }

    /// 400: an app token may not choose this field (the catalog and the token decide it).
    static func fieldNotAllowed(_ field: String) -> APIError {
        APIError(status: 400, code: "field_not_allowed", message: "\(field) is decided by the catalog and the token, not the app",
                 field: field)
    }

    /// 400: the product is not in the catalog (or, for an app token, not active).
    static let unknownProduct = APIError(status: 400, code: "unknown_product", message: "no active catalog product with that product_id",
                                         field: "product_id")

    /// 400: a client-token create gave a catalog product another amount than the catalog's.
    static func amountMismatch(catalog amount: Int) -> APIError {
        APIError(status: 400, code: "amount_mismatch",
                 message: "amount differs from the catalog's price for this product_id (\(amount) fen)", field: "amount")
    }

    /// 503: the product's terms on record in the database are not those of the catalog this
    /// gateway priced the order from: another instance's catalog, or a reload's, was bound since
    /// and changed or removed the product (it was unsold), or gave a name the product id (sold
    /// outside the catalog) reads as. Nothing was written; this instance sells it again once its
    /// catalog is reloaded to the same file: no `Retry-After`, since no time on its own mends it.
    static let catalogChanged = APIError(
        status: 503, code: "catalog_changed",
        message: "another gateway's catalog (or a reload's) changed what this product_id grants, or gave a name it reads as, "
            + "after this gateway's catalog was loaded; nothing was written: the same request succeeds once this gateway's "
            + "catalog is reloaded, or on a gateway that has been", field: "product_id")

    /// 404: an app token asked about another user (the same answer whether that user exists or
    /// not, as another user's order is `order_not_found`).
    static let userNotFound = APIError(status: 404, code: "user_not_found", message: "no user with that user_id for this token")

    /// 429: a per-user limit (creates per minute, open waits) was reached.
    static func rateLimited(retryAfter: Int, _ message: String) -> APIError {
        APIError(status: 429, code: "rate_limited", message: message, retryAfter: max(1, retryAfter))
    }
}
