// SPDX-License-Identifier: Apache-2.0
import QRCode
import Testing

/// The matrix: libqrencode's symbol at level M in byte mode, and the texts it refuses.
struct QRCodeMatrixTests {
    @Test("A code_url encodes to a symbol whose size follows its version")
    func aCodeURLEncodes() throws {
        let matrix = try QRCode.Matrix.encode("weixin://wxpay/bizpayurl?pr=abc")
        #expect(matrix.size == 17 + 4 * matrix.version)
        #expect((1...40).contains(matrix.version))
        #expect(try QRCode.Matrix.encode("weixin://wxpay/bizpayurl?pr=abc") == matrix, "the same text, the same symbol")
    }

    @Test("The three finder patterns sit in the top-left, top-right and bottom-left corners, and outside is light")
    func finderPatterns() throws {
        let matrix = try QRCode.Matrix.encode("weixin://wxpay/bizpayurl?pr=Zk3Yq8a")
        let last = matrix.size - 7
        for (left, top) in [(0, 0), (last, 0), (0, last)] {
            for y in 0..<7 {
                for x in 0..<7 {
                    // Dark ring, light ring, dark 3×3 centre.
                    let ring = max(abs(x - 3), abs(y - 3))
                    #expect(matrix.isDark(x: left + x, y: top + y) == (ring != 2), "finder at (\(left), \(top)), module (\(x), \(y))")
                }
            }
        }
        for (x, y) in [(-1, 0), (0, -1), (matrix.size, 0), (0, matrix.size), (-5, -5)] {
            #expect(!matrix.isDark(x: x, y: y), "(\(x), \(y)) is in the quiet zone")
        }
    }

    @Test("The symbol's format information says error correction level M", arguments: [
        "weixin://wxpay/bizpayurl?pr=abc", "weixin://wxpay/bizpayurl?pr=Zk3Yq8a", String(repeating: "x", count: 500),
    ])
    func levelM(text: String) throws {
        let matrix = try QRCode.Matrix.encode(text)
        let format = try #require(FormatInformation(matrix), "the format information is no BCH codeword")
        #expect(format.level == 0b00, "level bits \(format.level): 01 is L, 00 M, 11 Q, 10 H")
    }

    @Test("Text is encoded in byte mode: 30 capital letters need version 3 (alphanumeric mode fits them in 2)")
    func byteMode() throws {
        // Byte mode at level M holds 26 bytes in version 2 and 42 in version 3; alphanumeric mode
        // holds 38 characters in version 2, numeric mode 34 digits in version 1.
        #expect(try QRCode.Matrix.encode(String(repeating: "A", count: 30)).version == 3)
        #expect(try QRCode.Matrix.encode(String(repeating: "7", count: 20)).version == 2)
        #expect(try QRCode.Matrix.encode(String(repeating: "a", count: 14)).version == 1)
        #expect(try QRCode.Matrix.encode(String(repeating: "a", count: 15)).version == 2)
    }

    @Test("The longest text allowed, 1,024 bytes, is encoded")
    func theLongestText() throws {
        let matrix = try QRCode.Matrix.encode(QRSamples.longest)
        #expect(QRSamples.longest.utf8.count == QRCode.maximumBytes)
        #expect(matrix.version <= 27, "version \(matrix.version): the documented bound is 27")
    }

