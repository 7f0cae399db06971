// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Observability
import Testing

/// A log line, written by `JSONObjectWriter`, is byte for byte the JSON `JSONSerialization`
/// (sorted keys, slashes as is) wrote before: log pipelines parse it. (Names are in byte order;
/// Linux's JSONSerialization orders mixed-case names otherwise, but the gateway's metadata names
/// are lower-case snake_case.)
struct LogLineJSONTests {
    @Test func aLogLineIsTheJSONFoundationWroteForTheRecord() throws {
        let record = LogRecord(date: Date(timeIntervalSince1970: 1_764_600_000.25), level: .warning, label: "gateway.notify",
                               message: "notify \"refused\"\nsecond line: 签名 / \\ \u{1}",
                               metadata: ["out_trade_no": "A_b-c|d*9", "wechat_code": "ORDERPAID", "peer": "203.0.113.7", "": "empty"])
        var object = record.metadata
        object["ts"] = Timestamp.rfc3339(record.date)
        object["level"] = "warning"
        object["logger"] = record.label
        object["msg"] = record.message
        let foundation = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        let line = JSONLinesLogHandler(timestamp: Timestamp.rfc3339).line(record)
        #expect(line == Array(foundation) + [0x0A], "\(String(decoding: line, as: UTF8.self))")
    }
}
