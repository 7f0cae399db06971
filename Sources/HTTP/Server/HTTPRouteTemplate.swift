// SPDX-License-Identifier: Apache-2.0

/// A route's path pattern: literal segments and whole-segment `{name}` parameters, e.g.
/// `/v1/orders/{out_trade_no}/close`.
struct HTTPRouteTemplate: Sendable, Hashable {
    enum Segment: Sendable, Hashable {
        case literal(String)
        case parameter(String)
    }

    let text: String
    let segments: [Segment]

    /// Whether the template has no parameters (its text is the only path it matches).
    var isStatic: Bool {
        !segments.contains { if case .parameter = $0 { true } else { false } }
    }

    /// Two templates with the same shape match the same paths whatever their parameter names.
    var shape: [Segment] {
        segments.map { if case .parameter = $0 { .parameter("") } else { $0 } }
    }

    /// Parses a template; a malformed one is a programming error, reported with the template.
    init(_ text: String) {
        precondition(text.hasPrefix("/"), "route template must start with '/': \(text)")
        var segments: [Segment] = []
        var names: Set<String> = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if raw.hasPrefix("{") && raw.hasSuffix("}") && raw.count > 2 {
                let name = String(raw.dropFirst().dropLast())
                precondition(!name.contains("{") && !name.contains("}"), "bad parameter in route template: \(text)")
                precondition(names.insert(name).inserted, "parameter {\(name)} repeated in route template: \(text)")
                segments.append(.parameter(name))
            } else {
                precondition(
                    !raw.contains("{") && !raw.contains("}"),
                    "a parameter must be a whole segment in route template: \(text)")
                segments.append(.literal(String(raw)))
            }
        }
        self.text = text
        self.segments = segments
    }

    /// Matches decoded path segments; parameters must be non-empty.
    func match(_ pathSegments: [String]) -> HTTPServerPathParameters? {
        guard pathSegments.count == segments.count else { return nil }
        var parameters = HTTPServerPathParameters()
        for (segment, value) in zip(segments, pathSegments) {
            switch segment {
            case .literal(let literal):
                guard literal == value else { return nil }
            case .parameter(let name):
                guard !value.isEmpty else { return nil }
                parameters.append(name: name, value: value)
            }
        }
        return parameters
    }

    /// Orders templates of the same length so literals win over parameters at the first segment
    /// where they differ: `/v1/orders/export` is tried before `/v1/orders/{id}`.
    static func isMoreSpecific(_ a: HTTPRouteTemplate, than b: HTTPRouteTemplate) -> Bool {
        precondition(a.segments.count == b.segments.count)
        for (x, y) in zip(a.segments, b.segments) {
            switch (x, y) {
            case (.literal, .parameter): return true
            case (.parameter, .literal): return false
            default: continue
            }
        }
        return false
    }
}
