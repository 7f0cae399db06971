// SPDX-License-Identifier: Apache-2.0
import StorageCore

extension PostgresSettings {
    /// libpq's keyword/value arrays: defaults first (the expanded URI overrides them), then what
    /// the store cannot work without.
    var connectionParameters: (keywords: [String], values: [String]) {
        let pairs: [(String, String)] = [
            ("connect_timeout", String(connectTimeout)),
            ("application_name", "wxpay-gateway"),
            // A peer that vanished without closing is noticed within about a minute, not hours.
            ("keepalives", "1"), ("keepalives_idle", "30"), ("keepalives_interval", "10"), ("keepalives_count", "3"),
            ("dbname", url),
            ("client_encoding", "UTF8"),
        ]
        return (pairs.map(\.0), pairs.map(\.1))
    }
}
