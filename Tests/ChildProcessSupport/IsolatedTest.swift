// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Runs one test alone in a fresh copy of the test binary, for what only a process of its own can
/// measure: the heap hostile input leaves behind. In the whole suite's process every other test
/// running at the same moment allocates too (tens of megabytes, for seconds), so a bound checked
/// there fails on a loaded machine for reasons not the test's own.
///
/// ```swift
/// @Test func something() async throws {
///     guard IsolatedTest.isolated else { return try await IsolatedTest.expectPasses("MySuite/something") }
///     … the measurement …
/// }
/// ```
public enum IsolatedTest {
    private static let variable = "WXPAY_ISOLATED_TEST"

    /// Whether this process is the copy running one test alone.
    public static var isolated: Bool { ProcessInfo.processInfo.environment[variable] != nil }

    public struct Failure: Error, CustomStringConvertible {
        public var test: String
        public var status: Int32
        public var output: String
        public var description: String { "\(test) alone in its own process: exit status \(status)\n\(output)" }
    }

    /// Runs `test` (`Suite/testName`, a Swift Testing filter) in a new process of this test binary
    /// and throws its output unless exactly that one test ran and passed.
    public static func expectPasses(_ test: String, timeout: Duration = .seconds(300)) async throws {
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = "1"
        let run = try await ChildProcess.run(
            "/proc/self/exe", ["--testing-library", "swift-testing", "--filter", test],
            environment: environment, timeout: timeout)
        let output = String(decoding: run.output + run.errors, as: UTF8.self)
        guard run.status == 0, output.contains("Test run with 1 test") else {
            throw Failure(test: test, status: run.status, output: String(output.suffix(4_000)))
        }
    }
}
