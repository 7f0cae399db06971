// SPDX-License-Identifier: Apache-2.0

/// The two v2 signature algorithms. The raw value is what travels in `sign_type`.
public enum SignType: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `upper(hex(md5(stringSignTemp)))`, 32 hex characters. WeChat's default when `sign_type` is absent.
    case md5 = "MD5"
    /// `upper(hex(hmac_sha256(key, stringSignTemp)))`, 64 hex characters.
    case hmacSHA256 = "HMAC-SHA256"

    /// Length of the uppercase hex signature.
    public var hexLength: Int {
        switch self {
        case .md5: 32
        case .hmacSHA256: 64
        }
    }

    public var description: String { rawValue }
}
