// SPDX-License-Identifier: Apache-2.0
import ChildProcessSupport
import CZlib
import Foundation
import QRCode
import Testing

/// The images: PNGs a real decoder reads back to their text and whose pixels are the matrix's,
/// SVGs whose path redrawn is the matrix.
struct QRImageTests {
    @Test("A PNG decodes back to its text with zbarimg", arguments: QRSamples.codeURLs + [QRSamples.longest])
    func zbarDecodesThePNG(text: String) async throws {
        let png = try QRCode.Matrix.encode(text).png()
        #expect(try await Zbar.decode(png) == text)
    }

    @Test("A PNG at the smallest scale and without a quiet zone beyond 1 module still decodes with zbarimg")
    func zbarDecodesASmallPNG() async throws {
        let text = QRSamples.codeURLs[0]
        #expect(try await Zbar.decode(try QRCode.Matrix.encode(text).png(scale: 2, border: 1)) == text)
    }

    @Test("A PNG is well formed: signature, IHDR of (size + 2 × border) × scale a side, 1-bit grayscale, valid CRCs",
          arguments: [(8, 4), (1, 0), (3, 2), (32, 16)])
    func pngStructure(scale: Int, border: Int) throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.codeURLs[2])
        let image = try PNGImage(matrix.png(scale: scale, border: border))
        #expect(image.width == (matrix.size + 2 * border) * scale)
        #expect(image.height == image.width)
        #expect(image.chunkTypes.first == "IHDR" && image.chunkTypes.last == "IEND")
        #expect(image.chunkTypes.contains("IDAT"))
    }

    @Test("A PNG's pixels are the matrix's modules, scaled, inside a light quiet zone", arguments: [(8, 4), (1, 0), (5, 3)])
    func pngPixels(scale: Int, border: Int) throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.codeURLs[1])
        let image = try PNGImage(matrix.png(scale: scale, border: border))
        var wrong = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let dark = matrix.isDark(x: x / scale - border, y: y / scale - border)
                if image.isDark(x: x, y: y) != dark { wrong += 1 }
            }
        }
        #expect(wrong == 0, "\(wrong) pixels differ from the matrix")
    }

    @Test("Scale and border are clamped into their ranges, in the PNG and the SVG alike")
    func clamped() throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.codeURLs[0])
        #expect(matrix.png(scale: 0, border: -3) == matrix.png(scale: 1, border: 0))
        #expect(matrix.png(scale: 1_000_000, border: 1_000_000) == matrix.png(scale: 32, border: 16))
        #expect(try PNGImage(matrix.png(scale: .max, border: .max)).width == (matrix.size + 32) * 32)
        #expect(matrix.svg(scale: -1, border: 99) == matrix.svg(scale: 1, border: 16))
    }

    @Test("The largest PNG, of the longest text at the largest scale and border, stays small")
    func theLargestPNG() throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.longest)
        let png = matrix.png(scale: QRCode.scales.upperBound, border: QRCode.borders.upperBound)
        let image = try PNGImage(png)
        #expect(image.width == (matrix.size + 32) * 32)
        #expect(png.count < 256 * 1_024, "\(png.count) bytes")
    }

    @Test("An SVG's one path, redrawn, darkens exactly the matrix's dark modules", arguments: QRSamples.codeURLs + [QRSamples.longest])
    func svgPath(text: String) throws {
        let matrix = try QRCode.Matrix.encode(text)
        let border = 4
        let svg = matrix.svg(scale: 8, border: border)
        let drawn = try SVGPath.darkModules(svg)
        var expected = Set<SVGPath.Module>()
        for y in 0..<matrix.size {
            for x in 0..<matrix.size where matrix.isDark(x: x, y: y) { expected.insert(.init(x: x + border, y: y + border)) }
        }
        #expect(drawn == expected, "\(drawn.subtracting(expected).count) drawn but light, \(expected.subtracting(drawn).count) dark but not drawn")
    }

    @Test("An SVG says its size in pixels and modules, draws crisp edges on a light background, and has one path")
    func svgAttributes() throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.codeURLs[0])
        let svg = matrix.svg(scale: 6, border: 2)
        let side = matrix.size + 4
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" "))
        #expect(svg.contains(" width=\"\(side * 6)\" height=\"\(side * 6)\" "))
        #expect(svg.contains(" viewBox=\"0 0 \(side) \(side)\" "))
        #expect(svg.contains(" shape-rendering=\"crispEdges\""))
        #expect(svg.contains("<rect width=\"\(side)\" height=\"\(side)\" fill=\"#fff\"/>"))
        #expect(svg.components(separatedBy: "<path ").count == 2)
        #expect(svg.hasSuffix("</svg>\n"))
    }
}

/// zbarimg (zbar-tools, installed by scripts/setup): the independent decoder.
enum Zbar {
    static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin"]).map { "\($0)/zbarimg" }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The text zbarimg reads from `png`; a failure to read one is a test failure.
    static func decode(_ png: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let zbarimg = try #require(executable, "zbarimg is not installed: run scripts/setup (it installs zbar-tools)",
                                   sourceLocation: sourceLocation)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("wxpay-qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await ChildProcess.run(zbarimg, ["--raw", "-q", file.path], environment: ProcessInfo.processInfo.environment,
                                             timeout: .seconds(120))
        try #require(run.status == 0, "zbarimg exited \(run.status): \(String(decoding: run.errors, as: UTF8.self))",
                     sourceLocation: sourceLocation)
        var output = String(decoding: run.output, as: UTF8.self)
        // --raw prints the symbol's data and a line feed.
        if output.hasSuffix("\n") { output.removeLast() }
        return output
    }
}

