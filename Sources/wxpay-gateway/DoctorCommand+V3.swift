// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Gateway
import HTTP
import StorageCore
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPayV3

/// API v3's pre-flight checks: the keys agree with each other (locally), WeChat accepts the
/// merchant's signature (a signed query of a number no order has must answer ORDER_NOT_EXIST), and
/// an answer WeChat signs verifies under the public key or certificate the operator configured.
extension DoctorContext {
    /// The v3 client at `base` (default WXPAY_API_BASE), with the configured keys.
    func v3Client(_ credentials: V3Credentials, base: String? = nil) -> V3Client {
        let keys = V3Keys(credentials: credentials, mchID: configuration.mchID)
        let transport = WeChatPayHTTPTransport(client: http, configuration: .init(
            primaryBaseURL: base ?? configuration.apiBase, backupBaseURL: nil,
            timeouts: .init(connect: .seconds(5), total: .seconds(10))))
        return V3Client(signer: keys.signer, verifier: keys.verifier, apiV3Key: keys.apiV3Key, transport: transport,
                        nonces: RandomNonceSource(), now: { Date() })
    }

    /// Whether `base` answers as WeChat Pay's API does, asked with v3's signed query of a number no
    /// order has (a gateway without the v2 key asks nothing in v2).
    func reachableV3(_ base: String) async -> DoctorOutcome {
        guard let credentials = configuration.v3.credentials else { return .fail("neither the v2 key nor API v3 is configured") }
        do {
            _ = try await v3Client(credentials, base: base).call(TransactionRequests.query(
                outTradeNo: Self.impossibleNumber("doctor"), mchID: configuration.mchID))
            return .ok("\(base) answers (v3 query)")
        } catch {
            switch error {
            case .transport(let failure): return .fail("\(base) cannot be reached: \(failure)")
            case .malformed: return .fail("\(base) answers, not as WeChat Pay's API does: \(error)")
            case .failed, .unverified: return .ok("\(base) answers (v3 query)")
            }
        }
    }

    /// Under API v3 without the v2 key: nothing of v2 is signed or verified. Says what that means
    /// for the orders created with v2 that the database still holds open.
    func withoutV2Key() async -> DoctorOutcome {
        let open: String
        do {
            let count = try await inspect().openV2Orders
            open = count == 1 ? "1 order created with API v2 is still open" : "\(count) orders created with API v2 are still open"
        } catch {
            open = "the orders created with API v2 still open could not be counted (\(error))"
        }
        return .skip("WXPAY_API_KEY is not set (WXPAY_API_VERSION=v3): \(open); they are finished through API v3 "
                     + "(query, close, refund), and v2 notifies are refused")
    }

    /// The keys agree: the merchant key's signature verifies under its public half (the
    /// configuration matched it with WXPAY_MERCHANT_CERT already), the APIv3 key opens what it seals.
    func v3Keys() -> DoctorOutcome {
        guard let credentials = configuration.v3.credentials else { return .skip("WeChat Pay API v3 is not configured") }
        let message = Array("wxpay-gateway doctor\n".utf8)
        guard credentials.merchantKey.publicKey.isValidSignature(credentials.merchantKey.signature(for: message), for: message) else {
            return .fail("the merchant private key does not verify its own signature")
        }
        let sealed = EncryptedResource.seal(message, key: credentials.apiV3Key, nonce: "doctor000000", associatedData: "doctor")
        guard (try? sealed.decrypt(with: credentials.apiV3Key)) == message else {
            return .fail("the APIv3 key does not open what it seals")
        }
        var modes: [String] = []
        if let publicKey = credentials.publicKey { modes.append("public key \(publicKey.id)") }
        if credentials.usesCertificates {
            modes.append("platform certificate \(credentials.pinnedCertificates.map(\.serialNumber).joined(separator: ","))")
        }
        return .ok("merchant key (serial \(credentials.merchantSerial)) and APIv3 key agree; WeChat's keys: "
                   + modes.joined(separator: " and ") + "; new orders: \(configuration.v3.apiVersion.rawValue)")
    }

    /// A signed query of a number no order has: WeChat answers 404 ORDER_NOT_EXIST only when it
    /// accepted the merchant's signature (a wrong key or serial is 401 SIGN_ERROR).
    func v3Signature() async -> DoctorOutcome {
        guard let credentials = configuration.v3.credentials else { return .skip("WeChat Pay API v3 is not configured") }
        do {
            _ = try await v3Client(credentials).call(TransactionRequests.query(
                outTradeNo: Self.impossibleNumber("doctor"), mchID: configuration.mchID))
            return .fail("WeChat answered a query for a number no order has as if it existed")
        } catch {
            switch error {
            case .failed(let body) where body.code == "ORDER_NOT_EXIST":
                return .ok("a signed query of a number that cannot exist is answered ORDER_NOT_EXIST")
            case .failed(let body) where body.code == "SIGN_ERROR":
                return .fail("WeChat refused the request's signature (401 SIGN_ERROR): check WXPAY_MERCHANT_PRIVATE_KEY, "
                             + "WXPAY_MERCHANT_SERIAL (or WXPAY_MERCHANT_CERT) and WXPAY_MCH_ID")
            case .failed(let body):
                return .fail("unexpected answer: \(body)")
            default:
                return .fail("\(configuration.apiBase) could not be asked: \(error)")
            }
        }
    }

    /// An answer WeChat signs (`GET /v3/certificates`, asked to be signed with the configured key)
    /// verifies under the configured public key or platform certificate. A merchant in public-key
    /// mode only gets 404 there: then there is nothing signed to check without paying.
    func v3WeChatKey() async -> DoctorOutcome {
        guard let credentials = configuration.v3.credentials else { return .skip("WeChat Pay API v3 is not configured") }
        do {
            _ = try await v3Client(credentials).call(PlatformCertificateDownload.request)
            return .ok("an answer WeChat signed verifies under the configured "
                       + (credentials.publicKey != nil ? "public key" : "platform certificate"))
        } catch {
            switch error {
            case .failed(let body) where body.status == 404 && credentials.publicKey != nil && !credentials.usesCertificates:
                return .skip("WeChat serves this merchant no platform certificates (public-key mode): the public key is first "
                             + "checked by WeChat's first signed answer")
            case .unverified(let failure):
                return .fail("WeChat's signed answer does not verify (\(failure.shortDescription)): check WXPAY_PUBLIC_KEY_FILE "
                             + "and WXPAY_PUBLIC_KEY_ID, or WXPAY_PLATFORM_CERT_FILE")
            case .failed(let body) where body.code == "SIGN_ERROR":
                return .fail("cannot be checked: WeChat refused the request's signature (401 SIGN_ERROR); fix the merchant key first")
            default:
                return .fail("cannot be checked: \(error)")
            }
        }
    }
}
