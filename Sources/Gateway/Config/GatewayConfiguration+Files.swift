// SPDX-License-Identifier: Apache-2.0
import Foundation
import OperatorFiles

/// The files the configuration names, read only if they are regular files: a FIFO (or a device)
/// at one of these paths would otherwise hang `serve` and `doctor` at start, with no output.
extension GatewayConfiguration {
    /// Every variable naming a file the gateway reads, at start or on SIGHUP.
    static let fileVariables = [
        "GATEWAY_CATALOG", "GATEWAY_CONSOLE_USERS", "GATEWAY_TLS_CERT", "GATEWAY_TLS_KEY",
        "WXPAY_CLIENT_CERT", "WXPAY_CLIENT_KEY", "WXPAY_CLIENT_P12", "WXPAY_API_CA_FILE",
        "WXPAY_MERCHANT_PRIVATE_KEY", "WXPAY_MERCHANT_CERT", "WXPAY_PUBLIC_KEY_FILE", "WXPAY_PLATFORM_CERT_FILE",
        "APPSTORE_PRIVATE_KEY_FILE", "APPSTORE_ROOT_CA_FILE", "APPSTORE_RECEIPT_ROOT_CA_FILE",
    ]

    /// One problem for each file variable whose path holds something other than a regular file.
    /// A path with nothing there, or one that cannot be opened, is left to the variable's own
    /// check, which says what it expected.
    static func fileChecks(_ environment: Environment) -> [ConfigurationProblem] {
        fileVariables.compactMap { name in
            guard let path = environment.get(name), OperatorFile.isPresentButNotRegular(path) else { return nil }
            return ConfigurationProblem(name, .notRegularFile,
                                        expected: "a FIFO, a device, a socket or a directory is never read; give the path of a file")
        }
    }

    /// A certificate or key file's bytes, nil when it is not a readable regular file of at
    /// most a mebibyte (no PEM chain comes near that).
    static func readSmallFile(_ path: String) -> [UInt8]? {
        try? OperatorFile.read(path, maximumBytes: 1024 * 1024)
    }

    static func readSmallTextFile(_ path: String) -> String? {
        readSmallFile(path).map { String(decoding: $0, as: UTF8.self) }
    }
}
