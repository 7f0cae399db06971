// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import WeChatPay

/// A faithful WeChat Pay v2 merchant API, in memory: the endpoints behave as WeChat documents them
/// (see ../shared/docs/wechatpay-v2.md §2), a control API acts out what users and networks do, and a
/// seeded fault plan makes WeChat misbehave reproducibly.
///
/// `handle(_:)` answers one API request synchronously; the HTTP front (`SimulatorServer`) and the
/// in-process transport both call it, so tests run the same body with and without sockets.
/// Notifies go out through a `NotifyScheduler` on WeChat's retry schedule.
public final class WeChatPaySimulator: Sendable {
    public let configuration: SimulatorConfiguration
    public let clock: any SimulatorClock
    let signer: Signer
    let book: Mutex<OrderBook>
    let notifies: NotifyScheduler

    /// - Parameters:
    ///   - configuration: the merchant the simulator serves, and its limits.
    ///   - clock: simulated time (a `ScaledClock` lets tests cross hours in seconds).
    ///   - notifySender: how notifies reach the merchant (HTTP in production-like runs, a closure in tests).
    public init(configuration: SimulatorConfiguration = SimulatorConfiguration(),
                clock: any SimulatorClock = ScaledClock(),
                notifySender: any NotifySender) {
        self.configuration = configuration
        self.clock = clock
        signer = Signer(key: configuration.key)
        book = Mutex(OrderBook(seed: configuration.seed))
        notifies = NotifyScheduler(clock: clock, sender: notifySender,
                                   retryIntervals: configuration.notifyRetryIntervals,
                                   timeout: configuration.notifyTimeout)
    }

    /// Starts delivering notifies. Runs until the task is cancelled.
    public func run() async {
        await notifies.run()
    }

    /// The fault plan now in force.
    public var faults: FaultPlan {
        get { book.withLock { $0.faults } }
    }

    /// Replaces the fault plan.
    public func setFaults(_ plan: FaultPlan) {
        book.withLock { $0.faults = plan }
    }

    // MARK: - The API

    /// Answers one merchant API request.
    public func handle(_ request: SimulatorRequest) -> SimulatorResponse {
        let route = Endpoint.route(request.path)
        let now = clock.now()
        return book.withLock { book in
            book.counters.requests[request.path, default: 0] += 1
            let faults = book.faults.faults(for: request.path)
            var response: SimulatorResponse
            do {
                guard let (endpoint, sandbox) = route else {
                    return SimulatorResponse(status: 404, body: Array("Not Found".utf8), contentType: "text/plain")
                }
                if endpoint.needsClientCertificate && !sandbox && !request.clientCertificateVerified && requiresClientCertificates {
                    return SimulatorResponse(status: 400, body: Array("No required SSL certificate was sent".utf8),
                                             contentType: "text/html")
                }
                response = try answer(endpoint, sandbox: sandbox, request, now: now, book: &book)
            } catch let failure as ProtocolFailure {
                response = SimulatorResponse(body: protocolFailureBody(failure))
            } catch {
                preconditionFailure("unexpected simulator error \(error)")
            }
            return inject(faults, into: response, book: &book)
        }
    }

    /// Whether `/secapi/` requests must present a verified client certificate. The HTTP front turns
    /// this on when it serves TLS with a client CA.
    public var requiresClientCertificates: Bool {
        get { clientCertificates.load(ordering: .relaxed) }
    }
    public func setRequiresClientCertificates(_ value: Bool) { clientCertificates.store(value, ordering: .relaxed) }
    private let clientCertificates = Atomic<Bool>(false)

