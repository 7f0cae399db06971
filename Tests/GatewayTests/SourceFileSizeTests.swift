// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing

/// The house rule on file sizes (style): a Swift file in Sources over 400 lines says at its top,
/// in a `//` comment under the licence line, why it is one file; none is over 600.
struct SourceFileSizeTests {
    static let sources = ArchitectureDocTests.package.appendingPathComponent("Sources")

    static func swiftFiles() throws -> [(path: String, lines: [Substring])] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: sources.path))
        var files: [(String, [Substring])] = []
        while let path = enumerator.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: sources.appendingPathComponent(path), encoding: .utf8)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            if lines.last == "" { lines.removeLast() }
            files.append((path, lines))
        }
        return files
    }

    @Test("No Swift file in Sources is over 600 lines, and one over 400 says at its top why it is one file")
    func fileSizes() throws {
        let files = try Self.swiftFiles()
        #expect(files.count > 300, "found \(files.count) Swift files under Sources")
        for file in files where file.lines.count > 400 {
            #expect(file.lines.count <= 600, "\(file.path): \(file.lines.count) lines")
            let top = file.lines.dropFirst().first ?? ""
            #expect(top.hasPrefix("// ") && !top.hasPrefix("///"),
                    "\(file.path): \(file.lines.count) lines without a `//` comment at its top saying why it is one file")
        }
    }
}
