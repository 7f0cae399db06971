// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import Synchronization

/// The one writer of the audit log: the console's searches, order views and actions, and every
/// call of the JSON support API, each one entry (who, what, which order, when, from where, the
/// outcome). The store keeps the log append-only; nothing here can change or remove an entry.
///
/// Made once, by `GatewayServices`; the JSON API and the console both write through it.
public final class AuditLog: Sendable {
    let store: any AuditStore
    private let now: @Sendable () -> Date
    private let written: MetricFamily<Counter>
    private let failed: MetricFamily<Counter>
    private let logger: Logger
    /// The store failure as every flow answers it: logged, counted in `wxpay_storage_errors_total`
    /// (the full-disk alert counts the audit's writes too), 503 while the database is unreachable.
    private let storageFailure: @Sendable (StorageError) -> APIError

    static let entries = Metric<Counter>("wxpay_audit_entries_total", help: "Audit log entries written, by channel.")
    static let failures = Metric<Counter>(
        "wxpay_audit_failures_total",
        help: "Audit log entries that could not be written (the request was refused or, after an action, logged).")

    init(context: GatewayContext) {
        store = context.store
        now = context.now
        logger = context.logger
        storageFailure = { [context] error in context.apiError(for: error) }
        context.metrics.describe(Self.entries, Self.failures)
        written = context.metrics.makeCounters(Self.entries, labelNames: "channel")
        failed = context.metrics.makeCounters(Self.failures, labelNames: "channel")
    }

    /// Appends an entry stamped now. Throws when it could not be written: a look that cannot be
    /// recorded is not shown.
    @discardableResult
    public func record(actor: String, channel: String, role: String, action: String, outTradeNo: String? = nil,
                target: String? = nil, address: String?, outcome: String, detail: String = "") async throws(APIError)
        -> AuditEntry
    {
        // What a request carried (a search's words, a typed name, a refused reason) may hold
        // control, text-direction or invisible characters, and no store keeps U+0000: they are shown as
        // U+FFFD, so every look can be recorded and no entry reads backwards.
        let entry = NewAuditEntry(at: now(), actor: Self.printable(actor, 128), channel: channel, role: role, action: action,
                                  outTradeNo: outTradeNo.map { Self.printable($0, 64) },
                                  target: target.map { Self.printable($0, 200) }, address: address.map { Self.printable($0, 64) },
                                  outcome: Self.printable(outcome, 64), detail: Self.printable(detail, 500))
        do {
            let stored = try await store.appendAudit(entry)
            written.labelled(channel).increment()
            return stored
        } catch {
            failed.labelled(channel).increment()
            logger.error("audit entry not written", ["action": action, "actor": actor, "error": error.shortDescription])
            throw storageFailure(error)
        }
    }

    /// `text` cut to `limit` characters, every character free text refuses (control, text-direction,
    /// invisible: `HiddenCharacters.forEachScalarOfFreeText`) as U+FFFD.
    static func printable(_ text: String, _ limit: Int) -> String {
        var out = String.UnicodeScalarView()
        HiddenCharacters.forEachScalarOfFreeText(String(String.UnicodeScalarView(text.unicodeScalars.prefix(limit)))) {
            scalar, isRefused in out.append(isRefused ? "\u{FFFD}" : scalar)
        }
        return String(out)
    }

    /// A page of entries, newest first.
    public func entries(_ query: AuditQuery, limit: Int, before: Int64?) async throws(APIError) -> AuditPage {
        do {
            return try await store.auditEntries(query, limit: limit, before: before)
        } catch {
            logger.error("audit log unreadable", ["error": error.shortDescription])
            throw .internalError
        }
    }
}
