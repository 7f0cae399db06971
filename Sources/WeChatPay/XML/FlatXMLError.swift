// SPDX-License-Identifier: Apache-2.0

/// Why a document was refused by the strict flat-XML codec.
///
/// Descriptions name the rule that was broken and never echo attacker content at length: a field
/// name appears only when it is a short plain identifier, and document text never appears.
public struct FlatXMLError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case empty
        case tooLarge(limit: Int)
        case invalidUTF8
        case nulByte
        case invalidCharacter
        case doctype
        case entity
        case processingInstruction
        case comment
        case tooDeep
        case valueTooLong(limit: Int)
        case unexpectedRoot
        case attributes
        case mixedContent
        case duplicateField(String?)
        case malformed(line: Int, column: Int)
        case unencodableName
        case unencodableValue(String?)
    }

    let code: Code

    public static let empty = FlatXMLError(code: .empty)
    public static func tooLarge(limit: Int) -> FlatXMLError { FlatXMLError(code: .tooLarge(limit: limit)) }
    public static let invalidUTF8 = FlatXMLError(code: .invalidUTF8)
    public static let nulByte = FlatXMLError(code: .nulByte)
    /// A character XML 1.0 forbids (C0 controls other than tab, newline and carriage return;
    /// U+FFFE, U+FFFF), raw or as a character reference.
    public static let invalidCharacter = FlatXMLError(code: .invalidCharacter)
    public static let doctype = FlatXMLError(code: .doctype)
    public static let entity = FlatXMLError(code: .entity)
    /// `<?target …?>` anywhere but the XML declaration at the very start.
    public static let processingInstruction = FlatXMLError(code: .processingInstruction)
    /// `<!-- … -->`: WeChat never sends comments, and refusing them keeps one meaning per document.
    public static let comment = FlatXMLError(code: .comment)
    public static let tooDeep = FlatXMLError(code: .tooDeep)
    /// One field's value is longer than `FlatXML.maximumValueLength`, whatever the document cap.
    public static func valueTooLong(limit: Int) -> FlatXMLError { FlatXMLError(code: .valueTooLong(limit: limit)) }
    public static let unexpectedRoot = FlatXMLError(code: .unexpectedRoot)
    public static let attributes = FlatXMLError(code: .attributes)
    public static let mixedContent = FlatXMLError(code: .mixedContent)
    static func duplicateField(_ name: String) -> FlatXMLError {
        FlatXMLError(code: .duplicateField(Self.printable(name)))
    }
    static func malformed(line: Int, column: Int) -> FlatXMLError {
        FlatXMLError(code: .malformed(line: line, column: column))
    }
    public static let unencodableName = FlatXMLError(code: .unencodableName)
    static func unencodableValue(_ name: String) -> FlatXMLError {
        FlatXMLError(code: .unencodableValue(Self.printable(name)))
    }

    /// A stable label without data, for metrics and timelines.
    public var shortDescription: String {
        switch code {
        case .empty: "empty"
        case .tooLarge: "too_large"
        case .invalidUTF8: "invalid_utf8"
        case .nulByte: "nul_byte"
        case .invalidCharacter: "invalid_character"
        case .doctype: "doctype"
        case .entity: "entity"
        case .processingInstruction: "processing_instruction"
        case .comment: "comment"
        case .tooDeep: "too_deep"
        case .valueTooLong: "value_too_long"
        case .unexpectedRoot: "unexpected_root"
        case .attributes: "attributes"
        case .mixedContent: "mixed_content"
        case .duplicateField: "duplicate_field"
        case .malformed: "malformed"
        case .unencodableName: "unencodable_name"
        case .unencodableValue: "unencodable_value"
        }
    }

    public var description: String {
        switch code {
        case .empty: return "empty document"
        case .tooLarge(let limit): return "document larger than \(limit) bytes"
        case .invalidUTF8: return "document is not valid UTF-8"
        case .nulByte: return "document contains a NUL byte"
        case .invalidCharacter: return "document contains a character XML 1.0 does not allow"
        case .doctype: return "DOCTYPE declarations are not allowed"
        case .entity: return "entity declarations and references other than the predefined five are not allowed"
        case .processingInstruction: return "processing instructions are not allowed"
        case .comment: return "comments are not allowed"
        case .tooDeep: return "elements nested deeper than <xml><field>"
        case .valueTooLong(let limit): return "a field value is longer than \(limit) bytes"
        case .unexpectedRoot: return "unexpected root element"
        case .attributes: return "attributes and namespaces are not allowed"
        case .mixedContent: return "text outside a field"
        case .duplicateField(let name): return "duplicate field" + (name.map { " \($0)" } ?? "")
        case .malformed(let line, let column): return "malformed XML at line \(line), column \(column)"
        case .unencodableName: return "field name is not a plain XML name"
        case .unencodableValue(let name):
            return "value" + (name.map { " of \($0)" } ?? "") + " contains characters XML 1.0 cannot carry"
        }
    }

    /// A field name is shown only when it is a short identifier; anything else could be an attacker's payload.
    private static func printable(_ name: String) -> String? {
        guard name.utf8.count <= 32, FlatXML.isPlainName(name) else { return nil }
        return name
    }
}
