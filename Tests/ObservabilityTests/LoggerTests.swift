// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import Synchronization
import Testing

struct LoggerTests {
    @Test func aMessageBelowTheLevelIsNeitherBuiltNorWritten() {
        let records = InMemoryLogHandler()
        let logger = Logger(label: "test", level: .warning, handler: records)
        let built = Atomic<Int>(0)
        func message() -> String {
            built.add(1, ordering: .relaxed)
            return "built"
        }
        logger.info(message(), ["k": message()])
        #expect(built.load(ordering: .relaxed) == 0)
        #expect(records.all.isEmpty)
        logger.error(message(), ["k": message()])
        #expect(built.load(ordering: .relaxed) == 2)
        #expect(records.all.map(\.message) == ["built"])
    }

    @Test func aChildLoggerCarriesItsMetadataIntoEveryRecord() {
        let records = InMemoryLogHandler()
        let logger = Logger(label: "test", handler: records).with("request_id", "r-1")
        logger.notice("hello", ["out_trade_no": "A1", "request_id": "r-2"])
        #expect(records.all.first?.metadata == ["out_trade_no": "A1", "request_id": "r-2"])
        logger.notice("again")
        #expect(records.all.last?.metadata == ["request_id": "r-1"])
    }

    @Test func aJSONLineWritesTheInstantAsItsFormatterSays() {
        let handler = JSONLinesLogHandler(timestamp: { _ in "at noon" })
        let line = handler.line(LogRecord(date: Date(), level: .info, label: "l", message: "m", metadata: ["a": "b"]))
        #expect(String(decoding: line, as: UTF8.self) == #"{"a":"b","level":"info","logger":"l","msg":"m","ts":"at noon"}"# + "\n")
    }
}
