// SPDX-License-Identifier: Apache-2.0
import Foundation
import SimulatorHarnessSupport
import Synchronization
import WeChatPay
@testable import WeChatPaySimulator

/// A simulator on a frozen clock (only `advance` moves it), driven with hand-signed requests, so
/// every test reads like the documentation's request and response tables.
struct SimulatorHarness: NotifyLoopHarness {
    static let appID = "wxd930ea5d5a258f4f"
    static let mchID = "10000100"
    static let key = APIKey("192006250b4c09247ec02edce69f6a2d")

    let clock: ScaledClock
    let simulator: WeChatPaySimulator
    let received: NotifyInbox
    let signer = Signer(key: SimulatorHarness.key)

    init(start: Date = Date(timeIntervalSince1970: 1_764_460_800), seed: UInt64 = 7,
         configuration: (inout SimulatorConfiguration) -> Void = { _ in },
         reply: @escaping @Sendable (Fields) -> [UInt8]? = { _ in Array("<xml><return_code>SUCCESS</return_code></xml>".utf8) }) {
        clock = ScaledClock(start: start, scale: 0)
        var config = SimulatorConfiguration(appID: Self.appID, mchID: Self.mchID, key: Self.key, seed: seed)
        configuration(&config)
        let inbox = NotifyInbox()
        received = inbox
        simulator = WeChatPaySimulator(configuration: config, clock: clock, notifySender: ClosureNotifySender { body, _ in
            let fields = (try? FlatXML.decode(body)) ?? Fields()
            inbox.append(fields)
            return reply(fields)
        })
    }

    /// Signs `fields` (adding appid, mch_id, nonce_str and sign_type) and posts them to `path`.
    func call(_ path: String, _ fields: Fields, signType: SignType = .md5, nonce: String? = nil,
              mutate: (inout Fields) -> Void = { _ in }) -> Fields {
        var request: Fields = ["appid": Self.appID, "mch_id": Self.mchID,
                               "nonce_str": nonce ?? UUID().uuidString.replacingOccurrences(of: "-", with: "")]
        if signType != .md5 { request["sign_type"] = signType.rawValue }
        for field in fields { request[field.name] = field.value }
        request["sign"] = signer.signature(for: request, type: signType)
        mutate(&request)
        return decode(simulator.handle(SimulatorRequest(path: path, body: try! FlatXML.encode(request))))
    }

    func decode(_ response: SimulatorResponse) -> Fields {
        (try? FlatXML.decode(response.body)) ?? ["undecodable": String(response.status)]
    }

    static func order(_ outTradeNo: String, fee: Int = 100, body: String = "课程-Swift 入门",
                      extra: Fields = [:]) -> Fields {
        var fields: Fields = [
            "body": body, "out_trade_no": outTradeNo, "total_fee": String(fee), "spbill_create_ip": "203.0.113.7",
            "notify_url": "https://merchant.example/wechat/notify", "trade_type": "APP",
        ]
        for field in extra { fields[field.name] = field.value }
        return fields
    }

    var notifyLoop: @Sendable () async -> Void { { [simulator] in await simulator.run() } }
}

/// The notifies the fake merchant received, in arrival order.
final class NotifyInbox: Sendable {
    private let items = Mutex<[Fields]>([])
    func append(_ fields: Fields) { items.withLock { $0.append(fields) } }
    var all: [Fields] { items.withLock { $0 } }
    var count: Int { items.withLock { $0.count } }
}
