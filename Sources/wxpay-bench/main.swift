// SPDX-License-Identifier: Apache-2.0
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "http-server": await HTTPServerBench.run(Array(arguments.dropFirst()))
default: print("wxpay-bench")
}
