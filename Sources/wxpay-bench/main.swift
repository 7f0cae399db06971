// SPDX-License-Identifier: Apache-2.0
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "bill": try BillBenchmark.run(Array(arguments.dropFirst()))
case "notify": try NotifyBenchmark.run(Array(arguments.dropFirst()))
default: print("wxpay-bench")
}
