// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
@_exported import SimulatorKit
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
    let books: Mutex<Books>
    let notifies: NotifyScheduler
    /// v3's side (nil without a v3 configuration) and its notifies: any 2xx acknowledges one, and
    /// each attempt is signed as it is sent.
    let v3: V3SimulatorKeys?
    let v3Notifies: NotifyScheduler

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
        books = Mutex(Books(seed: configuration.seed))
        notifies = NotifyScheduler(clock: clock, sender: notifySender,
                                   retryIntervals: configuration.notifyRetryIntervals,
                                   timeout: configuration.notifyTimeout) { reply in
            (try? FlatXML.decode(reply))?["return_code"] == "SUCCESS"
        }
        let v3 = configuration.v3.map { V3SimulatorKeys(configuration: $0, seed: configuration.seed, now: clock.now()) }
        self.v3 = v3
        v3Notifies = NotifyScheduler(clock: clock, sender: notifySender, retryIntervals: configuration.notifyRetryIntervals,
                                     timeout: configuration.notifyTimeout, seed: 0x5EED ^ 0x76_33,
                                     headers: { body in v3?.notifyHeaders(for: body, now: Date()) ?? [:] },
                                     acknowledges: { _ in true })
    }

    /// Starts delivering notifies (and completing refunds, with `refundCompletionDelay`). Runs
    /// until the task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.notifies.run() }
            if v3 != nil { group.addTask { await self.v3Notifies.run() } }
            if configuration.refundCompletionDelay != nil {
                group.addTask { await self.completeRefundsWhenDue() }
            }
        }
    }

    /// The fault plan now in force.
    public var faults: FaultPlan {
        get { books.withLock { $0.production.faults } }
    }

    /// Replaces the fault plan.
    public func setFaults(_ plan: FaultPlan) {
        books.withLock { books in
            books.production.faults = plan
            books.sandbox.faults = plan
        }
    }

    // MARK: - The API

    /// Answers one merchant API request.
    public func handle(_ request: SimulatorRequest) -> SimulatorResponse {
        let now = clock.now()
        guard let (api, sandbox) = WeChatPayAPI.route(path: request.path) else {
            books.withLock { $0.production.counters.requests[request.path, default: 0] += 1 }
            return SimulatorResponse(status: 404, body: Array("Not Found".utf8), contentType: "text/plain")
        }
        // The sandbox keeps its own orders: its data never shows in production answers or bills.
        return books.withLock { books in
            sandbox ? answer(request, api, sandbox: true, now: now, book: &books.sandbox)
                : answer(request, api, sandbox: false, now: now, book: &books.production)
        }
    }

    private func answer(_ request: SimulatorRequest, _ api: WeChatPayAPI, sandbox: Bool, now: Date,
                        book: inout OrderBook) -> SimulatorResponse {
        book.counters.requests[request.path, default: 0] += 1
        if requiresClientCertificates && request.clientCertificateRejected {
            return SimulatorResponse(status: 400, body: Array("The SSL certificate error".utf8), contentType: "text/html")
        }
        if api.needsClientCertificate(sandbox: sandbox) && requiresClientCertificates
            && !request.clientCertificateVerified {
            // What WeChat's front end answers a refund without the merchant's certificate.
            return SimulatorResponse(status: 400, body: Array("No required SSL certificate was sent".utf8),
                                     contentType: "text/html")
        }
        let response: SimulatorResponse
        do throws(ProtocolFailure) {
            response = try answer(api, sandbox: sandbox, request, now: now, book: &book)
        } catch {
            response = SimulatorResponse(body: encode(ResponseEnvelope.protocolFailure(message: error.message)))
        }
        return inject(book.faults.faults(for: request.path), into: response, path: request.path, book: &book)
    }

    /// Whether `/secapi/` requests must present a verified client certificate. The HTTP front turns
    /// this on when it serves TLS with a client CA.
    public var requiresClientCertificates: Bool { clientCertificates.load(ordering: .relaxed) }
    public func setRequiresClientCertificates(_ value: Bool) { clientCertificates.store(value, ordering: .relaxed) }
    private let clientCertificates = Atomic<Bool>(false)

    /// Parses, authenticates and dispatches one request. What fails before the signature is
    /// verified is a protocol failure (unsigned `return_code=FAIL`); what fails after is a signed
    /// business failure (`result_code=FAIL` with `err_code`).
    private func answer(_ api: WeChatPayAPI, sandbox: Bool, _ request: SimulatorRequest, now: Date,
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
        let envelope: RequestEnvelope
        do {
            envelope = try RequestEnvelope(fields: fields, api: api)
        } catch {
            throw ProtocolFailure(message: error.isMissingField ? "缺少参数\(error.fieldName)" : "\(error.fieldName)参数格式错误")
        }
        // The sandbox signs with the key getsignkey handed out (getsignkey itself with the
        // production key), and only with MD5.
        let key = sandbox && api != .getSignKey ? APIKey(sandboxKey) : configuration.key
        if sandbox && envelope.signType != .md5 { throw .signType }
        guard (try? Signer(key: key).verify(fields, expected: envelope.signType)) != nil else { throw .signature }
        book.noteNonce(envelope.nonceStr)
        book.log(path: api.path(sandbox: sandbox), fields: fields, at: now)
        if api == .refund { book.noteRefundRequest(fields) }

        if api == .getSignKey {
            return SimulatorResponse(body: encode(ResponseEnvelope.unsignedSuccess(
                ["mch_id": configuration.mchID, "sandbox_signkey": sandboxKey])))
        }
        let signer = Signer(key: key)
        let nonce = book.random.alphanumerics(16)
        do throws(BusinessFailure) {
            guard let appID = envelope.appID, configuration.binds(appID) else {
                throw BusinessFailure(code: "APPID_MCHID_NOT_MATCH", description: "appid和mch_id不匹配")
            }
            let business: Fields
            switch api {
            case .unifiedOrder:
                business = try unifiedOrder(parse(fields, api), appID: appID, signType: envelope.signType, now: now, book: &book)
            case .orderQuery: business = try orderQuery(parse(fields, api), now: now, book: &book)
            case .closeOrder: business = try closeOrder(parse(fields, api), now: now, book: &book)
            case .refund: business = try refund(parse(fields, api), now: now, book: &book)
            case .refundQuery: business = try refundQuery(parse(fields, api), now: now, book: &book)
            case .downloadBill:
                // downloadbill answers every failure at the protocol level (return_code=FAIL).
                guard let request: DownloadBillRequest = try? parse(fields, api) else {
                    let missing = fields.nonEmpty("bill_date") == nil
                    return SimulatorResponse(body: encode(ResponseEnvelope.protocolFailure(
                        message: missing ? "missing parameter" : "data format error")))
                }
                return try downloadBill(request, now: now, book: &book)
            case .getSignKey: preconditionFailure("answered above")
            }
            return SimulatorResponse(body: encode(ResponseEnvelope.success(
                business, appID: envelope.appID ?? configuration.appID, mchID: configuration.mchID, nonceStr: nonce,
                signer: signer, signType: envelope.signType)))
        } catch {
            book.counters.businessFailures[error.code, default: 0] += 1
            return SimulatorResponse(body: encode(ResponseEnvelope.businessFailure(
                WeChatPayErrorCode(rawValue: error.code), description: error.description,
                appID: envelope.appID ?? configuration.appID, mchID: configuration.mchID, nonceStr: nonce,
                signer: signer, signType: envelope.signType)))
        }
    }

    /// The typed request, validated by the same rules the client applies before sending; a
    /// missing field is LACK_PARAMS, an invalid one INVALID_REQUEST (PARAM_ERROR for refunds, as
    /// WeChat's refund pages name it).
    private func parse<Request: WeChatPayRequest>(_ fields: Fields, _ api: WeChatPayAPI) throws(BusinessFailure) -> Request {
        do {
            return try Request(fields: fields)
        } catch {
            if error.isMissingField { throw .lackParams(error.fieldName) }
            let description = "\(error.fieldName)参数格式错误"
            throw api == .refund || api == .refundQuery ? .param(description) : .invalid(description)
        }
    }

    /// The sandbox key `getsignkey` hands out: derived from the production key, so it is stable.
    var sandboxKey: String {
        Signer(key: configuration.key).signature(for: ["sandbox": configuration.mchID], type: .md5)
    }

    func encode(_ fields: Fields) -> [UInt8] {
        // Every value the simulator writes is plain text; a failure here is a simulator bug.
        do { return try FlatXML.encode(fields) } catch { preconditionFailure("simulator wrote unencodable XML: \(error)") }
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
