// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct MessagesGetSignKeyTests {
    @Test func theRequestHasNoBusinessFields() throws {
        #expect(GetSignKeyRequest().businessFields().count == 0)
        #expect(try GetSignKeyRequest(fields: ["mch_id": "1"]) == GetSignKeyRequest())
    }

    @Test func theResponseHoldsTheKeyWithoutEverPrintingIt() throws {
        let fields: Fields = ["return_code": "SUCCESS", "mch_id": "10000100", "sandbox_signkey": "013467007045764a"]
        let response = try GetSignKeyResponse(verifiedFields: fields)
        #expect(response.sandboxSignKey == APIKey("013467007045764a"))
        #expect(response.mchID == "10000100")
        #expect(response.fields["sandbox_signkey"] == nil)
        #expect(!String(describing: response).contains("013467007045764a"))
        #expect(!String(reflecting: response).contains("013467007045764a"))
    }

    @Test func aResponseWithoutTheKeyIsRefused() {
        #expect(throws: WeChatPayMessageError.missingField("sandbox_signkey")) {
            try GetSignKeyResponse(verifiedFields: ["return_code": "SUCCESS", "mch_id": "1"])
        }
    }

    @Test func aBuiltResponseSendsTheKeyForTheSimulator() throws {
        let built = GetSignKeyResponse(mchID: "1", sandboxSignKey: APIKey("sandbox123"))
        #expect(built.businessFields() == ["mch_id": "1", "sandbox_signkey": "sandbox123"])
        let reply = ResponseEnvelope.unsignedSuccess(built.businessFields())
        #expect(reply.names == ["return_code", "return_msg", "mch_id", "sandbox_signkey"])
        #expect(try GetSignKeyResponse(verifiedFields: reply).sandboxSignKey == APIKey("sandbox123"))
    }
}
