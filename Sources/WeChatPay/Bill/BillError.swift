// SPDX-License-Identifier: Apache-2.0

/// Why a bill file could not be parsed (with its 1-based line number) or rendered.
///
/// Descriptions name the line and, for known columns, the column's header; never a cell's content
/// (order numbers and openids are personal data, and a hostile file could hold anything).
public struct BillError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case empty
        case notUTF8
        case missingColumn(String)
        case duplicateColumn
        case missingBacktick
        case fieldCount(expected: Int, found: Int)
        case invalidValue(String)
        case unexpectedLine
        case missingSummary
        case unrenderableValue(String)
        case unrenderableHeader
    }

    private let code: Code
    /// The 1-based line the problem is on; nil for whole-file and rendering problems.
    public let line: Int?

    private init(_ code: Code, line: Int?) {
        self.code = code
        self.line = line
    }

    /// No header line.
    public static let empty = BillError(.empty, line: nil)
    /// The line is not valid UTF-8.
    public static func notUTF8(line: Int) -> BillError { BillError(.notUTF8, line: line) }
    /// The header lacks a column every bill must have.
    public static func missingColumn(_ column: BillColumn, line: Int) -> BillError {
        BillError(.missingColumn(column.header), line: line)
    }
    /// The summary header lacks a column every summary must have.
    public static func missingSummaryColumn(_ column: BillSummaryColumn, line: Int) -> BillError {
        BillError(.missingColumn(column.header), line: line)
    }
    /// The same column appears twice in a header.
    public static func duplicateColumn(line: Int) -> BillError { BillError(.duplicateColumn, line: line) }
    /// A data line does not start with a backtick.
    public static func missingBacktick(line: Int) -> BillError { BillError(.missingBacktick, line: line) }
    /// A data line has more or fewer cells than its header (a `,`` inside free text lands here too).
    public static func fieldCount(expected: Int, found: Int, line: Int) -> BillError {
        BillError(.fieldCount(expected: expected, found: found), line: line)
    }
    /// A cell of a known column is not in its form (an amount that is not exact yuan, say).
    public static func invalidValue(_ column: BillColumn, line: Int) -> BillError {
        BillError(.invalidValue(column.header), line: line)
    }
    /// A summary cell is not in its form.
    public static func invalidSummaryValue(_ column: BillSummaryColumn, line: Int) -> BillError {
        BillError(.invalidValue(column.header), line: line)
    }
    /// A line that belongs nowhere: a blank line inside the file, text after the summary line.
    public static func unexpectedLine(_ line: Int) -> BillError { BillError(.unexpectedLine, line: line) }
    /// The file ends before the summary header and summary line (a truncated download).
    public static func missingSummary(line: Int) -> BillError { BillError(.missingSummary, line: line) }
    /// Rendering: a cell of this column holds a line break or `,``, which the format cannot carry.
    public static func unrenderableValue(_ column: BillColumn) -> BillError {
        BillError(.unrenderableValue(column.header), line: nil)
    }

    /// Rendering: a summary cell holds a line break or `,``.
    public static func unrenderableSummaryValue(_ column: BillSummaryColumn) -> BillError {
        BillError(.unrenderableValue(column.header), line: nil)
    }
    /// Rendering: a header name is empty or holds a comma, a line break, or leading or trailing
    /// spaces or backticks, so it would not read back as the same name.
    public static let unrenderableHeader = BillError(.unrenderableHeader, line: nil)

    /// A stable label without data, for metrics.
    public var shortDescription: String {
        switch code {
        case .empty: "empty"
        case .notUTF8: "not_utf8"
        case .missingColumn: "missing_column"
        case .duplicateColumn: "duplicate_column"
        case .missingBacktick: "missing_backtick"
        case .fieldCount: "field_count"
        case .invalidValue: "invalid_value"
        case .unexpectedLine: "unexpected_line"
        case .missingSummary: "missing_summary"
        case .unrenderableValue: "unrenderable_value"
        case .unrenderableHeader: "unrenderable_header"
        }
    }

    public var description: String {
        let prefix = line.map { "bill line \($0): " } ?? "bill: "
        return switch code {
        case .empty: prefix + "empty file"
        case .notUTF8: prefix + "not valid UTF-8"
        case .missingColumn(let header): prefix + "header lacks the column \(header)"
        case .duplicateColumn: prefix + "a column appears twice in the header"
        case .missingBacktick: prefix + "data line does not start with a backtick"
        case .fieldCount(let expected, let found): prefix + "\(found) cells where the header has \(expected)"
        case .invalidValue(let header): prefix + "\(header) is not in its documented form"
        case .unexpectedLine: prefix + "unexpected line"
        case .missingSummary: prefix + "file ends before the summary"
        case .unrenderableValue(let header): prefix + "a \(header) value holds a line break or ,` and cannot be written"
        case .unrenderableHeader: prefix + "a header name cannot be written so that it reads back unchanged"
        }
    }
}
