// SPDX-License-Identifier: Apache-2.0

/// The members a reader wants of one JSON object, by name, and the shape of those it reads as
/// objects in turn. Made once (a `static let`) per document kind.
///
/// ```swift
/// static let shape = JSONShape(["id", "resource"], objects: ["resource": JSONShape(["ciphertext", "nonce"])])
/// let members = try JSONValue.parseMembers(body, shape: shape)
/// ```
public struct JSONShape: Sendable {
    public let names: [String]
    /// `names` as bytes, compared with a member's name as read, before any `String` is made.
    let utf8Names: [[UInt8]]
    /// For each name, the shape its value is read with when it is an object (nil: read whole).
    let objects: [JSONShape?]

    /// - Parameters:
    ///   - names: at most 64, each once.
    ///   - objects: the shapes of members read as objects; a member named here must be in `names`.
    public init(_ names: [String], objects: [String: JSONShape] = [:]) {
        precondition(names.count <= 64 && Set(names).count == names.count && !names.contains(""),
                     "a shape names at most 64 members, each once, none empty")
        precondition(objects.keys.allSatisfy(names.contains), "a nested shape belongs to a member of the shape")
        self.names = names
        utf8Names = names.map { Array($0.utf8) }
        self.objects = names.map { objects[$0] }
    }
}

/// One member's value as ``JSONValue/parseMembers(_:shape:maximumDepth:numbers:)`` read it.
public enum JSONMember: Sendable, Hashable {
    /// A value whole (an object only where the shape gives the member none).
    case value(JSONValue)
    /// An object read by the member's own shape.
    case object(JSONMembers)
}

/// The members of one object that its shape names, read in one strict pass: nil for those absent.
/// Members the shape does not name are read and checked like the rest (every rule of the reader:
/// a repeated name at any depth, bad UTF-8, numbers out of range, depth), then dropped, so a
/// document is refused here exactly when ``JSONValue/parse(_:maximumDepth:numbers:)`` refuses it.
public struct JSONMembers: Sendable, Hashable {
    public let names: [String]
    public let values: [JSONMember?]

    /// The member `name` (one of the shape's names), or nil when it is absent or not in the shape.
    public subscript(name: String) -> JSONMember? {
        guard let index = names.firstIndex(of: name) else { return nil }
        return values[index]
    }

    /// The members as a `JSONValue` object (nested shapes too): what a full read of the document
    /// would have given, restricted to the shape's names.
    public var objectValue: JSONValue {
        var members: [String: JSONValue] = [:]
        for (name, member) in zip(names, values) {
            switch member {
            case nil: continue
            case .value(let value)?: members[name] = value
            case .object(let nested)?: members[name] = nested.objectValue
            }
        }
        return .object(members)
    }
}

extension JSONValue {
    /// Reads one document that must be a JSON object, keeping only the members `shape` names (and
    /// in the objects among them, those their shapes name), without building the rest: for the
    /// fixed documents read on a hot path (a WeChat Pay v3 notify and its resource). Accepts and
    /// refuses exactly what ``parseObject(_:maximumDepth:numbers:)`` does, with the same errors.
    public static func parseMembers(_ bytes: [UInt8], shape: JSONShape, maximumDepth: Int = defaultMaximumDepth,
                                    numbers: Numbers = .exactIntegers) throws(JSONError) -> JSONMembers
    {
        try bytes.withUnsafeBytes { buffer in
            JSONReader.document(buffer, maximumDepth: maximumDepth, numbers: numbers, objectOnly: true) {
                (reader: inout JSONReader) throws(JSONError) in try reader.members(shape, depth: 1)
            }
        }.get()
    }
}

extension JSONReader {
    /// An object at its opening brace, `depth` counting it, read by `shape`: the same grammar and
    /// checks as ``object(depth:)``, a member's name matched against the shape's bytes first.
    mutating func members(_ shape: JSONShape, depth: Int) throws(JSONError) -> JSONMembers {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        position += 1
        var values = [JSONMember?](repeating: nil, count: shape.names.count)
        var seen: UInt64 = 0
        // The names outside the shape, kept only to find one repeated.
        var others: Set<String> = []
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return JSONMembers(names: shape.names, values: values)
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else { throw error(.syntax) }
            let start = position
            var name: String?
            var index = plainName(in: shape)
            if index == nil {
                let decoded = try string()
                index = shape.names.firstIndex(of: decoded)
                name = decoded
            }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let repeated: Bool
            do {
                if let index {
                    repeated = seen & (1 << UInt64(index)) != 0
                    seen |= 1 << UInt64(index)
                    if let nested = shape.objects[index], peek() == UInt8(ascii: "{") {
                        values[index] = .object(try members(nested, depth: depth + 1))
                    } else {
                        values[index] = .value(try value(depth: depth))
                    }
                } else {
                    repeated = !others.insert(name!).inserted
                    _ = try value(depth: depth)
                }
            } catch {
                var located = error
                if located.reason == .numberOutOfRange, located.member == nil {
                    located.member = name ?? index.map { shape.names[$0] }
                }
                throw located
            }
            if repeated, duplicateOffset == nil { duplicateOffset = start }
            skipWhitespace()
            guard let next = peek() else { throw error(.syntax) }
            if next == UInt8(ascii: "}") {
                position += 1
                return JSONMembers(names: shape.names, values: values)
            }
            guard next == UInt8(ascii: ",") else { throw error(.syntax) }
            position += 1
        }
    }

    /// At a name's opening quote: when its bytes up to the closing quote are exactly one of the
    /// shape's names (so no escape, no control character, valid UTF-8), the name's index, the
    /// reader after the closing quote. Otherwise nil, the reader where it was.
    mutating func plainName(in shape: JSONShape) -> Int? {
        let start = position + 1
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        let length = end - start
        for (index, name) in shape.utf8Names.enumerated() where name.count == length {
            let same = name.withUnsafeBytes { name in
                memcmpEqual(name.baseAddress!, bytes.baseAddress! + start, length)
            }
            if same {
                position = end + 1
                return index
            }
        }
        return nil
    }
}

/// Whether `count` bytes at `a` and `b` are the same.
@inline(__always) private func memcmpEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    for offset in 0..<count where a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
        return false
    }
    return true
}
