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
    let store: any OrderStore
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
        let store: any OrderStore
        do {
            store = try await openStore(configuration.database)
        } catch {
            // The description names the database without its password, and the error no value.
            return fail("cannot open the database \(configuration.databaseDescription): \(error)", 74)
        }
        do {
            return .success(GatewayResources(configuration: configuration, store: store, client: try HTTPClient()))
        } catch {
            await store.close()
            return fail("cannot start the HTTP client: \(error)", 70)
        }
    }

    static func openStore(_ database: GatewayConfiguration.Database) async throws(StorageError) -> any OrderStore {
        switch database {
        case .sqlite(let path):
            try await SQLiteOrderStore.open(path: path)
        case .postgres(let settings, let poolSize):
            try await PostgresOrderStore.open(settings, configuration: .init(poolSize: poolSize))
        }
    }

    /// Releases the client, then the store (the last writes finish first).
    func close() async {
        await client.shutdown()
        await store.close()
    }
}
