// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import Foundation
import HTTP

/// Paths of the committed test-only certificates in `certs/test/` (see certs/README.md).
public enum TestCertificates {
    /// `<repository>/certs/test`, found from this file's location so tests run from any directory.
    public static let directory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("certs/test").path

    public static var ca: String { file("ca.crt") }
    public static var serverCertificate: String { file("server.crt") }
    public static var serverKey: String { file("server.key") }
    public static var clientCertificate: String { file("client.crt") }
    public static var clientKey: String { file("client.key") }
    public static var clientPKCS12: String { file("client.p12") }
    /// WeChat's convention: the PKCS#12 password is the mch_id, the client certificate's CN.
    public static let clientPKCS12Password = "10000100"
    public static let clientCommonName = "10000100"
    public static var rogueClientCertificate: String { file("rogue-client.crt") }
    public static var rogueClientKey: String { file("rogue-client.key") }

    /// The trusted client identity as a PEM pair.
    public static var clientPEMIdentity: TLSClientIdentity {
        .pem(certificateFile: clientCertificate, keyFile: clientKey)
    }

    /// The trusted client identity as PKCS#12 with its password.
    public static var clientPKCS12Identity: TLSClientIdentity {
        .pkcs12(file: clientPKCS12, password: clientPKCS12Password)
    }

    /// A client identity signed by a CA the servers do not trust.
    public static var rogueClientIdentity: TLSClientIdentity {
        .pem(certificateFile: rogueClientCertificate, keyFile: rogueClientKey)
    }

}

extension TestCertificates {
    /// The path of a file in certs/test.
    public static func file(_ name: String) -> String { directory + "/" + name }

    /// Re-exports the test client certificate as an old-style PKCS#12 (RC2-40, SHA-1 MAC; the format
    /// of pre-OpenSSL-3 tools) into a temporary file, with the same password. Needs the `openssl` tool.
    public static func makeLegacyPKCS12() async throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("wxpay-legacy-\(UInt64.random(in: 0...UInt64.max)).p12").path
        let status = await run("/usr/bin/env", [
            "openssl", "pkcs12", "-export", "-legacy", "-inkey", clientKey, "-in", clientCertificate,
            "-passout", "pass:\(clientPKCS12Password)", "-out", path,
        ])
        guard status == 0 else { throw TestServerError(message: "openssl pkcs12 -export -legacy failed (\(status))") }
        return path
    }

    /// A client certificate for the test client key, signed by the test CA like `clientCertificate`
    /// but valid for only `days` days from now, in a temporary file (for the expiry warning).
    /// Needs the `openssl` tool.
    public static func makeClientCertificate(validForDays days: Int) async throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("wxpay-client-\(days)d-\(UInt64.random(in: 0...UInt64.max)).crt").path
        let status = await run("/usr/bin/env", [
            "openssl", "req", "-x509", "-key", clientKey, "-CA", ca, "-CAkey", file("ca.key"), "-sha256",
            "-days", String(days), "-subj", "/CN=\(clientCommonName)/O=wxpay-gateway tests",
            "-addext", "basicConstraints=critical,CA:FALSE",
            "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
            "-addext", "extendedKeyUsage=clientAuth", "-out", path,
        ])
        guard status == 0 else { throw TestServerError(message: "openssl req -x509 -CA failed (\(status))") }
        return path
    }

    /// Runs a command to completion (a `ChildProcess`, not Foundation's `Process`, whose `run()`
    /// can crash the test process on Linux); returns its exit status.
    private static func run(_ executable: String, _ arguments: [String]) async -> Int32 {
        (try? await ChildProcess.run(executable, arguments, environment: ProcessInfo.processInfo.environment,
                                     timeout: .seconds(120)).status) ?? -1
    }
}
