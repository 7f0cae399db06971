// SPDX-License-Identifier: Apache-2.0

/// Why a message's fields could not become a typed message: a required field is missing, or a
/// field's value is not valid for it.
///
/// The same error serves both directions. The client reports it for a response it cannot decode
/// (or a request it refuses to send); the simulator answers it with ``errorCode``
/// (`LACK_PARAMS` or `PARAM_ERROR`), as WeChat would. Descriptions name the field, never its value.
public struct WeChatPayMessageError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case missingField
        case invalidField
    }

    private let code: Code
    /// The field at fault (a plain field name; anything else is replaced by a placeholder).
    public let fieldName: String

    private init(code: Code, fieldName: String) {
        self.code = code
        self.fieldName = FlatXML.isPlainName(fieldName) && fieldName.utf8.count <= 40 ? fieldName : "<field>"
    }

    /// A required field is absent or empty.
    public static func missingField(_ name: String) -> Self { Self(code: .missingField, fieldName: name) }
    /// A field is present but its value is not acceptable (format, range, unknown enumeration value).
    public static func invalidField(_ name: String) -> Self { Self(code: .invalidField, fieldName: name) }

    /// Whether a field was missing (as opposed to present but invalid).
    public var isMissingField: Bool { code == .missingField }

    /// The err_code WeChat answers for this kind of request error: `LACK_PARAMS` for a missing
    /// field, `PARAM_ERROR` for an invalid one.
    public var errorCode: WeChatPayErrorCode {
        switch code {
        case .missingField: .lackParams
        case .invalidField: .paramError
        }
    }

    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String {
        switch code {
        case .missingField: "missing_field"
        case .invalidField: "invalid_field"
        }
    }

    public var description: String {
        switch code {
        case .missingField: "missing field \(fieldName)"
        case .invalidField: "invalid value for \(fieldName)"
        }
    }
}
