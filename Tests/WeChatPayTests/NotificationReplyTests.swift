// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct NotificationReplyTests {
    @Test func theSuccessReplyIsByteForByteWhatWeChatDocuments() {
        let expected = "<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>"
        #expect(NotifyReply.success.bytes == Array(expected.utf8))
    }

    @Test func aFailReplyCarriesTheMessageAndParsesBack() throws {
        let fields = try FlatXML.decode(NotifyReply.fail("SIGN_ERROR").bytes)
        #expect(fields == ["return_code": "FAIL", "return_msg": "SIGN_ERROR"])
    }

    @Test func aFailMessageCannotBreakOutOfItsCDATASectionOrGrowUnbounded() throws {
        let hostile = "x]]><return_code>SUCCESS</return_code>\u{1}\n" + String(repeating: "长", count: 500)
        let fields = try FlatXML.decode(NotifyReply.fail(hostile).bytes)
        #expect(fields["return_code"] == "FAIL")
        #expect(fields.count == 2)
        let message = try #require(fields["return_msg"])
        #expect(message.count <= 64)
        #expect(!message.contains("]]>"))
        #expect(try FlatXML.decode(NotifyReply.fail("").bytes)["return_msg"] == "FAIL")
    }
}
