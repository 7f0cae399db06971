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
    JWSBenchmark.command,
    MetricsBenchmark.command,
    V3Benchmark.command,
    EntitlementBenchmark.command,
    QRBenchmark.command,
    BenchmarkCommand(name: "notifications", summary: "payment notify decode+verify, refund notify decrypt, app params",
                     arguments: NotifyBenchmark.run),
    BenchmarkCommand(name: "client-pipeline", summary: "sign/encode/decode/verify cost of one WeChat call, no network",
                     arguments: ClientPipelineBenchmark.run),
    BenchmarkCommand(name: "bill", summary: "render, gzip, gunzip and parse a 100,000-row bill",
                     arguments: BillBenchmark.run),
    BenchmarkCommand(name: "storage", summary: "SQLite transitions/s: group commit against one transaction each",
                     arguments: StorageBench.run),
    BenchmarkCommand(name: "http-server", summary: "a server for wrk (see scripts/bench-http-server)",
                     arguments: HTTPServerBench.run),
    BenchmarkCommand(name: "http-client", summary: "keep-alive client throughput (--url URL [--concurrency N])",
                     arguments: HTTPClientBench.run),
    BenchmarkCommand(name: "simulator", summary: "in-process simulator: 100,000 orders, RSS, orderquery rate",
                     arguments: SimulatorBench.run),
    BenchmarkCommand(name: "reconcile", summary: "reconciler sweeps against the in-process simulator (T7 shape)",
                     arguments: ReconcileBenchmark.run),
    BenchmarkCommand(name: "gateway", summary: "create|notify|wait load phases against a running gateway",
                     arguments: GatewayBench.run),
]

exit(await BenchmarkCommand.dispatch(Array(CommandLine.arguments.dropFirst()), among: commands))
