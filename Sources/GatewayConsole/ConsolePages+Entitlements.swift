// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway

extension ConsolePages {
    /// The order's user's entitlements, read-only: what the entitlements route answers for them.
    static func entitlements(_ entitlements: Entitlements, user: String, at now: Date, _ text: ConsoleText) -> HTML {
        guard !entitlements.grants.isEmpty else {
            return "<section><h2>\(text.entitlementsTitle(user))</h2><p id=\"entitlements-none\">\(text.noEntitlements)</p></section>"
        }
        let rows: [HTML] = entitlements.grants.map { grant in
            let active = grant.isActive(at: now)
            return """
                <tr data-entitlement="\(grant.entitlement)"><td><code>\(grant.entitlement)</code></td>\
                <td>\(active ? text.entitlementActive : text.entitlementLapsed)</td>\
                <td>\(grant.expiresAt.map(ConsoleFormat.time) ?? text.entitlementForever)</td>\
                <td><a href="/console/orders/\(HTML.segment(grant.source.outTradeNo))" class="mono">\(grant.source.outTradeNo)</a> \
                (\(text.channelName(grant.source.channel)))</td></tr>
                """
        }
        return """
            <section><h2>\(text.entitlementsTitle(user))</h2><p class="hint">\(text.entitlementsHelp)</p>
            <table id="entitlements"><thead><tr><th>\(text.entitlementName)</th><th>\(text.entitlementState)</th>\
            <th>\(text.entitlementExpires)</th><th>\(text.entitlementSource)</th></tr></thead>
            <tbody>\(rows)</tbody></table></section>
            """
    }
}
