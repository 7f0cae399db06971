// SPDX-License-Identifier: Apache-2.0
// Re-exported so that every file of the gateway reads and writes JSON with the JSON module
// without importing it one by one (and the files of Orders/ do not import it themselves).
@_exported import JSON

/// The name `CreateOrderInput.members(of:)` reads request bodies by: ``JSONValue/parseObject(_:maximumDepth:)``,
/// which refuses a repeated member name at any depth (there is no other policy left to choose).
enum JSONObjectReader {
    enum Duplicates {
        case refused
    }

    static func members(of body: [UInt8], duplicates: Duplicates) throws(JSONError) -> [String: JSONValue] {
        try JSONValue.parseObject(body)
    }
}

extension JSONError {
    /// The document was well-formed but named a member twice in one object.
    var duplicateName: Bool { reason == .duplicateKey }
}
