// SPDX-License-Identifier: Apache-2.0
import HTTP
import WeChatPay

/// The refund routes. Handlers only translate HTTP to `RefundService`, the flow the support
/// console calls through its own door too; without one attached, refunds answer 503.
extension GatewayAPI {
    static let refundBodyLimit = 4 * 1024

    func registerRefunds(in router: inout HTTPRouter) {
        router.add(.post, "/v1/orders/{out_trade_no}/refunds", options: Self.jsonRoute(maxBodyBytes: Self.refundBodyLimit)) {
            request in
            try await self.handle(request, scopes: [.client]) {
                let refunds = self.services.refunds
                let input = try RefundInput(json: request.body)
                let answer = try await refunds.request(input, outTradeNo: request.pathParameters["out_trade_no"] ?? "")
                return Self.json(answer.json, status: answer.created ? 201 : 200)
            }
        }
        router.add(.get, "/v1/refunds/{out_refund_no}", options: HTTPRouteOptions(cancelledWhenClientLeaves: true)) { request in
            try await self.handle(request, scopes: [.client, .support]) {
                let refunds = self.services.refunds
                let wait = try Self.wait(request.query)
                return Self.json(try await refunds.refund(request.pathParameters["out_refund_no"] ?? "", wait: wait))
            }
        }
        router.add(.post, "/wechat/refund-notify", options: HTTPRouteOptions(maxBodyBytes: Self.notifyBodyLimit)) { request in
            // Without a refund service no refund exists to settle: refused like any unknown refund.
            let reply = await self.services.refunds.handleNotify(request.body)
            return HTTPServerResponse(status: 200, headers: ["Content-Type": "text/xml; charset=utf-8"], body: reply)
        }
        router.add(.post, "/wechat/v3/refund-notify", options: HTTPRouteOptions(maxBodyBytes: Self.notifyBodyLimit)) { request in
            Self.v3Reply(await self.services.refunds.handleV3Notify(headers: Self.headerFields(request), body: request.body))
        }
    }
}