    /// Parses, authenticates and dispatches one request; business failures become signed
    /// `result_code=FAIL` answers, protocol failures propagate.
    private func answer(_ endpoint: Endpoint, sandbox: Bool, _ request: SimulatorRequest, now: Date,
                        book: inout OrderBook) throws(ProtocolFailure) -> SimulatorResponse {
        guard request.method == "POST" else { throw .postRequired }
        guard !request.body.isEmpty else { throw .emptyBody }
        let fields: Fields
        do {
            fields = try FlatXML.decode(request.body)
        } catch let error {
            throw error == .invalidUTF8 ? .notUTF8 : .xmlFormat
        }
        guard fields["mch_id"] == configuration.mchID else { throw .mchID }
        if endpoint == .getSignKey {
            // The sandbox key request is always MD5 with the production key.
            guard (try? signer.verify(fields, expected: .md5)) != nil else { throw .signature }
            return SimulatorResponse(body: encode([
                "return_code": "SUCCESS", "return_msg": "ok", "mch_id": configuration.mchID,
                "sandbox_signkey": sandboxKey,
            ]))
        }
        // Sandbox calls are signed with the key getsignkey handed out, and only with MD5.
        let signer = sandbox ? Signer(key: APIKey(sandboxKey)) : self.signer
        let signType: SignType
        if let declared = fields.nonEmpty("sign_type") {
            guard let type = SignType(rawValue: declared) else { throw .signType }
            signType = type
        } else {
            signType = .md5
        }
        if sandbox && signType != .md5 { throw .signType }
        guard (try? signer.verify(fields, expected: signType)) != nil else { throw .signature }
        book.noteNonce(fields["nonce_str"] ?? "")
        book.log(endpoint: endpoint, fields: fields, at: now)

        var reply: Fields
        do {
            guard fields["appid"] == configuration.appID else {
                throw BusinessFailure(code: "APPID_MCHID_NOT_MATCH", description: "appid和mch_id不匹配")
            }
            guard let nonce = fields.nonEmpty("nonce_str"), nonce.utf8.count <= 32 else {
                throw BusinessFailure.lackParams("nonce_str")
            }
            switch endpoint {
            case .unifiedOrder: reply = try unifiedOrder(fields, signType: signType, now: now, book: &book)
            case .orderQuery: reply = try orderQuery(fields, now: now, book: &book)
            case .closeOrder: reply = try closeOrder(fields, now: now, book: &book)
            case .refund: reply = try refund(fields, now: now, book: &book)
            case .refundQuery: reply = try refundQuery(fields, now: now, book: &book)
            case .downloadBill:
                return try downloadBill(fields, now: now, book: &book)
            case .getSignKey: preconditionFailure("answered above")
            }
            reply = successEnvelope(result: "SUCCESS", book: &book) + reply
        } catch let failure as BusinessFailure {
            reply = successEnvelope(result: "FAIL", book: &book)
            reply["err_code"] = failure.code
            reply["err_code_des"] = failure.description
        } catch let failure as ProtocolFailure {
            throw failure
        } catch {
            preconditionFailure("unexpected simulator error \(error)")
        }
        reply["sign"] = signer.signature(for: reply, type: signType)
        return SimulatorResponse(body: encode(reply))
    }

    private func successEnvelope(result: String, book: inout OrderBook) -> Fields {
        [
            "return_code": "SUCCESS", "return_msg": "OK", "appid": configuration.appID,
            "mch_id": configuration.mchID, "nonce_str": book.random.alphanumerics(16), "result_code": result,
        ]
    }

    /// The sandbox key `getsignkey` hands out: derived from the production key, so it is stable.
    var sandboxKey: String {
        Signer(key: configuration.key).signature(for: ["sandbox": configuration.mchID], type: .md5)
    }

    func encode(_ fields: Fields) -> [UInt8] {
        // Every value the simulator writes is plain text; a failure here is a simulator bug.
        do { return try FlatXML.encode(fields) } catch { preconditionFailure("simulator wrote unencodable XML: \(error)") }
    }

    private func protocolFailureBody(_ failure: ProtocolFailure) -> [UInt8] {
        encode(["return_code": "FAIL", "return_msg": failure.message])
    }
}

extension Fields {
    /// The fields of `lhs` followed by those of `rhs` (rhs wins on a clash).
    static func + (lhs: Fields, rhs: Fields) -> Fields {
        var result = lhs
        for field in rhs { result[field.name] = field.value }
        return result
    }
}

/// The API paths the simulator serves.
enum Endpoint: String, Sendable, CaseIterable {
    case unifiedOrder = "/pay/unifiedorder"
    case orderQuery = "/pay/orderquery"
    case closeOrder = "/pay/closeorder"
    case refund = "/secapi/pay/refund"
    case refundQuery = "/pay/refundquery"
    case downloadBill = "/pay/downloadbill"
    case getSignKey = "/sandboxnew/pay/getsignkey"

    /// The endpoint for a path, and whether it is the sandbox's (`/sandboxnew/pay/orderquery`; the
    /// sandbox refund is `/sandboxnew/pay/refund`, without `secapi`).
    static func route(_ path: String) -> (Endpoint, sandbox: Bool)? {
        if let endpoint = Endpoint(rawValue: path) { return (endpoint, endpoint == .getSignKey) }
        guard path.hasPrefix("/sandboxnew/") else { return nil }
        let rest = String(path.dropFirst("/sandboxnew".count))
        if rest == "/pay/refund" { return (.refund, true) }
        guard let endpoint = Endpoint(rawValue: rest), endpoint != .refund else { return nil }
        return (endpoint, true)
    }

    var needsClientCertificate: Bool { self == .refund }
}
