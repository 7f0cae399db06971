// SPDX-License-Identifier: Apache-2.0

/// A downloadbill file: the detail rows and the summary, with the layout they were written in.
///
/// The format (§2.6 of the protocol notes): a header line of Chinese column names; detail lines
/// whose every cell starts with a backtick; then a summary header and one summary line. Cells of
/// 商品名称 and 商户数据包 may contain commas, so a line is split on ``,` `` after its leading
/// backtick, never on `,`. Amounts are yuan in the file and exact fen here.
///
/// Parsing is strict and total: any input, however broken, gives a `Bill` or a `BillError` with
/// the line number, never a crash. CRLF and LF line ends, a UTF-8 byte-order mark, backticks on
/// header names and trailing blank lines are tolerated.
///
/// ```swift
/// let text = try Gzip.decompress(body, maximumOutput: 256 << 20)
/// let bill = try Bill.parse(text)
/// for row in bill.rows where row.tradeState == "SUCCESS" { … row.settlementTotalFee … }
/// ```
public struct Bill: Sendable, Hashable {
    /// The columns, in file order.
    public var layout: BillLayout
    public var rows: [BillRow]
    public var summary: BillSummary

    public init(layout: BillLayout = .all, rows: [BillRow], summary: BillSummary) {
        self.layout = layout
        self.rows = rows
        self.summary = summary
    }

    /// Parses a bill held as text.
    public static func parse(_ text: String) throws(BillError) -> Bill {
        try parse(Array(text.utf8))
    }

    /// Parses a bill's bytes (after gzip decompression, if any).
    public static func parse(_ bytes: [UInt8]) throws(BillError) -> Bill {
        try bytes.withUnsafeBufferPointer { buffer throws(BillError) in try BillParser(buffer).parse() }
    }
}

/// One pass over the bytes; lines and cells are byte ranges until a cell becomes a `String`.
private struct BillParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var lines: [Range<Int>] = []

    private static let backtick = UInt8(ascii: "`")
    private static let comma = UInt8(ascii: ",")
    private static let summaryMarker = Array(BillSummaryColumn.tradeCount.header.utf8)

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        var start = 0
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { start = 3 }
        var index = start
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                lines.append(start..<Self.droppingCR(bytes, start, index))
                start = index + 1
            }
            index += 1
        }
        if start < bytes.count { lines.append(start..<Self.droppingCR(bytes, start, bytes.count)) }
        while let last = lines.last, last.isEmpty { lines.removeLast() }
    }

    private static func droppingCR(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int {
        end > start && bytes[end - 1] == UInt8(ascii: "\r") ? end - 1 : end
    }

    func parse() throws(BillError) -> Bill {
        guard let headerLine = lines.first else { throw .empty }
        let columns = try header(headerLine, line: 1).map(BillColumn.init(header:))
        guard Set(columns).count == columns.count else { throw .duplicateColumn(line: 1) }
        for column in BillColumn.required where !columns.contains(column) {
            throw .missingColumn(column, line: 1)
        }

        var rows: [BillRow] = []
        rows.reserveCapacity(lines.count)
        // Only a file whose header is backtick-prefixed (as some generators write it) may have a
        // backtick-prefixed summary header; otherwise a data line could pass for one.
        let backtickedHeaders = bytes[headerLine.lowerBound] == Self.backtick
        var index = 1
        while index < lines.count, !isSummaryHeader(lines[index], backticked: backtickedHeaders) {
            let line = index + 1
            let cells = try self.cells(lines[index], line: line)
            guard cells.count == columns.count else {
                throw .fieldCount(expected: columns.count, found: cells.count, line: line)
            }
            var row = BillRow(tradeTime: "", transactionID: "", outTradeNo: "", tradeState: "", settlementTotalFee: 0)
            for (column, cell) in zip(columns, cells) {
                do {
                    try row.set(column, string(cell))
                } catch {
                    throw .invalidValue(column, line: line)
                }
            }
            // These identify the row in reconciliation; an empty one is a broken line, not data.
            for column in [BillColumn.tradeTime, .transactionID, .outTradeNo, .tradeState] where row.cell(column).isEmpty {
                throw .invalidValue(column, line: line)
            }
            rows.append(row)
            index += 1
        }

        guard index < lines.count else { throw .missingSummary(line: lines.count + 1) }
        let summaryColumns = try header(lines[index], line: index + 1).map(BillSummaryColumn.init(header:))
        guard Set(summaryColumns).count == summaryColumns.count else { throw .duplicateColumn(line: index + 1) }
        for column in BillSummaryColumn.required where !summaryColumns.contains(column) {
            throw .missingSummaryColumn(column, line: index + 1)
        }
        index += 1
        guard index < lines.count else { throw .missingSummary(line: index + 1) }
        let cells = try self.cells(lines[index], line: index + 1)
        guard cells.count == summaryColumns.count else {
            throw .fieldCount(expected: summaryColumns.count, found: cells.count, line: index + 1)
        }
        var summary = BillSummary(tradeCount: 0, settlementTotalFee: 0, refundFee: 0, serviceFee: .zero)
        for (column, cell) in zip(summaryColumns, cells) {
            do {
                try summary.set(column, string(cell))
            } catch {
                throw .invalidSummaryValue(column, line: index + 1)
            }
        }
        index += 1
        guard index == lines.count else { throw .unexpectedLine(index + 1) }
        return Bill(layout: BillLayout(columns: columns, summaryColumns: summaryColumns), rows: rows, summary: summary)
    }

    /// Header names: split on commas, each without a leading backtick or surrounding spaces.
    private func header(_ range: Range<Int>, line: Int) throws(BillError) -> [String] {
        guard !range.isEmpty else { throw .unexpectedLine(line) }
        guard isValidUTF8(range) else { throw .notUTF8(line: line) }
        var names: [String] = []
        var start = range.lowerBound
        for index in range where bytes[index] == Self.comma {
            names.append(headerName(start..<index))
            start = index + 1
        }
        names.append(headerName(start..<range.upperBound))
        return names
    }

    private func headerName(_ range: Range<Int>) -> String {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == Self.backtick { lower += 1 }
        while upper > lower, bytes[upper - 1] == UInt8(ascii: " ") { upper -= 1 }
        return string(lower..<upper)
    }

    /// A data line's cells: the line must start with a backtick and is split on ",`".
    private func cells(_ range: Range<Int>, line: Int) throws(BillError) -> [Range<Int>] {
        guard !range.isEmpty else { throw .unexpectedLine(line) }
        guard bytes[range.lowerBound] == Self.backtick else { throw .missingBacktick(line: line) }
        guard isValidUTF8(range) else { throw .notUTF8(line: line) }
        var cells: [Range<Int>] = []
        var start = range.lowerBound + 1
        var index = start
        while index + 1 < range.upperBound {
            if bytes[index] == Self.comma, bytes[index + 1] == Self.backtick {
                cells.append(start..<index)
                start = index + 2
                index = start
            } else {
                index += 1
            }
        }
        cells.append(start..<range.upperBound)
        return cells
    }

    private func isSummaryHeader(_ range: Range<Int>, backticked: Bool) -> Bool {
        var start = range.lowerBound
        if backticked, start < range.upperBound, bytes[start] == Self.backtick { start += 1 }
        guard range.upperBound - start >= Self.summaryMarker.count else { return false }
        return bytes[start..<start + Self.summaryMarker.count].elementsEqual(Self.summaryMarker)
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    private func isValidUTF8(_ range: Range<Int>) -> Bool {
        let slice = bytes[range]
        if !slice.contains(where: { $0 >= 0x80 }) { return true }
        var iterator = slice.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
