// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The timeline kinds the documents list (docs/openapi.json's `Event.kind`, docs/api.md's table)
/// are exactly those the code writes: the kinds are found in the sources, at every call that
/// makes a timeline line (`appendEvent`, `NewOrderEvent`, `TransitionReceipt`), so a new kind
/// cannot go undocumented and a kind nothing writes any more cannot stay listed.
struct TimelineKindsTests {
    static let package = OpenAPITests.package

    /// Kinds made at run time, by the file and the expression passed as `kind:`. An expression
    /// not here fails the test until its kinds are added (and documented).
    static let computed: [String: Set<String>] = [
        // upstreamFailure(_:outTradeNo:api:), for unifiedorder and closeorder
        #"OrderQueries.swift "\(api)_failed""#: ["unifiedorder_failed", "closeorder_failed"],
        // queryAndSettle(_:reason:source:): a wait or recheck (orderquery), the reconciler, the bill
        "OrderQueries.swift source": ["orderquery", "reconcile", "bill"],
        #"OrderQueries.swift "\(source)_failed""#: ["orderquery_failed", "reconcile_failed", "bill_failed"],
        // RefundService.check(_:source:): the reconciler, the bill
        "RefundService+Recovery.swift source": ["reconcile", "bill"],
        #"RefundService+Recovery.swift "\(source)_failed""#: ["reconcile_failed", "bill_failed"],
        // IAPService.checkHistory(of:reason:kind:recordNothingFound:): the reconciler, support's recheck
        "IAPService+Reconcile.swift kind": ["reconcile", "recheck"],
        #"IAPService+Reconcile.swift "\(kind)_failed""#: ["reconcile_failed", "recheck_failed"],
        // Every step of a consumption request (IAPService+Consumption.swift)
        "IAPService+Consumption.swift Self.consumptionKind": ["appstore_consumption"],
        // The store's own line for every change of state
        "OrderStoreRules.swift OrderEvent.stateChangedKind": ["state_changed"],
    ]

    /// Expressions that pass on a kind made by the caller (found at the caller).
    static let passedOn: Set<String> = [
        "OrderStore.swift kind", "OrderStoreRules.swift $0.kind", "Settlement.swift receipt.kind", "Settlement.swift kind",
    ]

    @Test func theDocumentsListExactlyTheTimelineKindsTheCodeWrites() throws {
        let written = try Self.writtenKinds()
        #expect(written.count >= 25, "the scan found too few kinds: \(written.sorted())")

        let document = try OpenAPITests.document()
        let schemas = (document["components"] as? [String: Any])?["schemas"] as? [String: Any]
        let kind = ((schemas?["Event"] as? [String: Any])?["properties"] as? [String: Any])?["kind"] as? [String: Any]
        let listed = Set(try #require(kind?["enum"] as? [String], "docs/openapi.json: Event.kind has no enum"))
        #expect(written.subtracting(listed).isEmpty,
                "written but not in docs/openapi.json: \(written.subtracting(listed).sorted())")
        #expect(listed.subtracting(written).isEmpty,
                "in docs/openapi.json but written nowhere: \(listed.subtracting(written).sorted())")

