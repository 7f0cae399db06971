// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import Testing

/// The error answer's body, written by `JSONObjectWriter`, is byte for byte what
/// `JSONSerialization` (sorted keys, slashes as is) wrote before: clients parse it, and the
/// battery compares codes and messages.
struct APIErrorJSONTests {
    static func foundation(_ error: APIError) throws -> [UInt8] {
        var inner: [String: Any] = ["code": error.code, "message": error.message]
        if let field = error.field { inner["field"] = field }
        if let retryAfter = error.retryAfter { inner["retry_after"] = retryAfter }
        if let wechatCode = error.wechatCode { inner["wechat_code"] = wechatCode }
        var body: [String: Any] = ["error": inner]
        if let finish = error.finishTransaction { body["finish_transaction"] = finish }
        return Array(try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    static let errors: [APIError] = [
        .invalid(nil, "the body must be a JSON object"),
        .invalid("description", "description must not contain control, text-direction or invisible characters"),
        .internalError,
        .databaseUnavailable,
        APIError(status: 409, code: "conflict", message: "a/b \"quoted\" 中文 \\ é", field: "out_trade_no", retryAfter: 3,
                 wechatCode: "ORDERPAID", finishTransaction: false),
        APIError(status: 400, code: "invalid_request", message: "x", finishTransaction: true),
    ]

    @Test(arguments: errors)
    func anErrorAnswerIsTheJSONFoundationWroteForIt(error: APIError) throws {
        #expect(error.json == (try Self.foundation(error)), "\(String(decoding: error.json, as: UTF8.self))")
    }
}
