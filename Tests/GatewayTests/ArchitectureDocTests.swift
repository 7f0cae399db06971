// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// docs/architecture.md against the package as built: the drawing names every target of
/// Package.swift and nothing else, and every file the page names exists. A module added, renamed
/// or removed, or a file moved, fails here until the page says so.
struct ArchitectureDocTests {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: package.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every target's name in the manifest: `.target(name: "X"`, `.testTarget(name: "X"`,
    /// `.executableTarget(name: "X"`, `.systemLibrary(name: "X"`, and the manifest's own
    /// `systemLibrary("X", …)` helper.
    static func manifestTargets(_ manifest: String) -> Set<String> {
        let declared = #/\.(?:target|testTarget|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)"/#
        let helper = #/(?m)^\s*systemLibrary\(\s*"([^"]+)"/#
        return Set(manifest.matches(of: declared).map { String($0.output.1) })
            .union(manifest.matches(of: helper).map { String($0.output.1) })
    }

    /// The section "## Layers and the module graph": the names in brackets inside its drawings
    /// (fenced blocks), where every module is written `[Name]`.
    static func drawnModules(_ page: String) throws -> Set<String> {
        let start = try #require(page.range(of: "\n## Layers and the module graph\n"), "the section is gone")
        let rest = page[start.upperBound...]
        let section = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var names: Set<String> = []
        var inDrawing = false
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { inDrawing.toggle(); continue }
            guard inDrawing else { continue }
            names.formUnion(line.matches(of: #/\[([A-Za-z0-9_-]+)\]/#).map { String($0.output.1) })
        }
        return names
    }

    @Test("The manifest is read: its targets include the product's, the C libraries and the tests")
    func theManifestIsRead() throws {
        let targets = Self.manifestTargets(try Self.read("Package.swift"))
        for name in ["Gateway", "GatewayConsole", "COpenSSL", "CCrypto", "wxpay-gateway", "GatewayTests", "TestSupport"] {
            #expect(targets.contains(name), "\(name) not found in Package.swift: the parser no longer reads it")
        }
    }

    @Test("The module drawing names every target in Package.swift and nothing else")
    func theDrawingIsTheManifest() throws {
        let targets = Self.manifestTargets(try Self.read("Package.swift"))
        let drawn = try Self.drawnModules(try Self.read("docs/architecture.md"))
        #expect(!drawn.isEmpty)
        #expect(targets.subtracting(drawn).isEmpty,
                "in Package.swift but not in docs/architecture.md's drawing: \(targets.subtracting(drawn).sorted())")
        #expect(drawn.subtracting(targets).isEmpty,
                "in docs/architecture.md's drawing but not in Package.swift: \(drawn.subtracting(targets).sorted())")
    }

    @Test("The drawing's reader finds names only in brackets inside the section's drawings")
    func theDrawingReaderIsStrict() throws {
        let page = """
            # A
            [Outside] before the section
            ## Layers and the module graph
            [NotDrawn] in prose
            ```
            [One] ──▶ [Two-3]  plain words, [not a name]
            ```
            ## Next
            ```
            [After]
            ```
            """
        #expect(try Self.drawnModules(page) == ["One", "Two-3"])
    }

    /// Every file named in backticks: a path with a folder and one of the code or document endings.
    /// Paths are from the repository's root (`Sources/…`, `Tests/…`, `scripts/…`, `docs/…`,
    /// `deploy/…`), else from `Sources/` (`Gateway/Orders/Settlement.swift`), else from one
    /// module's folder, as the page says (`Orders/Settlement.swift` in Gateway's own paragraphs).
    @Test("Every file docs/architecture.md names exists")
    func everyNamedFileExists() throws {
        let page = try Self.read("docs/architecture.md")
        let named = Set(page.matches(of: #/`([A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)+\.(?:swift|c|h|py|md|json|yml|in))`/#)
            .map { String($0.output.1) })
        #expect(named.count > 50, "the page names \(named.count) files: the pattern no longer reads it")
        let files = FileManager.default
        let sources = Self.package.appendingPathComponent("Sources")
        let modules = try files.contentsOfDirectory(atPath: sources.path)
        let missing = named.filter { path in
            let candidates = [Self.package.appendingPathComponent(path), sources.appendingPathComponent(path)]
                + modules.map { sources.appendingPathComponent($0).appendingPathComponent(path) }
            return !candidates.contains { files.fileExists(atPath: $0.path) }
        }
        #expect(missing.isEmpty, "named in docs/architecture.md but not in the repository: \(missing.sorted())")
    }

    @Test("Every Sources path docs/architecture.md names exists exactly there")
    func everySourcesPathExists() throws {
        let page = try Self.read("docs/architecture.md")
        let named = page.matches(of: #/`(Sources/[^`\s]+)`/#).map { String($0.output.1) }
        let missing = named.filter { !FileManager.default.fileExists(atPath: Self.package.appendingPathComponent($0).path) }
        #expect(missing.isEmpty, "\(missing.sorted())")
    }

    @Test("The README names as many flows as the architecture page draws")
    func theFlowsAreCountedAlike() throws {
        let page = try Self.read("docs/architecture.md")
        let flows = page.matches(of: #/(?m)^### [0-9]+\. /#).count
        #expect(flows == 7)
        #expect(page.contains("## The seven flows"))
        #expect(try Self.read("README.md").contains("seven flows"))
    }
}
