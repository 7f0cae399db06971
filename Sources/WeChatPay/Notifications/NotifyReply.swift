// SPDX-License-Identifier: Apache-2.0

/// The body we answer a payment or refund notify with (HTTP 200).
///
/// `.success` stops WeChat's retries; send it only after the settlement has committed. `.fail`
/// asks WeChat to deliver again later (15 s, 15 s, 30 s, 3 min, … for about 24 hours).
///
/// ```swift
/// // With the HTTP module's server (any server will do: this module knows none):
/// return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/xml; charset=utf-8"],
///                           body: NotifyReply.success.bytes)
/// ```
public enum NotifyReply: Sendable, Hashable {
    case success
    /// `return_msg` carries `message`: keep it short and say nothing an attacker could use
    /// (`"SIGN_ERROR"`, `"retry later"`). It is cleaned before use: no control characters, no
    /// CDATA terminator, at most 64 characters.
    case fail(String)

    /// The exact bytes WeChat expects:
    /// `<xml><return_code><![CDATA[SUCCESS]]></return_code><return_msg><![CDATA[OK]]></return_msg></xml>`.
    public var bytes: [UInt8] {
        switch self {
        case .success: Self.successBytes
        case .fail(let message): Self.document(code: "FAIL", message: Self.clean(message))
        }
    }

    /// Written by hand, not through the XML encoder, so the reply stays byte-for-byte what WeChat
    /// documents whatever the encoder's choices (CDATA or escapes) become.
    private static let successBytes = document(code: "SUCCESS", message: "OK")

    private static func document(code: String, message: String) -> [UInt8] {
        Array("<xml><return_code><![CDATA[\(code)]]></return_code><return_msg><![CDATA[\(message)]]></return_msg></xml>".utf8)
    }

    private static func clean(_ message: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in message.unicodeScalars.prefix(64) {
            // Control characters cannot travel in XML 1.0; "]" and ">" are enough to end a CDATA section.
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar == "]" || scalar == ">" { continue }
            scalars.append(scalar)
        }
        return scalars.isEmpty ? "FAIL" : String(scalars)
    }
}
