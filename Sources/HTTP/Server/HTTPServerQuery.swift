// SPDX-License-Identifier: Apache-2.0

/// The decoded query-string parameters of a request, in order, repeats kept.
///
/// `?wait=25&tag=a&tag=b&flag` gives `query["wait"] == "25"`, `query.values(for: "tag") == ["a", "b"]`
/// and `query["flag"] == ""`. Keys and values are percent-decoded and `+` means a space
/// (application/x-www-form-urlencoded, as browsers and most HTTP clients send it).
public struct HTTPServerQuery: Sendable, Hashable, Sequence {
    /// One `name=value` pair, decoded.
    public struct Item: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var items: [Item]

    /// Parameters from decoded items, in order.
    public init(_ items: [Item] = []) { self.items = items }

    /// Parses a raw query string (the part after `?`, without it). Returns nil when an escape is
    /// malformed or decodes to invalid UTF-8, so the server can answer 400 instead of guessing.
    public init?<S: StringProtocol>(parsing rawQuery: S) {
        var items: [Item] = []
        for pair in rawQuery.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let item = Self.decodedItem(rawName: parts[0], rawValue: parts.count > 1 ? parts[1] : "") else {
                return nil
            }
            items.append(item)
        }
        self.items = items
    }

    /// Decodes one raw pair as libmicrohttpd splits it (`+` may already be a space there; decoding
    /// it again is harmless because an encoded plus arrives as `%2B`).
    static func decodedItem<S: StringProtocol>(rawName: S, rawValue: S) -> Item? {
        guard let name = PercentDecoding.decode(plusAsSpace(rawName)),
            let value = PercentDecoding.decode(plusAsSpace(rawValue))
        else { return nil }
        return Item(name: name, value: value)
    }

    private static func plusAsSpace<S: StringProtocol>(_ raw: S) -> String {
        raw.contains("+") ? String(raw.map { $0 == "+" ? " " : $0 }) : String(raw)
    }

    /// The first value for `name` (case-sensitive, as query keys are), or nil when absent.
    public subscript(name: String) -> String? {
        items.first { $0.name == name }?.value
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        items.filter { $0.name == name }.map(\.value)
    }

    public var count: Int { items.count }
    public var isEmpty: Bool { items.isEmpty }

    public func makeIterator() -> IndexingIterator<[Item]> { items.makeIterator() }
}
