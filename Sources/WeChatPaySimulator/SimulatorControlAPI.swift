// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import JSON
import SimulatorKit
import WeChatPayV3

/// The control panel: what happens outside the merchant's servers, as JSON over HTTP.
///
/// | method | path | does |
/// |---|---|---|
/// | POST | /simulator/orders/{out_trade_no}/pay | the user pays (body: optional `{"openid":…,"afterClose":true}`) |
/// | POST | /simulator/orders/{out_trade_no}/fail | the payment fails (PAYERROR) |
/// | GET | /simulator/orders/{out_trade_no} | the order as WeChat holds it |
/// | POST | /simulator/refunds/{out_refund_no}/complete | the refund ends (body: `{"status":"SUCCESS"\|"REFUNDCLOSE"\|"CHANGE"}`) |
/// | GET, PUT | /simulator/faults | the fault plan |
/// | POST | /simulator/clock/advance | moves simulated time (body: `{"seconds":N}`) |
/// | GET | /simulator/stats | counters |
/// | GET | /simulator/notifies | every notify attempt |
/// | POST | /simulator/scan | a NATIVE order paid by scanning its QR code (body: `{"code_url":"weixin://…"}`) |
/// | POST | /simulator/mweb | a mobile browser opens an MWEB order's `mweb_url` from the page `referer` (body: `{"mweb_url","referer","pay"?}`) |
/// | GET | /simulator/mweb?prepay_id=…&package=… | WeChat's H5 page for a real browser, its `Referer` checked (SimulatorMWEBPage.swift, routed beside this API) |
/// | GET | /simulator/orderqueries | when orderquery asked about each order (seconds since 1970) |
/// | GET | /simulator/refundrequests | per out_refund_no: refund requests received and distinct parameter sets |
/// | POST | /simulator/v3/rotate | v3: issues a new platform certificate, which signs from now on (the old one stays) |
/// | PUT | /simulator/v3/notify-serial | v3: which key signs notifies (body: `{"serial":"PUB_KEY_ID_…"}` or a certificate's serial) |
/// | GET | /simulator/v3/certificates | v3: the platform certificates (PEM) and the serial notifies are signed with |
public struct SimulatorControlAPI: Sendable {
    public let simulator: WeChatPaySimulator

    public init(simulator: WeChatPaySimulator) {
        self.simulator = simulator
    }

