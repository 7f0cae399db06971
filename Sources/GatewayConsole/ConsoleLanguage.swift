// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The console's two languages: Chinese (zh-CN) by default, English when the browser prefers it
/// (`Accept-Language`) or the person chose it with the switch on every page (a cookie).
enum ConsoleLanguage: String, Sendable, Hashable, CaseIterable {
    case chinese = "zh-CN"
    case english = "en"

    /// The cookie's choice, else the first of Accept-Language's languages (by q) that is Chinese
    /// or English, else Chinese.
    static func choose(cookie: String?, acceptLanguage: String?) -> ConsoleLanguage {
        if let cookie, let chosen = ConsoleLanguage(rawValue: cookie) { return chosen }
        guard let acceptLanguage else { return .chinese }
        var ranges: [(tag: String, q: Double, position: Int)] = []
        for (position, item) in acceptLanguage.split(separator: ",").prefix(32).enumerated() {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let tag = parts.first?.lowercased(), !tag.isEmpty else { continue }
            var q = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                q = Double(parameter.dropFirst(2)) ?? 0
            }
            if q > 0 { ranges.append((tag, q, position)) }
        }
        for range in ranges.sorted(by: { ($0.q, -$0.position) > ($1.q, -$1.position) }) {
            if range.tag == "zh" || range.tag.hasPrefix("zh-") { return .chinese }
            if range.tag == "en" || range.tag.hasPrefix("en-") { return .english }
        }
        return .chinese
    }

    var other: ConsoleLanguage { self == .chinese ? .english : .chinese }
    var text: ConsoleText { ConsoleText(language: self) }
}
