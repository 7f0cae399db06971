// SPDX-License-Identifier: Apache-2.0
public import HTTP
public import WeChatPay

extension TransportError {
    /// Translates a client failure for the WeChat Pay pipeline, keeping the client's answer to "may
    /// WeChat have the request?".
    ///
    /// | client error | kind |
    /// |---|---|
    /// | `dnsFailure` | `.dns` |
    /// | `connectFailed`, `connectTimeout` | `.connect` (never delivered) |
    /// | `tlsFailure`, `tlsConfigurationUnusable` | `.tls` |
    /// | `timeout` | `.timeout` |
    /// | `sendFailed`, `receiveFailed` | `.connectionReset` |
    /// | `responseTooLarge` | `.responseTooLarge` |
    /// | anything else (cancelled, shut down, invalid request, protocol violation, internal) | `.other` |
    public init(_ error: HTTPClientError) {
        let kind: Kind
        switch error {
        case .dnsFailure: kind = .dns
        case .connectFailed, .connectTimeout: kind = .connect
        case .tlsFailure, .tlsConfigurationUnusable: kind = .tls
        case .timeout: kind = .timeout
        case .sendFailed, .receiveFailed: kind = .connectionReset
        case .responseTooLarge: kind = .responseTooLarge
        default: kind = .other
        }
        self.init(kind: kind, mayHaveBeenDelivered: error.mayHaveBeenDelivered)
    }
}

extension DomainFailover.Outcome {
    /// What a client failure says about the host's health; `nil` when it says nothing (the caller
    /// cancelled, the client shut down, the request was invalid).
    public init?(_ error: HTTPClientError) {
        switch error {
        case .dnsFailure: self = .dnsFailure
        case .connectFailed, .connectTimeout: self = .connectFailure
        case .cancelled, .shutDown, .invalidRequest, .tlsConfigurationUnusable: return nil
        default: self = .otherFailure
        }
    }
}
