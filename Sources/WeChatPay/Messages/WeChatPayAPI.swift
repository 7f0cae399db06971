// SPDX-License-Identifier: Apache-2.0

/// The v2 endpoints this package speaks, with what the pipeline needs to know about each.
///
/// The simulator routes incoming requests with ``route(path:)``; the client asks for
/// ``path(sandbox:)`` and ``needsClientCertificate(sandbox:)``.
public enum WeChatPayAPI: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case unifiedOrder = "unifiedorder"
    case orderQuery = "orderquery"
    case closeOrder = "closeorder"
    case refund = "refund"
    case refundQuery = "refundquery"
    case downloadBill = "downloadbill"
    /// The sandbox's key exchange: signed with the production key, always MD5, no `appid`.
    case getSignKey = "getsignkey"

    /// The path prefix WeChat's sandbox ("仿真测试系统") inserts before every production path.
    public static let sandboxPrefix = "/sandboxnew"

    /// The endpoint path for production or the sandbox.
    ///
    /// The sandbox refund drops the `/secapi` segment (it needs no client certificate), and
    /// `getsignkey` exists only under the sandbox prefix, whichever environment asks for it.
    public func path(sandbox: Bool) -> String {
        switch self {
        case .refund: sandbox ? Self.sandboxPrefix + "/pay/refund" : "/secapi/pay/refund"
        case .getSignKey: Self.sandboxPrefix + "/pay/getsignkey"
        default: (sandbox ? Self.sandboxPrefix : "") + "/pay/" + rawValue
        }
    }

    /// Whether the call needs the merchant's client certificate (mutual TLS). Only the production
    /// refund does among these endpoints.
    public func needsClientCertificate(sandbox: Bool) -> Bool {
        self == .refund && !sandbox
    }

    /// Whether requests carry `appid` and `sign_type`: every endpoint except `getsignkey`, whose
    /// request is `mch_id`, `nonce_str` and an MD5 `sign` only.
    public var usesAppIDAndSignType: Bool { self != .getSignKey }

    /// Whether a `return_code=SUCCESS` response must be signed. `getsignkey` answers are documented
    /// without `sign` (their signature is checked when present); every other XML answer must carry
    /// one, and an unsigned SUCCESS is refused rather than trusted.
    public var requiresSignedResponse: Bool { self != .getSignKey }

    /// Whether a `return_code=SUCCESS` response carries the business level (`result_code`).
    public var hasResultCode: Bool { self != .getSignKey }

    /// Whether a successful answer is a file (the bill: plain text or gzip, unsigned) rather than
    /// XML. Failures still come back as XML.
    public var returnsFile: Bool { self == .downloadBill }

    /// Finds the endpoint of a request path, production or sandbox, for the simulator's router.
    /// - Returns: nil for a path that is not one of these endpoints.
    public static func route(path: String) -> (api: WeChatPayAPI, sandbox: Bool)? {
        for api in allCases {
            if path == api.path(sandbox: false) { return (api, api == .getSignKey) }
            if path == api.path(sandbox: true) { return (api, true) }
        }
        return nil
    }

    public var description: String { rawValue }
}
