// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import WeChatPayV3

/// What API v3 signs and verifies with, made once from the configured credentials and shared by
/// the upstream (requests, answers, the platform certificates' refresh) and the notify routes:
/// one verifier, so a certificate a refresh trusts verifies the next notify too.
public struct V3Keys: Sendable {
    public let signer: MerchantSigner
    public let verifier: V3Verifier
    public let apiV3Key: APIv3Key
    /// Verify, then decrypt, then read: the notify routes' only way into a notify.
    public let opener: V3NotifyOpener

    public init(credentials: V3Credentials, mchID: String) {
        signer = MerchantSigner(mchID: mchID, serialNumber: credentials.merchantSerial, key: credentials.merchantKey)
        let certificates = credentials.usesCertificates
            ? PlatformCertificateStore(pinned: credentials.pinnedCertificates, pinnedPublicKey: credentials.publicKey) : nil
        verifier = V3Verifier(publicKey: credentials.publicKey, platformCertificates: certificates)
        apiV3Key = credentials.apiV3Key
        opener = V3NotifyOpener(verifier: verifier, key: credentials.apiV3Key, mchID: mchID)
    }
}

/// What opening a v3 notify came to: its event, or the reply that refuses it.
enum V3NotifyOpening: Sendable {
    case opened(V3NotifyEvent)
    case refused(V3NotifyReply)
}

extension GatewayContext {
    /// A v3 notify's opening for either route: 404 while v3 is not configured; then
    /// `openV3Notify`; a refusal answered as `refusal(_:count:)` says, and counted by `count`
    /// (`quietly` for a probe).
    func openV3Notify(headers: [String: String], body: [UInt8], count: (String, Bool) -> Void) async -> V3NotifyOpening {
        guard let v3 else {
            count("v3_not_configured", false)
            return .refused(.failed(status: 404, message: "WeChat Pay API v3 is not configured"))
        }
        do {
            return .opened(try await openV3Notify(v3, headers: headers, body: body))
        } catch {
            return .refused(Self.refusal(error, count: count))
        }
    }

    /// The answer to a v3 notify the protocol core refused: a probe 400 and quiet, a signature
    /// that is not WeChat's (stale, unknown serial, forged, headers missing) 401, a verified body
    /// that does not read 400.
    static func refusal(_ error: WeChatPayV3Error, count: (String, Bool) -> Void) -> V3NotifyReply {
        switch error.code {
        case .signatureProbe:
            count(error.shortDescription, true)
            return .failed(status: 400, message: "signature probe")
        case .missingHeader, .malformedHeader, .staleTimestamp, .unknownSerial, .certificateNotValidNow, .badSignature:
            count(error.shortDescription, false)
            return .failed(status: 401, message: "signature not verified")
        default:
            count(error.shortDescription, false)
            return .failed(status: 400, message: "rejected")
        }
    }

    /// Opens a v3 notify (`V3NotifyOpener`: verify, decrypt, read). In certificate mode a serial no
    /// trusted certificate has may be WeChat's rotation since the last refresh: the certificates are
    /// fetched (one download at a time, at most one a minute, so strangers naming serials cannot
    /// make the gateway download them at will) and the notify opened again. The notifies a rotation
    /// sends while that download runs wait for it instead of being refused. Signature timestamps
    /// are wall time, whatever clock the flows run on.
    func openV3Notify(_ keys: V3Keys, headers: [String: String], body: [UInt8]) async throws(WeChatPayV3Error) -> V3NotifyEvent {
        do {
            return try keys.opener.open(headers: headers, body: body, now: Date())
        } catch where error.code == .unknownSerial && keys.verifier.platformCertificates != nil {
            guard let v3Upstream, let download = certificateRefreshes.download({ _ = try? await v3Upstream.refreshCertificates() })
            else { throw error }
            await download.value
            return try keys.opener.open(headers: headers, body: body, now: Date())
        }
    }
}

/// The platform certificates' downloads that notifies with an unknown serial ask for: one at a
/// time, at most one starting a minute.
final class CertificateRefreshes: Sendable {
    private struct State {
        var lastStart: ContinuousClock.Instant?
        var running: Task<Void, Never>?
    }

    private let state = Mutex(State())
    static let interval: Duration = .seconds(60)

    /// The download running now (a notify that comes during one waits for it), else a new one
    /// made by `fetch` when none started in the last minute, else nil.
    func download(_ fetch: @escaping @Sendable () async -> Void) -> Task<Void, Never>? {
        let now = ContinuousClock.now
        return state.withLock { state in
            if let running = state.running { return running }
            if let last = state.lastStart, now - last < Self.interval { return nil }
            state.lastStart = now
            // The task takes the lock to say it is done only after this closure has stored it.
            let task = Task {
                await fetch()
                self.state.withLock { $0.running = nil }
            }
            state.running = task
            return task
        }
    }
}
