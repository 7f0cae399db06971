// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// The PostgreSQL types the schema uses, with their type OIDs (fixed in the server's catalog).
enum PGType: UInt32, Sendable, Hashable {
    case bool = 16
    case int8 = 20
    case int4 = 23
    case text = 25
    case timestamptz = 1184
    case textArray = 1009
    case int8Array = 1016
    case timestamptzArray = 1185
    case boolArray = 1000
    case int4Array = 1007

    /// The type of a one-dimensional array of this type.
    var arrayType: PGType {
        switch self {
        case .int8, .int8Array: .int8Array
        case .text, .textArray: .textArray
        case .timestamptz, .timestamptzArray: .timestamptzArray
        case .bool, .boolArray: .boolArray
        case .int4, .int4Array: .int4Array
        }
    }
}

/// A statement parameter. Every value but a text array travels in binary format, so nothing a
/// caller passes is ever parsed as SQL or as a literal by the server.
enum PGValue: Sendable, Hashable {
    case null(PGType)
    case int8(Int64)
    case text(String)
    /// Kept to the millisecond, like every time in the store.
    case timestamp(Date)
    case bool(Bool)
    /// Sent in text format (`{"A","B"}`), each element quoted and escaped.
    case textArray([String])
    /// A one-dimensional array of values of one type (or NULL), sent in binary format: one
    /// parameter per column of a multi-row statement (`unnest`).
    case array(of: PGType, [PGValue])

    var type: PGType {
        switch self {
        case .null(let type): type
        case .int8: .int8
        case .text: .text
        case .timestamp: .timestamptz
        case .bool: .bool
        case .textArray: .textArray
        case .array(let element, _): element.arrayType
        }
    }

    /// 0 = text, 1 = binary, as libpq's `paramFormats` wants them.
    var format: Int32 {
        if case .textArray = self { return 0 }
        return 1
    }

    /// The bytes sent for the value, or nil for NULL.
    var bytes: [UInt8]? {
        switch self {
        case .null:
            return nil
        case .int8(let value):
            return withUnsafeBytes(of: value.bigEndian) { Array($0) }
        case .text(let text):
            return Array(text.utf8)
        case .timestamp(let date):
            return withUnsafeBytes(of: PGTime.microseconds(date).bigEndian) { Array($0) }
        case .bool(let value):
            return [value ? 1 : 0]
        case .textArray(let values):
            // Each element quoted, its `\` and `"` escaped with a backslash (byte by byte: this
            // runs for every `state = ANY($n)`, and Foundation's string search costs far more).
            var bytes: [UInt8] = [UInt8(ascii: "{")]
            for (index, value) in values.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes.append(UInt8(ascii: "\""))
                for byte in value.utf8 {
                    if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { bytes.append(UInt8(ascii: "\\")) }
                    bytes.append(byte)
                }
                bytes.append(UInt8(ascii: "\""))
            }
            bytes.append(UInt8(ascii: "}"))
            return bytes
        case .array(let element, let values):
            // array_recv's format: dimensions, a has-NULL flag, the element type, each dimension's
            // size and lower bound, then each element as a length (-1: NULL) and its binary value.
            var bytes: [UInt8] = []
            func append(_ value: Int32) { withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) } }
            let elements = values.map(\.bytes)
            append(values.isEmpty ? 0 : 1)
            append(elements.contains { $0 == nil } ? 1 : 0)
            append(Int32(bitPattern: element.rawValue))
            if !values.isEmpty {
                append(Int32(values.count))
                append(1)
            }
            for element in elements {
                if let element {
                    append(Int32(element.count))
                    bytes.append(contentsOf: element)
                } else {
                    append(-1)
                }
            }
            return bytes
        }
    }
}

/// A Swift value that binds to a statement parameter; `pgType` types its NULL.
protocol PGBindable: Sendable {
    static var pgType: PGType { get }
    var pgValue: PGValue { get }
}

extension String: PGBindable {
    static var pgType: PGType { .text }
    var pgValue: PGValue { .text(self) }
}

extension Int: PGBindable {
    static var pgType: PGType { .int8 }
    var pgValue: PGValue { .int8(Int64(self)) }
}

extension Int64: PGBindable {
    static var pgType: PGType { .int8 }
    var pgValue: PGValue { .int8(self) }
}

extension Bool: PGBindable {
    static var pgType: PGType { .bool }
    var pgValue: PGValue { .bool(self) }
}

extension Date: PGBindable {
    static var pgType: PGType { .timestamptz }
    var pgValue: PGValue { .timestamp(self) }
}

extension Set<OrderState>: PGBindable {
    static var pgType: PGType { .textArray }
    /// For `state = ANY($n)`: one parameter, whatever the set.
    var pgValue: PGValue { .textArray(map(\.rawValue).sorted()) }
}

extension Array: PGBindable where Element == String {
    static var pgType: PGType { .textArray }
    var pgValue: PGValue { .textArray(self) }
}

extension Optional: PGBindable where Wrapped: PGBindable {
    static var pgType: PGType { Wrapped.pgType }
    var pgValue: PGValue { self?.pgValue ?? .null(Wrapped.pgType) }
}

/// `timestamptz` on the wire: microseconds since 2000-01-01 00:00 UTC. The store keeps
/// milliseconds, so values are rounded to a whole millisecond on the way in and out.
enum PGTime {
    static let epochOffsetMilliseconds: Int64 = 946_684_800_000

    static func microseconds(_ date: Date) -> Int64 {
        (StoreTime.milliseconds(date) - epochOffsetMilliseconds) * 1000
    }

    static func date(microseconds: Int64) -> Date? {
        // ±infinity are Int64.max / Int64.min: no instant an order can have.
        guard microseconds != .max, microseconds != .min else { return nil }
        let (quotient, remainder) = microseconds.quotientAndRemainder(dividingBy: 1000)
        let rounded = quotient + (remainder >= 500 ? 1 : remainder <= -500 ? -1 : 0)
        return StoreTime.date(milliseconds: rounded + epochOffsetMilliseconds)
    }
}

/// One statement with its parameters. SQL text only ever comes from literals (`SQL`).
struct PGQuery: Sendable {
    let sql: SQL
    let parameters: [PGValue]

    init(_ sql: SQL, _ parameters: any PGBindable...) {
        self.sql = sql
        self.parameters = parameters.map(\.pgValue)
    }

    init(_ sql: SQL, parameters: [PGValue]) {
        self.sql = sql
        self.parameters = parameters
    }
}
