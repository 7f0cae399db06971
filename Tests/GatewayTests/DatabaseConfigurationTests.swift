// SPDX-License-Identifier: Apache-2.0
import Gateway
import StorageCore
import Testing

struct DatabaseConfigurationTests {
    private func configuration(_ variables: [String: String]) throws(ConfigurationError) -> GatewayConfiguration {
        try GatewayConfiguration(environment: Environment(variables), demo: true)
    }

    @Test func aPostgresURIChoosesThePostgresStoreWithEightConnectionsByDefault() throws {
        for url in ["postgres://gw:s3cret@db.internal:5432/pay?sslmode=require", "postgresql://gw@db/pay"] {
            let config = try configuration(["GATEWAY_DATABASE": url])
            #expect(config.database == .postgres(PostgresSettings(url: url)))
            #expect(config.databasePool == 8)
        }
        let pooled = try configuration(["GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "3"])
        #expect(pooled.database == .postgres(PostgresSettings(url: "postgres://gw@db/pay")))
        #expect(pooled.databasePool == 3)
    }

    @Test func thePasswordNeverAppearsInTheDatabasesDescription() throws {
        let config = try configuration(["GATEWAY_DATABASE": "postgres://gw:s3cret@db.internal:5432/pay?sslmode=require"])
        #expect(config.databaseDescription == "postgres://gw:***@db.internal:5432/pay?sslmode=require")
        #expect(try configuration([:]).databaseDescription == "sqlite:data/gateway.sqlite")
    }

    @Test(arguments: [
        (["GATEWAY_DATABASE": "postgres://"], "GATEWAY_DATABASE"),
        (["GATEWAY_DATABASE": "mysql://gw:s3cret@db/pay"], "GATEWAY_DATABASE"),
        (["GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "0"], "GATEWAY_DATABASE_POOL"),
        (["GATEWAY_DATABASE": "postgres://gw@db/pay", "GATEWAY_DATABASE_POOL": "many"], "GATEWAY_DATABASE_POOL"),
        (["GATEWAY_DATABASE_POOL": "4"], "GATEWAY_DATABASE_POOL"),
    ])
    func aDatabaseConfigurationThatCannotBeMeantIsRefusedNamingTheVariable(variables: [String: String], named: String) {
        do {
            _ = try configuration(variables)
            Issue.record("accepted \(variables.keys.sorted())")
        } catch {
            #expect(error.variables == [named])
            #expect(!error.description.contains("s3cret"))
            #expect(!error.description.contains("mysql"))
        }
    }

    @Test func theDatabaseVariablesAreKnownSoNoneIsReportedAsMisspelt() {
        let known = Set(GatewayConfiguration.variables.map(\.name))
        #expect(known.isSuperset(of: ["GATEWAY_DATABASE", "GATEWAY_DATABASE_POOL"]))
    }
}
