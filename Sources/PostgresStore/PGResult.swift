// SPDX-License-Identifier: Apache-2.0
import CLibPQ
import Foundation
import StorageCore

/// The rows (or the row count) one statement returned, in binary format. Owns its `PGresult`,
/// which lives until the last reference goes; it is read on the thread that ran the statement.
final class PGResult {
    private let handle: OpaquePointer

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    var rowCount: Int { Int(PQntuples(handle)) }

    /// Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
    var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func row(_ index: Int) -> PGRow { PGRow(result: handle, index: Int32(index)) }

    /// Decodes every row.
    func rows<T>(_ decode: (PGRow) throws(StorageError) -> T) throws(StorageError) -> [T] {
        var decoded: [T] = []
        decoded.reserveCapacity(rowCount)
        for index in 0..<rowCount { decoded.append(try decode(row(index))) }
        return decoded
    }

    /// Decodes the first row, if any.
    func first<T>(_ decode: (PGRow) throws(StorageError) -> T) throws(StorageError) -> T? {
        rowCount == 0 ? nil : try decode(row(0))
    }
}

/// One row of a binary-format result; valid while its `PGResult` lives.
struct PGRow: StoreRow {
    let result: OpaquePointer
    let index: Int32

    var columnCount: Int32 { PQnfields(result) }

    func isNull(_ column: Int32) -> Bool {
        PQgetisnull(result, index, column) == 1
    }

    private func bytes(_ column: Int32, as types: Set<PGType>) throws(StorageError) -> UnsafeRawBufferPointer {
        guard column < PQnfields(result), !isNull(column), PQfformat(result, column) == 1,
            let type = PGType(rawValue: PQftype(result, column)), types.contains(type),
            let value = PQgetvalue(result, index, column)
        else { throw .unexpectedRow }
        return UnsafeRawBufferPointer(start: value, count: Int(PQgetlength(result, index, column)))
    }

    func int64(_ column: Int32) throws(StorageError) -> Int64 {
        let raw = try bytes(column, as: [.int8, .int4])
        switch raw.count {
        case 8: return Int64(bigEndian: raw.loadUnaligned(as: Int64.self))
        case 4: return Int64(Int32(bigEndian: raw.loadUnaligned(as: Int32.self)))
        default: throw .unexpectedRow
        }
    }

    func text(_ column: Int32) throws(StorageError) -> String {
        String(decoding: try bytes(column, as: [.text]), as: UTF8.self)
    }

    func optionalText(_ column: Int32) throws(StorageError) -> String? {
        isNull(column) ? nil : try text(column)
    }

    /// PostgreSQL's values come checked with their type anyway (`bytes(_:as:)`).
    func guaranteedInt64(_ column: Int32) throws(StorageError) -> Int64 {
        try int64(column)
    }

    func date(_ column: Int32) throws(StorageError) -> Date {
        let raw = try bytes(column, as: [.timestamptz])
        guard raw.count == 8, let date = PGTime.date(microseconds: Int64(bigEndian: raw.loadUnaligned(as: Int64.self)))
        else { throw .unexpectedRow }
        return date
    }

    func bool(_ column: Int32) throws(StorageError) -> Bool {
        let raw = try bytes(column, as: [.bool])
        guard raw.count == 1 else { throw .unexpectedRow }
        return raw[0] != 0
    }
}
