// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Crypto
import Foundation
import JSON
import Testing
import WeChatPayV3
@testable import WeChatPaySimulator

/// The v3 simulator and WeChatPayV3 checked by the outside reference, Python's `wechatpayv3`
/// client (scripts/wechatpayv3/reference_agreement.py): pointed at the simulator, its pay, query,
/// close, refund, query_refund, trade_bill and download_bill work and its callback accepts the
/// simulator's notifies; the notifies its own helpers build open with WeChatPayV3, and the app
/// sign it makes verifies under the merchant key. The package comes from scripts/test-tools,
/// pinned, in .build/test-tools-venv; without it the test fails and says to run the setup.
struct V3ReferenceAgreementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python")
    static var installed: Bool {
        let marker = root.appendingPathComponent(".build/test-tools-venv/test-tools-requirements.txt")
        return FileManager.default.isExecutableFile(atPath: python.path)
            && ((try? String(contentsOf: marker, encoding: .utf8))?.contains("wechatpayv3==") ?? false)
    }

    @Test("wechatpayv3 works against the simulator, its callback accepts the simulator's notifies, and WeChatPayV3 opens the notifies it builds",
          .timeLimit(.minutes(10)))
    func wechatpayv3AgreesWithTheSimulator() async throws {
        try #require(Self.installed, "wechatpayv3 is not in .build/test-tools-venv: run scripts/setup")
        let rig = try await V3SimulatorRig.start(.publicKey)
        defer { Task { await rig.stop() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("v3-agreement-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String, _ text: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: url)
            return url.path
        }
        let output = directory.appendingPathComponent("notifies.json").path
        let input: JSONValue = [
            "base_url": .string(rig.base), "notify_port": 0, "mchid": "1900000109", "appid": "wxd678efh567hg6787",
            "apiv3_key": .string(V3SimulatorRig.apiV3Key), "merchant_key": .string(try file("merchant.pem", rig.merchantKey.key.pkcs8PEM)),
            "merchant_serial": .string(rig.signer.serialNumber), "public_key_id": .string(V3SimulatorRig.publicKeyID),
            "wechatpay_public_key": .string(try file("wechatpay_public.pem", rig.wechatpayKey.key.publicKeyPEM)),
            "wechatpay_private_key": .string(try file("wechatpay_private.pem", rig.wechatpayKey.key.pkcs8PEM)),
            "out_trade_no": "PYV3ORDER01", "output_notifies": .string(output),
        ]
        let report = try await Self.runScript(input: try file("input.json", input.serialized()), directory: directory)
        let checks = try #require(report["checks"]?.arrayValue)
        #expect(checks.count == 12)
        for check in checks {
            #expect(check["ok"] == true, "\(check["name"]?.stringValue ?? "?"): \(check["detail"]?.stringValue ?? "")")
        }

        // What wechatpayv3's helpers built, opened by WeChatPayV3.
        let built = try JSONValue.parse(Array(try Data(contentsOf: URL(fileURLWithPath: output))))
        let opener = V3NotifyOpener(verifier: V3Verifier(publicKey: rig.publicKey), key: try APIv3Key(V3SimulatorRig.apiV3Key),
                                    mchID: "1900000109")
        let notifies = try #require(built["notifies"]?.arrayValue)
        #expect(notifies.count == 2)
        for notify in notifies {
            var headers: [String: String] = [:]
            for (name, value) in notify["headers"]?.objectValue ?? [:] { headers[name] = value.stringValue }
            let body = Array((notify["body"]?.stringValue ?? "").utf8)
            switch try opener.open(headers: headers, body: body, now: Date()) {
            case .payment(let transaction):
                #expect(notify["event"] == "TRANSACTION.SUCCESS" && transaction.total == 1234 && transaction.outTradeNo == "PYBUILT0001")
            case .refund(let notice):
                #expect(notify["event"] == "REFUND.SUCCESS" && notice.refund == 234 && notice.outRefundNo == "PYBUILT0001R")
            }
            var tampered = body
            tampered[tampered.count / 2] ^= 0x01
            #expect(throws: WeChatPayV3Error.self) { try opener.open(headers: headers, body: tampered, now: Date()) }
        }
        // The app's sign wechatpayv3 made verifies with the module's rule.
        let app = try #require(built["app"])
        var parameters = V3AppPayParameters(appID: app["appid"]?.stringValue ?? "", mchID: "1900000109",
                                            prepayID: app["prepay_id"]?.stringValue ?? "", nonce: app["nonce"]?.stringValue ?? "",
                                            timestamp: Int64(app["timestamp"]?.stringValue ?? "") ?? 0, signer: rig.signer)
        #expect(parameters.sign == app["sign"]?.stringValue)
        parameters.sign = app["sign"]?.stringValue ?? ""
        #expect(parameters.isValid(under: rig.merchantKey.publicKey))
    }

    /// Runs the script with the test tools' Python, bounded in time.
    static func runScript(input: String, directory: URL) async throws -> JSONValue {
        let output = directory.appendingPathComponent("report.json")
        let errors = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        environment["NO_PROXY"] = "127.0.0.1"
        let child = try ChildProcess(python.path, [root.appendingPathComponent("scripts/wechatpayv3/reference_agreement.py").path, input],
                                     environment: environment, output: output.path, errors: errors.path)
        let status = await child.wait(timeout: .seconds(300))
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        guard let report = try? JSONValue.parse(Array(text.utf8)) else {
            let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw ScriptFailure(description: "reference_agreement.py printed no report (exit \(status)): \(stderr.suffix(2000))")
        }
        return report
    }

    struct ScriptFailure: Error, CustomStringConvertible { let description: String }
}
