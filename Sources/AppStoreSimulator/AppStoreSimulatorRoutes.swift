// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import HTTP

/// Puts the App Store simulator on an HTTP router: the Server API and verifyReceipt (production
/// and `/sandbox/…`) and the control panel under `/appstore-simulator/`.
/// `wxpay-gateway simulate-appstore` serves both; a gateway in demo mode can mount only the
/// control panel and call the API in process through ``AppStoreSimulatorTransport``.
public enum AppStoreSimulatorRoutes {
    static let bodyLimit = 1024 * 1024

    /// The Server API (with Get Notification History and Send Consumption Information) and
    /// verifyReceipt, in both environments.
    public static func registerAPI(_ simulator: AppStoreSimulator, in router: inout HTTPRouter) {
        let templates = [
            (HTTPMethod.get, "/inApps/v1/transactions/{id}"), (.get, "/inApps/v1/history/{id}"), (.get, "/inApps/v2/history/{id}"),
            (.get, "/inApps/v2/refund/lookup/{id}"), (.get, "/inApps/v1/lookup/{id}"), (.post, "/verifyReceipt"),
            (.get, "/verifyReceipt"), (.post, "/inApps/v1/notifications/history"),
            (.put, "/inApps/v2/transactions/consumption/{id}"),
            (.post, "/inApps/v1/notifications/test"), (.get, "/inApps/v1/notifications/test/{id}"),
            (.get, "/inApps/v1/subscriptions/{id}"), (.put, "/inApps/v1/subscriptions/extend/{id}"),
        ]
        for prefix in ["", "/sandbox"] {
            for (method, template) in templates {
                router.add(method, prefix + template, options: HTTPRouteOptions(maxBodyBytes: bodyLimit)) { request in
                    let path = prefix + template.replacingOccurrences(of: "{id}", with: request.pathParameters["id"] ?? "")
                    var headers: [String: String] = [:]
                    for field in request.headers { headers[field.name.lowercased()] = field.value }
                    let response = simulator.handle(AppStoreSimulatorRequest(
                        method: request.method.rawValue, path: path, query: request.query, headers: headers, body: request.body))
                    if response.delay > 0 { try? await Task.sleep(for: .seconds(response.delay)) }
                    if response.timesOut { return .connectionAborted }
                    return HTTPServerResponse(status: response.status, headers: HTTPHeaders(response.headers.map { ($0.key, $0.value) }),
                                              body: response.body)
                }
            }
        }
    }

    /// The control panel (see ``AppStoreSimulatorControlAPI``).
    public static func registerControl(_ simulator: AppStoreSimulator, in router: inout HTTPRouter) {
        let control = AppStoreSimulatorControlAPI(simulator: simulator)
        for (method, template) in AppStoreSimulatorControlAPI.routes {
            router.add(HTTPMethod(rawValue: method), template, options: HTTPRouteOptions(maxBodyBytes: 64 * 1024)) { request in
                let path = template.replacingOccurrences(of: "{id}", with: request.pathParameters["id"] ?? "")
                let (status, contentType, body) = control.handle(method: method, path: path, body: request.body)
                return HTTPServerResponse(status: status, headers: ["Content-Type": contentType], body: body)
            }
        }
    }
}

/// The simulator as an ``AppStoreTransport``, with no socket: the in-process half of "one test
/// body, two transports", and demo mode's link. The URL's host is ignored; its path (with
/// `/sandbox` for the sandbox base URL) picks the endpoint. Latency is slept in real time; a
/// timeout fault becomes a timeout error at once.
public struct AppStoreSimulatorTransport: AppStoreTransport {
    public let simulator: AppStoreSimulator

    public init(simulator: AppStoreSimulator) {
        self.simulator = simulator
    }

    /// Base URLs that route to this transport's simulator: production and sandbox.
    public static let productionBaseURL = "http://appstore.simulator"
    public static let sandboxBaseURL = "http://appstore.simulator/sandbox"

    public func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
        let response = simulator.handle(AppStoreSimulatorRequest(
            method: request.method.rawValue, path: request.path, query: HTTPServerQuery(parsing: request.query) ?? HTTPServerQuery(),
            headers: request.headers, body: request.body))
        if response.timesOut { throw AppStoreTransportError(kind: .timeout) }
        if response.delay > 0 {
            do { try await Task.sleep(for: .seconds(response.delay)) } catch { throw AppStoreTransportError(kind: .timeout) }
        }
        return AppStoreResponse(status: response.status, headers: response.headers, body: response.body)
    }
}
