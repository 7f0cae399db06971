// SPDX-License-Identifier: Apache-2.0

/// How the server's own refusals are answered, where no handler does: routing found no route for
/// the path (404), none that takes the method (405, with `Allow` added), or a path or query that
/// is not valid percent-encoded UTF-8 or holds a NUL (400); and a shutdown answers the requests
/// whose handlers did not finish in time (503, `shuttingDown`). Plain text unless the router's
/// owner sets its own: an API whose every other error is JSON answers these as JSON too.
public struct HTTPRoutingRefusals: Sendable {
    public var notFound: HTTPServerResponse
    public var methodNotAllowed: HTTPServerResponse
    public var malformed: HTTPServerResponse
    public var shuttingDown: HTTPServerResponse

    public init(notFound: HTTPServerResponse, methodNotAllowed: HTTPServerResponse, malformed: HTTPServerResponse,
                shuttingDown: HTTPServerResponse = .serviceUnavailable) {
        self.notFound = notFound
        self.methodNotAllowed = methodNotAllowed
        self.malformed = malformed
        self.shuttingDown = shuttingDown
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
