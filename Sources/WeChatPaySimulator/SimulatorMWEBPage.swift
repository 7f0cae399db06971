// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP

/// WeChat's H5 payment page (`checkmweb`), for a real browser: `GET /simulator/mweb` with the query
/// an order's `mweb_url` carries (`prepay_id`, `package`, `redirect_url`), so the page is reached
/// from `mweb_url` by putting the simulator's address in place of
/// `https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb` (the simulator keeps answering WeChat's
/// own address in `mweb_url`: the gateway and its clients see what production sends, and the
/// simulator does not know the address it is reached at, behind the demo's listener or a proxy).
///
/// The page holds the browser's `Referer` to the host of the site the order declared, as WeChat
/// does, and refuses (403) a page opened without one or from elsewhere; otherwise the user pays
/// (as a user of the order's app) and the browser goes to `redirect_url` (302) when one is
/// appended, else it is told the payment is done.
enum SimulatorMWEBPage {
    /// WeChat's words when the Referer is missing or not the H5 domain.
    static let refusal = "商家参数格式有误，请联系商家解决"

    static func answer(_ simulator: WeChatPaySimulator, _ request: HTTPServerRequest) -> HTTPServerResponse {
        guard let prepayID = request.query["prepay_id"], let package = request.query["package"] else {
            return page(404, "页面不存在", "the page's query must carry prepay_id and package, as mweb_url does")
        }
        do {
            let (order, redirect) = try simulator.openMWEB(
                prepayID: prepayID, package: package, redirectURL: request.query["redirect_url"],
                referer: request.headers["Referer"], pay: true)
            // WeChat returns the browser to the merchant's page; only a web address is followed,
            // so the page never becomes a redirect to a script.
            if let redirect, let scheme = URLComponents(string: redirect)?.scheme?.lowercased(), ["http", "https"].contains(scheme) {
                return HTTPServerResponse(status: 302, headers: ["Location": redirect, "Content-Type": "text/plain; charset=utf-8",
                                                                 "Cache-Control": "no-store"],
                                          body: Array("支付成功: \(redirect)\n".utf8))
            }
            return page(200, "支付成功", "order \(order.outTradeNo) is paid (\(order.transactionID ?? ""))")
        } catch {
            return switch error.code {
            case .refererNotAllowed: page(403, refusal, "the page was opened without a Referer, or from a page not on the order's H5 site")
            case .mwebURLNotFound, .orderNotFound: page(404, "订单不存在", error.description)
            default: page(409, "订单已支付或已关闭", error.description)
            }
        }
    }

    /// A page of WeChat's: the message a user would see (`id="message"`) and the simulator's reason.
    static func page(_ status: Int, _ message: String, _ detail: String) -> HTTPServerResponse {
        let html = """
            <!doctype html>
            <html lang="zh-CN"><head><meta charset="utf-8"><title>微信支付</title></head>
            <body><h1 id="message">\(escape(message))</h1><p id="detail">\(escape(detail))</p></body></html>

            """
        return HTTPServerResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"],
                                  body: Array(html.utf8))
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}
