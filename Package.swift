// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

// One system-library target per Debian C library. `providers` turns a missing `-dev` package into
// a clear message naming it; `scripts/setup` installs all of them at once.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "wxpay-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "wxpay-gateway", targets: ["wxpay-gateway"]),
        .executable(name: "wxpay-bench", targets: ["wxpay-bench"]),
        .library(name: "WeChatPay", targets: ["WeChatPay"]),
        .library(name: "WeChatPayV3", targets: ["WeChatPayV3"]),
        .library(name: "HTTP", targets: ["HTTP"]),
        .library(name: "StorageCore", targets: ["StorageCore"]),
        .library(name: "SQLiteStore", targets: ["SQLiteStore"]),
        .library(name: "PostgresStore", targets: ["PostgresStore"]),
        .library(name: "WeChatPayHTTPTransport", targets: ["WeChatPayHTTPTransport"]),
        .library(name: "AppStore", targets: ["AppStore"]),
    ],
    targets: [
        // C shims: module.modulemap + one shim header each.
        systemLibrary("COpenSSL", pkgConfig: "openssl", apt: ["libssl-dev"]),
        systemLibrary("CLibXML2", pkgConfig: "libxml-2.0", apt: ["libxml2-dev"]),
        systemLibrary("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        systemLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
        systemLibrary("CLibPQ", pkgConfig: "libpq", apt: ["libpq-dev"]),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: ["zlib1g-dev"]),
        systemLibrary("CQREncode", pkgConfig: "libqrencode", apt: ["libqrencode-dev"]),

        // JSON, pure: the one strict reader (refuses what parsers disagree on) and the one writer.
        .target(name: "JSON"),
        // The one first-in, first-out queue (O(1) takes) of the stores' threads and the gateway's
        // bounded work: a building block beneath both, so neither depends on the other for it.
        .target(name: "FIFO"),
        // The one way a file an operator names is read (catalog, console users, certificates, keys,
        // a backup): opened without blocking, refused unless a regular file, bounded in size.
        .target(name: "OperatorFiles"),
        // Logging and metrics for every module that logs or counts: swift-log's Logger shape, and
        // counter, gauge and histogram handles made once, exposed in Prometheus' text format.
        .target(name: "Observability", dependencies: ["JSON"]),
        // Services run by one group (swift-service-lifecycle's shape): started in order, SIGTERM and
        // SIGINT trapped, stopped in reverse order with a graceful deadline, then cancelled.
        .target(name: "Lifecycle", dependencies: ["Observability"]),

        // Crypto, the one door to OpenSSL: digests, HMAC, constant-time compare, random bytes,
        // base64 and hex, AES (ECB, GCM), scrypt, RSA and EC keys, ES256, X.509 and chains,
        // PKCS #7 / CMS and DER. No other Swift module imports COpenSSL.
        .target(name: "Crypto", dependencies: ["COpenSSL", "CCrypto"]),
        // The C half of Crypto: what OpenSSL only offers through macros, stacks and multi-call
        // builders (chain verification, certificate issuing, key conversions).
        .target(name: "CCrypto", dependencies: ["COpenSSL"]),
        // The flat-XML codec's C half: the SAX callbacks libxml2 calls and the canonical-form scanner.
        .target(name: "CFlatXML", dependencies: ["CLibXML2"]),

        // QR codes for NATIVE (PC web) orders' code_url: libqrencode's matrix, drawn as PNG (zlib's
        // deflate) and SVG. Pure: no files, clock or randomness.
        .target(name: "QRCode", dependencies: ["CQREncode", "CZlib"]),

        // The WeChat Pay v2 protocol, pure: no sockets, files, clock or randomness inside.
        .target(name: "WeChatPay", dependencies: ["Crypto", "CLibXML2", "CFlatXML", "CZlib"]),
        // The WeChat Pay API v3 protocol, pure beside v2: request signatures, verification by
        // serial (public key or platform certificates), AEAD_AES_256_GCM resources, the JSON
        // messages, notifies. No sockets, files, clock or randomness inside. (WeChatPay: the advice
        // the order flows share, and the bill's gzip.)
        .target(name: "WeChatPayV3", dependencies: ["Crypto", "JSON", "WeChatPay"]),
        // HTTP server (libmicrohttpd) and client (libcurl); knows nothing of WeChat.
        // (Crypto: reading the client certificate for its start-up check; Lifecycle: the
        // cancellation latch a request's handler and a held order wait share; OperatorFiles: the
        // client certificate's files read without blocking on a FIFO.)
        .target(name: "HTTP", dependencies: ["CMicroHTTPD", "CCurl", "Crypto", "Lifecycle", "OperatorFiles"]),
        // The durable order store, knowing nothing of the protocol: what every store keeps and
        // promises (the store protocols, records, errors, and every rule above the SQL: checks of
        // the arguments, the door's decisions, the App Store matching), which is all the product
        // sees; and the two stores, which only say it in their SQL. Only the executable, the
        // tests and the benchmarks choose a store.
        .target(name: "StorageCore"),
        // One SQLite file, for one process: one writer thread with group commit, a reader pool.
        .target(name: "SQLiteStore", dependencies: ["StorageCore", "CSQLite", "FIFO", "OperatorFiles"]),
        // PostgreSQL, for several instances: libpq's pipeline, a pool with group commit, LISTEN.
        .target(name: "PostgresStore", dependencies: ["StorageCore", "CLibPQ", "FIFO"]),
        // The libcurl client as a WeChatPayTransport, with the backup-domain failover.
        .target(name: "WeChatPayHTTPTransport", dependencies: ["WeChatPay", "WeChatPayV3", "HTTP"]),

        // Apple In-App Purchase, pure: JWS + x5c chains (OpenSSL), typed payloads, the Server API
        // and verifyReceipt clients over an abstract transport.
        .target(name: "AppStore", dependencies: ["Crypto", "JSON"]),
        // The libcurl client as an AppStoreTransport, and the system clock.
        .target(name: "AppStoreHTTPTransport", dependencies: ["AppStore", "HTTP"]),
        // A faithful fake App Store: its own PKI, the Server API, verifyReceipt, notifications V2.
        .target(name: "AppStoreSimulator", dependencies: ["AppStore", "Crypto", "HTTP", "SimulatorKit", "JSON"]),

        // What both simulators share: scaled time, seeded randomness, the notification scheduler.
        .target(name: "SimulatorKit", dependencies: ["HTTP"]),
        // A faithful fake of WeChat Pay's v2 and v3 APIs, for demo mode and every end-to-end test.
        .target(name: "WeChatPaySimulator", dependencies: ["WeChatPay", "WeChatPayV3", "HTTP", "SimulatorKit", "Crypto", "JSON"]),

        // The product: orders, notify, query with polling, close, support lookup, observability.
        // docs/openapi.json is compiled in (a symlink in API/) and served at GET /openapi.json.
        .target(name: "Gateway", dependencies: [
            "WeChatPay", "WeChatPayV3", "HTTP", "StorageCore", "Crypto", "AppStore", "JSON", "FIFO", "Observability", "Lifecycle",
            "QRCode", "OperatorFiles",
        ], resources: [.embedInCode("API/openapi.json")]),

        // The support console, on top of the product's service API: its pages (pure functions of
        // what they show), their handlers (sessions, CSRF, roles, the audit entry of every look and
        // action) and the user file. (Crypto: scrypt for passwords, SHA-256 for session ids.)
        .target(name: "GatewayConsole", dependencies: [
            "Gateway", "HTTP", "StorageCore", "Crypto", "JSON", "Observability", "AppStore", "WeChatPay",
        ]),

        .executableTarget(name: "wxpay-gateway", dependencies: [
            "WeChatPay", "HTTP", "WeChatPaySimulator", "Gateway", "GatewayConsole", "StorageCore", "SQLiteStore", "PostgresStore",
            "WeChatPayHTTPTransport",
            "AppStore", "AppStoreSimulator", "SimulatorKit", "AppStoreHTTPTransport", "JSON", "Crypto", "Observability",
            "Lifecycle",
        ]),
        .executableTarget(name: "wxpay-bench", dependencies: [
            "WeChatPay", "WeChatPayReference", "HTTP", "StorageCore", "SQLiteStore", "Crypto", "CLibXML2",
            // The reconcile benchmark drives the gateway against the in-process simulator.
            "Gateway", "WeChatPaySimulator",
            // The JWS benchmark signs with the App Store simulator's PKI.
            "AppStore", "AppStoreSimulator", "JSON",
            // The metrics benchmark: a handle's increment against the string path it replaced.
            "Observability",
            // The v3 benchmark: RSA, AES-GCM and whole notifies against openssl speed.
            "WeChatPayV3",
            // The QR benchmark: a NATIVE order's code_url drawn as PNG and SVG.
            "QRCode",
        ]),

        // The plain, slow v2 signature that tests, the fuzzer and the benchmarks check `Signer` against.
        .target(name: "WeChatPayReference", dependencies: ["WeChatPay", "Crypto"]),
        .testTarget(name: "WeChatPayTests", dependencies: ["WeChatPay", "WeChatPayReference", "ChildProcessSupport", "CHeapStatistics"]),
        // glibc's mallinfo2, for the tests that bound the heap hostile input leaves behind.
        .systemLibrary(name: "CHeapStatistics", path: "Tests/CHeapStatistics"),
        .testTarget(name: "StorageTests", dependencies: [
            "StorageCore", "SQLiteStore", "PostgresStore", "CSQLite", "CLibPQ", "StoreTestSupport", "ChildProcessSupport",
            "TestSupport",
        ]),
        // Both stores for the behaviour suites: a fresh SQLite file or PostgreSQL schema per test.
        .target(name: "StoreTestSupport", dependencies: [
            "StorageCore", "SQLiteStore", "PostgresStore", "CSQLite", "CLibPQ", "ChildProcessSupport",
        ],
                path: "Tests/StoreTestSupport"),
        // What every test target may share: `eventually`, the one bounded wait for what happens elsewhere.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        // Child processes for tests, with posix_spawn (Foundation's Process.run can crash on Linux).
        .target(name: "ChildProcessSupport", path: "Tests/ChildProcessSupport"),
        // What both simulators' test harnesses share (running the notify loop, waiting on it).
        .target(name: "SimulatorHarnessSupport", path: "Tests/SimulatorHarnessSupport"),
        .testTarget(name: "WeChatPaySimulatorTests", dependencies: [
            "WeChatPaySimulator", "WeChatPay", "HTTP", "WeChatPayHTTPTransport", "HTTPClientTestSupport",
            "SimulatorHarnessSupport", "WeChatPayV3", "Crypto", "JSON", "ChildProcessSupport", "TestSupport",
        ]),
        // The v3 protocol core against vectors made by the openssl tool and Python's cryptography.
        .testTarget(name: "WeChatPayV3Tests", dependencies: ["WeChatPayV3", "WeChatPay", "Crypto", "JSON", "ChildProcessSupport"]),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "HTTPClientTestSupport", "ChildProcessSupport", "TestSupport"]),
        .testTarget(name: "WeChatPayHTTPTransportTests", dependencies: [
            "WeChatPayHTTPTransport", "WeChatPay", "HTTP", "HTTPClientTestSupport",
        ]),
        // Loopback Python servers and the test certificates, shared by the client's test targets.
        .target(name: "HTTPClientTestSupport", dependencies: ["HTTP", "ChildProcessSupport"], path: "Tests/HTTPClientTestSupport",
                exclude: ["test_server.py"]),
        .testTarget(name: "GatewayTests", dependencies: [
            "Gateway", "GatewayConsole", "WeChatPay", "StorageCore", "WeChatPaySimulator", "HTTP", "WeChatPayHTTPTransport", "StoreTestSupport",
            "ChildProcessSupport",
            // The QR images the order routes must draw (compared with the module's own).
            "QRCode",
            // The test certificates: refunds over mutual TLS.
            "HTTPClientTestSupport",
            // HMAC-SHA512 for the test that a correctly signed HS512 app token is still refused.
            "Crypto",
            // Row counts of every table, read beside the store (forged notifies write nothing).
            "CSQLite",
            // iOS purchases against the App Store simulator, in process and over sockets.
            "AppStore", "AppStoreSimulator", "AppStoreHTTPTransport", "SimulatorKit", "JSON", "Observability", "TestSupport",
            // WeChat Pay API v3 end to end: notifies built and signed as WeChat does.
            "WeChatPayV3",
        ]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "Observability", "TestSupport"]),
        .testTarget(name: "AppStoreTests", dependencies: ["AppStore", "AppStoreSimulator", "JSON", "Crypto"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "FIFOTests", dependencies: ["FIFO"]),
        .testTarget(name: "AppStoreSimulatorTests", dependencies: [
            "AppStoreSimulator", "AppStore", "AppStoreHTTPTransport", "HTTP", "SimulatorKit", "ChildProcessSupport",
            "SimulatorHarnessSupport", "JSON", "Crypto", "TestSupport",
        ]),
        // `wxpay-gateway` itself, run as a child process (the debug build beside the test bundle).
        .testTarget(name: "wxpay-gatewayTests", dependencies: [
            "HTTP", "HTTPClientTestSupport", "StoreTestSupport", "ChildProcessSupport", "AppStore", "AppStoreSimulator", "JSON",
            "Crypto", "WeChatPayV3", "TestSupport", "StorageCore",
        ]),
        .testTarget(name: "CShimsTests", dependencies: [
            "COpenSSL", "CLibXML2", "CCurl", "CMicroHTTPD", "CSQLite", "CLibPQ", "CZlib", "CQREncode",
        ]),
        // The QR codes decoded back by zbarimg, their PNG read back by zlib, their SVG's path redrawn.
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode", "CZlib", "ChildProcessSupport"]),
        // Every primitive against published vectors and the openssl CLI.
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "ChildProcessSupport"]),
        // The C targets' functions called directly, as libxml2 and Crypto call them.
        .testTarget(name: "CCryptoTests", dependencies: ["CCrypto", "COpenSSL"]),
        .testTarget(name: "CFlatXMLTests", dependencies: ["CFlatXML", "CLibXML2"]),
    ],
    swiftLanguageModes: [.v6]
)

// Strict settings for every Swift target, applied in one place.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
