// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// Where a payload is App Store data: production, or the sandbox (TestFlight, App Review, sandbox
/// testers). Apple's `Xcode` and `LocalTesting` environments are unsigned test data and are never
/// accepted here.
public enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case production = "Production"
    case sandbox = "Sandbox"
}

/// Reads typed members of a verified payload; a member of the wrong type is `malformed`, an
/// unknown member is ignored (Apple adds fields).
struct PayloadReader {
    let object: [String: JSONValue]

    init(_ json: JSONValue) throws(SignedDataError) {
        guard let object = json.objectValue else { throw SignedDataError(.malformed, "payload is not a JSON object") }
        self.object = object
    }

    func string(_ name: String) throws(SignedDataError) -> String? {
        switch object[name] {
        case nil, .null?: return nil
        case .string(let value)?:
            // No store keeps U+0000 in text: refused here, as malformed, rather than failing later.
            guard !value.utf8.contains(0) else { throw SignedDataError(.malformed, "a payload member holds U+0000") }
            return value
        default: throw SignedDataError(.malformed, "a payload member has the wrong type")
        }
    }

    func requiredString(_ name: String) throws(SignedDataError) -> String {
        guard let value = try string(name), !value.isEmpty else { throw SignedDataError(.malformed, "a required payload member is missing") }
        return value
    }

    func integer(_ name: String) throws(SignedDataError) -> Int64? {
        switch object[name] {
        case nil, .null?: return nil
        case let value?:
            guard let integer = value.intValue else { throw SignedDataError(.malformed, "a payload member has the wrong type") }
            return Int64(integer)
        }
    }

    func bool(_ name: String) throws(SignedDataError) -> Bool? {
        switch object[name] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw SignedDataError(.malformed, "a payload member has the wrong type")
        }
    }

    /// Milliseconds since 1970 as a date.
    func date(_ name: String) throws(SignedDataError) -> Date? {
        try integer(name).map { Date(millisecondsSince1970: $0) }
    }

    func requiredDate(_ name: String) throws(SignedDataError) -> Date {
        guard let date = try date(name) else { throw SignedDataError(.malformed, "a required payload date is missing") }
        return date
    }

    /// The environment; an unknown value (Xcode, LocalTesting, anything else) is a mismatch
    /// whatever the caller expects.
    func environment() throws(SignedDataError) -> AppStoreEnvironment {
        guard let text = try string("environment") else { throw SignedDataError(.malformed, "the payload names no environment") }
        guard let environment = AppStoreEnvironment(rawValue: text) else {
            throw SignedDataError(.environmentMismatch, "environment is neither Production nor Sandbox")
        }
        return environment
    }

    /// A UUID (`appAccountToken`); an empty string counts as absent.
    func uuid(_ name: String) throws(SignedDataError) -> UUID? {
        guard let text = try string(name), !text.isEmpty else { return nil }
        guard let uuid = UUID(uuidString: text) else { throw SignedDataError(.malformed, "appAccountToken is not a UUID") }
        return uuid
    }
}

extension Date {
    /// App Store dates: milliseconds since 1970.
    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }

    /// Milliseconds since 1970, rounded down.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }
}

/// A string-valued enumeration that keeps values it does not know: Apple adds types and reasons,
/// and a new one must not make a genuine purchase undecodable.
public protocol OpenStringEnumeration: RawRepresentable, Sendable, Hashable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension OpenStringEnumeration {
    public var description: String { rawValue }
}
