// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Testing
import WeChatPay

/// `wxpay-gateway sign`, run as the built binary (next to this test bundle, or in .build/debug).
struct SignCommandTests {
    static let key = "192006250b4c09247ec02edce69f6a2d"
    static let vector = ["appid=wxd930ea5d5a258f4f", "mch_id=10000100", "device_info=1000", "body=test",
                         "nonce_str=ibuaiVcKdpRxkhJA"]

    @Test func theOfficialVectorPrintsTheDocumentedMD5() async throws {
        let run = try await SignCommandRun(["sign", "--key", Self.key] + Self.vector)
        #expect(run.status == 0)
        #expect(run.output == "9A0A8659F005D6984697E2CA0A9CF3B7\n")
    }

    @Test func theOfficialVectorPrintsTheDocumentedHMACSHA256() async throws {
        for spelling in ["HMAC-SHA256", "hmac-sha256"] {
            let run = try await SignCommandRun(["sign", "--key", Self.key, "--sign-type", spelling] + Self.vector)
            #expect(run.status == 0)
            #expect(run.output == "6A9AE1657590FD6257D693A078E1C3E4BB6BA4DC30B23E0EE2496E54170DACD6\n")
        }
    }

    @Test func theKeyCanComeFromAFileOrTheEnvironmentInsteadOfTheProcessList() async throws {
        let keyFile = try TemporaryFile(Array("\(Self.key)\n".utf8))
        let fromFile = try await SignCommandRun(["sign", "--key-file", keyFile.path] + Self.vector)
        #expect(fromFile.status == 0)
        #expect(fromFile.output == "9A0A8659F005D6984697E2CA0A9CF3B7\n")
        let fromEnvironment = try await SignCommandRun(["sign"] + Self.vector, environment: ["WXPAY_API_KEY": Self.key])
        #expect(fromEnvironment.status == 0)
        #expect(fromEnvironment.output == "9A0A8659F005D6984697E2CA0A9CF3B7\n")
    }

    @Test func noKeyOrTwoKeySourcesAreUsageErrors() async throws {
        let keyFile = try TemporaryFile(Array(Self.key.utf8))
        let both = try await SignCommandRun(["sign", "--key", Self.key, "--key-file", keyFile.path] + Self.vector)
        #expect(both.status == 64)
        #expect(both.output.isEmpty)
        let none = try await SignCommandRun(["sign"] + Self.vector, environment: [:])
        #expect(none.status == 64)
        #expect(none.errors.contains("no API key"))
        let unreadable = try await SignCommandRun(["sign", "--key-file", "/nonexistent/key"] + Self.vector)
        #expect(unreadable.status == 66)
    }

    @Test func anXMLFileSignedWithMD5IsReportedAsMD5() async throws {
        let file = try TemporaryFile(Self.document(type: .md5, declare: true))
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", file.path])
        #expect(run.status == 0)
        #expect(run.output == "signature valid: MD5 (sign_type says MD5)\n")
    }

