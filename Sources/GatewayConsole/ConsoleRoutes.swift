// SPDX-License-Identifier: Apache-2.0
import Gateway
import HTTP

/// The support console's routes, on the operators' address beside `GatewayAPI.registerAdmin`'s.
/// They are always registered, so the route table (and the API description) is one whatever the
/// configuration; without a console (no `GATEWAY_CONSOLE_USERS`) every one of them answers 404.
///
/// | route | who |
/// |---|---|
/// | GET /console, /console/ | signed in: the search page (else the login form) |
/// | GET, POST /console/login; POST /console/logout | anyone; the signed-in user |
/// | GET /console/attention | viewer and up (orders whose flags need a person) |
/// | GET /console/orders/{out_trade_no} | viewer and up |
/// | POST /console/orders/{out_trade_no}/recheck | viewer and up |
/// | POST /console/orders/{out_trade_no}/refunds | refunder and up |
/// | POST /console/orders/{out_trade_no}/outbox/{id}/redeliver | refunder and up |
/// | POST /console/orders/{out_trade_no}/attention | refunder and up (mark its attention flags handled) |
/// | POST /console/orders/{out_trade_no}/extend | refunder and up (an App Store subscription's renewal date) |
/// | GET /console/apple-transactions/{transaction_id} | viewer and up (an App Store purchase, e.g. an unclaimed one) |
/// | POST /console/apple-transactions/{transaction_id}/assign | refunder and up |
/// | GET /console/audit | admin |
/// | GET /console/language, /console/console.css | anyone |
extension Console {
    static let bodyLimit = 8 * 1024

    /// Adds every console route to `router`; each answers 404 while `console` is nil.
    public static func register(_ console: Console?, in router: inout HTTPRouter) {
        func route(_ method: HTTPMethod, _ template: String,
                   _ handler: @escaping @Sendable (Console, HTTPServerRequest) async -> HTTPServerResponse) {
            router.add(method, template, options: HTTPRouteOptions(maxBodyBytes: bodyLimit)) { request in
                guard let console else { return ConsoleHTTP.notFound }
                let response = await handler(console, request)
                return request.isSecure ? ConsoleHTTP.overHTTPS(response) : response
            }
        }
        route(.get, "/console") { _, _ in ConsoleHTTP.redirect("/console/") }
        route(.get, "/console/") { console, request in await console.searchPage(request) }
        route(.get, "/console/login") { console, request in await console.loginPage(request) }
        route(.post, "/console/login") { console, request in await console.loginSubmit(request) }
        route(.post, "/console/logout") { console, request in await console.logoutSubmit(request) }
        route(.get, "/console/attention") { console, request in await console.attentionPage(request) }
        route(.get, "/console/orders/{out_trade_no}") { console, request in await console.orderPage(request) }
        route(.post, "/console/orders/{out_trade_no}/recheck") { console, request in await console.recheck(request) }
        route(.post, "/console/orders/{out_trade_no}/refunds") { console, request in await console.refund(request) }
        route(.post, "/console/orders/{out_trade_no}/outbox/{id}/redeliver") { console, request in
            await console.redeliver(request)
        }
        route(.post, "/console/orders/{out_trade_no}/attention") { console, request in await console.handleAttention(request) }
        route(.post, "/console/orders/{out_trade_no}/extend") { console, request in await console.extendSubscription(request) }
        route(.get, "/console/apple-transactions/{transaction_id}") { console, request in await console.purchasePage(request) }
        route(.post, "/console/apple-transactions/{transaction_id}/assign") { console, request in await console.assign(request) }
        route(.get, "/console/audit") { console, request in await console.auditPage(request) }
        route(.get, "/console/language") { console, request in console.switchLanguage(request) }
        route(.get, "/console/console.css") { _, _ in ConsoleHTTP.stylesheet }
    }
}
