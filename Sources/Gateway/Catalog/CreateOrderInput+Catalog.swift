// SPDX-License-Identifier: Apache-2.0
import JSON
import StorageCore

/// Creates that name a catalog product: the catalog decides the price.
extension CreateOrderInput {
    /// A client-token body (the trusted backend). `product_id` naming a catalog product fills a
    /// missing amount or description from it, and an amount other than its price is
    /// `amount_mismatch`; a `product_id` the catalog does not know needs both given, as before,
    /// and must not read as a catalog product or an entitlement catalog products grant (`vip`,
    /// `VIP`, `VIP-MONTH`): a paid
    /// order of a product the catalog does not know grants its id for ever, so a backend passing a
    /// user's product id through would sell a membership for life at any price.
    init(clientJSON body: [UInt8], catalog: Catalog) throws(APIError) {
        let object = try Self.members(of: body)
        let productID = object["product_id"]?.stringValue
        let product = productID.flatMap { catalog.product($0) }
        if product == nil, let productID, !productID.isEmpty {
            // Neither the backend nor the catalog said what this costs.
            if object["amount"] == nil || object["description"] == nil { throw .unknownProduct }
            if catalog.grantsLike(productID) { throw Self.readsAsACatalogName }
        }
        try self.init(members: object, product: product)
        terms = catalog.saleTerms(productID)
    }

    /// A `product_id` the catalog does not have that reads as one of its names.
    static let readsAsACatalogName = APIError.invalid(
        "product_id", "product_id is not a catalog product but reads as one, or as an entitlement catalog products grant: "
            + "order the catalog's product")

    /// The fields an app-token body may carry; everything else about the order is decided by the
    /// catalog (amount, description) or the token (user_id), or left at its default (expires_in).
    static let appFields: Set<String> = ["product_id", "out_trade_no", "attach", "client_ip", "app", "openid", "redirect_url"]
    static let appForbiddenFields = ["amount", "description", "user_id", "expires_in"]

    /// An app-token body: `{"product_id", "out_trade_no"?, "attach"?, "client_ip"?, "app"?,
    /// "openid"?, "redirect_url"?}` for `user`.
    /// Without `client_ip`, `peerIP` (the request's address, see `ClientAddressResolver`) is sent.
    init(appJSON body: [UInt8], user: String, peerIP: String?, catalog: Catalog) throws(APIError) {
        let object = try Self.members(of: body)
        if let forbidden = Self.appForbiddenFields.first(where: { object[$0] != nil }) { throw .fieldNotAllowed(forbidden) }
        if let unknown = object.keys.sorted().first(where: { !Self.appFields.contains($0) }) {
            throw .invalid(Self.printableField(unknown), "unknown field")
        }
        guard let productID = try Self.string(object, "product_id", required: true, bytes: 1...32) else {
            throw .invalid("product_id", "product_id is required")
        }
        guard let product = catalog.product(productID), product.active else { throw .unknownProduct }
        let clientIP: String
        if let given = try Self.string(object, "client_ip", required: false, bytes: 2...45) {
            guard Self.isIPAddress(given) else { throw .invalid("client_ip", "client_ip must be an IPv4 or IPv6 address") }
            clientIP = given
        } else if let peerIP {
            clientIP = peerIP
        } else {
            throw .invalid("client_ip", "client_ip is required: the request's address is unknown")
        }
        let outTradeNo = try Self.outTradeNo(object)
        let attach = try Self.string(object, "attach", required: false, bytes: 0...127)
        let (app, openID, redirectURL) = try Self.channel(object)
        self.init(amount: product.amount, description: product.description, clientIP: clientIP,
                  outTradeNo: outTradeNo, attach: attach, userID: user, productID: product.id,
                  app: app, openID: openID, redirectURL: redirectURL)
        clientIPFromPeer = !object.keys.contains("client_ip") || object["client_ip"] == .null
        terms = .catalog(product.terms.terms)
    }
}
