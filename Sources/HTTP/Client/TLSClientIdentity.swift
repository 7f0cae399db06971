// SPDX-License-Identifier: Apache-2.0

/// The certificate and private key a client presents for mutual TLS, read from files when a
/// connection is made.
///
/// WeChat Pay's `/secapi/` endpoints (refunds) require the merchant's API certificate, delivered as
/// `apiclient_cert.p12` (password: the mch_id) and as a PEM pair (`apiclient_cert.pem`,
/// `apiclient_key.pem`). Either form works:
///
/// ```swift
/// let identity = TLSClientIdentity.pkcs12(file: "/etc/wxpay/apiclient_cert.p12", password: mchID)
/// let same = TLSClientIdentity.pem(certificateFile: "/etc/wxpay/apiclient_cert.pem",
///                                  keyFile: "/etc/wxpay/apiclient_key.pem")
/// ```
///
/// The password never appears in `description`, `debugDescription`, `dump` or any error.
///
/// PKCS#12 files made by older tools (RC2-40 or 3DES encryption) are read too: the client loads
/// OpenSSL 3's legacy provider the first time a PKCS#12 identity is used.
public struct TLSClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    enum Storage: Sendable, Hashable {
        case pem(certificateFile: String, keyFile: String, keyPassword: String?)
        case pkcs12(file: String, password: String)
    }

    let storage: Storage

    /// A PEM certificate (chain) file and its PEM private key file.
    /// - Parameters:
    ///   - certificateFile: path of the client certificate, PEM.
    ///   - keyFile: path of the private key, PEM; may be the same file as the certificate.
    ///   - keyPassword: the key's pass phrase when it is encrypted; `nil` for a plain key.
    public static func pem(certificateFile: String, keyFile: String, keyPassword: String? = nil) -> Self {
        Self(storage: .pem(certificateFile: certificateFile, keyFile: keyFile, keyPassword: keyPassword))
    }

    /// A PKCS#12 bundle holding the certificate and key.
    /// - Parameters:
    ///   - file: path of the `.p12` file.
    ///   - password: its import password (WeChat Pay: the merchant's mch_id).
    public static func pkcs12(file: String, password: String) -> Self {
        Self(storage: .pkcs12(file: file, password: password))
    }

    /// The file paths, with any password shown as `***`.
    public var description: String {
        switch storage {
        case .pem(let certificateFile, let keyFile, let keyPassword):
            "TLSClientIdentity(pem: \(certificateFile), key: \(keyFile)\(keyPassword == nil ? "" : ", password: ***"))"
        case .pkcs12(let file, _):
            "TLSClientIdentity(pkcs12: \(file), password: ***)"
        }
    }

    /// Same as `description`: there is nothing more that may be shown.
    public var debugDescription: String { description }

    /// Keeps `dump` and debuggers from walking into the stored password.
    public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
}
