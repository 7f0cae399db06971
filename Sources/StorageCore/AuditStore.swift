// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The audit log: who looked at which order and who did what, when, from where, and how it ended.
/// Append-only, enforced by the database itself: nothing updates or deletes an entry, the
/// gateway's own code included. Every console search, order view and action and every call of
/// the JSON support API is one entry.
///
/// Implementations: `SQLiteOrderStore`, `PostgresOrderStore`.
public protocol AuditStore: Sendable {
    /// Appends an entry. Returns it with its id (increasing; on PostgreSQL, ids are taken at the
    /// insert, so two instances' entries may commit in the other order).
    func appendAudit(_ entry: NewAuditEntry) async throws(StorageError) -> AuditEntry

    /// A page of the entries `query` matches, newest first (by id), with ids below `before`.
    func auditEntries(_ query: AuditQuery, limit: Int, before: Int64?) async throws(StorageError) -> AuditPage
}

/// An entry to append: everything but its id.
public struct NewAuditEntry: Sendable, Hashable {
    public var at: Date
    /// A console user's name, or the API caller (`support token 1a2b3c4d`: a digest, never the token).
    public var actor: String
    /// `console` or `api`.
    public var channel: String
    /// The console user's role, or the token's scope.
    public var role: String
    /// What was done: `search`, `view_order`, `recheck`, `refund`, `redeliver`, `login`, …
    public var action: String
    /// The order it was about, if one.
    public var outTradeNo: String?
    /// What else it named: the search words, an out_refund_no, an outbox event id.
    public var target: String?
    /// The address the request came from.
    public var address: String?
    /// `ok`, or why not (`forbidden`, `order_not_found`, `refund_exceeds_paid`, `status 500`, …).
    public var outcome: String
    /// Anything else worth keeping (a refund's amount and reason, how many orders a search found).
    public var detail: String

    public init(at: Date, actor: String, channel: String, role: String, action: String, outTradeNo: String? = nil,
                target: String? = nil, address: String? = nil, outcome: String, detail: String = "") {
        self.at = at
        self.actor = actor
        self.channel = channel
        self.role = role
        self.action = action
        self.outTradeNo = outTradeNo
        self.target = target
        self.address = address
        self.outcome = outcome
        self.detail = detail
    }
}

/// A stored audit entry.
public struct AuditEntry: Sendable, Hashable {
    public var id: Int64
    public var entry: NewAuditEntry

    public init(id: Int64, entry: NewAuditEntry) {
        self.id = id
        self.entry = entry
    }
}

/// Which entries to list; nil fields match everything.
public struct AuditQuery: Sendable, Hashable {
    public var actor: String?
    public var outTradeNo: String?
    public var action: String?

    public init(actor: String? = nil, outTradeNo: String? = nil, action: String? = nil) {
        self.actor = actor
        self.outTradeNo = outTradeNo
        self.action = action
    }
}

/// A page of audit entries, newest first; `nextBefore` continues after the last one, nil on the
/// last page.
public struct AuditPage: Sendable, Hashable {
    public var entries: [AuditEntry]
    public var nextBefore: Int64?

    public init(entries: [AuditEntry], nextBefore: Int64?) {
        self.entries = entries
        self.nextBefore = nextBefore
    }
}

// What both stores share: the column lists, the decoder, the page, and the text no store keeps.

extension AuditEntry {
    package static let insertColumns: SQL = "at, actor, channel, role, action, out_trade_no, target, address, outcome, detail"
    package static let columns: SQL = "id, " + insertColumns

    package init(row: some StoreRow) throws(StorageError) {
        self.init(
            id: try row.int64(0),
            entry: NewAuditEntry(
                at: try row.date(1), actor: try row.text(2), channel: try row.text(3), role: try row.text(4),
                action: try row.text(5), outTradeNo: try row.optionalText(6), target: try row.optionalText(7),
                address: try row.optionalText(8), outcome: try row.text(9), detail: try row.text(10)))
    }
}

extension NewAuditEntry {
    package func validate() throws(StorageError) {
        try StoreText.validate(actor, channel, role, action, outTradeNo, target, address, outcome, detail)
    }
}

extension AuditPage {
    /// The page made from up to `limit + 1` entries read newest first: the extra one only says
    /// that there is more.
    package init(rows: [AuditEntry], limit: Int) {
        let entries = Array(rows.prefix(limit))
        self.init(entries: entries, nextBefore: rows.count > limit ? entries.last?.id : nil)
    }
}

extension AuditQuery {
    package func validate() throws(StorageError) {
        try StoreText.validate(actor, outTradeNo, action)
    }
}
