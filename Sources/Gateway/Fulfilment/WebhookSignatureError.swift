// SPDX-License-Identifier: Apache-2.0
import Observability

/// Why a `Gateway-Signature` header was refused. The description never repeats the header or the
/// payload.
public struct WebhookSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable, Hashable {
        case malformedHeader = "malformed_header"
        case timestampOutsideTolerance = "timestamp_outside_tolerance"
        case noMatchingSignature = "no_matching_signature"
    }

    private let code: Code

    /// Missing, too long, or not `t=<seconds>,v1=<64 hex digits>[,v1=…]`.
    public static let malformedHeader = Self(code: .malformedHeader)
    /// `t` is too far from now: a stale (possibly replayed) delivery, or a clock problem.
    public static let timestampOutsideTolerance = Self(code: .timestampOutsideTolerance)
    /// No `v1` is the MAC of this body under any of the secrets.
    public static let noMatchingSignature = Self(code: .noMatchingSignature)

    /// A stable label for metrics and logs.
    public var shortDescription: String { code.rawValue }

    public var description: String {
        switch code {
        case .malformedHeader: "the Gateway-Signature header is missing or malformed"
        case .timestampOutsideTolerance: "the Gateway-Signature timestamp is outside the tolerance"
        case .noMatchingSignature: "no Gateway-Signature signature matches the body"
        }
    }
}
