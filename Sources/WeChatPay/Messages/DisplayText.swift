// SPDX-License-Identifier: Apache-2.0

/// Makes text that came from outside (`return_msg`, `err_code_des`) safe to show in an error
/// description or a log line: control and line-breaking characters become spaces (no forged log
/// lines, no terminal escapes), bidirectional overrides are dropped, and the length is capped.
enum DisplayText {
    static let defaultLimit = 128

    static func sanitized(_ text: String, limit: Int = defaultLimit) -> String {
        var result = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                result.append("…")
                break
            }
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x85:
                result.unicodeScalars.append(" ")
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0xFEFF:
                continue
            default:
                result.unicodeScalars.append(scalar)
            }
            count += 1
        }
        return result
    }
}
