// SPDX-License-Identifier: Apache-2.0

/// `trade_type`: how the payer pays. This gateway uses ``app``.
///
/// Responses may name types this package does not know; they are kept as ``unknown(_:)``.
/// Requests accept only the four types unifiedorder documents.
///
/// Equality and hashing compare raw values (the standard library's `RawRepresentable` rules), so
/// a value is identified by what travels on the wire.
public enum TradeType: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
    case app
    case jsapi
    case native
    case mweb
    /// Payment by scanning the payer's code; it has its own API but shows up in queries.
    case micropay
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "APP": self = .app
        case "JSAPI": self = .jsapi
        case "NATIVE": self = .native
        case "MWEB": self = .mweb
        case "MICROPAY": self = .micropay
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .app: "APP"
        case .jsapi: "JSAPI"
        case .native: "NATIVE"
        case .mweb: "MWEB"
        case .micropay: "MICROPAY"
        case .unknown(let value): value
        }
    }

    /// Whether unifiedorder accepts this type.
    public var isUnifiedOrderType: Bool {
        switch self {
        case .app, .jsapi, .native, .mweb: true
        case .micropay, .unknown: false
        }
    }

    public var description: String { DisplayText.sanitized(rawValue, limit: 32) }
}
