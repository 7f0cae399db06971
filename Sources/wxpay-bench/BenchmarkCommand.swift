// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One `wxpay-bench` subcommand.
struct BenchmarkCommand: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (BenchmarkOptions) throws -> Void

    static func dispatch(_ arguments: [String], among commands: [BenchmarkCommand]) -> Int32 {
        let usage = """
            usage: wxpay-bench <subcommand> [--seconds S] [--rounds N] [--no-reference]

            Single-threaded throughput benchmarks; build with `swift build -c release` first.
              --seconds S      length of one timed round (default 1)
              --rounds N       timed rounds; the median and best are reported (default 5)
              --no-reference   skip the reference measurements (openssl speed, raw libxml2)

            subcommands:
            """ + commands.map { "\n  \($0.name.padding(toLength: 14, withPad: " ", startingAt: 0))\($0.summary)" }.joined()
        guard let name = arguments.first, let command = commands.first(where: { $0.name == name }) else {
            let help = arguments.first == "-h" || arguments.first == "--help"
            printError(usage)
            return help ? 0 : 64
        }
        let options: BenchmarkOptions
        do {
            options = try BenchmarkOptions(parsing: arguments.dropFirst())
        } catch {
            printError("wxpay-bench \(name): \(error.message)\n\(usage)")
            return 64
        }
        do {
            try command.run(options)
            return 0
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
