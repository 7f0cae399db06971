// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import WeChatPay
import WeChatPaySimulator

/// `wxpay-gateway simulate --port P [--host H] [--app-id A --mch-id M --key K] [--sign-key-seed S]
/// [--time-scale X] [--seed N] [--refund-delay S] [--tls-cert F --tls-key F [--client-ca F]]`
enum SimulateCommand {
    static let usage = """
        usage: wxpay-gateway simulate [--port P] [--host H] [--app-id A] [--mch-id M] [--key K]
                                      [--time-scale X] [--seed N] [--refund-delay S]
                                      [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
        Serves WeChat Pay's v2 API (/pay/…, /secapi/pay/refund, /sandboxnew/…) and the control panel
        (/simulator/…) on one port (0 picks a free one). The first line printed is
        "listening http(s)://HOST:PORT". Defaults: the documentation's test merchant
        (wxd930ea5d5a258f4f / 10000100), port 0, time scale 1. With --refund-delay, accepted refunds
        complete SUCCESS by themselves after S simulated seconds (default: only through the control
        panel). With --client-ca, refunds need a client certificate that CA signed. Stops on SIGINT
        or SIGTERM.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        var options: [String: String] = [:]
        var index = 0
        let known: Set<String> = ["--port", "--host", "--app-id", "--mch-id", "--key", "--time-scale", "--seed",
                                  "--tls-cert", "--tls-key", "--client-ca", "--refund-delay"]
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "-h" || argument == "--help" {
                print(usage)
                return 0
            }
            guard known.contains(argument), index + 1 < arguments.count else { return fail("unknown or incomplete option \(argument)") }
            options[argument] = arguments[index + 1]
            index += 2
        }
        guard let port = UInt16(options["--port"] ?? "0") else { return fail("--port must be 0-65535") }
        guard let scale = Double(options["--time-scale"] ?? "1"), scale > 0 else { return fail("--time-scale must be positive") }
        guard let seed = UInt64(options["--seed"] ?? "1") else { return fail("--seed must be a number") }
        var configuration = SimulatorConfiguration(seed: seed)
        if let appID = options["--app-id"] { configuration.appID = appID }
        if let mchID = options["--mch-id"] { configuration.mchID = mchID }
        if let key = options["--key"] { configuration.key = APIKey(key) }
        if let delay = options["--refund-delay"] {
            guard let seconds = Double(delay), seconds >= 0 else { return fail("--refund-delay must be seconds (0 or more)") }
            configuration.refundCompletionDelay = seconds
        }

        var serverConfiguration = HTTPServerConfiguration()
        serverConfiguration.host = options["--host"] ?? "127.0.0.1"
        serverConfiguration.port = port
        var requireClientCertificates = false
        if let certificate = options["--tls-cert"] {
            guard let key = options["--tls-key"] else { return fail("--tls-cert needs --tls-key") }
            do {
                let clientCA = try options["--client-ca"].map { try String(contentsOfFile: $0, encoding: .utf8) }
                serverConfiguration.tls = HTTPServerConfiguration.TLS(
                    certificatePEM: try String(contentsOfFile: certificate, encoding: .utf8),
                    privateKeyPEM: try String(contentsOfFile: key, encoding: .utf8),
                    clientCAPEM: clientCA, clientCertificatePolicy: .optional)
                requireClientCertificates = clientCA != nil
            } catch {
                return fail("cannot read the TLS files")
            }
        }

        let client: HTTPClient
        do {
            client = try HTTPClient()
        } catch {
            return fail("cannot start the HTTP client for notifies: \(error)")
        }
        let simulator = WeChatPaySimulator(configuration: configuration, clock: ScaledClock(scale: scale),
                                           notifySender: HTTPNotifySender(client: client))
        simulator.setRequiresClientCertificates(requireClientCertificates)
        var router = HTTPRouter()
        SimulatorRoutes.registerAPI(simulator, in: &router)
        SimulatorRoutes.registerControl(simulator, in: &router)
        let server = HTTPServer(router: router, configuration: serverConfiguration)
        let address: HTTPServerSocketAddress
        do {
            address = try await server.start()
        } catch {
            await client.shutdown()
            return fail("cannot listen: \(error)")
        }
        let scheme = serverConfiguration.tls == nil ? "http" : "https"
        // Written unbuffered: scripts read the first line to learn the port.
        FileHandle.standardOutput.write(Data("""
            listening \(scheme)://\(address)
            merchant appid=\(configuration.appID) mch_id=\(configuration.mchID); control panel at /simulator/

            """.utf8))
        let notifies = Task { await simulator.run() }
        _ = await Signals.waitForTermination()
        notifies.cancel()
        await server.shutdown(gracePeriod: .seconds(5))
        await client.shutdown()
        return 0
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("simulate: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
