// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

// `wxpay-bench <subcommand> [options]`. One file per benchmark; adding one is one line here, e.g.
// `BenchmarkCommand(name: "bill", summary: "…", arguments: BillBenchmark.run),` for a benchmark
// that parses its own arguments.
let commands: [BenchmarkCommand] = [
    SignBenchmark.command,
    NotifyVerifyBenchmark.command,
]

exit(await BenchmarkCommand.dispatch(Array(CommandLine.arguments.dropFirst()), among: commands))
