// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import JSON
import Observability

/// The iOS app's routes: create an order for StoreKit, report a transaction, Apple's
/// notifications, and the business's answer to a consumption request. All are 404 while App
/// Store purchases are off (APPSTORE_BUNDLE_ID unset).
extension GatewayAPI {
    /// A report may carry a StoreKit 1 app receipt (up to 512 KiB of base64) in its JSON.
    static let reportBodyLimit = 640 * 1024

    func registerIAP(in router: inout HTTPRouter) {
        router.add(.post, "/v1/iap/orders", options: Self.jsonRoute(maxBodyBytes: Self.orderBodyLimit)) { request in
            guard let iap = self.services.iap else { return Self.error(.notFound) }
            return try await self.handle(request, scopes: [.client, .app]) { caller in
                let input = try IAPOrderInput(json: request.body, user: caller.appUser, peerIP: self.peer(request))
                if let user = caller.appUser, let retryAfter = self.services.context.userLimits.admitCreate(user) {
                    self.services.context.instruments.createsLimited.increment()
                    throw APIError.rateLimited(retryAfter: retryAfter,
                                               "this user created \(self.services.context.userLimits.createsPerMinute) orders in the last minute")
                }
                let result = try await iap.createOrder(input)
                return Self.json(result.json, status: result.created ? 201 : 200)
            }
        }
        let reportOptions = HTTPRouteOptions(
            maxBodyBytes: Self.reportBodyLimit,
            payloadTooLarge: ("application/json", APIError.reportTooLarge(limit: Self.reportBodyLimit).json))
        router.add(.post, "/v1/iap/transactions", options: reportOptions) { request in
            guard let iap = self.services.iap else { return Self.error(.notFound) }
            var response = try await self.handle(request, scopes: [.client, .app]) { caller in
                let input = try IAPReportInput(json: request.body, user: caller.appUser)
                // Counted once the request is valid: reports that would reach the store and the App Store.
                if let user = caller.appUser, let retryAfter = self.services.context.userLimits.admitReport(user) {
                    self.services.context.instruments.reportsLimited.increment()
                    var limited = APIError.rateLimited(retryAfter: retryAfter,
                                                       "this user reported \(self.services.context.userLimits.reportsPerMinute) "
                                                           + "transactions in the last minute")
                    limited.finishTransaction = false
                    throw limited
                }
                return Self.json(try await iap.report(input))
            }
            // A refused token or scope says nothing about the transaction: the app keeps it.
            if response.status == 401 || response.status == 403 || response.status == 500 {
                response = Self.keepingTransaction(response)
            }
            return response
        }
        router.add(.put, "/v1/iap/transactions/{transaction_id}/consumption", options: Self.jsonRoute(maxBodyBytes: 4096)) {
            request in
            guard let iap = self.services.iap else { return Self.error(.notFound) }
            return try await self.handle(request, scopes: [.client]) {
                Self.json(try await iap.answerConsumption(transactionID: request.pathParameters["transaction_id"] ?? "",
                                                          body: request.body))
            }
        }
        router.add(.post, "/appstore/notifications", options: HTTPRouteOptions(maxBodyBytes: IAPService.notificationBodyLimit)) {
            request in
            guard let iap = self.services.iap else { return Self.error(.notFound) }
            let (status, body) = await iap.handleNotification(request.body)
            return Self.json(body, status: status)
        }
    }

    /// The app's address: the TCP peer, or what a trusted proxy says.
    func peer(_ request: HTTPServerRequest) -> String? {
        clientAddresses.clientIP(peer: request.remoteAddress?.host, forwardedFor: request.headers.values(for: "X-Forwarded-For"))
    }

    /// Adds `"finish_transaction":false` to an error answer that lacks it.
    static func keepingTransaction(_ response: HTTPServerResponse) -> HTTPServerResponse {
        guard var object = try? JSONValue.parseObject(response.body), object["finish_transaction"] == nil else { return response }
        object["finish_transaction"] = false
        var changed = response
        changed.body = JSONValue.object(object).bytes()
        return changed
    }
}
