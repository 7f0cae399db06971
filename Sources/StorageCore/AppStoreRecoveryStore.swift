// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How far the App Store notification history has been read (Get Notification History), per
/// environment, so that a restart or another instance goes on from there instead of re-reading
/// 180 days; and who is reading it now (a lease, as the reconciler leases orders).
///
/// Every method is atomic; writes return only once durable. Implementations: `SQLiteOrderStore`,
/// `PostgresOrderStore`.
public protocol AppStoreBackfillStore: Sendable {
    /// Leases the environment's backfill to `claimant` until `leaseUntil` when nobody holds it at
    /// `now` and it last ran before `lastRunBefore` (nil: whenever it last ran); the row is made on
    /// first use. Returns the progress (with `lastRunAt` now `now`), or nil when it is not due or
    /// another claimant holds it.
    func claimBackfill(environment: String, claimant: String, now: Date, leaseUntil: Date, lastRunBefore: Date?)
        async throws(StorageError) -> AppStoreBackfillProgress?

    /// Records the window being read and the pagination token of its next page, and extends the
    /// lease; false when `claimant` no longer holds it (then it must stop).
    func saveBackfillPage(environment: String, claimant: String, window: ClosedRange<Date>, paginationToken: String?,
                          leaseUntil: Date, at: Date) async throws(StorageError) -> Bool

    /// Ends `claimant`'s run and releases the lease: with `through`, every notification sent up to
    /// that instant was read and handled (it never moves backwards) and the window is done; with
    /// `error`, the run failed and the window and token stay for the next run to go on from.
    /// False when `claimant` no longer held the lease (nothing written).
    func finishBackfill(environment: String, claimant: String, through: Date?, error: String?, at: Date)
        async throws(StorageError) -> Bool

    /// The environment's progress, or nil before its first run.
    func backfillProgress(environment: String) async throws(StorageError) -> AppStoreBackfillProgress?
}

/// One environment's backfill bookkeeping.
public struct AppStoreBackfillProgress: Sendable, Hashable {
    /// `Production` or `Sandbox`.
    public var environment: String
    /// Every notification Apple sent up to here was read and handled; nil before the first
    /// successful run.
    public var through: Date?
    /// The window a run was reading, and the token of its next page, when it stopped part way.
    public var window: ClosedRange<Date>?
    public var paginationToken: String?
    public var lastRunAt: Date?
    public var lastSuccessAt: Date?
    public var lastError: String?

    public init(environment: String, through: Date? = nil, window: ClosedRange<Date>? = nil, paginationToken: String? = nil,
                lastRunAt: Date? = nil, lastSuccessAt: Date? = nil, lastError: String? = nil) {
        self.environment = environment
        self.through = through
        self.window = window
        self.paginationToken = paginationToken
        self.lastRunAt = lastRunAt
        self.lastSuccessAt = lastSuccessAt
        self.lastError = lastError
    }
}

/// Apple's consumption requests (a CONSUMPTION_REQUEST notification: a customer asked for a
/// refund), the answer to each (the business's, or the configured defaults), and its delivery to
/// Send Consumption Information, retried until Apple accepts it or its 12 hours are over.
///
/// A request moves `requested` → `answered` (or `not_sent` without the customer's consent) →
/// `sent`, `refused` (Apple refused the body) or `expired`; those four never change again (the
/// database refuses it). Every method is atomic; writes return only once durable.
public protocol AppStoreConsumptionStore: Sendable {
    /// Records a request once per notification (`id`); `events` go on its order's timeline and
    /// `outbox` (the `appstore.consumption_requested` event) into the outbox, in the same
    /// transaction. Returns false when it was recorded before (nothing written).
    func recordConsumptionRequest(_ request: ConsumptionRequestRecord, events: [NewOrderEvent], outbox: OutboxEvent?)
        async throws(StorageError) -> Bool

    /// The requests about one transaction, newest first.
    func consumptionRequests(transactionID: String) async throws(StorageError) -> [ConsumptionRequestRecord]

