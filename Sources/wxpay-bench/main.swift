// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif

// `wxpay-bench <subcommand> [options]`. One file per benchmark; adding one is one line here.
let commands: [BenchmarkCommand] = [
    SignBenchmark.command,
    NotifyBenchmark.command,
]

exit(BenchmarkCommand.dispatch(Array(CommandLine.arguments.dropFirst()), among: commands))
