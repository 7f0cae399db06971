// SPDX-License-Identifier: Apache-2.0
import CHeapStatistics
import ChildProcessSupport
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import WeChatPay

/// reliability.md T5 against the parser: every hostile document is refused with the expected
/// typed error, in bounded time, without reading files or connecting anywhere, without leaking
/// memory, and with an ordinary document decoding normally right after it.
@Suite(.serialized)
struct HostileXMLTests {
    static let listener: HostileListener? = try? HostileListener()
    static let corpus = HostileCorpus.cases(dtdURL: listener?.url ?? "http://127.0.0.1:1/x.dtd")

    @Test(arguments: corpus)
    func eachHostileDocumentIsRefusedWithItsTypedErrorQuicklyAndTheNextOneStillDecodes(_ hostile: HostileCase) throws {
        let bytes = hostile.bytes()
        let clock = ContinuousClock()
        let start = clock.now
        var refusal: FlatXMLError?
        var leaked: Fields?
        do {
            leaked = try FlatXML.decode(bytes, root: "xml", maximumSize: hostile.maximumSize)
        } catch {
            refusal = error
        }
        let elapsed = clock.now - start

        #expect(leaked == nil, "decoded instead of refused")
        #expect(refusal?.shortDescription == hostile.expected, "refused as \(refusal?.shortDescription ?? "-")")
        // Milliseconds when the machine is quiet; the bound is for "never hangs or goes quadratic",
        // on a two-core machine shared with fuzzers and builds.
        #expect(elapsed < .seconds(10))
        if let refusal {
            #expect(!"\(refusal)".contains(Canary.value))
            #expect(!String(reflecting: refusal).contains(Canary.value))
            #expect("\(refusal)".utf8.count < 200, "descriptions never echo the document")
        }
        if let leaked {
            #expect(!leaked.contains { $0.value.contains(Canary.value) })
        }
        #expect(Self.listener?.sawConnection() == false, "the parser connected to the DTD URL")
        #expect(try FlatXML.decode(HostileCorpus.validNotify)["total_fee"] == "1")
    }

    @Test func theListenerReallyNoticesAConnection() throws {
        // Guards the "no connection" assertion above against a listener that cannot see anything.
        let listener = try #require(Self.listener)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = listener.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        #expect(connected)
        #expect(listener.sawConnection())
        #expect(!listener.sawConnection())
    }

    @Test func theCanaryFileIsReadableSoTheXXECasesWouldSeeIt() throws {
        let content = try String(contentsOfFile: Canary.path, encoding: .utf8)
        #expect(content == Canary.value)
    }

    @Test func theWholeCorpusRunTwentyTimesGrowsTheHeapByLessThan4MB() async throws {
        guard IsolatedTest.isolated else {
            return try await IsolatedTest.expectPasses("HostileXMLTests/theWholeCorpusRunTwentyTimesGrowsTheHeapByLessThan4MB")
        }
        let corpus = Self.corpus.map { ($0, $0.bytes()) }
        func runOnce() {
            for (hostile, bytes) in corpus {
                _ = try? FlatXML.decode(bytes, root: "xml", maximumSize: hostile.maximumSize)
                _ = try? FlatXML.decode(HostileCorpus.validNotify)
            }
        }
        runOnce()  // warm up: pools, caches and allocator arenas reach their steady size
        let before = HeapInUse.current()
        for _ in 0..<20 { runOnce() }
        let after = HeapInUse.current()
        // Alone, the run grows the heap by a few KiB (6–16 KiB measured); a context or a document
        // left behind per refusal would be tens of KiB each, 800 refusals here.
        #expect(after - before < 4 * 1024 * 1024, "grew by \((after - before) / 1024) KiB")
    }

