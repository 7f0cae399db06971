// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// PKCS#12 bundles (`.p12`): a certificate and its private key under a password, as WeChat Pay
/// hands merchants their API certificate (`apiclient_cert.p12`).
public enum PKCS12 {
    /// The certificate and key of a bundle, or nil when it is not PKCS#12 or the password is wrong.
    /// The CA certificates a bundle may carry are not needed and dropped.
    public static func read(_ bytes: [UInt8], password: String) -> (certificate: Certificate, key: PrivateKey)? {
        // RC2/3DES bundles (older tools) need OpenSSL 3's legacy provider.
        _ = LegacyAlgorithms.available
        defer { ERR_clear_error() }
        let bundle: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let bundle else { return nil }
        defer { PKCS12_free(bundle) }
        var key: OpaquePointer?
        var x509: OpaquePointer?
        guard PKCS12_parse(bundle, password, &key, &x509, nil) == 1, let key, let x509 else {
            if let key { EVP_PKEY_free(key) }
            if let x509 { X509_free(x509) }
            return nil
        }
        let privateKey = PrivateKey(owning: key)
        guard let certificate = Certificate(owning: x509) else { return nil }
        return (certificate, privateKey)
    }
}

/// OpenSSL 3's legacy provider, for PKCS#12 files made by pre-OpenSSL-3 tools (WeChat Pay's
/// apiclient_cert.p12 is reported to be one): they are encrypted with RC2-40 or 3DES and a SHA-1
/// MAC, which OpenSSL 3 reads only through that provider; without it libcurl fails with
/// CURLE_SSL_CERTPROBLEM ("unsupported"). libcurl's OpenSSL backend uses the default library
/// context, so loading the provider there serves both it and ``PKCS12``. It can go when such
/// files are gone.
public enum LegacyAlgorithms {
    /// Loads the provider once (on first use); whether it is available.
    public static let available: Bool = {
        defer { ERR_clear_error() }
        // Loading any provider explicitly stops "default" from auto-loading, so it is loaded first.
        guard OSSL_PROVIDER_load(nil, "default") != nil else { return false }
        return OSSL_PROVIDER_load(nil, "legacy") != nil
    }()
}
