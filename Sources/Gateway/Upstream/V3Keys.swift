// SPDX-License-Identifier: Apache-2.0
import Foundation
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
