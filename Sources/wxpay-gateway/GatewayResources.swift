// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import Storage

/// What `serve` and `reconcile` both start from: the configuration read from the environment, the
/// order store it names, and an HTTP client. Opening them prints why it failed, with the command's
/// name, and gives the exit status (78 configuration, 74 database, 70 internal).
struct GatewayResources {
    let configuration: GatewayConfiguration
    let store: SQLiteOrderStore
    let client: HTTPClient

    /// An exit status with its message already printed.
    struct Failure: Error {
        let status: Int32
    }

    static func open(for command: String) async -> Result<GatewayResources, Failure> {
        func fail(_ message: String, _ status: Int32) -> Result<GatewayResources, Failure> {
            FileHandle.standardError.write(Data("\(command): \(message)\n".utf8))
            return .failure(Failure(status: status))
        }
        let configuration: GatewayConfiguration
        do {
            configuration = try GatewayConfiguration(environment: Environment(ProcessInfo.processInfo.environment))
        } catch {
            return fail("configuration error: \(error)", 78)
        }
        let store: SQLiteOrderStore
        switch configuration.database {
        case .sqlite(let path):
            do {
                store = try await SQLiteOrderStore.open(path: path)
            } catch {
                return fail("cannot open the database \(path): \(error)", 74)
            }
        }
        do {
            return .success(GatewayResources(configuration: configuration, store: store, client: try HTTPClient()))
        } catch {
            await store.close()
            return fail("cannot start the HTTP client: \(error)", 70)
        }
    }

    /// Releases the client, then the store (the last writes finish first).
    func close() async {
        await client.shutdown()
        await store.close()
    }
}