    @Test("A text of 1,025 bytes is refused as too long, counted in UTF-8 bytes, not characters")
    func tooLong() {
        #expect(throws: QRCodeError.tooLong(bytes: 1_025, limit: 1_024)) {
            try QRCode.Matrix.encode(QRSamples.longest + "x")
        }
        // 342 characters of three bytes each.
        #expect(throws: QRCodeError.tooLong(bytes: 1_026, limit: 1_024)) {
            try QRCode.Matrix.encode(String(repeating: "码", count: 342))
        }
        #expect(throws: QRCodeError.tooLong(bytes: 1_000_000, limit: 1_024)) {
            try QRCode.Matrix.encode(String(repeating: "w", count: 1_000_000))
        }
    }

    @Test("A text holding a NUL and an empty text are refused with their own errors")
    func nulAndEmpty() {
        #expect(throws: QRCodeError.containsNUL) { try QRCode.Matrix.encode("weixin://wxpay/bizpayurl?pr=a\u{0}b") }
        #expect(throws: QRCodeError.containsNUL) { try QRCode.Matrix.encode("\u{0}") }
        #expect(throws: QRCodeError.empty) { try QRCode.Matrix.encode("") }
    }

    @Test("An error's description names the rule and never quotes the text")
    func descriptions() {
        let errors: [QRCodeError] = [.empty, .tooLong(bytes: 1_025, limit: 1_024), .containsNUL, .encodingFailed(errno: 34)]
        for error in errors {
            #expect(!error.description.isEmpty)
            #expect(!error.description.contains("bizpayurl"))
        }
        #expect(QRCodeError.tooLong(bytes: 1_025, limit: 1_024).description.contains("1024"))
    }

    @Test("Symbols are made concurrently, each the same as made alone")
    func concurrent() async throws {
        let alone = try QRSamples.codeURLs.map { try QRCode.Matrix.encode($0) }
        try await withThrowingTaskGroup(of: (Int, QRCode.Matrix).self) { group in
            for _ in 0..<4 {
                for (index, text) in QRSamples.codeURLs.enumerated() {
                    group.addTask { (index, try QRCode.Matrix.encode(text)) }
                }
            }
            for try await (index, matrix) in group { #expect(matrix == alone[index]) }
        }
    }
}

/// What the tests encode: code_url shapes WeChat answers, and the longest text allowed.
enum QRSamples {
    static let codeURLs = [
        // NATIVE mode 2: unifiedorder's code_url.
        "weixin://wxpay/bizpayurl?pr=abc",
        "weixin://wxpay/bizpayurl?pr=Zk3Yq8aB9",
        // NATIVE mode 1: the long, signed product URL.
        "weixin://wxpay/bizpayurl?sign=C380BEC2BFD727A4B6845133519F3AD6&appid=wx2421b1c4370ec43b&mch_id=10000100"
            + "&product_id=course-1024&time_stamp=1415949957&nonce_str=5K8264ILTKCH16CQ2502SI8ZNMTM67VS",
        // The simulator's shape, and a text in Chinese (UTF-8 in byte mode).
        "weixin://wxpay/bizpayurl?pr=sim_4200001234202612040000000001",
        "https://pay.example.com/课程/1024?from=二维码",
    ]

    /// 1,024 bytes: a code_url padded with a repeating alphabet.
    static let longest: String = {
        let head = "weixin://wxpay/bizpayurl?pr="
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        return head + String((0..<(1_024 - head.utf8.count)).map { alphabet[($0 * 7) % alphabet.count] })
    }()
}

/// The 15 bits of format information beside the top-left finder, read from the matrix and
/// unmasked; nil unless they are a BCH(15,5) codeword.
struct FormatInformation {
    /// Two bits: 01 is L, 00 M, 11 Q, 10 H.
    let level: Int
    let mask: Int

    init?(_ matrix: QRCode.Matrix) {
        // Bits 0…7 run down column 8 (skipping the timing row 6); bits 8…14 run left along row 8
        // (skipping the timing column 6).
        var bits = 0
        let positions: [(x: Int, y: Int)] = [(8, 0), (8, 1), (8, 2), (8, 3), (8, 4), (8, 5), (8, 7), (8, 8),
                                             (7, 8), (5, 8), (4, 8), (3, 8), (2, 8), (1, 8), (0, 8)]
        for (index, position) in positions.enumerated() where matrix.isDark(x: position.x, y: position.y) {
            bits |= 1 << index
        }
        let format = bits ^ 0b101_0100_0001_0010
        let data = format >> 10
        // The remainder of data × x^10 by the generator x^10 + x^8 + x^5 + x^4 + x^2 + x + 1.
        var remainder = data << 10
        for bit in stride(from: 14, through: 10, by: -1) where remainder & (1 << bit) != 0 {
            remainder ^= 0b101_0011_0111 << (bit - 10)
        }
        guard format == data << 10 | remainder else { return nil }
        level = data >> 3
        mask = data & 0b111
    }
}
