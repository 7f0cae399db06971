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
    var commaDelimited: String {
        "," + map(\.rawValue).sorted().joined(separator: ",") + ","
    }
}
