// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The simulators' hand-written control bodies (fault plans, purchases). A member a body's type
/// does not know is refused by its name, at any depth, as the gateway's own API refuses one: a
/// misspelt fault (`droprate`) would otherwise be ignored and look as if it took effect.
public enum ControlBody {
    /// Throws when the object `decoder` reads has a member that is not one of `Key`'s.
    public static func refuseUnknownMembers<Key: CodingKey & CaseIterable>(_ decoder: any Decoder, known: Key.Type) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let names = Set(Key.allCases.map(\.stringValue))
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: { !names.contains($0) }) {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath + [AnyKey(stringValue: unknown)],
                                                    debugDescription: unknownMember))
        }
    }

    /// A rate member (a probability: 0 when absent), refused naming it when outside 0 to 1: a rate
    /// of 1.5 would otherwise act as 1 and look as if the plan said what it meant.
    public static func rate<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> Double {
        let value = try container.decodeIfPresent(Double.self, forKey: key) ?? 0
        guard (0...1).contains(value) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: notARate)
        }
        return value
    }

    /// What is wrong with a body its decoder refused, naming the member by its path (`notify.bogus`).
    public static func problem(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        func path(_ keys: [any CodingKey]) -> String { keys.map(\.stringValue).joined(separator: ".") }
        switch error {
        case .dataCorrupted(let context) where context.debugDescription == unknownMember:
            return "unknown member \(path(context.codingPath))"
        case .dataCorrupted(let context) where context.debugDescription == notARate:
            return "\(path(context.codingPath)) must be a rate from 0 to 1"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return context.codingPath.isEmpty ? "not a JSON object" : "\(path(context.codingPath)) has the wrong type"
        default:
            return "not JSON"
        }
    }

    private static let unknownMember = "unknown member"
    private static let notARate = "not a rate"

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