    @Test func manyDocumentsWithUniqueFieldNamesLeaveNoMemoryBehind() async throws {
        // libxml2 interns every element name in a context's dictionary for the context's life:
        // without retiring worn contexts, 36 MB of distinct names here grew a pooled one by as much.
        // (Counted in the pool's dictionaries, not in the process's memory, which every other test
        // running at the same time moves by more than that.)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(60)
        var decoded = 0
        for document in 0..<1_200 where clock.now < deadline {
            var text = "<xml>"
            for field in 0..<100 {
                let name = "n\(document)_\(field)_" + String(repeating: "x", count: 290)
                text += "<\(name)>1</\(name)>"
            }
            text += "</xml>"
            decoded += try FlatXML.decode(Array(text.utf8)).count
        }
        #expect(decoded == 120_000)
        let kept = FlatXMLParserPool.shared.internedNames
        #expect(kept <= FlatXMLParserPool.maximumIdle * FlatXMLParser.maximumInternedNames, "\(kept) names kept")
        #expect(try FlatXML.decode(HostileCorpus.validNotify).count == 7)
    }

    @Test func knownAndLookAlikeFieldNamesDecodeToExactlyTheirOwnBytes() throws {
        // Known names come from a shared table; a near miss must never be mapped onto one.
        let names = ["appid", "Appid", "appi", "appid_", "coupon_fee_0", "coupon_fee_9", "coupon_fee_10",
                     "refund_recv_accout_3", "settlement_total_fee", "settlement_total_feE", "sign", "sign_type",
                     "sign_typ", "名前"]
        let body = "<xml>" + names.enumerated().map { "<\($1)>\($0)</\($1)>" }.joined() + "</xml>"
        let fields = try FlatXML.decode(Array(body.utf8))
        #expect(fields.names == names)
        #expect(fields.elements.map(\.value) == names.indices.map(String.init))
    }

    @Test func whitespaceOnlyValuesAreKeptNotDroppedAsIgnorable() throws {
        // A value of spaces takes part in the signature; losing it would break verification.
        let fields = try FlatXML.decode(Array("<xml>\n  <attach> </attach>\n  <a>\t</a></xml>".utf8))
        #expect(fields["attach"] == " ")
        #expect(fields["a"] == "\t")
    }

    @Test func aDeclaredEncodingNeverChangesHowBytesAreRead() throws {
        // UTF-8 bytes under a GBK or Latin-1 declaration stay what they are: no transcoding.
        for encoding in ["GBK", "ISO-8859-1", "UTF-16"] {
            let body = Array(#"<?xml version="1.0" encoding="\#(encoding)"?><xml><body>腾讯</body></xml>"#.utf8)
            #expect(try FlatXML.decode(body)["body"] == "腾讯", "\(encoding)")
        }
    }

    @Test func aUTF8ByteOrderMarkIsAccepted() throws {
        #expect(try FlatXML.decode([0xEF, 0xBB, 0xBF] + Array("<xml><a>1</a></xml>".utf8))["a"] == "1")
    }

    @Test func theFivePredefinedEntitiesAndCharacterReferencesStillDecode() throws {
        let fields = try FlatXML.decode(Array("<xml><a>&lt;&gt;&amp;&apos;&quot;&#20013;&#x6587;</a></xml>".utf8))
        #expect(fields["a"] == "<>&'\"中文")
    }

    @Test func errorDescriptionsNeverEchoALongFieldName() throws {
        let name = String(repeating: "k", count: 5_000)
        let body = Array("<xml><\(name)>1</\(name)><\(name)>2</\(name)></xml>".utf8)
        let error = #expect(throws: FlatXMLError.self) { try FlatXML.decode(body) }
        #expect(error?.shortDescription == "duplicate_field")
        #expect(!(error.map { "\($0)" } ?? "").contains("kkkkkkkk"))
    }
}

/// The bytes the process's heap has handed out and not taken back (glibc's `mallinfo2`): what a
/// leak grows. (The resident set size would also count what glibc keeps in its arenas after a free.)
/// Measured in a process running one test alone (`IsolatedTest`).
enum HeapInUse {
    /// Small blocks in use plus blocks mapped on their own (large ones).
    static func current() -> Int {
        let info = mallinfo2()
        return Int(info.uordblks + info.hblkhd)
    }
}
