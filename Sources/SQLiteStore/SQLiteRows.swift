// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension Set<OrderState> {
    /// The set as a JSON array for `state IN (SELECT value FROM json_each(?))`: one bound
    /// parameter instead of SQL text that varies with the set. Raw values are fixed identifiers.
    var jsonArray: String {
        "[" + map { "\"\($0.rawValue)\"" }.sorted().joined(separator: ",") + "]"
    }

    /// The set as `,NOTPAY,USERPAYING,` for `instr(?, ',' || state || ',') > 0`: one bound
    /// parameter, and no ephemeral index per statement as `json_each` needs. Raw values are fixed
    /// capital words, never containing a comma.
    /// In `OrderState.allCases`' order, without a sort or a join: every transition binds one, and
    /// sorting and joining the names was 2 % of the SQLite writer's time per notify.
    var commaDelimited: String {
        var text = ","
        for state in OrderState.allCases where contains(state) {
            text += state.rawValue
            text += ","
        }
        return text
    }
}
