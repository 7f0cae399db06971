// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Testing
import WeChatPay
import WeChatPayReference

/// The JSAPI client parameters of a v2 order (`wx.requestPayment`, `getBrandWCPayRequest`), held to
/// the plain reference signature and to wechatpy, the outside reference (its `calculate_signature`
/// and `calculate_signature_hmac`, which its own `WeChatPay.jsapi.get_jsapi_params` uses).
struct JSAPIPayParametersTests {
    static let key = "192006250b4c09247ec02edce69f6a2d"
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python").path

    static func parameters(_ type: SignType, nonce: String = "e61463f8efa94090b1f366cccfbbb444") throws -> JSAPIPayParameters {
        try JSAPIPayParameters(appID: "wx2421b1c4370ec43b", prepayID: "wx201410272009395522657a690389285100", nonce: nonce,
                               timestamp: 1_395_712_654, signType: type, signer: Signer(key: APIKey(Self.key)))
    }

    @Test("paySign covers exactly appId, timeStamp, nonceStr, package=prepay_id=… and signType, as the reference signer computes it",
          arguments: SignType.allCases)
    func paySignIsTheV2SignatureOfTheFiveFields(type: SignType) throws {
        let parameters = try Self.parameters(type)
        #expect(parameters.package == "prepay_id=wx201410272009395522657a690389285100")
        #expect(parameters.signType == type.rawValue && parameters.timeStamp == "1395712654")
        let fields: Fields = ["appId": "wx2421b1c4370ec43b", "timeStamp": "1395712654", "nonceStr": "e61463f8efa94090b1f366cccfbbb444",
                              "package": "prepay_id=wx201410272009395522657a690389285100", "signType": type.rawValue]
        #expect(parameters.signedFields == fields)
        #expect(parameters.paySign == ReferenceSigner.signature(fields, key: Self.key, type: type))
        // Another prepay, app id or algorithm is another signature.
        let other = try JSAPIPayParameters(appID: "wx0000000000000000", prepayID: "wx201410272009395522657a690389285100",
                                           nonce: "e61463f8efa94090b1f366cccfbbb444", timestamp: 1_395_712_654, signType: type,
                                           signer: Signer(key: APIKey(Self.key)))
        #expect(other.paySign != parameters.paySign)
    }

    @Test("wechatpy's calculate_signature (MD5) and calculate_signature_hmac (HMAC-SHA256) give the same paySign")
    func wechatpyAgrees() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python),
                     "wechatpy is not in .build/test-tools-venv: run scripts/setup")
        var lines: [String] = []
        for type in SignType.allCases {
            let parameters = try Self.parameters(type, nonce: "jsapi\(type == .md5 ? "md5" : "hmac")Nonce")
            let fields = parameters.signedFields
            let dictionary = fields.map { "\"\($0.name)\": \"\($0.value)\"" }.sorted().joined(separator: ", ")
            let function = type == .md5 ? "calculate_signature" : "calculate_signature_hmac"
            lines.append("print(\(function)({\(dictionary)}, \"\(Self.key)\"))")
            lines.append("print(\"\(parameters.paySign)\")")
        }
        let program = "from wechatpy.pay.utils import calculate_signature, calculate_signature_hmac\n" + lines.joined(separator: "\n")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-jsapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("program.py")
        try Data(program.utf8).write(to: file)
        let result = try await ChildProcess.run(Self.python, [file.path], environment: ProcessInfo.processInfo.environment,
                                                input: nil, timeout: .seconds(120))
        #expect(result.status == 0, "python: \(String(decoding: result.errors, as: UTF8.self))")
        let output = String(decoding: result.output, as: UTF8.self).split(separator: "\n").map(String.init)
        try #require(output.count == 4, "\(output)")
        #expect(output[0] == output[1], "MD5: wechatpy \(output[0]), ours \(output[1])")
        #expect(output[2] == output[3], "HMAC-SHA256: wechatpy \(output[2]), ours \(output[3])")
    }

    @Test("An empty field, a nonce over 32 characters or a timestamp in milliseconds is refused, naming the rule")
    func badInputIsRefused() {
        let signer = Signer(key: APIKey(Self.key))
        #expect(throws: AppPayError.emptyValue("appId")) {
            try JSAPIPayParameters(appID: "", prepayID: "wx1", nonce: "n", timestamp: 1_395_712_654, signType: .md5, signer: signer)
        }
        #expect(throws: AppPayError.nonceTooLong) {
            try JSAPIPayParameters(appID: "wx1", prepayID: "wx1", nonce: String(repeating: "n", count: 33), timestamp: 1_395_712_654,
                                   signType: .md5, signer: signer)
        }
        #expect(throws: AppPayError.timestampNotSeconds) {
            try JSAPIPayParameters(appID: "wx1", prepayID: "wx1", nonce: "n", timestamp: 1_395_712_654_000, signType: .md5, signer: signer)
        }
    }
}
