// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Observability
import StorageCore
import StoreTestSupport
import Synchronization
import WeChatPay
import WeChatPaySimulator

/// Breaks the cycle simulator → notify → services → transport → simulator.
final class NotifyTarget: Sendable {
    private let composed = Mutex<GatewayServices?>(nil)
    func set(_ value: GatewayServices) { composed.withLock { $0 = value } }
    var services: GatewayServices? { composed.withLock { $0 } }
    func deliver(_ body: [UInt8]) async -> [UInt8]? {
        guard let services else { return nil }
        return await services.notifies.handleNotify(body)
    }
}

extension Dictionary where Key == String, Value == Any {
    func string(_ key: String) -> String? { self[key] as? String }
    func object(_ key: String) -> [String: Any]? { self[key] as? [String: Any] }
}