    /// The requests about the transaction that paid one order, newest first.
    func consumptionRequests(outTradeNo: String) async throws(StorageError) -> [ConsumptionRequestRecord]

    /// Answers a request still `requested`, or `refused` (Apple refused the answer it had: a
    /// corrected one may go), before its deadline: `answered` (due at once) with `answer`, or
    /// `not_sent` when the customer did not consent; `event` goes on its order's
    /// timeline. Returns the request afterwards, or nil when it was not waiting for an answer
    /// (answered meanwhile, expired, unknown): then nothing was written.
    func answerConsumption(_ id: String, answer: String, consented: Bool, by: ConsumptionAnswerSource, at: Date,
                           event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?

    /// Leases, to `claimant` until `leaseUntil`, up to `limit` open requests that need work at
    /// `now` and nobody holds: answered ones due for an attempt, ones past their deadline (to be
    /// expired), and — with `defaultsDueBefore` — unanswered ones requested at or before it (for
    /// the defaults). With `id`, only that request (if it needs work).
    func claimDueConsumption(now: Date, defaultsDueBefore: Date?, limit: Int, claimant: String, leaseUntil: Date,
                             id: String?) async throws(StorageError) -> [ConsumptionRequestRecord]

    /// Ends `claimant`'s attempt and releases the lease; `event` goes on the order's timeline.
    /// Returns the request afterwards, or nil when `claimant` did not hold it or it was final.
    func finishConsumptionAttempt(_ id: String, claimant: String, outcome: ConsumptionAttemptOutcome, at: Date,
                                  event: NewOrderEvent?) async throws(StorageError) -> ConsumptionRequestRecord?
}

/// Where a consumption request stands.
public enum ConsumptionState: String, Sendable, Hashable, CaseIterable {
    /// Waiting for the business's answer (or, once configured, the defaults).
    case requested
    /// Answered with the customer's consent: being sent to Apple until it accepts.
    case answered
    /// Apple accepted it.
    case sent
    /// Answered without the customer's consent: nothing may be sent.
    case notSent = "not_sent"
    /// Apple refused the body (a validation error): never sent again.
    case refused
    /// Apple's 12 hours passed before it was sent.
    case expired

    public var isFinal: Bool { self == .sent || self == .notSent || self == .refused || self == .expired }
}

/// Who answered a consumption request.
public enum ConsumptionAnswerSource: String, Sendable, Hashable {
    case business
    case defaults
}

/// How one attempt to send a consumption answer ended.
public enum ConsumptionAttemptOutcome: Sendable, Hashable {
    /// Apple accepted it.
    case sent
    /// It failed in a way a later attempt may get past: try again at `next`.
    case retry(next: Date, error: String)
    /// Apple refused the body: final.
    case refused(error: String)
    /// Its deadline passed: final.
    case expired
    /// Nothing was tried (the lease is handed back as it was).
    case release
}

/// One consumption request.
public struct ConsumptionRequestRecord: Sendable, Hashable {
    /// The CONSUMPTION_REQUEST notification's `notificationUUID`.
    public var id: String
    public var transactionID: String
    /// The order the transaction credited, if it credited one.
    public var outTradeNo: String?
    public var environment: String
    /// Apple's `consumptionRequestReason`, when it gave one.
    public var reason: String?
    public var requestedAt: Date
    /// Apple's deadline: 12 hours after the request.
    public var deadline: Date
    public var state: ConsumptionState
    /// The body for Send Consumption Information (Apple's member names), once answered.
    public var answer: String?
    public var answeredBy: ConsumptionAnswerSource?
    public var answeredAt: Date?
    public var sentAt: Date?
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var lastError: String?

