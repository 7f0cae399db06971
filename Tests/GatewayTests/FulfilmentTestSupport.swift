// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import HTTPClientTestSupport
import Synchronization

/// A business backend's webhook on 127.0.0.1 port 0: it verifies every delivery's signature, answers
/// what `status` says, and counts the deliveries it acknowledged per event id (its dedupe key).
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        var eventID: String
        var status: Int
        var signatureValid: Bool
        var json: [String: any Sendable]
        /// The body as delivered.
        var body: [UInt8] = []
    }

    static let secret = "whsec-test-0123456789abcdef"

    private let state = Mutex<(answer: Int, deliveries: [Delivery])>((200, []))
    private let server: HTTPServer
    private let now: @Sendable () -> Date
    let url: String

    private init(server: HTTPServer, url: String, state: Int, now: @escaping @Sendable () -> Date) {
        self.server = server
        self.now = now
        self.url = url
        self.state.withLock { $0.answer = state }
    }

    /// - Parameter now: the receiver's clock for the timestamp check (the sender's, when a test moves it).
    static func start(answering status: Int = 200, now: @escaping @Sendable () -> Date = { Date() }) async throws
        -> WebhookReceiver
    {
        let box = ReceiverBox()
        var router = HTTPRouter()
        router.add(.post, "/hooks/wxpay") { request in
            box.receiver?.receive(request) ?? HTTPServerResponse(status: 503)
        }
        let server = HTTPServer(router: router, configuration: .patient)
        let address = try await server.start()
        let receiver = WebhookReceiver(server: server, url: "http://127.0.0.1:\(address.port)/hooks/wxpay", state: status, now: now)
        box.set(receiver)
        return receiver
    }

    func stop() async { await server.shutdown(gracePeriod: .seconds(2)) }

    /// From now on answers `status` (500 while "down", 200 once back).
    func answer(_ status: Int) { state.withLock { $0.answer = status } }

    var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    /// Acknowledged (2xx) deliveries per event id.
    var acknowledged: [String: Int] {
        var counts: [String: Int] = [:]
        for delivery in deliveries where (200..<300).contains(delivery.status) { counts[delivery.eventID, default: 0] += 1 }
        return counts
    }

    private func receive(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let valid = (try? WebhookSignature.verify(header: request.headers["Gateway-Signature"], payload: request.body,
                                                  secrets: [Self.secret], now: now())) != nil
        let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
        let id = object["id"] as? String ?? ""
        var json: [String: any Sendable] = [:]
        json["type"] = object["type"] as? String
        json["out_trade_no"] = (object["data"] as? [String: Any])?["out_trade_no"] as? String
        let status = state.withLock { state -> Int in
            let status = valid ? state.answer : 400
            state.deliveries.append(Delivery(eventID: id, status: status, signatureValid: valid, json: json, body: request.body))
            return status
        }
        return HTTPServerResponse(status: status, body: Array(#"{"ok":true}"#.utf8))
    }
}

private final class ReceiverBox: Sendable {
    private let value = Mutex<WebhookReceiver?>(nil)
    var receiver: WebhookReceiver? { value.withLock { $0 } }
    func set(_ receiver: WebhookReceiver) { value.withLock { $0 = receiver } }
}

/// A clock tests move by hand.
final class ManualClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date = Date()) { value = Mutex(start) }
    func now() -> Date { value.withLock { $0 } }
    func advance(by seconds: TimeInterval) { value.withLock { $0 += seconds } }
}