/// A PNG read by the test's own code: each chunk's CRC checked by a CRC-32 computed here, the
/// header read, the pixels inflated by zlib and unfiltered (the renderer uses filter 0 only).
struct PNGImage {
    struct Malformed: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    let width: Int
    let height: Int
    let chunkTypes: [String]
    /// One row of packed bits a scanline, its filter byte removed.
    private let rows: [[UInt8]]

    init(_ bytes: [UInt8]) throws {
        guard bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { throw Malformed("no PNG signature") }
        var offset = 8
        var types: [String] = []
        var header: [UInt8] = []
        var compressed: [UInt8] = []
        while offset < bytes.count {
            guard offset + 12 <= bytes.count else { throw Malformed("a chunk cut short at \(offset)") }
            let length = Int(Self.bigEndian(bytes, offset))
            guard offset + 12 + length <= bytes.count else { throw Malformed("a chunk's data cut short at \(offset)") }
            let typed = Array(bytes[offset + 4..<offset + 8 + length])
            let type = String(decoding: typed.prefix(4), as: UTF8.self)
            guard Self.bigEndian(bytes, offset + 8 + length) == Self.crc32(typed) else { throw Malformed("\(type)'s CRC is wrong") }
            types.append(type)
            if type == "IHDR" { header = Array(typed.dropFirst(4)) }
            if type == "IDAT" { compressed += typed.dropFirst(4) }
            offset += 12 + length
        }
        guard header.count == 13 else { throw Malformed("IHDR is \(header.count) bytes") }
        width = Int(Self.bigEndian(header, 0))
        height = Int(Self.bigEndian(header, 4))
        guard Array(header[8...]) == [1, 0, 0, 0, 0] else { throw Malformed("not 1-bit grayscale, uninterlaced: \(header[8...])") }
        chunkTypes = types

        let stride = 1 + (width + 7) / 8
        var raw = [UInt8](repeating: 0, count: stride * height)
        var rawLength = uLong(raw.count)
        let status = uncompress(&raw, &rawLength, compressed, uLong(compressed.count))
        guard status == Z_OK, Int(rawLength) == raw.count else { throw Malformed("IDAT inflates to \(rawLength) bytes (zlib \(status))") }
        rows = try (0..<height).map { line in
            guard raw[line * stride] == 0 else { throw Malformed("scanline \(line) has filter \(raw[line * stride])") }
            return Array(raw[line * stride + 1..<(line + 1) * stride])
        }
    }

    /// Grayscale 0 is black.
    func isDark(x: Int, y: Int) -> Bool { rows[y][x >> 3] & (0x80 >> UInt8(x & 7)) == 0 }

    static func bigEndian(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// CRC-32 (ISO-HDLC, reflected 0xEDB88320), bit by bit: PNG's chunk checksum.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}

/// The SVG's path redrawn: its `d` read as absolute moves and relative horizontal and vertical
/// lines, each closed subpath an axis-aligned rectangle whose unit squares are its modules.
enum SVGPath {
    struct Module: Hashable {
        let x: Int
        let y: Int
    }

    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    static func darkModules(_ svg: String) throws -> Set<Module> {
        let paths = svg.matches(of: #/<path fill="#000" d="([^"]*)"\/>/#)
        guard paths.count == 1, let d = paths.first?.output.1 else { throw Unreadable(description: "\(paths.count) dark paths") }
        var modules = Set<Module>()
        var current = (x: 0, y: 0)
        var corners: [(x: Int, y: Int)] = []
        var scanner = Substring(d)
        func number() throws -> Int {
            let digits = scanner.prefix { $0 == "-" || $0.isNumber }
            scanner = scanner.dropFirst(digits.count)
            guard let value = Int(digits) else { throw Unreadable(description: "a number expected before \(scanner.prefix(12))") }
            return value
        }
        while let command = scanner.first {
            scanner = scanner.dropFirst()
            switch command {
            case "M":
                current.x = try number()
                guard scanner.first == " " else { throw Unreadable(description: "M x y") }
                scanner = scanner.dropFirst()
                current.y = try number()
                corners = [current]
            case "h":
                current.x += try number()
                corners.append(current)
            case "v":
                current.y += try number()
                corners.append(current)
            case "z":
                // A rectangle: four corners, each side axis-aligned, back to the start.
                guard corners.count == 4 else { throw Unreadable(description: "a subpath of \(corners.count) corners") }
                let xs = corners.map(\.x), ys = corners.map(\.y)
                guard Set(xs).count == 2, Set(ys).count == 2 else { throw Unreadable(description: "not a rectangle: \(corners)") }
                for y in ys.min()!..<ys.max()! {
                    for x in xs.min()!..<xs.max()! {
                        guard modules.insert(Module(x: x, y: y)).inserted else {
                            throw Unreadable(description: "module (\(x), \(y)) drawn twice")
                        }
                    }
                }
                corners = []
            default:
                throw Unreadable(description: "unexpected command \(command)")
            }
        }
        guard corners.isEmpty else { throw Unreadable(description: "an unclosed subpath") }
        return modules
    }
}
