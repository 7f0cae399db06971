// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import WeChatPay
import WeChatPayV3

/// Puts the simulator on an HTTP router: WeChat's API paths (production and sandbox) and the
/// control panel under `/simulator/`. `wxpay-gateway simulate` serves both; the gateway's demo mode
/// mounts only the control panel next to its own routes and calls the API in process.
public enum SimulatorRoutes {
    /// WeChat's documents stay far below this; the simulator, like WeChat, refuses larger ones.
    static let bodyLimit = 64 * 1024

    /// Every API endpoint, for POST (and GET, which WeChat answers with "请使用post方法").
    public static func registerAPI(_ simulator: WeChatPaySimulator, in router: inout HTTPRouter) {
        var paths = Set<String>()
        for api in WeChatPayAPI.allCases {
            paths.insert(api.path(sandbox: false))
            paths.insert(api.path(sandbox: true))
        }
        for path in paths.sorted() {
            // Refunds ask for a client certificate without demanding it: the simulator itself
            // answers a missing one the way WeChat's front end does (400), not the server (403).
            let options = HTTPRouteOptions(maxBodyBytes: bodyLimit, clientCertificate: .optional)
            for method in [HTTPMethod.post, .get] {
                router.add(method, path, options: options) { request in
                    var incoming = SimulatorRequest(method: request.method.rawValue, path: path, body: request.body,
                                                    clientCertificateVerified: request.hasVerifiedClientCertificate)
                    incoming.clientCertificateRejected = request.hasRejectedClientCertificate
                    let response = simulator.handle(incoming)
                    if response.delay > 0 { try? await Task.sleep(for: .seconds(response.delay)) }
                    if response.resetConnection || response.timesOut { return .connectionAborted }
                    return HTTPServerResponse(status: response.status, headers: ["Content-Type": response.contentType],
                                              body: response.body)
                }
            }
        }
    }

    /// The v3 endpoints (see `WeChatPaySimulator+V3.swift`): headers and the query pass through,
    /// and the answer's signature headers come back.
    public static func registerV3API(_ simulator: WeChatPaySimulator, in router: inout HTTPRouter) {
        for (method, template) in WeChatPaySimulator.v3Routes {
            let httpMethod: HTTPMethod = method == "GET" ? .get : .post
            router.add(httpMethod, template, options: HTTPRouteOptions(maxBodyBytes: bodyLimit)) { request in
                var headers: [String: String] = [:]
                for field in request.headers { headers[field.name] = field.value }
                // The query as the client wrote it: the server hands it over decoded, so it is
                // written again in the same order with the same escaping rules v3 clients use.
                let query = request.query.map { V3URLComponent.encode($0.name) + "=" + V3URLComponent.encode($0.value) }
                    .joined(separator: "&")
                let incoming = SimulatorRequest(method: method, path: request.path, body: request.body, headers: headers, query: query)
                let response = simulator.handleV3(incoming, template: template, parameter: request.pathParameters["id"])
                if response.delay > 0 { try? await Task.sleep(for: .seconds(response.delay)) }
                if response.resetConnection || response.timesOut { return .connectionAborted }
                var fields: [(String, String)] = [("Content-Type", response.contentType)]
                for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) { fields.append((name, value)) }
                return HTTPServerResponse(status: response.status, headers: HTTPHeaders(fields), body: response.body)
            }
        }
    }

    /// The control panel (see `SimulatorControlAPI`).
    public static func registerControl(_ simulator: WeChatPaySimulator, in router: inout HTTPRouter) {
        let control = SimulatorControlAPI(simulator: simulator)
        let routes: [(HTTPMethod, String)] = [
            (.post, "/simulator/orders/{id}/pay"), (.post, "/simulator/orders/{id}/fail"),
            (.get, "/simulator/orders/{id}"), (.post, "/simulator/refunds/{id}/complete"),
            (.get, "/simulator/faults"), (.put, "/simulator/faults"), (.post, "/simulator/clock/advance"),
            (.get, "/simulator/stats"), (.get, "/simulator/notifies"), (.get, "/simulator/orderqueries"),
            (.get, "/simulator/refundrequests"), (.post, "/simulator/v3/rotate"), (.put, "/simulator/v3/notify-serial"),
            (.get, "/simulator/v3/certificates"), (.post, "/simulator/scan"), (.post, "/simulator/mweb"),
        ]
        for (method, template) in routes {
            router.add(method, template, options: HTTPRouteOptions(maxBodyBytes: bodyLimit)) { request in
                // Rebuild the path from the decoded parameter, so an out_trade_no with `|` or `*`
                // reaches the control API as the merchant wrote it.
                let path = template.replacingOccurrences(of: "{id}", with: request.pathParameters["id"] ?? "")
                let (status, body) = control.handle(method: method.rawValue, path: path, body: request.body)
                return HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
            }
        }
        // WeChat's H5 page for a real browser, which sends its own Referer (SimulatorMWEBPage.swift).
        router.add(.get, "/simulator/mweb") { request in
            SimulatorMWEBPage.answer(simulator, request)
        }
    }
}
