// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One `wxpay-bench` subcommand: a name, a line for the usage text, and what to run.
struct BenchmarkCommand: Sendable {
    let name: String
    let summary: String
    let run: @Sendable ([String]) async throws -> Int32

    /// A benchmark that reads the shared options (`--seconds`, `--rounds`, `--no-reference`).
    init(name: String, summary: String, options run: @escaping @Sendable (BenchmarkOptions) throws -> Void) {
        self.name = name
        self.summary = summary
        self.run = { arguments in
            let options: BenchmarkOptions
            do throws(BenchmarkOptions.UsageError) {
                options = try BenchmarkOptions(parsing: arguments[...])
            } catch {
                printError("wxpay-bench \(name): \(error.message)")
                return 64
            }
            try run(options)
            return 0
        }
    }

    /// A benchmark that parses its own arguments and returns an exit status.
    init(name: String, summary: String, arguments run: @escaping @Sendable ([String]) async throws -> Int32) {
        self.name = name
        self.summary = summary
        self.run = run
    }

    /// A benchmark that parses its own arguments and exits 0 unless it throws.
    init(name: String, summary: String, arguments run: @escaping @Sendable ([String]) async throws -> Void) {
        self.init(name: name, summary: summary, arguments: { arguments -> Int32 in
            try await run(arguments)
            return 0
        })
    }

    static func dispatch(_ arguments: [String], among commands: [BenchmarkCommand]) async -> Int32 {
        let usage = """
            usage: wxpay-bench <subcommand> [options]

            Single-threaded throughput benchmarks; build with `swift build -c release` first.
            Options of the protocol benchmarks (sign, notify):
              --seconds S      length of one timed round (default 1)
              --rounds N       timed rounds; the median and best are reported (default 5)
              --no-reference   skip the reference measurements (openssl speed, raw libxml2)

            subcommands:
            """ + commands.map { "\n  \($0.name.padding(toLength: 16, withPad: " ", startingAt: 0))\($0.summary)" }.joined()
        guard let name = arguments.first, let command = commands.first(where: { $0.name == name }) else {
            let help = arguments.first == "-h" || arguments.first == "--help"
            printError(usage)
            return help ? 0 : 64
        }
        do {
            return try await command.run(Array(arguments.dropFirst()))
        } catch {
            printError("wxpay-bench \(name): \(error)")
            return 1
        }
    }
}

struct BenchmarkOptions: Sendable {
    var secondsPerRound = 1.0
    var rounds = 5
    var reference = true

    struct UsageError: Error { let message: String }

    init(parsing arguments: ArraySlice<String>) throws(UsageError) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            switch argument {
            case "--seconds":
                guard let value = remaining.popFirst().flatMap(Double.init), value > 0, value <= 600 else {
                    throw UsageError(message: "--seconds needs a number between 0 and 600")
                }
                secondsPerRound = value
            case "--rounds":
                guard let value = remaining.popFirst().flatMap({ Int($0) }), value > 0, value <= 100 else {
                    throw UsageError(message: "--rounds needs a number between 1 and 100")
                }
                rounds = value
            case "--no-reference":
                reference = false
            default:
                throw UsageError(message: "unknown option \(argument)")
            }
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
