// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Why the server could not start. Descriptions name the configured address or the system error,
/// never certificate or key material.
public struct HTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case invalidConfiguration(String)
        case invalidHost
        case bindFailed(address: String, errno: Int32)
        case listenFailed(errno: Int32)
        case tlsUnavailable
        case tlsCertificateRejected(gnutlsCode: Int32)
        case tlsClientCARejected(gnutlsCode: Int32)
        case startFailed
        case alreadyStarted
    }

    private let code: Code

    /// A configuration value is out of range; the text names the setting.
    static func invalidConfiguration(_ setting: String) -> HTTPServerError {
        HTTPServerError(code: .invalidConfiguration(setting))
    }
    /// `host` is not a numeric IPv4 or IPv6 address (names are not resolved).
    public static let invalidHost = HTTPServerError(code: .invalidHost)
    /// `bind` failed: the port is taken (EADDRINUSE), privileged (EACCES), or the address is not local.
    static func bindFailed(address: String, errno: Int32) -> HTTPServerError {
        HTTPServerError(code: .bindFailed(address: address, errno: errno))
    }
    static func listenFailed(errno: Int32) -> HTTPServerError { HTTPServerError(code: .listenFailed(errno: errno)) }
    /// TLS was configured but libmicrohttpd was built without it.
    public static let tlsUnavailable = HTTPServerError(code: .tlsUnavailable)
    /// The TLS certificate chain or key could not be loaded (bad PEM, or the key does not match).
    static func tlsCertificateRejected(gnutlsCode: Int32) -> HTTPServerError {
        HTTPServerError(code: .tlsCertificateRejected(gnutlsCode: gnutlsCode))
    }
    /// The client CA list holds no usable certificate.
    static func tlsClientCARejected(gnutlsCode: Int32) -> HTTPServerError {
        HTTPServerError(code: .tlsClientCARejected(gnutlsCode: gnutlsCode))
    }
    /// libmicrohttpd refused to start the daemon (resources, or options it rejects).
    public static let startFailed = HTTPServerError(code: .startFailed)
    /// `start()` was called on a server that is running or already shut down.
    public static let alreadyStarted = HTTPServerError(code: .alreadyStarted)

    /// Whether `bind` failed because the address is in use.
    public var isAddressInUse: Bool {
        if case .bindFailed(_, let errno) = code { return errno == EADDRINUSE }
        return false
    }

    /// A stable label without data, for metrics and logs.
    public var shortDescription: String {
        switch code {
        case .invalidConfiguration: "invalid_configuration"
        case .invalidHost: "invalid_host"
        case .bindFailed: "bind_failed"
        case .listenFailed: "listen_failed"
        case .tlsUnavailable: "tls_unavailable"
        case .tlsCertificateRejected: "tls_certificate_rejected"
        case .tlsClientCARejected: "tls_client_ca_rejected"
        case .startFailed: "start_failed"
        case .alreadyStarted: "already_started"
        }
    }

    public var description: String {
        switch code {
        case .invalidConfiguration(let setting): "invalid HTTP server configuration: \(setting)"
        case .invalidHost: "host is not a numeric IPv4 or IPv6 address"
        case .bindFailed(let address, let errno): "cannot bind \(address): \(Self.systemMessage(errno))"
        case .listenFailed(let errno): "cannot listen: \(Self.systemMessage(errno))"
        case .tlsUnavailable: "libmicrohttpd was built without TLS"
        case .tlsCertificateRejected(let code): "TLS certificate or key rejected (GnuTLS error \(code))"
        case .tlsClientCARejected(let code): "TLS client CA list rejected (GnuTLS error \(code))"
        case .startFailed: "libmicrohttpd failed to start the daemon"
        case .alreadyStarted: "the server was already started or shut down"
        }
    }

    private static func systemMessage(_ errno: Int32) -> String {
        String(cString: strerror(errno))
    }
}