    public init(id: String, transactionID: String, outTradeNo: String?, environment: String, reason: String?,
                requestedAt: Date, deadline: Date, state: ConsumptionState = .requested, answer: String? = nil,
                answeredBy: ConsumptionAnswerSource? = nil, answeredAt: Date? = nil, sentAt: Date? = nil, attempts: Int = 0,
                nextAttemptAt: Date? = nil, lastError: String? = nil) {
        self.id = id
        self.transactionID = transactionID
        self.outTradeNo = outTradeNo
        self.environment = environment
        self.reason = reason
        self.requestedAt = requestedAt
        self.deadline = deadline
        self.state = state
        self.answer = answer
        self.answeredBy = answeredBy
        self.answeredAt = answeredAt
        self.sentAt = sentAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
    }
}

// The column lists and decoders both stores share (see StoreRow.swift).

extension AppStoreBackfillProgress {
    package static let columns: SQL = """
        environment, through, window_start, window_end, pagination_token, last_run_at, last_success_at, last_error
        """

    package init(row: some StoreRow) throws(StorageError) {
        let start = try row.optionalDate(2)
        let end = try row.optionalDate(3)
        var window: ClosedRange<Date>?
        if let start, let end, start <= end { window = start...end }
        self.init(environment: try row.text(0), through: try row.optionalDate(1), window: window,
                  paginationToken: try row.optionalText(4), lastRunAt: try row.optionalDate(5),
                  lastSuccessAt: try row.optionalDate(6), lastError: try row.optionalText(7))
    }
}

extension ConsumptionRequestRecord {
    package static let columns: SQL = """
        id, transaction_id, out_trade_no, environment, reason, requested_at, deadline, state, answer, answered_by, \
        answered_at, sent_at, attempts, next_attempt_at, last_error
        """

    package init(row: some StoreRow) throws(StorageError) {
        guard let state = ConsumptionState(rawValue: try row.text(7)) else { throw .unexpectedRow }
        let source = try row.optionalText(9)
        let answeredBy = try source.map { text throws(StorageError) in
            guard let source = ConsumptionAnswerSource(rawValue: text) else { throw StorageError.unexpectedRow }
            return source
        }
        self.init(
            id: try row.text(0), transactionID: try row.text(1), outTradeNo: try row.optionalText(2),
            environment: try row.text(3), reason: try row.optionalText(4), requestedAt: try row.date(5),
            deadline: try row.date(6), state: state, answer: try row.optionalText(8), answeredBy: answeredBy,
            answeredAt: try row.optionalDate(10), sentAt: try row.optionalDate(11), attempts: try row.int(12),
            nextAttemptAt: try row.optionalDate(13), lastError: try row.optionalText(14))
    }

    package func validate() throws(StorageError) {
        try StoreText.validate(id, transactionID, outTradeNo, environment, reason, answer)
    }

    /// `recordConsumptionRequest`'s arguments: the request, its timeline lines and its own order's event.
    package func validate(events: [NewOrderEvent], outbox: OutboxEvent?) throws(StorageError) {
        try validate()
        for event in events { try event.validate() }
        try outbox?.validate(belongsTo: outTradeNo)
    }
}

extension ConsumptionState {
    /// What an answer makes of a waiting request: sent to Apple only with the customer's consent.
    package static func answered(consented: Bool) -> ConsumptionState { consented ? .answered : .notSent }
}

extension ConsumptionAttemptOutcome {
    /// The state an attempt leaves the request in, from `current` (the one door for both stores).
    package func state(from current: ConsumptionState) -> ConsumptionState {
        switch self {
        case .sent: .sent
        case .refused: .refused
        case .expired: .expired
        case .retry, .release: current
        }
    }

    package var error: String? {
        switch self {
        case .retry(_, let error), .refused(let error): String(error.prefix(500))
        case .sent, .expired, .release: nil
        }
    }

    package var nextAttempt: Date? {
        if case .retry(let next, _) = self { return next }
        return nil
    }

    /// Whether the attempt counts as one (a release tried nothing).
    package var counts: Bool {
        if case .release = self { return false }
        if case .expired = self { return false }
        return true
    }
}
