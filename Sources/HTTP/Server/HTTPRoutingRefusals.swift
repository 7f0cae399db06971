// SPDX-License-Identifier: Apache-2.0

/// How routing's own refusals are answered, before any handler runs: no route has the path (404),
/// none takes the method (405, with `Allow` added), or the path or query is not valid
/// percent-encoded UTF-8 or holds a NUL (400). Plain text unless the router's owner sets its own:
/// an API whose every other error is JSON answers these as JSON too.
public struct HTTPRoutingRefusals: Sendable {
    public var notFound: HTTPServerResponse
    public var methodNotAllowed: HTTPServerResponse
    public var malformed: HTTPServerResponse

    public init(notFound: HTTPServerResponse, methodNotAllowed: HTTPServerResponse, malformed: HTTPServerResponse) {
        self.notFound = notFound
        self.methodNotAllowed = methodNotAllowed
        self.malformed = malformed
    }

    /// The server's own short plain-text answers.
    public static let plainText = HTTPRoutingRefusals(
        notFound: .notFound, methodNotAllowed: .methodNotAllowed, malformed: .badRequest)

    /// The answer when routing found no handler; nil when it found one.
    func answer(_ match: HTTPRouter.Match) -> HTTPServerResponse? {
        switch match {
        case .found: return nil
        case .notFound: return notFound
        case .malformedPath: return malformed
        case .methodNotAllowed(let allow):
            var response = methodNotAllowed
            response.headers["Allow"] = allow.map(\.rawValue).joined(separator: ", ")
            return response
        }
    }
}
