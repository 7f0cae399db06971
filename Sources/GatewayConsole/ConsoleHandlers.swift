// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Gateway
import HTTP
import JSON
import Observability
import StorageCore

/// The console's request handling: who is asking (session, CSRF, role), what they asked for, the
/// audit entry, and which page answers. The flows are the order service's and the refund
/// service's own (recheck, redrive, `RefundService.request`): the console is one more door to
/// them, never a second implementation.
extension Console {
    /// One request as the handlers see it.
    struct Exchange: Sendable {
        var request: HTTPServerRequest
        var cookies: [String: String]
        var language: ConsoleLanguage
        var address: String?
        var signedIn: SignedIn?

        var chrome: ConsoleChrome {
            ConsoleChrome(language: language, user: signedIn?.user, csrf: signedIn?.session.csrfToken,
                          here: ConsoleHTTP.here(request))
        }
        var text: ConsoleText { language.text }
        var user: ConsoleUser { signedIn!.user }
        var actor: String { signedIn?.user.name ?? "?" }
        var role: String { signedIn?.user.role.rawValue ?? "?" }
    }

    static let pageSize = 50

    func exchange(_ request: HTTPServerRequest) -> Exchange {
        let cookies = ConsoleHTTP.cookies(request.headers)
        return Exchange(
            request: request, cookies: cookies,
            language: ConsoleLanguage.choose(cookie: cookies[Self.languageCookie], acceptLanguage: request.headers["Accept-Language"]),
            address: addresses.clientIP(peer: request.remoteAddress?.host, forwardedFor: request.headers.values(for: "X-Forwarded-For")),
            signedIn: nil)
    }

