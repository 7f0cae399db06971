// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Crypto
import Foundation
import Testing

/// The independent sides of the vectors: the `openssl` command line tool and Python's
/// `cryptography` (from .build/test-tools-venv, scripts/test-tools), each run in a scratch directory.
struct V3Vectors {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent(".build/test-tools-venv/bin/python").path

    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-v3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ name: String, _ bytes: [UInt8]) throws { try Data(bytes).write(to: directory.appendingPathComponent(name)) }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: directory.appendingPathComponent(name))) }

    @discardableResult
    func openssl(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [UInt8] {
        let result = try await ChildProcess.run("/usr/bin/env", ["openssl"] + arguments, environment: ProcessInfo.processInfo.environment,
                                                input: nil, timeout: .seconds(120))
        #expect(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(String(decoding: result.errors, as: UTF8.self))",
                sourceLocation: sourceLocation)
        return result.output
    }

    /// Runs a Python program with the test tools' interpreter; its standard output.
    func python(_ program: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [UInt8] {
        try #require(FileManager.default.isExecutableFile(atPath: Self.python),
                     "Python's cryptography is not in .build/test-tools-venv: run scripts/setup", sourceLocation: sourceLocation)
        try write("program.py", Array(program.utf8))
        let result = try await ChildProcess.run(Self.python, [path("program.py")], environment: ProcessInfo.processInfo.environment,
                                                input: nil, timeout: .seconds(120))
        #expect(result.status == 0, "python: \(String(decoding: result.errors, as: UTF8.self))", sourceLocation: sourceLocation)
        return result.output
    }

    /// A fresh RSA-2048 key made by openssl, as PKCS#8 PEM.
    func opensslKey(_ name: String) async throws -> String {
        try await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", path(name)])
        return String(decoding: try read(name), as: UTF8.self)
    }
}