    /// Answers one control request: an HTTP status and a JSON body.
    public func handle(method: String, path: String, body: [UInt8]) -> (status: Int, body: [UInt8]) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard parts.first == "simulator" else { return error(404, "not_found", "no such control route") }
        let route = Array(parts.dropFirst())
        switch (method, route.count, route.first, route.last) {
        case ("POST", 3, "orders", "pay"):
            let options = try? JSONDecoder().decode(PayBody.self, from: Data(body))
            return perform { () throws(SimulatorControlError) in
                try simulator.pay(outTradeNo: route[1], openid: options?.openid, afterClose: options?.afterClose ?? false)
            }
        case ("POST", 1, "scan", _):
            // A user scans a NATIVE order's QR code with WeChat and pays it.
            guard let scan = try? JSONDecoder().decode(ScanBody.self, from: Data(body)) else {
                return error(400, "bad_request", "the body must be {\"code_url\":\"weixin://wxpay/bizpayurl?pr=…\"}")
            }
            return perform { () throws(SimulatorControlError) in try simulator.scan(codeURL: scan.code_url) }
        case ("POST", 1, "mweb", _):
            // A mobile browser opens WeChat's H5 page from a page of the merchant's site.
            guard let open = try? JSONDecoder().decode(MWEBBody.self, from: Data(body)) else {
                return error(400, "bad_request", "the body must be {\"mweb_url\":\"https://…\",\"referer\":\"https://…\",\"pay\":true}")
            }
            do {
                let (order, redirect) = try simulator.openMWEB(open.mweb_url, referer: open.referer, pay: open.pay ?? false)
                return ok(MWEBAnswer(order: order, redirect_url: redirect))
            } catch {
                let status = switch error.code {
                case .mwebURLNotFound, .orderNotFound: 404
                case .refererNotAllowed: 403
                default: 409
                }
                return self.error(status, error.code.rawValue, error.description)
            }
        case ("POST", 3, "orders", "fail"):
            return perform { () throws(SimulatorControlError) in try simulator.failPayment(outTradeNo: route[1]) }
        case ("GET", 2, "orders", _):
            guard let order = simulator.order(route[1]) else { return error(404, "order_not_found", "no such order") }
            return ok(order)
        case ("POST", 3, "refunds", "complete"):
            let status = (try? JSONDecoder().decode(RefundBody.self, from: Data(body)))?.status ?? "SUCCESS"
            return perform { () throws(SimulatorControlError) in
                try simulator.completeRefund(outRefundNo: route[1], status: status)
            }
        case ("GET", 1, "faults", _):
            return ok(simulator.faults)
        case ("PUT", 1, "faults", _):
            let plan: FaultPlan
            do {
                // The strict reader first: a member named twice is refused, where JSONDecoder would
                // keep one of the two silently.
                _ = try JSONValue.parse(body)
                plan = try JSONDecoder().decode(FaultPlan.self, from: Data(body))
            } catch let error as JSONError {
                return self.error(400, "invalid_request", "the body must be a fault plan: \(error)")
            } catch {
                return self.error(400, "invalid_request", "the body must be a fault plan: \(ControlBody.problem(error))")
            }
            simulator.apply(plan)
            return ok(plan)
        case ("POST", 2, "clock", "advance"):
            switch ClockAdvance(body, clock: simulator.clock) {
            case .advanced(let now): return ok(["now": ISO8601DateFormatter().string(from: now)])
            case .notAdjustable: return error(409, "clock_not_adjustable", "this simulator runs on a clock that cannot be advanced")
            case .invalidSeconds: return error(400, "invalid_request", "seconds must be between 0 and 34560000")
            }
        case ("GET", 1, "stats", _):
            return ok(simulator.counters)
        case ("GET", 1, "refundrequests", _):
            return ok(simulator.refundRequests.mapValues {
                RefundRequestsJSON(requests: $0.requests, parameterSets: $0.parameterSets.count)
            })
        case ("GET", 1, "orderqueries", _):
            return ok(simulator.orderQueryTimes.mapValues { $0.map(\.timeIntervalSince1970) })
        case ("GET", 1, "notifies", _):
            return ok(simulator.notifyHistory.map {
                NotifyAttemptJSON(kind: $0.kind.rawValue, reference: $0.reference, number: $0.number,
                                  at: ISO8601DateFormatter().string(from: $0.at), acknowledged: $0.acknowledged,
                                  dropped: $0.dropped, copies: $0.copies)
            })
        case ("POST", 2, "v3", "rotate"):
            guard let v3 = simulator.v3, v3.configuration.platformCertificates else {
                return error(409, "no_platform_certificates", "this simulator serves no platform certificates")
            }
            return ok(["serial": v3.rotate(now: simulator.clock.now())])
        case ("PUT", 2, "v3", "notify-serial"):
            guard let v3 = simulator.v3 else { return error(409, "no_v3", "this simulator does not speak v3") }
            guard let serial = (try? JSONDecoder().decode([String: String].self, from: Data(body)))?["serial"],
                  v3.setNotifySerial(serial) else {
                return error(400, "invalid_request", "serial must name the public key or a platform certificate")
            }
            return ok(["serial": serial])
        case ("GET", 2, "v3", "certificates"):
            guard let v3 = simulator.v3 else { return error(409, "no_v3", "this simulator does not speak v3") }
            return ok(V3CertificatesJSON(certificates: v3.platformCertificates.map { ["serial": $0.serialNumber, "pem": $0.certificate.pem] },
                                         notifySerial: v3.notifySerial))
        default:
            return error(404, "not_found", "no such control route")
        }
    }

    private struct V3CertificatesJSON: Encodable { var certificates: [[String: String]]; var notifySerial: String? }

    private struct PayBody: Decodable { var openid: String?; var afterClose: Bool? }
    private struct ScanBody: Decodable { var code_url: String }
    private struct MWEBBody: Decodable { var mweb_url: String; var referer: String?; var pay: Bool? }
    private struct MWEBAnswer: Encodable { var order: SimulatedOrderSnapshot; var redirect_url: String? }
    private struct RefundBody: Decodable { var status: String? }
    private struct RefundRequestsJSON: Encodable { var requests: Int, parameterSets: Int }
    private struct NotifyAttemptJSON: Encodable {
        var kind: String, reference: String, number: Int, at: String, acknowledged: Bool, dropped: Bool, copies: Int
    }

    private func perform(_ action: () throws(SimulatorControlError) -> SimulatedOrderSnapshot) -> (status: Int, body: [UInt8]) {
        do {
            return ok(try action())
        } catch {
            let status = [.orderNotFound, .refundNotFound, .codeURLNotFound].contains(error.code) ? 404 : 409
            return self.error(status, error.code.rawValue, error.description)
        }
    }

    private func ok(_ value: some Encodable) -> (status: Int, body: [UInt8]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (200, (try? Array(encoder.encode(value))) ?? Array("{}".utf8))
    }

    private func error(_ status: Int, _ code: String, _ message: String) -> (status: Int, body: [UInt8]) {
        let body = (try? JSONSerialization.data(withJSONObject: ["error": ["code": code, "message": message]],
                                                options: [.sortedKeys])) ?? Data()
        return (status, Array(body))
    }
}
