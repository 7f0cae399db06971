// SPDX-License-Identifier: Apache-2.0

extension Bill {
    /// Writes a bill in WeChat's downloadbill format (CRLF line ends, amounts with two decimals,
    /// fees with five), for the simulator and for round-trip tests. `Bill.parse` reads it back
    /// to an equal value.
    /// - Parameters:
    ///   - rows: the detail lines; a cell for a column the row has no value for is written empty.
    ///   - summary: the summary line.
    ///   - layout: which columns to write, in order; `.all`, `.success` or `.refund`.
    /// - Throws: `BillError.unrenderableValue` when a cell holds a line break or ``,` ``, which
    ///   the format cannot carry; `missingColumn` when the layout lacks a column every bill has
    ///   or the summary does not start with 总交易单数 (the file would not parse back).
    public static func render(rows: [BillRow], summary: BillSummary, layout: BillLayout = .all) throws(BillError) -> [UInt8] {
        for column in BillColumn.required where !layout.columns.contains(column) {
            throw .missingColumn(column, line: 1)
        }
        guard layout.summaryColumns.first == .tradeCount else {
            throw .missingSummaryColumn(.tradeCount, line: rows.count + 2)
        }
        var out: [UInt8] = []
        out.reserveCapacity(256 * (rows.count + 4))
        try appendHeader(layout.columns.map(\.header), to: &out)
        for row in rows {
            try appendLine(layout.columns, cell: row.cell, refusal: BillError.unrenderableValue, to: &out)
        }
        try appendHeader(layout.summaryColumns.map(\.header), to: &out)
        try appendLine(layout.summaryColumns, cell: summary.cell, refusal: BillError.unrenderableSummaryValue, to: &out)
        return out
    }

    /// One line of cells, each behind a backtick; a cell the format cannot carry is `refusal` of its column.
    private static func appendLine<Column>(_ columns: [Column], cell: (Column) -> String, refusal: (Column) -> BillError,
                                           to out: inout [UInt8]) throws(BillError) {
        var first = true
        for column in columns {
            let cell = cell(column)
            guard isRenderable(cell) else { throw refusal(column) }
            out.append(contentsOf: first ? "`".utf8 : ",`".utf8)
            out.append(contentsOf: cell.utf8)
            first = false
        }
        out.append(contentsOf: "\r\n".utf8)
    }

    /// Writes this bill in its own layout.
    public func render() throws(BillError) -> [UInt8] {
        try Self.render(rows: rows, summary: summary, layout: layout)
    }

    private static func appendHeader(_ names: [String], to out: inout [UInt8]) throws(BillError) {
        for (index, name) in names.enumerated() {
            // Header names are split on every comma and lose surrounding spaces and backticks.
            guard isRenderable(name), !name.contains(","), !name.hasPrefix("`"), !name.hasPrefix(" "),
                  !name.hasSuffix(" "), !name.isEmpty
            else { throw .unrenderableHeader }
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: name.utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
    }

    /// No line break and no ",`" (which would split the cell); one pass over the bytes.
    private static func isRenderable(_ cell: String) -> Bool {
        var afterComma = false
        for byte in cell.utf8 {
            if byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { return false }
            if afterComma && byte == UInt8(ascii: "`") { return false }
            afterComma = byte == UInt8(ascii: ",")
        }
        return true
    }
}
