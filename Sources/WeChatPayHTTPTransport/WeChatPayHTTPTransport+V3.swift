// SPDX-License-Identifier: Apache-2.0
import HTTP
public import WeChatPay
public import WeChatPayV3

/// API v3 through the same client, hosts and failover as v2: one transport for both versions, so a
/// merchant moving from v2 to v3 with orders in flight has one view of WeChat's health. v3 needs no
/// client certificate (its requests are signed), so none is ever presented.
extension WeChatPayHTTPTransport: WeChatPayV3Transport {
    public func send(_ request: V3TransportRequest) async throws(TransportError) -> V3TransportResponse {
        let host = configuration.backupBaseURL == nil ? .primary : chooseHost()
        let baseURL = host == .backup ? configuration.backupBaseURL ?? configuration.primaryBaseURL : configuration.primaryBaseURL
        let httpRequest = HTTPClientRequest(
            method: HTTPMethod(rawValue: request.method), url: Self.join(baseURL, request.url),
            headers: HTTPHeaders(request.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }),
            body: request.body, timeouts: configuration.timeouts)
        do {
            let response = try await client.execute(httpRequest)
            record(.success, on: host)
            var headers: [String: String] = [:]
            for field in response.headers { headers[field.name] = field.value }
            return V3TransportResponse(status: response.status, headers: headers, body: response.body)
        } catch {
            if let outcome = DomainFailover.Outcome(error) { record(outcome, on: host) }
            throw TransportError(error)
        }
    }
}
