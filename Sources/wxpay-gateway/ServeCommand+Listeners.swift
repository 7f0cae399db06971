// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import GatewayConsole
import HTTP
import Observability

/// The gateway's addresses: the public one (GATEWAY_LISTEN: WeChat's and Apple's notifies and the
/// apps' API) and, with GATEWAY_ADMIN_LISTEN, the operators' own (`/metrics`, `/healthz`,
/// `/readyz`, the console); both HTTPS with GATEWAY_TLS_CERT/_KEY.
struct Listeners {
    let server: HTTPServer
    let admin: HTTPServer?
    /// `scheme://host:port` as bound (the real port when 0 was asked for).
    let base: String
    /// Where the admin routes answer: the admin address, or the public one.
    let adminBase: String

    /// Routes every path to its address: with an admin address, the public router lacks the
    /// operators' routes (404 there) and the admin router has nothing else. The console's routes
    /// are the operators' (404 while it is off).
    static func routers(_ api: GatewayAPI, console: Console?, configuration: GatewayConfiguration)
        -> (public: HTTPRouter, admin: HTTPRouter?)
    {
        var router = HTTPRouter()
        guard configuration.adminListen != nil else {
            api.register(in: &router)
            Console.register(console, in: &router)
            return (router, nil)
        }
        var admin = HTTPRouter()
        api.registerPublic(in: &router)
        api.registerAdmin(in: &admin)
        Console.register(console, in: &admin)
        return (router, admin)
    }

    /// Binds and starts both servers; a failure to bind either stops whichever started.
    static func start(public router: HTTPRouter, admin adminRouter: HTTPRouter?, configuration: GatewayConfiguration,
                      connections: Int) async throws(ListenFailure) -> Listeners {
        let server = HTTPServer(router: router, configuration: HTTPServerConfiguration().with {
            $0.host = configuration.listenHost
            $0.port = UInt16(configuration.listenPort)
            $0.connectionLimit = connections
            $0.connectionsPerAddress = configuration.maxConnectionsPerAddress ?? 0
            $0.tls = configuration.tls
        })
        let address: HTTPServerSocketAddress
        do {
            address = try await server.start()
        } catch {
            throw ListenFailure(variable: "GATEWAY_LISTEN", listen: configuration.listen, error: error)
        }
        let base = "\(configuration.scheme)://\(address)"
        guard let adminRouter, let adminListen = configuration.adminListen else {
            return Listeners(server: server, admin: nil, base: base, adminBase: base)
        }
        // Probes, scrapes and a few support staff: a small connection budget of its own, so a
        // flood on the public address cannot starve the operators' view of it.
        let admin = HTTPServer(router: adminRouter, configuration: HTTPServerConfiguration().with {
            $0.host = adminListen.host
            $0.port = UInt16(adminListen.port)
            $0.connectionLimit = 256
            $0.tls = configuration.tls
        })
        do {
            let adminAddress = try await admin.start()
            return Listeners(server: server, admin: admin, base: base, adminBase: "\(configuration.scheme)://\(adminAddress)")
        } catch {
            await server.shutdown(gracePeriod: .zero)
            throw ListenFailure(variable: "GATEWAY_ADMIN_LISTEN", listen: adminListen, error: error)
        }
    }

    /// Both addresses as one service: at its turn to stop, new connections are refused at once and
    /// requests in flight (a held wait is at most 30 s) are given 10 s.
    var serving: Serving {
        Serving(description: "listeners", servers: [server] + (admin.map { [$0] } ?? []), gracePeriod: .seconds(10))
    }

    /// Which address could not be served, and why.
    struct ListenFailure: Error, CustomStringConvertible {
        let variable: String
        let listen: GatewayConfiguration.Listen
        let error: HTTPServerError

        var description: String { "cannot listen on \(listen.host):\(listen.port) (\(variable)): \(error)" }
    }
}
