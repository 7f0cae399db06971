// SPDX-License-Identifier: Apache-2.0
import Gateway
import Storage
import Testing

struct DatabaseConfigurationTests {
    @Test func aPostgresURIChoosesThePostgresStoreWithEightConnectionsByDefault() throws {
        for url in ["postgres://gw:s3cret@db.internal:5432/pay?sslmode=require", "postgresql://gw@db/pay"] {
            let config = try GatewayConfiguration(environment: Environment(["GATEWAY_DATABASE": url]))
            #expect(config.database == .postgres(PostgresSettings(url: url), poolSize: 8))
        }
        let pooled = try GatewayConfiguration(environment: Environment([
            "GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "3"]))
        #expect(pooled.database == .postgres(PostgresSettings(url: "postgres://gw@db/pay"), poolSize: 3))
    }

    @Test func thePasswordNeverAppearsInTheDatabasesDescription() throws {
        let config = try GatewayConfiguration(environment: Environment([
            "GATEWAY_DATABASE": "postgres://gw:s3cret@db.internal:5432/pay?sslmode=require"]))
        #expect(config.databaseDescription == "postgres://gw:***@db.internal:5432/pay?sslmode=require")
        #expect(try GatewayConfiguration(environment: Environment([:])).databaseDescription == "sqlite:data/gateway.sqlite")
    }

    @Test(arguments: [
        ["GATEWAY_DATABASE": "postgres://"],
        ["GATEWAY_DATABASE": "mysql://gw:s3cret@db/pay"],
        ["GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "0"],
        ["GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "many"],
        ["GATEWAY_DATABASE_POOL": "4"],
    ])
    func aDatabaseConfigurationThatCannotBeMeantIsRefusedNamingTheVariable(environment: [String: String]) {
        do {
            _ = try GatewayConfiguration(environment: Environment(environment))
            Issue.record("accepted \(environment.keys.sorted())")
        } catch {
            #expect(GatewayConfiguration.databaseVariables.contains(error.variable))
            #expect(!error.description.contains("s3cret"))
            #expect(!error.description.contains("mysql"))
        }
    }
}
