// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore
import WeChatPay

/// How a report's evidence becomes a verified purchase (the JWS locally; a transaction id or a
/// receipt through the App Store's answers), and how the App Store's refusals become API errors.
extension IAPService {
    /// The reported evidence, verified: the JWS locally, a transaction id with Get Transaction
    /// Info (its answer verified like a JWS from the app), a receipt with the transaction found in
    /// it — read locally and decided by Get Transaction Info when the Server API key is configured
    /// (the transaction then carries its appAccountToken and environment), else by verifyReceipt.
    /// Apple unreachable after a few retries: 503, finish false.
    func verify(_ evidence: IAPReportInput.Evidence) async throws(APIError) -> VerifiedPurchase {
        switch evidence {
        case .signedTransaction(let jws):
            do {
                var purchase = VerifiedPurchase(try clients.verifier.verifyTransaction(jws), via: "signed_transaction",
                                                verification: "signed_transaction (StoreKit 2 JWS) verified locally: chain to the "
                                                    + "configured root, Apple's OIDs, ES256, bundle id")
                purchase.provesPossession = true
                return purchase
            } catch {
                throw Self.refusal(error)
            }
        case .transactionID(let id):
            guard let api = clients.serverAPI else { throw .transactionLookupUnavailable }
            return try await lookUp(id, api: api)
        case .receipt(let receipt, let id):
            guard let api = clients.serverAPI else {
                do {
                    let (transaction, verified) = try await clients.receipts.transaction(id, inReceipt: receipt)
                    return VerifiedPurchase(transaction, receipt: verified)
                } catch {
                    throw receiptRefusal(error)
                }
            }
            let read: AppReceipt
            do throws(AppReceiptError) {
                if let verifier = clients.receiptVerifier {
                    read = try verifier.verify(base64: receipt, now: now())
                } else {
                    read = try AppReceipt(base64: receipt)
                }
            } catch where error.kind == .invalidSignature || error.kind == .invalidChain {
                instruments.receiptsRead.labelled(error.kind.rawValue).increment()
                throw .invalidSignedData("receipt: \(error)")
            } catch {
                instruments.receiptsRead.labelled(error.kind.rawValue).increment()
                throw .invalidReport("receipt", "receipt must be the app receipt (PKCS #7, base64, at most 512 KiB): \(error)")
            }
            if let bundle = read.bundleID, bundle != clients.bundleID {
                instruments.receiptsRead.labelled("bundle_mismatch").increment()
                throw .transactionNotCreditable("the receipt belongs to another app (bundle id)")
            }
            guard read.contains(transactionID: id) else {
                instruments.receiptsRead.labelled("transaction_not_in_receipt").increment()
                throw .transactionNotInReceipt
            }
            instruments.receiptsRead.labelled("ok").increment()
            var purchase = try await lookUp(id, api: api)
            purchase.via = "receipt"
            let how = clients.receiptVerifier == nil ? "read locally, its signature not verified"
                : "read locally, its PKCS #7 signature verified to the configured receipt root"
            purchase.verification = "the transaction is in the app receipt (\(how), \(read.purchases.count) purchases); "
                + purchase.verification
            purchase.provesPossession = clients.receiptVerifier != nil
            return purchase
        }
    }

    /// Get Transaction Info (production, then the sandbox when accepted), its JWS verified.
    func lookUp(_ id: String, api: AppStoreServerAPIClient, environment: AppStoreEnvironment? = nil) async throws(APIError)
        -> VerifiedPurchase
    {
        let info: TransactionInfoResponse
        do {
            info = try await api.transactionInfo(id, environment: environment)
        } catch where error.kind == .notFound && environment == nil && !clients.acceptSandbox {
            // Production does not know it, and the sandbox is not taken: a sandbox purchase (a
            // tester's, against this production gateway) can never be credited, so the app may
            // finish it; an id unknown in both stays not found (keep it).
            if (try? await api.transactionInfo(id, environment: .sandbox)) != nil {
                throw .transactionNotCreditable("it is from the sandbox, which this gateway does not accept (APPSTORE_ACCEPT_SANDBOX=off)")
            }
            throw serverAPIRefusal(error)
        } catch {
            throw serverAPIRefusal(error)
        }
        do {
            return VerifiedPurchase(try clients.verifier.verifyTransaction(info.signedTransactionInfo), via: "transaction_id",
                                    verification: "looked up with the App Store Server API (Get Transaction Info, "
                                        + "\(info.environment.rawValue)); its signedTransactionInfo verified")
        } catch where error.rule == .bundleMismatch || error.rule == .environmentMismatch {
            throw Self.refusal(error)
        } catch {
            // Apple's own answer did not verify: a man in the middle or a fault, never the app's doing.
            logger.error("the App Store Server API answered signed data that does not verify", ["rule": error.rule.rawValue])
            instruments.upstreamErrors.labelled("transaction_info", error.rule.rawValue).increment()
            throw .appStoreUnavailable
        }
    }

    /// A signed transaction that did not verify: another app's or the wrong environment can never be
    /// credited (finish); anything else is a forgery or damage (keep it, nothing changed).
    static func refusal(_ error: SignedDataError) -> APIError {
        switch error.rule {
        case .bundleMismatch: return .transactionNotCreditable("it belongs to another app (bundle id)")
        case .environmentMismatch, .appAppleIDMismatch:
            return .transactionNotCreditable("it is from the sandbox, which this gateway does not accept (APPSTORE_ACCEPT_SANDBOX=off)")
        default: return .invalidSignedData(error.rule.rawValue)
        }
    }

    func serverAPIRefusal(_ error: AppStoreServerAPIError) -> APIError {
        instruments.upstreamErrors.labelled("transaction_info", error.kind.rawValue).increment()
        switch error.kind {
        case .notFound, .invalidRequest: return .transactionNotFound
        case .apiError where error.status == 400 || error.status == 404: return .transactionNotFound
        case .unauthorized:
            logger.error("the App Store Server API refused our token (401): check APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, "
                         + "APPSTORE_PRIVATE_KEY_FILE and APPSTORE_BUNDLE_ID")
            return .appStoreUnavailable
        default: return .appStoreUnavailable
        }
    }

    func receiptRefusal(_ error: ReceiptError) -> APIError {
        instruments.upstreamErrors.labelled("verify_receipt", error.kind.rawValue).increment()
        switch error.kind {
        case .transactionNotInReceipt: return .transactionNotInReceipt
        case .bundleMismatch: return .transactionNotCreditable("the receipt belongs to another app (bundle id)")
        case .invalidRequest: return .invalidReport("receipt", "receipt must be the app receipt, base64, at most 512 KiB")
        case .status:
            switch error.status {
            case .sandboxReceipt?:
                return .transactionNotCreditable("a sandbox receipt, which this gateway does not accept (APPSTORE_ACCEPT_SANDBOX=off)")
            case .notAuthenticated?, .malformedOrTemporary?, .accountNotFound?:
                return .invalidSignedData("verifyReceipt status \(error.status?.rawValue ?? 0)")
            case .sharedSecretMismatch?:
                logger.error("verifyReceipt refused our shared secret (21004): check APPSTORE_SHARED_SECRET")
                return .appStoreUnavailable
            default:
                return .appStoreUnavailable
            }
        case .transport, .httpStatus, .malformedResponse: return .appStoreUnavailable
        }
    }
}
