// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP

/// Paths of the committed test-only certificates in `certs/test/` (see certs/README.md).
public enum TestCertificates {
    /// `<repository>/certs/test`, found from this file's location so tests run from any directory.
    public static let directory: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("certs/test").path

    public static var ca: String { path("ca.crt") }
    public static var serverCertificate: String { path("server.crt") }
    public static var serverKey: String { path("server.key") }
    public static var clientCertificate: String { path("client.crt") }
    public static var clientKey: String { path("client.key") }
    public static var clientPKCS12: String { path("client.p12") }
    /// WeChat's convention: the PKCS#12 password is the mch_id, the client certificate's CN.
    public static let clientPKCS12Password = "10000100"
    public static let clientCommonName = "10000100"
    public static var rogueClientCertificate: String { path("rogue-client.crt") }
    public static var rogueClientKey: String { path("rogue-client.key") }

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

    private static func path(_ name: String) -> String { directory + "/" + name }
}
