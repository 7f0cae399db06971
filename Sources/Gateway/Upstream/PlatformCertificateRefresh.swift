// SPDX-License-Identifier: Apache-2.0
import Foundation
import Lifecycle
import Observability

/// Certificate mode's refresh: `GET /v3/certificates` at start and every 12 hours, each download
/// trusted only under a key already trusted (the configured certificate pins the first), old and
/// new side by side. A failed refresh is logged and tried again in 10 minutes: the certificates
/// already trusted keep verifying meanwhile, and an answer signed with an unknown serial refreshes
/// at once (`V3Client.call`).
public struct PlatformCertificateRefresh: Service, CustomStringConvertible {
    static let interval: Duration = .seconds(12 * 3600)
    static let retryAfterFailure: Duration = .seconds(600)

    let upstream: WeChatPayV3Upstream
    let logger: Logger

    /// Nil unless v3 is configured in certificate mode (public-key mode has nothing to refresh).
    public init?(_ context: GatewayContext) {
        guard let upstream = context.v3Upstream, context.configuration.v3.credentials?.usesCertificates == true else { return nil }
        self.upstream = upstream
        logger = context.logger
    }

    public var description: String { "platform certificate refresh" }

    /// One refresh; whether it succeeded.
    @discardableResult
    public func refresh() async -> Bool {
        do {
            let added = try await upstream.refreshCertificates()
            if !added.isEmpty { logger.notice("platform certificates trusted", ["serials": added.joined(separator: ",")]) }
            return true
        } catch {
            logger.error("platform certificate refresh failed; the certificates trusted before still verify",
                         ["error": error.shortDescription])
            return false
        }
    }

    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let refreshed = await refresh()
                try? await Task.sleep(for: refreshed ? Self.interval : Self.retryAfterFailure)
            }
        }
    }
}
