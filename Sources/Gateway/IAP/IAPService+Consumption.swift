// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore

/// Consumption requests: when a customer asks Apple for a refund, Apple sends CONSUMPTION_REQUEST
/// and takes, for 12 hours, the developer's word on what the customer received (Send
/// Consumption Information). For an education company that is the refund defence: a course
/// delivered and watched is not refunded as easily as one that never arrived.
///
/// The request becomes a task and an `appstore.consumption_requested` webhook event; the
/// business answers `PUT /v1/iap/transactions/{transaction_id}/consumption`; without an answer
/// the configured defaults (APPSTORE_CONSUMPTION_DEFAULTS) are used once
/// APPSTORE_CONSUMPTION_DEADLINE seconds passed. The answer is sent until Apple accepts it, only
/// with the customer's consent, never after Apple's 12 hours, and the defaults never after the
/// business answered (the store takes one answer per request). Every step is on the timeline.
extension IAPService {
    static let consumptionKind = "appstore_consumption"
    /// Requests worked on per sweep.
    static let consumptionPerSweep = 20

    // MARK: - The request

    /// Records a CONSUMPTION_REQUEST: the task, its timeline line and its webhook event, once per
    /// notification. Returns what it did, in a few words.
    func recordConsumptionRequest(_ notification: AppStoreNotification, purchase: VerifiedPurchase) async throws(APIError)
        -> String
    {
        let row = try await context.storage { () throws(StorageError) in try await self.store.appleTransaction(purchase.transactionID) }
        var order: OrderRecord?
        if let credited = row?.outTradeNo {
            order = try await context.storage { () throws(StorageError) in try await self.context.store.order(credited) }
        }
        let requestedAt = notification.signedDate
        let request = ConsumptionRequestRecord(
            id: notification.notificationUUID, transactionID: purchase.transactionID, outTradeNo: order?.outTradeNo,
            environment: purchase.environment, reason: notification.consumptionRequestReason, requestedAt: requestedAt,
            deadline: requestedAt.addingTimeInterval(AppStoreRecoveryPolicy.appleConsumptionWindow))
        let defaults = recovery.consumptionDefaults.map { defaults in
            "; unless answered, the configured defaults (\(ConsumptionAnswer.summary(defaults))) go at "
                + Timestamp.rfc3339(requestedAt.addingTimeInterval(recovery.consumptionDeadline))
        } ?? "; without an answer nothing is sent (APPSTORE_CONSUMPTION_DEFAULTS is not set)"
        let event = NewOrderEvent(
            kind: Self.consumptionKind,
            detail: "Apple asks for consumption information about transaction \(purchase.transactionID): the customer asked for "
                + "a refund (\(notification.consumptionRequestReason ?? "no reason given")); answer with PUT "
                + "/v1/iap/transactions/\(purchase.transactionID)/consumption before \(Timestamp.rfc3339(request.deadline))" + defaults,
            at: now())
        let outbox = order.map { Self.consumptionRequestedEvent($0, request, at: now()) }
        let recorded = try await context.storage { () throws(StorageError) in
            try await self.store.recordConsumptionRequest(request, events: [event], outbox: outbox)
        }
        if recorded {
            instruments.consumptionRequests.labelled(purchase.environment).increment()
            logger.notice("App Store consumption request recorded", [
                "transaction_id": purchase.transactionID, "out_trade_no": order?.outTradeNo ?? "",
                "deadline": Timestamp.rfc3339(request.deadline),
            ])
        }
        return "consumption request \(recorded ? "recorded" : "known already")"
            + (order.map { " for \($0.outTradeNo)" } ?? " (the transaction credits no order yet)")
    }

    /// The `appstore.consumption_requested` event: `{"created_at","data":{"deadline","order",
    /// "reason","requested_at","transaction_id"},"id","type"}`, the order as the other events show it.
    static func consumptionRequestedEvent(_ order: OrderRecord, _ request: ConsumptionRequestRecord, at: Date) -> OutboxEvent {
        let id = PaidEventEncoding.newID(at: at)
        let view = Settlement.eventData(order).json
        var data = JSONObjectWriter(capacity: view.count + 192)
        data.string("deadline", Timestamp.rfc3339(request.deadline))
        data.raw("order", view)
        data.stringOrNull("reason", request.reason)
        data.string("requested_at", Timestamp.rfc3339(request.requestedAt))
        data.string("transaction_id", request.transactionID)
        let type = "appstore.consumption_requested"
        let payload = PaidEventEncoding.payload(id: id, createdAt: Timestamp.rfc3339(at), data: data.finish(), type: type)
        return OutboxEvent(id: id, outTradeNo: order.outTradeNo, type: type, payload: payload, createdAt: at, nextAttemptAt: at)
    }

    // MARK: - The business's answer

