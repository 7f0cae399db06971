// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One answer from the v3 API, read the one safe way: a 2xx answer's signature is verified over
/// the raw body before anything of it is believed; any other status is a ``V3ErrorBody`` whose
/// advice decides what to do (it is not signed, so it never settles anything by itself).
public enum V3Response {
    public enum Outcome: Sendable, Hashable {
        /// 2xx, signature verified: the body (empty for 204).
        case verified([UInt8])
        /// Not 2xx.
        case failed(V3ErrorBody)
    }

    public static func read(status: Int, headers: [String: String], body: [UInt8], verifier: V3Verifier,
                            now: Date) throws(WeChatPayV3Error) -> Outcome {
        guard (200..<300).contains(status) else { return .failed(V3ErrorBody(status: status, body: body)) }
        try verifier.verify(headers: headers, body: body, now: now)
        return .verified(body)
    }
}