        let table = try Self.apiTableKinds()
        #expect(written.subtracting(table).isEmpty, "written but not in docs/api.md's table: \(written.subtracting(table).sorted())")
        #expect(table.subtracting(written).isEmpty, "in docs/api.md's table but written nowhere: \(table.subtracting(written).sorted())")
    }

    /// Every kind passed as `kind:` to a call that makes a timeline line, in Sources/Gateway and
    /// the store modules.
    static func writtenKinds() throws -> Set<String> {
        var kinds: Set<String> = []
        var unknown: [String] = []
        for directory in ["Sources/Gateway", "Sources/StorageCore", "Sources/SQLiteStore", "Sources/PostgresStore"] {
            let root = package.appendingPathComponent(directory)
            let enumerator = FileManager.default.enumerator(atPath: root.path)
            while let file = enumerator?.nextObject() as? String {
                guard file.hasSuffix(".swift") else { continue }
                let name = URL(fileURLWithPath: file).lastPathComponent
                let source = Array(try String(contentsOfFile: root.appendingPathComponent(file).path, encoding: .utf8))
                for expression in kindArguments(in: source) {
                    if let literal = plainLiteral(expression) {
                        kinds.insert(literal)
                    } else if let made = computed["\(name) \(expression)"] {
                        kinds.formUnion(made)
                    } else if !passedOn.contains("\(name) \(expression)") {
                        unknown.append("\(name): kind: \(expression)")
                    }
                }
            }
        }
        #expect(unknown.isEmpty, "kinds this test cannot tell (add them to TimelineKindsTests.computed): \(unknown)")
        return kinds
    }

    /// The expression after the first `kind:` in the arguments of each call that makes a line.
    static func kindArguments(in source: [Character]) -> [String] {
        var found: [String] = []
        for callee in ["appendEvent(", "NewOrderEvent(", "TransitionReceipt(", "appendQuietLine("] {
            let pattern = Array(callee)
            var index = 0
            while index + pattern.count <= source.count {
                defer { index += 1 }
                guard source[index..<(index + pattern.count)].elementsEqual(pattern) else { continue }
                // Not a declaration (`func appendEvent(`), not a longer name (`insertRefundEvent(`).
                let before = String(source[max(0, index - 5)..<index])
                if before.hasSuffix("func ") { continue }
                if index > 0, source[index - 1].isLetter || source[index - 1].isNumber { continue }
                guard let arguments = balanced(source, from: index + pattern.count - 1),
                      let label = arguments.range(of: "kind:") else { continue }
                found.append(expression(in: Array(arguments[label.upperBound...].drop(while: { $0 == " " || $0 == "\n" }))))
            }
        }
        return found
    }

    /// The text from the parenthesis at `open` to the one that closes it, skipping string
    /// literals (and the interpolations inside them).
    static func balanced(_ source: [Character], from open: Int) -> String? {
        var depth = 0
        var inString = false
        var interpolations: [Int] = []
        var index = open
        while index < source.count {
            let character = source[index]
            if inString {
                if character == "\\", index + 1 < source.count {
                    if source[index + 1] == "(" {
                        interpolations.append(depth)
                        depth += 1
                        inString = false
                    }
                    index += 2
                    continue
                }
                if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if character == "(" {
                depth += 1
            } else if character == ")" {
                depth -= 1
                if let outer = interpolations.last, depth == outer {
                    interpolations.removeLast()
                    inString = true
                } else if depth == 0 {
                    return String(source[open...index])
                }
            }
            index += 1
        }
        return nil
    }

    /// A string literal (with its quotes) or a name, at the start of `text`.
    static func expression(in text: [Character]) -> String {
        guard text.first == "\"" else {
            return String(text.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." || $0 == "$" })
        }
        var index = 1
        var depth = 0
        while index < text.count {
            if depth == 0, text[index] == "\"" { return String(text[...index]) }
            if text[index] == "\\", index + 1 < text.count, text[index + 1] == "(" {
                depth += 1
                index += 2
                continue
            }
            if depth > 0, text[index] == "(" { depth += 1 }
            if depth > 0, text[index] == ")" { depth -= 1 }
            index += 1
        }
        return String(text)
    }

    /// The kind a literal without interpolation names.
    static func plainLiteral(_ expression: String) -> String? {
        guard expression.count > 2, expression.hasPrefix("\""), expression.hasSuffix("\""), !expression.contains("\\") else {
            return nil
        }
        return String(expression.dropFirst().dropLast())
    }

    /// The kinds in the first column of docs/api.md's "Event kinds" table.
    static func apiTableKinds() throws -> Set<String> {
        let text = try String(contentsOfFile: package.appendingPathComponent("docs/api.md").path, encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex(of: "Event kinds:"), "docs/api.md has no \"Event kinds:\" table")
        var kinds: Set<String> = []
        for line in lines[(start + 1)...].drop(while: { $0.isEmpty }).prefix(while: { $0.hasPrefix("|") }) {
            let cell = line.split(separator: "|", omittingEmptySubsequences: true).first ?? ""
            let parts = cell.split(separator: "`", omittingEmptySubsequences: false)
            // Backticked runs are the odd-numbered parts.
            for (number, part) in parts.enumerated() where number % 2 == 1 { kinds.insert(String(part)) }
        }
        return kinds
    }
}
