// SPDX-License-Identifier: Apache-2.0

/// Why app pay parameters could not be signed. Always a programming or configuration error on our
/// side, never the customer's; descriptions name the field, never its value.
public struct AppPayError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case emptyValue(String)
        case nonceTooLong
        case timestampNotSeconds
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// A signed field would be empty, and WeChat leaves empty fields out of the signature, which
    /// the SDK would then reject.
    public static func emptyValue(_ name: StaticString) -> AppPayError { AppPayError(.emptyValue(name.description)) }
    /// `noncestr` is longer than 32 characters.
    public static let nonceTooLong = AppPayError(.nonceTooLong)
    /// `timestamp` is not 10-digit seconds since 1970.
    public static let timestampNotSeconds = AppPayError(.timestampNotSeconds)

    /// A stable label without data, for metrics.
    public var shortDescription: String {
        switch code {
        case .emptyValue(let name): "empty_\(name)"
        case .nonceTooLong: "nonce_too_long"
        case .timestampNotSeconds: "timestamp_not_seconds"
        }
    }

    public var description: String {
        switch code {
        case .emptyValue(let name): "app pay parameter \(name) is empty"
        case .nonceTooLong: "noncestr is longer than 32 characters"
        case .timestampNotSeconds: "timestamp is not 10-digit seconds since 1970"
        }
    }
}
