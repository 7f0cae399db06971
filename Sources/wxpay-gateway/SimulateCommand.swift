// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTP
import WeChatPay
import WeChatPaySimulator
import WeChatPayV3

/// `wxpay-gateway simulate --port P [--host H] [--app-id A --mch-id M --key K] [--sign-key-seed S]
/// [--time-scale X] [--seed N] [--refund-delay S] [--tls-cert F --tls-key F [--client-ca F]]
/// [--api-v3-key K --merchant-cert F [--public-key-id PUB_KEY_ID_… --wechatpay-key F] [--platform-certs]]`
enum SimulateCommand {
    static let usage = """
        usage: wxpay-gateway simulate [--port P] [--host H] [--app-id A] [--mch-id M] [--key K]
                                      [--time-scale X] [--seed N] [--refund-delay S]
                                      [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
                                      [--api-v3-key K --merchant-cert FILE
                                       [--public-key-id PUB_KEY_ID_… --wechatpay-key FILE] [--platform-certs]]
        Serves WeChat Pay's v2 API (/pay/…, /secapi/pay/refund, /sandboxnew/…) and the control panel
        (/simulator/…) on one port (0 picks a free one). With --api-v3-key it speaks API v3 too
        (/v3/…): requests must be signed by the key of --merchant-cert; it signs with the private
        key --wechatpay-key under --public-key-id (public-key mode), and with --platform-certs also
        serves platform certificates it issues itself (certificate mode; both at once is a
        migration). The first line printed is
        "listening http(s)://HOST:PORT". Defaults: the documentation's test merchant
        (wxd930ea5d5a258f4f / 10000100), port 0, time scale 1. With --refund-delay, accepted refunds
        complete SUCCESS by themselves after S simulated seconds (default: only through the control
        panel). With --client-ca, refunds need a client certificate that CA signed. Stops on SIGINT
        or SIGTERM.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        let known: Set<String> = ["--port", "--host", "--app-id", "--mch-id", "--key", "--time-scale", "--seed",
                                  "--tls-cert", "--tls-key", "--client-ca", "--refund-delay", "--api-v3-key", "--merchant-cert",
                                  "--public-key-id", "--wechatpay-key"]
        // The one option without a value.
        let platformCertificates = arguments.contains("--platform-certs")
        let options: [String: String], common: SimulatorServing.Common
        switch SimulatorServing.read(arguments.filter { $0 != "--platform-certs" }, known: known, usage: usage, fail: fail) {
        case .failure(let exit): return exit.status
        case .success(let read): (options, common) = read
        }
        var configuration = SimulatorConfiguration(seed: common.seed)
        if let appID = options["--app-id"] { configuration.appID = appID }
        if let mchID = options["--mch-id"] { configuration.mchID = mchID }
        if let key = options["--key"] { configuration.key = APIKey(key) }
        if let delay = options["--refund-delay"] {
            guard let seconds = Double(delay), seconds >= 0 else { return fail("--refund-delay must be seconds (0 or more)") }
            configuration.refundCompletionDelay = seconds
        }
        if let v3Key = options["--api-v3-key"] {
            switch v3Configuration(options, key: v3Key, platformCertificates: platformCertificates) {
            case .success(let v3): configuration.v3 = v3
            case .failure(let problem): return fail(problem.message)
            }
        } else if ["--merchant-cert", "--public-key-id", "--wechatpay-key"].contains(where: { options[$0] != nil }) || platformCertificates {
            return fail("the v3 options need --api-v3-key")
        }

        var serverConfiguration = HTTPServerConfiguration()
        serverConfiguration.host = options["--host"] ?? "127.0.0.1"
        serverConfiguration.port = common.port
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
        let simulator = WeChatPaySimulator(configuration: configuration, clock: ScaledClock(scale: common.timeScale),
                                           notifySender: HTTPNotifySender(client: client))
        simulator.setRequiresClientCertificates(requireClientCertificates)
        var router = HTTPRouter()
        SimulatorRoutes.registerAPI(simulator, in: &router)
        SimulatorRoutes.registerV3API(simulator, in: &router)
        SimulatorRoutes.registerControl(simulator, in: &router)
        let scheme = serverConfiguration.tls == nil ? "http" : "https"
        return await SimulatorServing.serve(router, serverConfiguration, client: client, banner: { address in
            """
            listening \(scheme)://\(address)
            merchant appid=\(configuration.appID) mch_id=\(configuration.mchID); control panel at /simulator/

            """
        }, background: { await simulator.run() }, fail: fail)
    }

    struct Problem: Error { let message: String }

    /// The v3 side from the options: the key's length, the files readable and what they must be.
    static func v3Configuration(_ options: [String: String], key: String,
                                platformCertificates: Bool) -> Result<V3SimulatorConfiguration, Problem> {
        guard let apiV3Key = try? APIv3Key(key) else { return .failure(Problem(message: "--api-v3-key must be 32 ASCII characters")) }
        guard let certificateFile = options["--merchant-cert"] else { return .failure(Problem(message: "--api-v3-key needs --merchant-cert")) }
        guard let bytes = FileManager.default.contents(atPath: certificateFile), let certificate = Certificate(pemOrDER: Array(bytes))
        else { return .failure(Problem(message: "--merchant-cert is not a readable PEM or DER certificate")) }
        var wechatpayKey: RSAPrivateKey?
        if let keyFile = options["--wechatpay-key"] {
            guard let text = try? String(contentsOfFile: keyFile, encoding: .utf8), let key = try? RSAPrivateKey(pem: text) else {
                return .failure(Problem(message: "--wechatpay-key is not a readable RSA private key of 2048 bits or more"))
            }
            wechatpayKey = key
        }
        let v3 = V3SimulatorConfiguration(apiV3Key: apiV3Key, merchantCertificate: certificate, publicKeyID: options["--public-key-id"],
                                          wechatpayKey: wechatpayKey, platformCertificates: platformCertificates)
        if let problem = v3.problem { return .failure(Problem(message: problem)) }
        return .success(v3)
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("simulate: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
