// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore

extension ServeCommand {
    /// Binds the database to this gateway's owner (demo mode, or the configured merchant) and the
    /// catalog's products to what they grant (`BindingStore`); the refusal to print and the exit
    /// status when either was bound otherwise (or the database failed), or nil. A database restored
    /// from another merchant's or from demo mode's backup would otherwise announce payments nobody
    /// made to this business as paid.
    static func bindDatabase(_ configuration: GatewayConfiguration, context: GatewayContext) async
        -> (message: String, status: Int32)?
    {
        let command = configuration.demo ? "serve --demo" : "serve"
        let wanted = DatabaseOwner(demo: configuration.demo, mchID: configuration.mchID)
        let now = context.now()
        do {
            let owner = try await context.store.bindOwner(wanted, at: now)
            if let refusal = ownerRefusal(bound: owner, wanted: wanted) {
                return (command + ": " + refusal, ExitStatus.configuration)
            }
            if let refusal = try await context.catalog.catalog.bind(in: context.store, at: now) {
                return (command + ": GATEWAY_CATALOG: " + refusal.message, ExitStatus.configuration)
            }
            return nil
        } catch {
            return (command + ": the database's owner and catalog terms could not be checked: \(error)", ExitStatus.database)
        }
    }

    /// Why a database bound to `bound` is not this gateway's (`wanted`), or nil when it is.
    static func ownerRefusal(bound: DatabaseOwner, wanted: DatabaseOwner) -> String? {
        switch (bound.demo, wanted.demo) {
        case (true, true):
            return nil
        case (true, false):
            return "GATEWAY_DATABASE is demo mode's database: its payments were made in the simulator, and a production "
                + "gateway would announce them (order.paid) as real. Give production a database of its own"
        case (false, true):
            return "GATEWAY_DATABASE is merchant \(bound.mchID)'s production database: demo mode would serve its orders to "
                + "its published tokens and settle them with its simulator. Give demo mode a database of its own"
        case (false, false):
            guard bound.mchID != wanted.mchID else { return nil }
            return "GATEWAY_DATABASE holds merchant \(bound.mchID)'s orders, and WXPAY_MCH_ID is \(wanted.mchID): a "
                + "database keeps one merchant's orders (WeChat Pay knows them under that merchant only). Use merchant "
                + "\(wanted.mchID)'s database, or a new one"
        }
    }
}