    @Test func anHMACNotifyWithoutSignTypeOnStandardInputIsReportedAsHMAC() async throws {
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: Self.document(type: .hmacSHA256, declare: false))
        #expect(run.status == 0)
        #expect(run.output == "signature valid: HMAC-SHA256 (no sign_type)\n")
    }

    @Test func aSignatureMadeWithAnotherKeyMatchesNeitherAlgorithm() async throws {
        let document = Self.document(type: .md5, declare: false, key: "00000000000000000000000000000000")
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: document)
        #expect(run.status == 1)
        #expect(run.output == "signature matches neither MD5 nor HMAC-SHA256 with this key (no sign_type)\n")
    }

    @Test func aSignTypeThatContradictsTheMatchingAlgorithmIsNotCalledValid() async throws {
        var fields = Self.fields
        fields["sign_type"] = "MD5"
        fields["sign"] = Signer(key: APIKey(Self.key)).signature(for: fields, type: .hmacSHA256)
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: try FlatXML.encode(fields))
        #expect(run.status == 1)
        #expect(run.output.contains("matches HMAC-SHA256, but sign_type says MD5"))
    }

    @Test func aDocumentWithoutSignSaysSoAndFails() async throws {
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: try FlatXML.encode(Self.fields))
        #expect(run.status == 1)
        #expect(run.output == "no sign field in the document\n")
    }

    @Test func aHostileDocumentIsRefusedAsDataWithoutEchoingIt() async throws {
        let body = #"<!DOCTYPE xml [<!ENTITY x SYSTEM "file:///etc/passwd">]><xml><a>&x;</a></xml>"#
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: Array(body.utf8))
        #expect(run.status == 65)
        #expect(run.errors.contains("DOCTYPE declarations are not allowed"))
        #expect(!run.errors.contains("passwd"))
    }

    @Test func anEndlessInputIsCutAtTheSizeCap() async throws {
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "/dev/zero"])
        #expect(run.status == 65)
        #expect(run.errors.contains("larger than"))
    }

    @Test func aMissingFileExitsWithNoInput() async throws {
        let run = try await SignCommandRun(["sign", "--key", Self.key, "--xml", "/nonexistent/\(UUID().uuidString).xml"])
        #expect(run.status == 66)
    }

    static let badArguments: [[String]] = [
        [],
        ["--key"],
        ["--key", ""],
        Self.vector,
        ["--key", key],
        ["--key", key, "--sign-type", "SHA1"] + vector,
        ["--key", key, "--sign-type"],
        ["--key", key, "appid"],
        ["--key", key, "=x"],
        ["--key", key, "--kye=1"],
        ["--key", key, "a=1", "a=2"],
        ["--key", key, "--xml", "-", "a=1"],
    ]

    @Test(arguments: badArguments)
    func badArgumentsExitWith64AndAUsageMessage(_ arguments: [String]) async throws {
        let run = try await SignCommandRun(["sign"] + arguments)
        #expect(run.status == 64)
        #expect(run.errors.contains("usage: wxpay-gateway sign"))
        #expect(run.output.isEmpty)
    }

    @Test func theKeyNeverAppearsInAnyOutput() async throws {
        let runs = [
            try await SignCommandRun(["sign", "--key", Self.key] + Self.vector),
            try await SignCommandRun(["sign", "--key", Self.key, "--xml", "-"], input: Self.document(type: .md5, declare: true)),
            try await SignCommandRun(["sign", "--key", Self.key, "bad"]),
        ]
        for run in runs {
            #expect(!run.output.contains(Self.key) && !run.errors.contains(Self.key))
        }
    }

    static let fields: Fields = [
        "appid": "wxd930ea5d5a258f4f", "mch_id": "10000100", "nonce_str": "ibuaiVcKdpRxkhJA",
        "result_code": "SUCCESS", "total_fee": "1", "attach": "测试",
    ]

    static func document(type: SignType, declare: Bool, key: String = key) -> [UInt8] {
        var fields = Self.fields
        if declare { fields["sign_type"] = type.rawValue }
        fields["sign"] = Signer(key: APIKey(key)).signature(for: fields, type: type)
        return (try? FlatXML.encode(fields)) ?? []
    }
}

/// One run of the built `wxpay-gateway`, with a watchdog so a hung child cannot hang the suite.
struct SignCommandRun {
    let status: Int32
    let output: String
    let errors: String

    /// `environment`: the child's whole environment (nil: this process's, without WXPAY_API_KEY,
    /// so a developer's own key never changes a test's outcome).
    ///
    /// Async, waiting without a thread: a test blocking on the child held one of the cooperative
    /// pool's two threads for the child's whole run, and two such tests at once stalled the whole
    /// suite.
    init(_ arguments: [String], input: [UInt8] = [], environment: [String: String]? = nil) async throws {
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let result = try await ChildProcess.run(
            try Self.executable().path, arguments,
            environment: environment ?? ProcessInfo.processInfo.environment.filter { $0.key != "WXPAY_API_KEY" },
            input: input, timeout: .seconds(30))
        status = result.status
        output = String(decoding: result.output, as: UTF8.self)
        errors = String(decoding: result.errors, as: UTF8.self)
    }

    struct MissingExecutable: Error, CustomStringConvertible {
        var description: String { "wxpay-gateway not built: run `swift build --build-tests` first" }
    }

    /// The binary sits next to the test bundle; fall back to the package's .build/debug.
    static func executable() throws -> URL {
        var candidates: [URL] = []
        if let bundle = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: bundle).deletingLastPathComponent().appendingPathComponent("wxpay-gateway"))
        }
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        candidates.append(package.appendingPathComponent(".build/debug/wxpay-gateway"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MissingExecutable()
        }
        return found
    }
}

/// A file in the temporary directory, removed when the value goes away.
final class TemporaryFile {
    let path: String

    init(_ contents: [UInt8]) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-sign-\(UUID().uuidString).xml").path
        try Data(contents).write(to: URL(fileURLWithPath: path))
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
