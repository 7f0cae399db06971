// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Typed reads of one message's fields, each failing with the field's name. Shared by every
/// request and response decoder so that "missing", "empty" and "malformed" mean the same everywhere:
/// an empty value counts as absent, as it does in WeChat's signature rules.
struct FieldReader {
    let fields: Fields

    init(_ fields: Fields) {
        self.fields = fields
    }

    func required(_ name: String, _ format: FieldFormat? = nil) throws(WeChatPayMessageError) -> String {
        guard let value = try optional(name, format) else { throw .missingField(name) }
        return value
    }

    func optional(_ name: String, _ format: FieldFormat? = nil) throws(WeChatPayMessageError) -> String? {
        guard let value = fields.nonEmpty(name) else { return nil }
        if let format, !format.accepts(value) { throw .invalidField(name) }
        return value
    }

    /// An amount in fen: plain decimal digits, no sign, no decimals, no leading zeros.
    func requiredAmount(_ name: String, positive: Bool = false) throws(WeChatPayMessageError) -> Int {
        guard let value = try optionalAmount(name, positive: positive) else { throw .missingField(name) }
        return value
    }

    func optionalAmount(_ name: String, positive: Bool = false) throws(WeChatPayMessageError) -> Int? {
        guard let text = fields.nonEmpty(name) else { return nil }
        guard let value = Self.parseAmount(text), !positive || value > 0 else { throw .invalidField(name) }
        return value
    }

    /// A count that bounds a list of indexed fields (`coupon_count`, `refund_count`): it cannot
    /// exceed the number of fields present, so a hostile count never drives a long loop.
    func optionalCount(_ name: String) throws(WeChatPayMessageError) -> Int? {
        guard let count = try optionalAmount(name) else { return nil }
        guard count <= fields.count else { throw .invalidField(name) }
        return count
    }

    func optionalTime(_ name: String) throws(WeChatPayMessageError) -> Date? {
        guard let text = fields.nonEmpty(name) else { return nil }
        guard let date = BeijingTime.parse(text) else { throw .invalidField(name) }
        return date
    }

    func optionalTimeWithSeparators(_ name: String) throws(WeChatPayMessageError) -> Date? {
        guard let text = fields.nonEmpty(name) else { return nil }
        guard let date = BeijingTime.parseWithSeparators(text) else { throw .invalidField(name) }
        return date
    }

    /// A value from a closed set (request enumerations: `bill_type`, `refund_account`, …).
    func optionalEnum<Value: RawRepresentable>(_ name: String, as _: Value.Type) throws(WeChatPayMessageError) -> Value?
    where Value.RawValue == String {
        guard let text = fields.nonEmpty(name) else { return nil }
        guard let value = Value(rawValue: text) else { throw .invalidField(name) }
        return value
    }

    /// Fields that are neither envelope fields nor in `known`, in document order: what a request
    /// keeps in `additionalFields` so that nothing received is silently dropped.
    func additionalFields(excluding known: Set<String>) -> Fields {
        Fields(fields.elements.filter { !known.contains($0.name) && !RequestEnvelope.fieldNames.contains($0.name) })
    }

    static func parseAmount(_ text: String) -> Int? {
        let bytes = text.utf8
        // 15 digits is ten trillion yuan: beyond any real amount, and far from Int overflow.
        guard !bytes.isEmpty, bytes.count <= 15, bytes.first != UInt8(ascii: "0") || bytes.count == 1 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// Builds a message's fields in a fixed order, leaving out absent and empty values (WeChat treats
/// an empty value as absent, and sending one would only invite a signature disagreement).
struct FieldWriter {
    private(set) var fields = Fields()

    mutating func add(_ name: String, _ value: String?) {
        guard let value, !value.isEmpty else { return }
        fields[name] = value
    }

    mutating func add(_ name: String, _ value: Int?) {
        guard let value else { return }
        fields[name] = String(value)
    }

    mutating func add(_ name: String, time: Date?) {
        guard let time else { return }
        fields[name] = BeijingTime.format(time)
    }

    mutating func add(_ name: String, timeWithSeparators time: Date?) {
        guard let time else { return }
        fields[name] = BeijingTime.formatWithSeparators(time)
    }

    /// Appends caller-supplied extra fields, never overriding a field already written or an
    /// envelope field (those belong to the pipeline).
    mutating func addAdditional(_ additional: Fields) {
        for field in additional where !field.value.isEmpty {
            guard fields[field.name] == nil, !RequestEnvelope.fieldNames.contains(field.name) else { continue }
            fields[field.name] = field.value
        }
    }
}
