// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import HTTP
import SimulatorKit

/// `wxpay-gateway simulate-appstore --port P [--root-out FILE] …`: the App Store simulator on a port.
enum SimulateAppStoreCommand {
    static let usage = """
        usage: wxpay-gateway simulate-appstore [--port P] [--host H] [--root-out FILE]
                 [--bundle-id B] [--app-apple-id N] [--key-id K] [--issuer I]
                 [--api-key FILE | --api-key-out FILE] [--shared-secret S]
                 [--notification-url URL] [--sandbox-notification-url URL]
                 [--time-scale X] [--retry-scale X] [--seed N] [--first-transaction N|now]
        Serves the App Store Server API (/inApps/…), verifyReceipt (/verifyReceipt), their sandbox
        twins under /sandbox/…, and the control panel (/appstore-simulator/…) on one port (0 picks
        a free one). The first line printed is "listening http://HOST:PORT".
        --root-out writes the simulator's root certificate (PEM), the one to trust instead of Apple
        Root CA - G3. Callers' Server API tokens are checked against --api-key (a .p8 or a public key
        PEM); without it the simulator makes a key and writes it to --api-key-out as a .p8.
        Notifications V2 go to --notification-url (and --sandbox-notification-url) on Apple's retry
        schedule (1, 12, 24, 48, 72 h) divided by --retry-scale. Transaction ids are numbered from
        --first-transaction (default 1: 2000000100000001) in every run: pointed at a gateway whose
        database holds an earlier run's purchases, start past them with --first-transaction now
        (milliseconds since 2020, as the demo's embedded App Store does), or the gateway refuses the
        new ids as used. Defaults: bundle id
        com.example.courses, app id 1234567890, key id SIMKEY0001, port 0. Stops on SIGINT or SIGTERM.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        let known: Set<String> = [
            "--port", "--host", "--root-out", "--bundle-id", "--app-apple-id", "--key-id", "--issuer", "--api-key",
            "--api-key-out", "--shared-secret", "--notification-url", "--sandbox-notification-url", "--time-scale",
            "--retry-scale", "--seed", "--first-transaction",
        ]
        let options: [String: String], common: SimulatorServing.Common
        switch SimulatorServing.read(arguments, known: known, usage: usage, fail: fail) {
        case .failure(let exit): return exit.status
        case .success(let read): (options, common) = read
        }
        guard let retryScale = Double(options["--retry-scale"] ?? "1"), retryScale > 0 else {
            return fail("--retry-scale must be positive")
        }
        var configuration = AppStoreSimulatorConfiguration(notificationRetryScale: retryScale, seed: common.seed)
        if let text = options["--first-transaction"] {
            // Ids stay sixteen digits, as Apple's are.
            let now = UInt64(max(1, (Date().timeIntervalSince1970 - 1_577_836_800) * 1000))
            guard let value = text == "now" ? now : UInt64(text), (1...999_999_999_999).contains(value) else {
                return fail("--first-transaction must be now or a number from 1 to 999999999999")
            }
            configuration.firstTransactionNumber = value
        }
        if let bundleID = options["--bundle-id"] { configuration.bundleID = bundleID }
        if let text = options["--app-apple-id"] {
            guard let value = Int64(text), value > 0 else { return fail("--app-apple-id must be a positive number") }
            configuration.appAppleID = value
        }
        if let keyID = options["--key-id"] { configuration.keyID = keyID }
        if let issuer = options["--issuer"] { configuration.issuerID = issuer }
        if let path = options["--api-key"] {
            guard let bytes = FileManager.default.contents(atPath: path) else { return fail("cannot read \(path)") }
            configuration.apiKeyPEM = String(decoding: bytes, as: UTF8.self)
        }
        configuration.sharedSecret = options["--shared-secret"]
        configuration.productionNotificationURL = options["--notification-url"]
        configuration.sandboxNotificationURL = options["--sandbox-notification-url"] ?? options["--notification-url"]

        let client: HTTPClient
        do {
            client = try HTTPClient()
        } catch {
            return fail("cannot start the HTTP client for notifications: \(error)")
        }
        let simulator: AppStoreSimulator
        do {
            simulator = try AppStoreSimulator(configuration: configuration, clock: ScaledClock(scale: common.timeScale),
                                              notificationSender: HTTPNotifySender(client: client, contentType: "application/json"))
        } catch {
            await client.shutdown()
            return fail("\(error)")
        }
        do {
            if let path = options["--root-out"] { try Data(simulator.pki.root.pem.utf8).write(to: URL(fileURLWithPath: path)) }
            if let path = options["--api-key-out"], let key = simulator.generatedAPIKey {
                try Data(key.pkcs8PEM.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                _ = chmod(path, 0o600)
            }
        } catch {
            await client.shutdown()
            return fail("cannot write \(options["--root-out"] ?? options["--api-key-out"] ?? "a file")")
        }

        var serverConfiguration = HTTPServerConfiguration()
        serverConfiguration.host = options["--host"] ?? "127.0.0.1"
        serverConfiguration.port = common.port
        var router = HTTPRouter()
        AppStoreSimulatorRoutes.registerAPI(simulator, in: &router)
        AppStoreSimulatorRoutes.registerControl(simulator, in: &router)
        return await SimulatorServing.serve(router, serverConfiguration, client: client, banner: { address in
            """
            listening http://\(address)
            app bundle_id=\(configuration.bundleID) app_apple_id=\(configuration.appAppleID) key_id=\(configuration.keyID) issuer=\(configuration.issuerID)
            root SHA-256 \(simulator.pki.root.sha256Fingerprint); control panel at /appstore-simulator/

            """
        }, background: { await simulator.run() }, fail: fail)
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("simulate-appstore: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
