// SPDX-License-Identifier: Apache-2.0

/// Why a received document's signature was refused. The description never contains the received
/// or the expected signature, nor the key.
public struct SignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case missingSignature
        case unknownSignType
        case signTypeMismatch(expected: SignType)
        case mismatch
    }

    private let code: Code

    /// No `sign` field, or an empty one (the forged-notify case of WxJava #828).
    public static let missingSignature = SignatureError(code: .missingSignature)
    /// `sign_type` names neither MD5 nor HMAC-SHA256.
    public static let unknownSignType = SignatureError(code: .unknownSignType)
    /// `sign_type` names an algorithm other than the one the order was created with.
    public static func signTypeMismatch(expected: SignType) -> SignatureError {
        SignatureError(code: .signTypeMismatch(expected: expected))
    }
    /// The signature does not match the document and our key.
    public static let mismatch = SignatureError(code: .mismatch)

    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String {
        switch code {
        case .missingSignature: "missing_sign"
        case .unknownSignType: "unknown_sign_type"
        case .signTypeMismatch: "sign_type_mismatch"
        case .mismatch: "bad_sign"
        }
    }

    public var description: String {
        switch code {
        case .missingSignature: "signature missing or empty"
        case .unknownSignType: "sign_type is neither MD5 nor HMAC-SHA256"
        case .signTypeMismatch(let expected): "sign_type differs from the expected \(expected)"
        case .mismatch: "signature does not match"
        }
    }
}
