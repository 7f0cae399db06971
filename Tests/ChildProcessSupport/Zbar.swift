// SPDX-License-Identifier: Apache-2.0
import Foundation

/// zbarimg (zbar-tools, installed by scripts/setup): the independent QR decoder the QR module's
/// tests and the gateway's QR route tests read PNGs back with.
public enum Zbar {
    /// Why a PNG was not read: zbarimg missing, or its exit status and error output.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin"]).map { "\($0)/zbarimg" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The text zbarimg reads from `png`; throws when it reads none (a test failure to its caller).
    public static func decode(_ png: [UInt8]) async throws -> String {
        guard let zbarimg = executable else {
            throw Failure(description: "zbarimg is not installed: run scripts/setup (it installs zbar-tools)")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ChildProcess.run(zbarimg, ["--raw", "-q", file.path], environment: ProcessInfo.processInfo.environment,
                                             timeout: .seconds(120))
        guard run.status == 0 else {
            throw Failure(description: "zbarimg exited \(run.status): \(String(decoding: run.errors, as: UTF8.self))")
        }
        var output = String(decoding: run.output, as: UTF8.self)
        // --raw prints the symbol's data and a line feed.
        if output.hasSuffix("\n") { output.removeLast() }
        return output
    }
}
