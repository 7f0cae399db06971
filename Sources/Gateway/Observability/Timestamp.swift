// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// How the API and the logs write instants: RFC 3339 with milliseconds and the Beijing offset
/// (`+08:00`), the zone WeChat's own times are in. The arithmetic lives in `BeijingTime`.
public enum Timestamp {
    public static func rfc3339(_ date: Date) -> String { BeijingTime.formatRFC3339(date) }
}