    /// A page for a signed-in user with `right`. Without a session a GET goes to the login form and
    /// a POST is refused; a POST must carry the session's CSRF token (else 403, and nothing at all
    /// is written, not even the session's last-seen time); a role without the right gets 403 (and
    /// an audit entry: the person is known).
    func signedInPage(_ request: HTTPServerRequest, right: ConsoleRight, action: String,
                      _ body: (Exchange) async throws(APIError) -> HTTPServerResponse) async -> HTTPServerResponse {
        var exchange = exchange(request)
        let isPost = request.method == .post
        do {
            guard let signedIn = try await signedIn(exchange.cookies, address: exchange.address, writing: !isPost) else {
                instruments.noSession.increment()
                if isPost {
                    return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.csrfTitle,
                                                                 exchange.text.signInAgain, back: "/console/login"), status: 403)
                }
                return ConsoleHTTP.redirect("/console/login" + HTML.query([("next", ConsoleHTTP.here(request))]))
            }
            exchange.signedIn = signedIn
            var form: HTTPServerQuery?
            if isPost {
                switch ConsoleHTTP.readForm(request) {
                case .success(let fields): form = fields
                case .failure(let refusal): return formRefused(refusal, exchange)
                }
                guard let presented = form?["csrf"],
                      ConstantTime.equal(Array(presented.utf8), Array(signedIn.session.csrfToken.utf8))
                else {
                    instruments.csrfRefused.increment()
                    logger.warning("console POST refused: CSRF token missing or wrong",
                                   ["route": request.routeTemplate, "username": signedIn.user.name])
                    return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.csrfTitle,
                                                                 exchange.text.csrfRefused), status: 403)
                }
                try await touch(signedIn)
            }
            guard signedIn.user.role.allows(right) else {
                instruments.roleRefused.increment()
                // What was attempted: the order (in the path, or the form's, as an assignment names
                // it) and the path's other identifier (the purchase, the event).
                let formOrder: String? = form?["out_trade_no"]
                let attempted: String = request.pathParameters["out_trade_no"]
                    ?? String((formOrder ?? "").trimmingCharacters(in: .whitespaces).prefix(64))
                let others: [String] = request.pathParameters.names.filter { $0 != "out_trade_no" }
                let target: String? = others.first.flatMap { request.pathParameters[$0] }.map { String($0.prefix(96)) }
                try await record(exchange, action: action, outTradeNo: attempted.isEmpty ? nil : attempted,
                                 target: target, outcome: "forbidden",
                                 detail: "role \(signedIn.user.role.rawValue) lacks \(right.rawValue)")
                return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.forbiddenTitle,
                                                             exchange.text.forbidden), status: 403)
            }
            return try await body(exchange)
        } catch {
            return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.errorTitle,
                                                         exchange.text.internalError), status: 500)
        }
    }

    func record(_ exchange: Exchange, action: String, outTradeNo: String? = nil, target: String? = nil,
                outcome: String, detail: String = "") async throws(APIError) {
        let audit = services.audit
        try await audit.record(actor: exchange.actor, channel: "console", role: exchange.role, action: action,
                               outTradeNo: outTradeNo, target: target, address: exchange.address, outcome: outcome,
                               detail: detail)
    }

    /// An action already done must not be reported as failed because its audit entry failed:
    /// the failure is logged and counted (AuditLog does both) and the page answers as it would.
    func recordAfterAction(_ exchange: Exchange, action: String, outTradeNo: String?, target: String? = nil,
                           outcome: String, detail: String = "") async {
        try? await record(exchange, action: action, outTradeNo: outTradeNo, target: target, outcome: outcome, detail: detail)
    }

    // MARK: - The order

    func orderPage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .view, action: "view_order") { (exchange) throws(APIError) in
            let outTradeNo = request.pathParameters["out_trade_no"] ?? ""
            let notice = try await self.notice(for: request.query, outTradeNo: outTradeNo, exchange.text)
            return try await self.renderOrder(exchange, outTradeNo, notice: notice, audited: "view_order")
        }
    }

    /// The order page, with the audit entry of the look (`audited`: nil when the caller records its
    /// own). Unknown orders are a 404 page, recorded too.
    func renderOrder(_ exchange: Exchange, _ outTradeNo: String, notice: ConsoleNotice?, status: Int = 200,
                     audited: String?, refundAmount: String = "", refundReason: String = "", refundNumber: String? = nil,
                     handleReason: String = "")
        async throws(APIError) -> HTTPServerResponse
    {
        let refundService = services.refunds
        let store = services.context.store
        // The order, its timeline, deliveries and refunds are separate reads: the order is read
        // again after the others, and all of them again (a few times at most) if it changed
        // meanwhile, so a refund that just succeeded is never shown beside the order before it.
        var found = try await storage { () throws(StorageError) in try await store.order(outTradeNo) }
        var (events, outbox, refunds): ([OrderEvent], [OutboxEvent], [RefundRecord]) = ([], [], [])
        for _ in 0..<4 {
            guard let before = found else { break }
            (events, outbox, refunds) = try await storage { () throws(StorageError) in
                (try await store.events(outTradeNo), try await store.outboxEvents(outTradeNo),
                 try await refundService.store.refunds(outTradeNo: outTradeNo))
            }
            found = try await storage { () throws(StorageError) in try await store.order(outTradeNo) }
            if found == before { break }
        }
        guard let order = found else {
            if let audited { try await record(exchange, action: audited, outTradeNo: outTradeNo, outcome: "order_not_found") }
            return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.notFoundTitle,
                                                         exchange.text.orderNotFound), status: 404)
        }
        if let audited { try await record(exchange, action: audited, outTradeNo: outTradeNo, outcome: "ok") }
        var model = ConsolePages.Order(
            order: order, events: events, outbox: outbox, refunds: refunds,
            refundsConfigured: refundService.isConfigured, notice: notice, refundAmount: refundAmount,
            refundReason: refundReason, refundNumber: refundNumber ?? RefundService.generateOutRefundNo(at: now))
        model.handleReason = handleReason
        // What the order's user may open, computed now (part of the look recorded above).
        if let user = order.userID { (model.entitlements, model.now) = (try await services.entitlements.entitlements(of: user), now) }
        model.subscription = try await subscription(of: order)
        if order.channel == .apple, let iap = services.iap {
            // What Apple charged and where its refund stands (the ledger), and Apple's questions.
            (model.appleTransaction, model.consumption) = try await storage { () throws(StorageError) in
                var ledger: AppleTransactionRecord?
                if let id = order.appleTransactionID { ledger = try await iap.store.appleTransaction(id) }
                return (ledger, try await iap.store.consumptionRequests(outTradeNo: outTradeNo))
            }
        }
        return ConsoleHTTP.html(ConsolePages.order(exchange.chrome, model), status: status)
    }

    /// The message an action's redirect asks the order page to show: what WeChat said to a
    /// recheck, where a refund stands, that an event was queued again. Read from the store, so a
    /// reload shows the same facts and a made-up link shows nothing false.
    private func notice(for query: HTTPServerQuery, outTradeNo: String, _ text: ConsoleText) async throws(APIError)
        -> ConsoleNotice?
    {
        if let value = query["recheck"], let after = Int64(value) {
            let (order, events) = try await storage { () throws(StorageError) in
                (try await self.services.context.store.order(outTradeNo), try await self.services.context.store.events(outTradeNo))
            }
            // WeChat answers an orderquery; the App Store's answers are the recheck's own lines.
            let apple = order?.channel == .apple
            let answers: Set<String> = apple ? ["recheck", "recheck_failed"] : ["orderquery", "orderquery_failed"]
            let answer = events.first { $0.id > after && answers.contains($0.kind) }
            guard let answer else { return ConsoleNotice(kind: .info, text: apple ? text.appleSaidNothing : text.wechatSaidNothing) }
            return ConsoleNotice(kind: answer.kind.hasSuffix("_failed") ? .error : .success,
                                 text: apple ? text.appleSaid : text.wechatSaid, detail: text.eventDetail(answer.detail))
        }
        if let number = query["refund"], RefundInput.isValidOutRefundNo(number) {
            let refunds = services.refunds
            guard let refund = try await storage({ () throws(StorageError) in try await refunds.store.refund(number) }),
                  refund.outTradeNo == outTradeNo
            else { return nil }
            let failure = refund.failureReason.map { " (\($0))" } ?? ""
            return ConsoleNotice(kind: refund.state == .refundClose ? .error : .success,
                                 text: text.refundRecorded(number, text.refundStateLabel(refund.state) + failure,
                                                           closed: refund.state == .refundClose))
        }
        if let id = query["redelivered"], let event = try await services.support.outboxEvent(id), event.outTradeNo == outTradeNo {
            return ConsoleNotice(kind: .success, text: text.redelivered(event.id))
        }
        if let id = query["assigned"], let iap = services.iap,
           let row = try await storage({ () throws(StorageError) in try await iap.store.appleTransaction(String(id.prefix(32))) }),
           row.outTradeNo == outTradeNo {
            return ConsoleNotice(kind: .success, text: text.assigned(row.transactionID))
        }
        if query["handled"] != nil,
           let order = try await storage({ () throws(StorageError) in try await self.services.context.store.order(outTradeNo) }),
           order.flags.isDisjoint(with: OrderFlag.needingAttention) {
            return ConsoleNotice(kind: .success, text: text.handled)
        }
        return nil
    }

    // MARK: - Signing in and out

    func loginPage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let exchange = exchange(request)
        if (try? await signedIn(exchange.cookies, address: exchange.address, writing: false)) ?? nil != nil {
            return ConsoleHTTP.redirect(ConsoleHTTP.safeReturn(request.query["next"]))
        }
        let text = exchange.text
        let notice: ConsoleNotice? =
            request.query["out"] != nil ? ConsoleNotice(kind: .info, text: text.loggedOut)
            : request.query["next"] != nil ? ConsoleNotice(kind: .info, text: text.signInAgain) : nil
        return loginForm(exchange, notice: notice, status: 200)
    }

    /// The form, with the pre-login CSRF token: a random value in a cookie and the same in the form
    /// (so another site cannot sign a browser in to an account of its choosing).
    private func loginForm(_ exchange: Exchange, notice: ConsoleNotice?, status: Int, username: String = "",
                           retryAfter: Int? = nil) -> HTTPServerResponse {
        let existing = exchange.cookies[Self.loginCookie].flatMap { $0.utf8.count == 43 ? $0 : nil }
        let token = existing ?? Base64.encode(RandomBytes.take(32), .urlUnpadded)
        let next = ConsoleHTTP.safeReturn(exchange.request.query["next"] ?? ConsoleHTTP.form(exchange.request)?["next"])
        let page = ConsolePages.login(exchange.chrome, csrf: token, username: username, next: next, notice: notice)
        var response = ConsoleHTTP.html(page, status: status, cookies: existing == nil
            ? [ConsoleHTTP.cookie(Self.loginCookie, token, secure: secureCookie)] : [])
        if let retryAfter { response.headers["Retry-After"] = String(retryAfter) }
        return response
    }

    func loginSubmit(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        var exchange = exchange(request)
        let text = exchange.text
        let form: HTTPServerQuery
        switch ConsoleHTTP.readForm(request) {
        case .success(let fields): form = fields
        case .failure(let refusal): return formRefused(refusal, exchange, back: "/console/login")
        }
        guard let presented = form["csrf"], let expected = exchange.cookies[Self.loginCookie], !expected.isEmpty,
              ConstantTime.equal(Array(presented.utf8), Array(expected.utf8))
        else {
            instruments.csrfRefused.increment()
            return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: text.csrfTitle, text.csrfRefused,
                                                         back: "/console/login"), status: 403)
        }
        let name = String((form["username"] ?? "").prefix(256))
        let password = String((form["password"] ?? "").prefix(1024))
        do {
            switch try await login(name: name, password: password, address: exchange.address) {
            case .success(let token, let session, let user):
                exchange.signedIn = SignedIn(session: session, user: user, address: exchange.address)
                await recordAfterAction(exchange, action: "login", outTradeNo: nil, outcome: "ok")
                return ConsoleHTTP.redirect(ConsoleHTTP.safeReturn(form["next"]), cookies: [
                    ConsoleHTTP.cookie(Self.sessionCookie, token, secure: secureCookie),
                    ConsoleHTTP.cookie(Self.loginCookie, "", secure: secureCookie, maxAge: 0),
                ])
            case .refused:
                await recordFailedLogin(exchange, name: name, outcome: "refused")
                return loginForm(exchange, notice: ConsoleNotice(kind: .error, text: text.loginRefused), status: 403,
                                 username: Self.normalizedName(name))
            case .locked(let until, let startedNow):
                if startedNow { await recordFailedLogin(exchange, name: name, outcome: "locked") }
                return loginForm(exchange, notice: ConsoleNotice(kind: .error, text: text.loginLocked(until: until)), status: 429,
                                 username: Self.normalizedName(name), retryAfter: max(1, Int(until.timeIntervalSince(sessionNow).rounded(.up))))
            case .busy:
                return loginForm(exchange, notice: ConsoleNotice(kind: .error, text: text.loginBusy), status: 503,
                                 username: Self.normalizedName(name), retryAfter: 5)
            case .paced(let retryAfter):
                return loginForm(exchange, notice: ConsoleNotice(kind: .error, text: text.loginPaced(retryAfter: retryAfter)),
                                 status: 429, username: Self.normalizedName(name), retryAfter: retryAfter)
            }
        } catch {
            return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: text.errorTitle, text.internalError,
                                                         back: "/console/login"), status: 500)
        }
    }

    /// A POST whose body is no console form: 400, saying why, and nothing done.
    private func formRefused(_ refusal: ConsoleHTTP.FormRefusal, _ exchange: Exchange, back: String = "/console/") -> HTTPServerResponse {
        instruments.formRefused.increment()
        return ConsoleHTTP.html(ConsolePages.message(exchange.chrome, title: exchange.text.formRefusedTitle,
                                                     exchange.text.formRefused(refusal), back: back), status: 400)
    }

    /// A refused password is on record under the name typed (no role: nobody is signed in), and
    /// so is the failure that locks a name. Answers to a name already locked are not: they cost no
    /// password check, so recording each would let anyone grow the log as fast as they can send.
    private func recordFailedLogin(_ exchange: Exchange, name: String, outcome: String) async {
        let audit = services.audit
        _ = try? await audit.record(actor: Self.typedName(name), channel: "console", role: "-", action: "login",
                                    address: exchange.address, outcome: outcome)
    }

    func logoutSubmit(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .view, action: "logout") { (exchange) throws(APIError) in
            guard let signedIn = exchange.signedIn else { throw APIError.internalError }
            try await self.logout(signedIn.session)
            await self.recordAfterAction(exchange, action: "logout", outTradeNo: nil, outcome: "ok")
            return ConsoleHTTP.redirect("/console/login?out=1", cookies: [
                ConsoleHTTP.cookie(Self.sessionCookie, "", secure: self.secureCookie, maxAge: 0),
            ])
        }
    }

    /// The language switch: remembered in a cookie for a year, then back to the page.
    func switchLanguage(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let language = request.query["to"].flatMap(ConsoleLanguage.init(rawValue:)) ?? .chinese
        return ConsoleHTTP.redirect(ConsoleHTTP.safeReturn(request.query["back"]), cookies: [
            ConsoleHTTP.cookie(Self.languageCookie, language.rawValue, secure: secureCookie, maxAge: 365 * 86400),
        ])
    }
}
