// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import Testing

/// The `openssl` command-line tool (scripts/setup installs it), run in a scratch directory of one
/// test: the independent side of the cross-checks.
struct OpenSSLCommand {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: directory.appendingPathComponent(name))
    }

    func read(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    func text(_ name: String) throws -> String { String(decoding: try read(name), as: UTF8.self) }

    /// Runs `openssl arguments…` in the directory; its standard output. A failure is a test failure.
    @discardableResult
    func run(_ arguments: [String], input: [UInt8]? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [UInt8] {
        let result = try await status(arguments, input: input)
        #expect(result.status == 0, "openssl \(arguments.joined(separator: " ")): \(String(decoding: result.errors, as: UTF8.self))",
                sourceLocation: sourceLocation)
        return result.output
    }

    /// Runs `openssl arguments…` and returns its status and output whatever they are.
    func status(_ arguments: [String], input: [UInt8]? = nil) async throws -> (status: Int32, output: [UInt8], errors: [UInt8]) {
        // Paths are given whole: the child does not run in `directory`.
        try await ChildProcess.run("/usr/bin/env", ["openssl"] + arguments, environment: ProcessInfo.processInfo.environment,
                                   input: input, timeout: .seconds(120))
    }
}

extension Array where Element == UInt8 {
    /// Bytes from hex written with spaces or line breaks for reading.
    init(hex: String) {
        let digits = hex.filter { !$0.isWhitespace }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        self = bytes
    }
}
