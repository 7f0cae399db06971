// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// A flow of the order model (create, query, close, notify, support): what it reaches through its
/// `GatewayContext`, by the names the flows use.
protocol OrderFlow: Sendable {
    var context: GatewayContext { get }
}

extension OrderFlow {
    var configuration: GatewayConfiguration { context.configuration }
    var store: any GatewayStore { context.store }
    var metrics: MetricsRegistry { context.metrics }
    var instruments: OrderInstruments { context.instruments }
    var logger: Logger { context.logger }
    var signals: OrderSignals { context.signals }
    var settlement: Settlement { context.settlement }
    var upstream: Upstream { context.upstream }
    var userLimits: UserLimits { context.userLimits }
    func now() -> Date { context.now() }

    /// `GatewayContext.storage`: a storage failure as an API error.
    func storage<T>(_ operation: () async throws(StorageError) -> T) async throws(APIError) -> T {
        try await context.storage(operation)
    }

    func apiError(for error: StorageError) -> APIError { context.apiError(for: error) }
    func view(_ order: OrderRecord) async throws(StorageError) -> OrderView { try await context.view(order) }
    func viewJSON(_ order: OrderRecord) async throws(APIError) -> [UInt8] { try await context.viewJSON(order) }
}
