// SPDX-License-Identifier: Apache-2.0

/// Why a store operation failed.
///
/// Equality compares the kind only (`error == .busy`). `description` is generic and never contains
/// a bound value, a record field or a path; the database's own message, which can name a table or
/// a constraint but no value, is kept for `debugDescription`.
public struct StorageError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    package enum Code: Sendable, Hashable {
        case openFailed
        case busy
        case constraint
        case corrupt
        case io
        case full
        case readOnly
        case closed
        case schemaTooNew
        case invalidArgument
        case unexpectedRow
        case unavailable
        case termsChanged
        case other
    }

    package let code: Code
    /// The SQLite extended result code, when SQLite reported the failure.
    public let sqliteCode: Int32?
    /// The SQLSTATE, when PostgreSQL reported the failure.
    public let postgresCode: String?
    /// What the store was doing, a static phrase such as `step` or `commit`.
    package let context: String
    /// A phrase written by us (never data from a request or a row), shown in `description`.
    package let detail: String?
    /// `sqlite3_errmsg`, or PostgreSQL's primary message when it names no value; never part of
    /// `description`.
    package let message: String?

    package init(code: Code, sqliteCode: Int32? = nil, postgresCode: String? = nil, context: String = "",
         detail: String? = nil, message: String? = nil) {
        self.code = code
        self.sqliteCode = sqliteCode
        self.postgresCode = postgresCode
        self.context = context
        self.detail = detail
        self.message = message
    }

    /// The database could not be opened, created or set up (WAL, migrations).
    public static let openFailed = StorageError(code: .openFailed)
    /// The database stayed locked by another connection for longer than the busy timeout. Retryable.
    public static let busy = StorageError(code: .busy)
    /// A constraint refused the write (duplicate outbox id, unknown order, a negative amount, a
    /// change to the append-only events table).
    public static let constraint = StorageError(code: .constraint)
    /// The database file is damaged or not a database.
    public static let corrupt = StorageError(code: .corrupt)
    /// The operating system failed a read, write or sync.
    public static let io = StorageError(code: .io)
    /// The disk is full.
    public static let full = StorageError(code: .full)
    /// The database or its directory is not writable.
    public static let readOnly = StorageError(code: .readOnly)
    /// The store was closed.
    public static let closed = StorageError(code: .closed)
    /// The database was migrated by a newer version of this program than the running one.
    public static let schemaTooNew = StorageError(code: .schemaTooNew)
    package static func schemaTooNew(found: Int, known: Int) -> StorageError {
        StorageError(code: .schemaTooNew, detail: "version \(found) is newer than this program's \(known)")
    }
    /// The caller broke a precondition of the API.
    public static let invalidArgument = StorageError(code: .invalidArgument)
    /// `reason` is a phrase written by us, never a value from the request.
    package static func invalidArgument(_ reason: String) -> StorageError {
        StorageError(code: .invalidArgument, detail: reason)
    }
    /// A row did not have the shape the schema promises (a NULL or unknown value where none can be).
    @usableFromInline
    package static let unexpectedRow = StorageError(code: .unexpectedRow)
    /// The database server cannot be reached, refused the connection, or went away during the
    /// operation (restart, failover, network). Retryable; a write that failed this way may or may
    /// not have committed only when the connection broke during COMMIT, and every write is safe to
    /// repeat (idempotent create, conditional transitions).
    public static let unavailable = StorageError(code: .unavailable)
    /// A new order's product has other terms on record than the catalog that priced it gave
    /// (`SaleTerms`): another instance's catalog, or a reload's, was bound since. Nothing was written.
    public static let termsChanged = StorageError(code: .termsChanged)
    /// Any other database failure.
    public static let other = StorageError(code: .other)

    /// Whether trying again later may succeed.
    public var isRetryable: Bool {
        switch code {
        case .busy, .io, .full, .unavailable: true
        default: false
        }
    }

    /// A stable label without data, for metrics.
    public var shortDescription: String {
        switch code {
        case .openFailed: "open_failed"
        case .busy: "busy"
        case .constraint: "constraint"
        case .corrupt: "corrupt"
        case .io: "io"
        case .full: "full"
        case .readOnly: "read_only"
        case .closed: "closed"
        case .schemaTooNew: "schema_too_new"
        case .invalidArgument: "invalid_argument"
        case .unexpectedRow: "unexpected_row"
        case .unavailable: "unavailable"
        case .termsChanged: "terms_changed"
        case .other: "other"
        }
    }

    public var description: String {
        var text: String
        switch code {
        case .openFailed: text = "storage could not be opened"
        case .busy: text = "storage busy"
        case .constraint: text = "storage constraint violated"
        case .corrupt: text = "storage corrupt"
        case .io: text = "storage I/O error"
        case .full: text = "storage full"
        case .readOnly: text = "storage is read-only"
        case .closed: text = "storage closed"
        case .schemaTooNew: text = "storage schema is newer than this program"
        case .invalidArgument: text = "invalid storage request"
        case .unexpectedRow: text = "storage row does not match the schema"
        case .unavailable: text = "database unavailable"
        case .termsChanged: text = "the product's terms on record are not the catalog's that priced the order"
        case .other: text = "storage error"
        }
        if let detail { text += ": \(detail)" }
        if !context.isEmpty { text += " during \(context)" }
        if let sqliteCode { text += " (SQLite code \(sqliteCode))" }
        if let postgresCode { text += " (SQLSTATE \(postgresCode))" }
        return text
    }

    public var debugDescription: String {
        guard let message else { return description }
        return description + ": " + message
    }

    public static func == (lhs: StorageError, rhs: StorageError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
