// SPDX-License-Identifier: Apache-2.0

/// A snapshot of the server's counters.
public struct HTTPServerStatistics: Sendable, Hashable {
    /// Requests whose headers arrived and whose completion libmicrohttpd has not yet reported.
    public var requestsInFlight: Int
    /// Requests whose async handler is running, their connections suspended (no thread held).
    public var suspendedRequests: Int
    /// Requests routed to a handler since the server started.
    public var requestsStarted: UInt64
    /// Connections accepted and not yet closed: what `HTTPServerConfiguration.connectionLimit` counts.
    public var openConnections: Int

    public init(requestsInFlight: Int, suspendedRequests: Int, requestsStarted: UInt64, openConnections: Int = 0) {
        self.requestsInFlight = requestsInFlight
        self.suspendedRequests = suspendedRequests
        self.requestsStarted = requestsStarted
        self.openConnections = openConnections
    }
}
