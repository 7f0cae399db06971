// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import ChildProcessSupport
import Foundation
@testable import Gateway
import GatewayConsole
import HTTP
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPaySimulator

/// docs/openapi.json against the gateway: every route described (so a new route cannot be
/// forgotten), a valid OpenAPI 3.1 document, and schemathesis finding no 5xx and no response that
/// breaks it, with each kind of token, against a demo gateway over sockets.
@Suite(.serialized)
struct OpenAPITests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let documentPath = package.appendingPathComponent("docs/openapi.json").path
    /// scripts/test-tools puts them there (scripts/setup runs it).
    static let tools = package.appendingPathComponent(".build/test-tools-venv/bin")

    static func document() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: documentPath))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test func everyRegisteredRouteIsDescribedAndEveryDescribedRouteExists() async throws {
        let harness = try await GatewayRig.start(.inProcess)
        defer { Task { await harness.stop() } }
        var router = HTTPRouter()
        GatewayAPI(services: harness.services).register(in: &router)
        // The console's routes are described too (they answer 404 while it is off).
        Console.register(nil, in: &router)
        let registered = Set(router.registeredRoutes.map { "\($0.method.rawValue.lowercased()) \($0.template)" })
        let paths = try #require(try Self.document()["paths"] as? [String: [String: Any]])
        let methods: Set<String> = ["get", "put", "post", "delete", "patch", "head", "options"]
        let described = Set(paths.flatMap { path, item in item.keys.filter(methods.contains).map { "\($0) \(path)" } })
        #expect(registered.subtracting(described).isEmpty, "routes missing from docs/openapi.json: \(registered.subtracting(described).sorted())")
        #expect(described.subtracting(registered).isEmpty, "described but not registered: \(described.subtracting(registered).sorted())")
    }

    @Test func theServedDescriptionIsTheDocumentInTheRepository() throws {
        #expect(OpenAPIDocument.bytes == Array(try Data(contentsOf: URL(fileURLWithPath: Self.documentPath))))
    }

    @Test func everyErrorCodeTheGatewayAnswersIsDescribed() throws {
        let text = try String(contentsOfFile: Self.documentPath, encoding: .utf8)
        // Every `code:` the API's errors are made with, found in the sources.
        let sources = Self.package.appendingPathComponent("Sources/Gateway")
        var codes: Set<String> = []
        let enumerator = FileManager.default.enumerator(atPath: sources.path)
        while let file = enumerator?.nextObject() as? String {
            guard file.hasSuffix(".swift") else { continue }
            let source = try String(contentsOfFile: sources.appendingPathComponent(file).path, encoding: .utf8)
            var rest = source[...]
            while let range = rest.range(of: #"code: ""#) {
                let after = rest[range.upperBound...]
                if let end = after.firstIndex(of: "\"") { codes.insert(String(after[..<end])) }
                rest = after
            }
        }
        #expect(codes.count >= 15)
        for code in codes { #expect(text.contains(#""\#(code)""#), "error code \(code) is not in docs/openapi.json") }
    }

    /// The `webhooks` section is the contract of the business backend's fulfilment endpoint: the
    /// `order.paid`, `refund.succeeded` and `refund.failed` events of a real payment and refunds
    /// have exactly the documented envelope, every required member of their `data` and nothing
    /// undocumented, and their type is one the `Gateway-Event-Type` header names.
    @Test func theWebhookEventsAreDescribedAsTheGatewayWritesThem() async throws {
        let document = try Self.document()
        let webhooks = try #require(document["webhooks"] as? [String: Any])
        #expect(Set(webhooks.keys) == ["order.paid", "refund.succeeded", "refund.failed", "order.refunded", "order.refund_reversed",
                                        "appstore.consumption_requested", "entitlement.changed"])
        let components = try #require(document["components"] as? [String: Any])
        let schemas = try #require(components["schemas"] as? [String: [String: Any]])
        let parameters = try #require(components["parameters"] as? [String: [String: Any]])
        let eventTypes = Set(((parameters["GatewayEventType"]?["schema"] as? [String: Any])?["enum"] as? [String]) ?? [])
        #expect(eventTypes == Set(webhooks.keys))
        func properties(_ schema: [String: Any]?) -> Set<String> { Set((schema?["properties"] as? [String: Any] ?? [:]).keys) }
        func required(_ schema: [String: Any]?) -> Set<String> { Set(schema?["required"] as? [String] ?? []) }
        let paidData = (schemas["OrderPaidEvent"]?["properties"] as? [String: Any])?["data"] as? [String: Any]
        // What each event's `data` must have, and may have.
        let dataMembers: [String: (required: Set<String>, allowed: Set<String>)] = [
            "order.paid": (required(schemas["Order"]), properties(schemas["Order"]).union(properties(paidData))),
            "refund.succeeded": (required(schemas["Refund"]), properties(schemas["Refund"])),
            "refund.failed": (required(schemas["Refund"]), properties(schemas["Refund"])),
        ]

        let rig = try await RefundRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        try await rig.paidOrder("openapi-hooks", amount: 800)
        #expect(try await rig.refund("openapi-hooks", amount: 500, number: "openapi-hooks-r1").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "openapi-hooks-r1")
        #expect(await rig.refund("openapi-hooks-r1", becomes: .success))
        #expect(try await rig.refund("openapi-hooks", amount: 300, number: "openapi-hooks-r2").status == 201)
        try rig.simulator.completeRefund(outRefundNo: "openapi-hooks-r2", status: "CHANGE")
        #expect(await rig.refund("openapi-hooks-r2", becomes: .change))
        for type in ["order.paid", "refund.succeeded", "refund.failed"] {
            let event = try #require(try await rig.events("openapi-hooks", type: type).first, "no \(type) event")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
            let schema = schemas[type == "order.paid" ? "OrderPaidEvent" : "RefundEvent"]
            #expect(Set(object.keys) == properties(schema) && required(schema) == properties(schema), "\(type): \(object.keys.sorted())")
            #expect(object["type"] as? String == type)
            #expect((object["id"] as? String)?.wholeMatch(of: /evt_[0-9a-f]{32}/) != nil)
            let data = try #require(object["data"] as? [String: Any])
            let members = try #require(dataMembers[type])
            #expect(members.required.subtracting(data.keys).isEmpty, "\(type) lacks \(members.required.subtracting(data.keys).sorted())")
            #expect(Set(data.keys).subtracting(members.allowed).isEmpty, "\(type) has undocumented \(Set(data.keys).subtracting(members.allowed).sorted())")
        }
    }

    /// The App Store's events (an Apple refund, its reversal, a consumption request) against the
    /// same contract: the envelope exactly, the order's `data` as order.paid's.
    @Test func theAppStoreWebhookEventsAreDescribedAsTheGatewayWritesThem() async throws {
        let document = try Self.document()
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        func properties(_ schema: [String: Any]?) -> Set<String> { Set((schema?["properties"] as? [String: Any] ?? [:]).keys) }
        func required(_ schema: [String: Any]?) -> Set<String> { Set(schema?["required"] as? [String] ?? []) }
        let paidData = (schemas["OrderPaidEvent"]?["properties"] as? [String: Any])?["data"] as? [String: Any]
        let orderAllowed = properties(schemas["Order"]).union(properties(paidData))
        let consumptionData = (schemas["ConsumptionRequestedEvent"]?["properties"] as? [String: Any])?["data"] as? [String: Any]

        let rig = try await IAPRig.start(.inProcess)
        defer { Task { await rig.stop() } }
        let created = try await rig.createOrder("user-hooks")
        let bought = try rig.buy("apple-hooks", token: IAPEndToEndTests.token(created), type: "Consumable")
        #expect(try await rig.report("user-hooks", ["signed_transaction": bought.signedTransactionInfo]).status == 200)
        try rig.appStore.requestConsumption(transactionID: bought.transactionID)
        try rig.appStore.refund(transactionID: bought.transactionID)
        #expect(try await eventually { try await rig.order(IAPEndToEndTests.number(created))?.state == .refund })
        try rig.appStore.reverseRefund(transactionID: bought.transactionID)
        let number = IAPEndToEndTests.number(created)
        #expect(try await eventually { try await rig.store.orderOutboxEvents(number).count == 4 })
        for event in try await rig.store.orderOutboxEvents(number) where event.type != "order.paid" {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(event.payload.utf8)) as? [String: Any])
            let schema = schemas[event.type == "appstore.consumption_requested" ? "ConsumptionRequestedEvent" : "OrderChangedEvent"]
            #expect(Set(object.keys) == properties(schema) && required(schema) == properties(schema), "\(event.type)")
            let data = try #require(object["data"] as? [String: Any])
            let order = event.type == "appstore.consumption_requested" ? try #require(data["order"] as? [String: Any]) : data
            if event.type == "appstore.consumption_requested" {
                #expect(Set(data.keys) == properties(consumptionData), "\(data.keys.sorted())")
            }
            #expect(required(schemas["Order"]).subtracting(order.keys).isEmpty, "\(event.type)")
            #expect(Set(order.keys).subtracting(orderAllowed).isEmpty, "\(event.type): \(Set(order.keys).subtracting(orderAllowed).sorted())")
        }
    }

    @Test func theDocumentIsValidOpenAPI31() async throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("validator-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(atPath: output.path + ".out"); try? FileManager.default.removeItem(atPath: output.path + ".err") }
        let validator = try ChildProcess(Self.tools.appendingPathComponent("openapi-spec-validator").path, [Self.documentPath],
                                         environment: ProcessInfo.processInfo.environment,
                                         output: output.path + ".out", errors: output.path + ".err")
        let status = await validator.wait(timeout: .seconds(120))
        let said = ((try? String(contentsOfFile: output.path + ".out", encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: output.path + ".err", encoding: .utf8)) ?? "")
        #expect(status == 0, "\(said)")
        #expect(said.contains("OK"))
    }

    @Test func schemathesisFindsNoServerErrorAndNoNonconformingResponseWithAnyToken() async throws {
        let gateway = try await ServedGateway.start(environment: [
            // The run makes many creates and waits as one user: limits out of its way (they have their own tests).
            "GATEWAY_APP_CREATE_RATE": "1000000", "GATEWAY_APP_MAX_WAITS": "1000", "GATEWAY_POLL_INTERVAL": "0.2",
        ])
        defer { Task { await gateway.stop() } }
        let appToken = try #require(gateway.appToken)
        let tokens = [("app", appToken), ("client", GatewayConfiguration.demoClientToken),
                      ("support", GatewayConfiguration.demoSupportToken)]
        for (kind, token) in tokens {
            let output = gateway.directory.appendingPathComponent("schemathesis-\(kind)")
            // Run from the gateway's temp directory: schemathesis keeps a cache where it runs.
            let run = try ChildProcess(
                "/bin/sh",
                ["-c", #"cd "$1" && shift && exec "$@""#, "sh", gateway.directory.path,
                 Self.tools.appendingPathComponent("schemathesis").path, "run", gateway.base + "/openapi.json", "--header", "Authorization: Bearer \(token)",
                 "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                     + "response_headers_conformance,response_schema_conformance",
                 "--phases", "examples,fuzzing", "--max-examples", "10", "--workers", "1", "--request-timeout", "40",
                 "--seed", "1729", "--no-color"],
                environment: ProcessInfo.processInfo.environment.merging(["SCHEMATHESIS_HOOKS": ""]) { $1 },
                output: output.path + ".out", errors: output.path + ".err")
            let status = await run.wait(timeout: .seconds(480))
            let report = ((try? String(contentsOfFile: output.path + ".out", encoding: .utf8)) ?? "")
                + ((try? String(contentsOfFile: output.path + ".err", encoding: .utf8)) ?? "")
            #expect(status == 0, "schemathesis with the \(kind) token:\n\(report.suffix(6000))")
            #expect(report.contains("passed"), "\(kind): \(report.suffix(2000))")
        }
    }
}
