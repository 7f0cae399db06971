// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Synchronization

/// A small structured logger in swift-log's shape: a value with a label, a level and metadata,
/// writing through a `LogHandler`. Messages and metadata are autoclosures, built only when the
/// level is enabled.
///
/// Secrets never go into a message or metadata: callers log order numbers, outcomes and request
/// ids, never keys, tokens, signatures or bodies.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case debug, info, notice, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    public var label: String
    public var level: Level
    public var metadata: [String: String]
    public var handler: any LogHandler

    public init(label: String, level: Level = .info, metadata: [String: String] = [:],
                handler: any LogHandler = NoOpLogHandler()) {
        self.label = label
        self.level = level
        self.metadata = metadata
        self.handler = handler
    }

    /// A logger that writes nothing; libraries default to it.
    public static let disabled = Logger(label: "disabled", level: .error, handler: NoOpLogHandler())

    /// A copy with more metadata, e.g. the request id.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    /// Whether a message at `level` would be written; for callers whose metadata is costly to build.
    public func isEnabled(_ level: Level) -> Bool { level >= self.level }

    /// Metadata is an autoclosure like the message: a dictionary built per call for a level that
    /// is off (the per-settlement `info` line at `warning`, the level production operators and the
    /// benchmarks often choose; the default is `info`) was pure waste.
    public func log(_ level: Level, _ message: @autoclosure () -> String,
                    _ metadata: @autoclosure () -> [String: String] = [:]) {
        guard level >= self.level else { return }
        handler.write(LogRecord(date: Date(), level: level, label: label, message: message(),
                                metadata: self.metadata.merging(metadata()) { $1 }))
    }

    public func debug(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.debug, message(), metadata())
    }
    public func info(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.info, message(), metadata())
    }
    public func notice(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.notice, message(), metadata())
    }
    public func warning(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.warning, message(), metadata())
    }
    public func error(_ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]) {
        log(.error, message(), metadata())
    }
}

/// One log line before formatting.
public struct LogRecord: Sendable {
    public var date: Date
    public var level: Logger.Level
    public var label: String
    public var message: String
    public var metadata: [String: String]

    public init(date: Date, level: Logger.Level, label: String, message: String, metadata: [String: String]) {
        self.date = date
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
    }
}

/// Where log records go.
public protocol LogHandler: Sendable {
    func write(_ record: LogRecord)
}

public struct NoOpLogHandler: LogHandler {
    public init() {}
    public func write(_ record: LogRecord) {}
}

/// One JSON object per line on standard error: `{"ts","level","logger","msg",…metadata}`.
public struct JSONLinesLogHandler: LogHandler {
    private let timestamp: @Sendable (Date) -> String

    /// - Parameter timestamp: how `ts` writes the record's instant (the gateway writes the API's
    ///   RFC 3339 form, so a log line and an order's JSON show one instant alike).
    public init(timestamp: @escaping @Sendable (Date) -> String) {
        self.timestamp = timestamp
    }

    public func write(_ record: LogRecord) {
        // A log on a full disk, or over the process's file-size limit, costs its lines, never the
        // process; what cannot be written is dropped.
        DescriptorWriting.writeAll(line(record), to: 2)
    }

    /// The record as one line of JSON, names in byte order (as JSONSerialization's `.sortedKeys`
    /// wrote them before), ending in a newline.
    public func line(_ record: LogRecord) -> [UInt8] {
        var object: [String: String] = record.metadata
        object["ts"] = timestamp(record.date)
        object["level"] = record.level.description
        object["logger"] = record.label
        object["msg"] = record.message
        var line = JSONObjectWriter(capacity: 256)
        for name in object.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            line.string(name, object[name])
        }
        var bytes = line.finish()
        bytes.append(0x0A)
        return bytes
    }
}

/// Keeps records in memory, for tests that assert what was logged.
public final class InMemoryLogHandler: LogHandler {
    private let records = Mutex<[LogRecord]>([])

    public init() {}
    public func write(_ record: LogRecord) { records.withLock { $0.append(record) } }
    public var all: [LogRecord] { records.withLock { $0 } }
}
