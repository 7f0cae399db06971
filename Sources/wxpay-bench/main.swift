// SPDX-License-Identifier: Apache-2.0
import Foundation

// One subcommand per benchmark, dispatched here; each lives in its own file.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "client-pipeline":
    exit(await ClientPipelineBenchmark.run(Array(arguments.dropFirst())))
case "bill": try BillBenchmark.run(Array(arguments.dropFirst()))
case "notify": try NotifyBenchmark.run(Array(arguments.dropFirst()))
case "storage": await StorageBench.run(Array(arguments.dropFirst()))
case "http-server": await HTTPServerBench.run(Array(arguments.dropFirst()))
case "http-client": try await HTTPClientBench.run(Array(arguments.dropFirst()))
case "simulator": try SimulatorBench.run(Array(arguments.dropFirst()))
case "reconcile": await ReconcileBenchmark.run(Array(arguments.dropFirst()))
case "gateway": exit(await GatewayBench.run(Array(arguments.dropFirst())))
default:
    print("usage: wxpay-bench <benchmark> [options]")
    print("  client-pipeline [iterations]   sign/encode/decode/verify cost of one WeChat call, no network")
    print("  bill                           render, gzip, gunzip and parse a 100,000-row bill")
    print("  notify                         payment notify decode+verify, refund notify decrypt, app params")
    print("  http-server [--port P] [--routes …]   a server for wrk (see scripts/bench-http-server)")
    print("  http-client --url URL [--concurrency N] [--requests N] [--post]   keep-alive client throughput")
    print("  storage                        SQLite transitions/s: group commit against one transaction each")
    print("  simulator [orders] [queries]   in-process simulator: create 100,000 orders, RSS, orderquery rate")
    print("  reconcile [orders] [sweepers]  reconciler sweeps against the in-process simulator (T7 shape)")
    print("  gateway create|notify|wait …   load phases against a running gateway (see scripts/bench-gateway)")
}
