// SPDX-License-Identifier: Apache-2.0
import HTTP
import Observability

/// Subscription offers for the iOS app: the signature StoreKit needs to redeem a promotional offer.
/// 404 while App Store purchases are off, as the other iOS routes.
extension GatewayAPI {
    func registerOffers(in router: inout HTTPRouter) {
        router.add(.post, "/v1/iap/offers/signature", options: Self.jsonRoute(maxBodyBytes: 4096)) { request in
            guard let iap = self.services.iap else { return Self.error(.notFound) }
            return try await self.handle(request, scopes: [.client, .app]) { caller in
                let input = try OfferSignatureInput(json: request.body, user: caller.appUser)
                let product = try iap.offerProduct(input)
                // Counted once the request is valid, with creates: a signature is a step towards a
                // purchase, and each one is a fresh nonce the App Store accepts once.
                if let user = caller.appUser, let retryAfter = self.services.context.userLimits.admitCreate(user) {
                    self.services.context.instruments.createsLimited.increment()
                    throw APIError.rateLimited(retryAfter: retryAfter,
                                               "this user created \(self.services.context.userLimits.createsPerMinute) orders "
                                                   + "or offer signatures in the last minute")
                }
                return Self.json(iap.offerSignature(input, product: product))
            }
        }
    }
}
