// SPDX-License-Identifier: Apache-2.0
import CLibPQ
import Foundation
import StorageCore

extension StorageError {
    /// The one place where a PostgreSQL failure becomes a `StorageError`, from its SQLSTATE.
    ///
    /// Only value-free text is kept for `debugDescription`: the constraint and table names, and
    /// the server's primary message except for data exceptions (class 22), whose messages quote
    /// the offending input. DETAIL lines (which show rows and key values) are never read.
    static func postgres(result: OpaquePointer, during context: String) -> StorageError {
        func field(_ code: UInt8) -> String? {
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        let sqlstate = field(UInt8(ascii: "C")) ?? "XX000"
        var parts: [String] = []
        if let constraint = field(UInt8(ascii: "n")) { parts.append("constraint \(constraint)") }
        if let table = field(UInt8(ascii: "t")) { parts.append("table \(table)") }
        if !sqlstate.hasPrefix("22"), let primary = field(UInt8(ascii: "M")) { parts.append(primary) }
        return StorageError(
            code: code(sqlstate: sqlstate), postgresCode: sqlstate, context: context,
            message: parts.isEmpty ? nil : parts.joined(separator: "; "))
    }

    /// A failure of the connection itself (no result to read): refused, reset, timed out. libpq's
    /// message names the host or socket and the user, never the password.
    static func postgresConnection(_ connection: OpaquePointer?, during context: String) -> StorageError {
        let message = connection.flatMap { PQerrorMessage($0) }.map { String(cString: $0) }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return StorageError(code: .unavailable, context: context, message: message)
    }

    static func code(sqlstate: String) -> Code {
        switch sqlstate {
        // The server is shutting down, restarting or not accepting connections yet; out of connections.
        case "57P01", "57P02", "57P03", "53300", "08000", "08003", "08006", "08001", "08004": return .unavailable
        case "40001", "40P01", "55P03", "57014": return .busy
        case "53100": return .full
        case "25006": return .readOnly
        case "58030": return .io
        case "XX001", "XX002": return .corrupt
        case "22021", "22P05": return .invalidArgument   // a character the encoding cannot hold (NUL)
        case "3D000", "28000", "28P01": return .openFailed   // no such database; authentication failed
        default: break
        }
        switch sqlstate.prefix(2) {
        case "08": return .unavailable
        case "23": return .constraint
        case "53": return .unavailable
        default: return .other
        }
    }

    /// Whether the failure ended the connection's usefulness (reconnect before the next query).
    var breaksConnection: Bool { code == .unavailable }

    /// Whether the transaction lost a race the database resolved by aborting it (deadlock,
    /// serialization): running the same work again is the remedy.
    var isTransactionRace: Bool { postgresCode == "40001" || postgresCode == "40P01" }
}
