// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import WeChatPaySimulator

extension ServeCommand {
    /// Demo mode's lines for the Android app: a 24-hour app token for the demo user, signed with
    /// the first app token secret, and the catalog's active products.
    static func appBanner(_ configuration: GatewayConfiguration, base: String) -> String {
        guard let secret = configuration.app.tokenSecrets.first else { return "" }
        let user = AppConfiguration.demoUser
        let token = AppTokenMinter(secret: secret).token(subject: user, now: Date(), ttl: AppTokenVerifier.maximumLifetime)
        let products = configuration.app.catalog.products.filter(\.active)
            .map { "\($0.id) (\($0.amount) fen)" }.joined(separator: ", ")
        let first = configuration.app.catalog.products.first(where: \.active)?.id ?? "swift-101"
        let apps = configuration.apps.all.map { "\($0.name)=\($0.appID):\($0.kind.rawValue)" }.joined(separator: ", ")
        let mini = configuration.apps.all.first { $0.kind == .miniprogram }
        let openID = mini.map { SimulatorConfiguration.openID(of: user, under: $0.appID) }
        let jsapi = mini.flatMap { app in openID.map { "\n  a JSAPI order names its app and the payer's openid under it, e.g. "
            + #""app":"\#(app.name)","openid":"\#($0)""# + " (the simulator's openid of \(user) under \(app.appID))" } } ?? ""
        return """
            the Android app, as user \(user) (token valid 24 h); catalog: \(products.isEmpty ? "empty" : products)
            WeChat apps (pick one with "app" in a create; default android): \(apps)\(jsapi)
            app token: \(token)
              A='Authorization: Bearer \(token)'
              curl -s \(base)/v1/catalog -H "$A"
              curl -s -X POST \(base)/v1/orders -H "$A" -d '{"product_id":"\(first)","out_trade_no":"demo-app-0001"}'
              curl -s '\(base)/v1/orders/demo-app-0001?wait=10' -H "$A"
              curl -s \(base)/v1/me/orders -H "$A"

            """
    }
}
