// SPDX-License-Identifier: Apache-2.0
import Testing
import WeChatPay

struct GzipTests {
    static let text = Array(String(repeating: "`2014-11-10 16:33:45,`wx2421b1c4370ec43b,`10000100,`商品名称,`0.01\r\n", count: 2_000).utf8)

    @Test func compressedTextInflatesBackExactly() throws {
        let compressed = Gzip.compress(Self.text)
        #expect(compressed.count < Self.text.count / 10)
        #expect(try Gzip.decompress(compressed, maximumOutput: Self.text.count) == Self.text)
    }

    @Test func anEmptyInputRoundTrips() throws {
        #expect(try Gzip.decompress(Gzip.compress([]), maximumOutput: 0) == [])
    }

    @Test func theSystemGzipReadsOurOutputAndWeReadItsOutput() async throws {
        let theirs = try await ExternalTool.run("/usr/bin/gzip", ["-c", "-9"], input: Self.text)
        #expect(try Gzip.decompress(theirs, maximumOutput: 1 << 20) == Self.text)
        let ours = try await ExternalTool.run("/usr/bin/gzip", ["-d", "-c"], input: Gzip.compress(Self.text, level: 1))
        #expect(ours == Self.text)
    }

    @Test func aZipBombStopsAtTheOutputBound() {
        // 8 MiB of zeros compresses to about 8 KiB.
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 8 << 20), level: 9)
        #expect(bomb.count < 64 << 10)
        #expect(throws: GzipError.tooLarge(limit: 1 << 20)) { try Gzip.decompress(bomb, maximumOutput: 1 << 20) }
        #expect(GzipError.tooLarge(limit: 1).shortDescription == "too_large")
    }

    @Test func outputOfExactlyTheBoundIsAccepted() throws {
        let compressed = Gzip.compress(Self.text)
        #expect(try Gzip.decompress(compressed, maximumOutput: Self.text.count).count == Self.text.count)
        #expect(throws: GzipError.tooLarge(limit: Self.text.count - 1)) {
            try Gzip.decompress(compressed, maximumOutput: Self.text.count - 1)
        }
    }

    @Test func aTruncatedStreamIsReportedAsTruncated() {
        let compressed = Gzip.compress(Self.text)
        for length in [10, compressed.count / 2, compressed.count - 8, compressed.count - 1] {
            #expect(throws: GzipError.truncated) { try Gzip.decompress(Array(compressed.prefix(length)), maximumOutput: 1 << 20) }
        }
    }

    @Test func aDamagedStreamOrChecksumIsReportedAsCorrupt() {
        let compressed = Gzip.compress(Self.text)
        var badCRC = compressed
        badCRC[badCRC.count - 6] ^= 0xFF
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badCRC, maximumOutput: 1 << 20) }
        var badLength = compressed
        badLength[badLength.count - 2] ^= 0x01
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badLength, maximumOutput: 1 << 20) }
        var badMethod = compressed
        badMethod[2] = 0x07
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(badMethod, maximumOutput: 1 << 20) }
    }

    @Test func randomDamageNeverCrashesAndNeverExceedsTheBound() {
        let compressed = Gzip.compress(Self.text)
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<500 {
            var damaged = compressed
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                damaged[Int.random(in: 10..<damaged.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            do {
                let output = try Gzip.decompress(damaged, maximumOutput: Self.text.count)
                #expect(output.count <= Self.text.count)
            } catch {
                #expect([GzipError.corrupt, .truncated, .tooLarge(limit: Self.text.count)].contains(error))
            }
        }
    }

    @Test func concatenatedMembersInflateToTheirConcatenation() throws {
        let first = Array("总交易单数\r\n".utf8)
        let second = Array("`1,`0.01\r\n".utf8)
        #expect(try Gzip.decompress(Gzip.compress(first) + Gzip.compress(second), maximumOutput: 1024) == first + second)
    }

    @Test func trailingGarbageAfterTheStreamIsCorrupt() {
        #expect(throws: GzipError.corrupt) { try Gzip.decompress(Gzip.compress(Self.text) + Array("junk".utf8), maximumOutput: 1 << 20) }
    }

    @Test func anXMLErrorBodyOrAnEmptyBodyIsNotGzip() {
        let xml = Array("<xml><return_code><![CDATA[FAIL]]></return_code><return_msg><![CDATA[No Bill Exist]]></return_msg></xml>".utf8)
        #expect(throws: GzipError.notGzip) { try Gzip.decompress(xml, maximumOutput: 1 << 20) }
        #expect(throws: GzipError.notGzip) { try Gzip.decompress([], maximumOutput: 1 << 20) }
        #expect(throws: GzipError.notGzip) { try Gzip.decompress([0x1F], maximumOutput: 1 << 20) }
    }
}