    /// `PUT /v1/iap/transactions/{transaction_id}/consumption`: the business's answer to the newest
    /// request about the transaction, recorded once and sent at once when the customer consented
    /// (then retried by the sweeps until Apple accepts it). An identical answer again is answered
    /// as the request stands; another one, or one after the defaults went or after Apple's 12
    /// hours, is a 409 — unless Apple refused the answer it had: a corrected one is then recorded
    /// and sent in its place. Answers the request (`ConsumptionView`).
    public func answerConsumption(transactionID: String, body: [UInt8]) async throws(APIError) -> [UInt8] {
        guard !transactionID.isEmpty, transactionID.utf8.count <= 32, transactionID.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw .invalid("transaction_id", "an App Store transaction id is 1 to 32 digits")
        }
        guard clients.serverAPI != nil else { throw .consumptionUnavailable }
        let information = try ConsumptionAnswer.parse(body)
        let answer = String(decoding: information.json.bytes(), as: UTF8.self)
        let requests = try await context.storage { () throws(StorageError) in
            try await self.store.consumptionRequests(transactionID: transactionID)
        }
        guard let newest = requests.first else { throw .consumptionRequestNotFound }
        let at = now()
        var request = newest
        // A request whose answer Apple refused (a percentage for an auto-renewable subscription,
        // say) takes a corrected one, as a request not answered yet does; the refused one again
        // is answered as it stands.
        let corrected = newest.state == .refused && newest.answer != answer
        if newest.state == .requested || corrected, newest.deadline > at {
            let event = NewOrderEvent(kind: Self.consumptionKind,
                                      detail: "the business answered: \(ConsumptionAnswer.summary(information))"
                                          + (information.customerConsented ? "" : "; without the customer's consent nothing is sent"),
                                      at: at)
            let answered = try await context.storage { () throws(StorageError) in
                try await self.store.answerConsumption(newest.id, answer: answer, consented: information.customerConsented,
                                                       by: .business, at: at, event: event)
            }
            if let answered {
                instruments.consumptionAnswers.labelled("business", String(information.customerConsented)).increment()
                request = answered
                if answered.state == .answered {
                    request = await attemptNow(answered) ?? answered
                }
                return Self.json(request)
            }
            // Answered or expired meanwhile: read what it is now.
            request = try await context.storage { () throws(StorageError) in
                try await self.store.consumptionRequests(transactionID: transactionID).first { $0.id == newest.id }
            } ?? newest
        }
        if request.answeredBy == .business && request.answer == answer { return Self.json(request) }
        if request.answer != nil { throw .consumptionAlreadyAnswered(request.answeredBy ?? .business) }
        throw .consumptionRequestExpired
    }

    /// One attempt right away for a request just answered (the sweeps retry it when this fails).
    private func attemptNow(_ request: ConsumptionRequestRecord) async -> ConsumptionRequestRecord? {
        let claimant = "answer-" + String(UUID().uuidString.prefix(8)).lowercased()
        let at = now()
        guard let claimed = try? await store.claimDueConsumption(
            now: at, defaultsDueBefore: nil, limit: 1, claimant: claimant, leaseUntil: at.addingTimeInterval(60), id: request.id).first
        else { return nil }
        return await work(claimed, claimant: claimant)
    }

    // MARK: - The sweeps

    /// What one sweep of consumption requests did.
    struct ConsumptionSweep: Sendable, Hashable {
        var sent = 0
        var retried = 0
        var expired = 0
    }

    /// Leases the requests that need work (answered and due, past their deadline, or unanswered
    /// past APPSTORE_CONSUMPTION_DEADLINE when defaults are configured) and works on each.
    func sweepConsumption(claimant: String) async -> ConsumptionSweep {
        let at = now()
        let defaultsDue = recovery.consumptionDefaults.map { _ in at.addingTimeInterval(-recovery.consumptionDeadline) }
        guard let due = try? await store.claimDueConsumption(
            now: at, defaultsDueBefore: defaultsDue, limit: Self.consumptionPerSweep, claimant: claimant,
            leaseUntil: at.addingTimeInterval(60), id: nil)
        else { return ConsumptionSweep() }
        var sweep = ConsumptionSweep()
        for request in due {
            let after = await work(request, claimant: claimant)
            switch after?.state {
            case .sent?: sweep.sent += 1
            case .expired?: sweep.expired += 1
            case .answered?: sweep.retried += 1
            default: break
            }
        }
        return sweep
    }

    /// Works on one leased request: expires it past its deadline, answers it with the defaults
    /// when due, sends an answered one. Returns the request afterwards.
    private func work(_ leased: ConsumptionRequestRecord, claimant: String) async -> ConsumptionRequestRecord? {
        let at = now()
        var request = leased
        if request.deadline <= at {
            instruments.consumptionExpired.increment()
            logger.warning("App Store consumption request expired unanswered", ["transaction_id": request.transactionID])
            return try? await store.finishConsumptionAttempt(
                request.id, claimant: claimant, outcome: .expired, at: at,
                event: NewOrderEvent(kind: Self.consumptionKind,
                                     detail: "Apple's 12 hours for transaction \(request.transactionID) passed at "
                                         + "\(Timestamp.rfc3339(request.deadline)) before an answer was sent: nothing was sent",
                                     at: at))
        }
        if request.state == .requested {
            guard let defaults = recovery.consumptionDefaults else {
                return try? await store.finishConsumptionAttempt(request.id, claimant: claimant, outcome: .release, at: at, event: nil)
            }
            let event = NewOrderEvent(
                kind: Self.consumptionKind,
                detail: "no answer from the business by \(Timestamp.rfc3339(request.requestedAt.addingTimeInterval(recovery.consumptionDeadline))): "
                    + "the configured defaults answer (\(ConsumptionAnswer.summary(defaults)))"
                    + (defaults.customerConsented ? "" : "; without the customer's consent nothing is sent"),
                at: at)
            guard let answered = try? await store.answerConsumption(
                request.id, answer: String(decoding: defaults.json.bytes(), as: UTF8.self), consented: defaults.customerConsented,
                by: .defaults, at: at, event: event)
            else {
                // The business answered a moment ago: its answer, not the defaults, is sent.
                return try? await store.finishConsumptionAttempt(request.id, claimant: claimant, outcome: .release, at: at, event: nil)
            }
            instruments.consumptionAnswers.labelled("defaults", String(defaults.customerConsented)).increment()
            guard answered.state == .answered else { return answered }
            request = answered
        }
        guard request.state == .answered, let body = request.answer,
              let json = try? JSONValue.parse(Array(body.utf8)), let information = ConsumptionInformation(appleJSON: json),
              information.customerConsented
        else {
            return try? await store.finishConsumptionAttempt(request.id, claimant: claimant, outcome: .release, at: at, event: nil)
        }
        return await send(request, information, claimant: claimant)
    }

    /// Send Consumption Information for an answered request, and the outcome recorded.
    private func send(_ request: ConsumptionRequestRecord, _ information: ConsumptionInformation, claimant: String) async
        -> ConsumptionRequestRecord?
    {
        let outcome: ConsumptionAttemptOutcome
        let detail: String
        if let api = clients.serverAPI {
            do {
                _ = try await api.sendConsumptionInformation(request.transactionID, information,
                                                             environment: AppStoreEnvironment(rawValue: request.environment))
                outcome = .sent
                detail = "sent to Apple (Send Consumption Information, \(request.answeredBy?.rawValue ?? "?")'s answer): accepted"
                instruments.consumptionAccepted.increment()
            } catch where (error.kind == .apiError && error.status == 400) || error.kind == .notFound {
                outcome = .refused(error: error.description)
                detail = "Apple refused the answer (\(error.description)): not sent again"
                instruments.consumptionRefused.increment()
                logger.error("Apple refused a consumption answer", ["transaction_id": request.transactionID, "error": error.kind.rawValue])
            } catch {
                let wait = min(1800, 60 * pow(2, Double(min(request.attempts, 5))))
                outcome = .retry(next: now().addingTimeInterval(wait), error: error.description)
                detail = "sending to Apple failed (\(error.description)); tried again in \(Int(wait)) s"
                instruments.consumptionRetried.increment()
            }
        } else {
            outcome = .retry(next: now().addingTimeInterval(300), error: "the App Store Server API is not configured")
            detail = "not sent: the App Store Server API is not configured"
        }
        // A failed attempt goes on the timeline the first time, not at every sweep after.
        let event = Self.isRetry(outcome) && request.attempts > 0
            ? nil : NewOrderEvent(kind: Self.consumptionKind, detail: detail, at: now())
        return try? await store.finishConsumptionAttempt(request.id, claimant: claimant, outcome: outcome, at: now(), event: event)
    }

    private static func isRetry(_ outcome: ConsumptionAttemptOutcome) -> Bool {
        if case .retry = outcome { return true }
        return false
    }

    // MARK: - JSON

    /// A consumption request as the PUT answers it (keys sorted).
    static func json(_ request: ConsumptionRequestRecord) -> [UInt8] {
        var writer = JSONObjectWriter(capacity: 512)
        if let answer = request.answer, let json = try? JSONValue.parse(Array(answer.utf8)) { writer.raw("answer", json.bytes()) }
        writer.stringOrNull("answered_at", request.answeredAt.map(Timestamp.rfc3339))
        writer.stringOrNull("answered_by", request.answeredBy?.rawValue)
        writer.number("attempts", request.attempts)
        writer.string("deadline", Timestamp.rfc3339(request.deadline))
        writer.stringOrNull("last_error", request.lastError)
        writer.stringOrNull("out_trade_no", request.outTradeNo)
        writer.stringOrNull("reason", request.reason)
        writer.string("requested_at", Timestamp.rfc3339(request.requestedAt))
        writer.stringOrNull("sent_at", request.sentAt.map(Timestamp.rfc3339))
        writer.string("state", request.state.rawValue)
        writer.string("transaction_id", request.transactionID)
        return writer.finish()
    }
}
