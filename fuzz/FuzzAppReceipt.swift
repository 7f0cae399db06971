// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the app receipt reader (built by scripts/fuzz with -sanitize=fuzzer,address;
// SimulatorPKI.swift and ReceiptIssuer.swift are compiled in to sign inputs as receipts).
import AppStore
import Foundation

/// Signs once per process: the chain and key of the receipts made here.
private let issuer = ReceiptIssuer(pki: SimulatorPKI(), bundleID: "com.example.courses")

/// Every input is used three ways, and must satisfy, or the process traps and libFuzzer keeps it:
///
/// - as a receipt's DER and as its base64: reading never crashes, and a refusal's description is
///   short and never holds the input;
/// - signed as a receipt's payload (the CMS decoder's accepting path): the reading agrees with a
///   plain strict-DER reading written here — when that reading finds Apple's shape, ours finds the
///   same bundle id and transaction ids; and every id ours finds is bytes of the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppReceipt(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        _ = try AppReceipt(der: bytes)
    } catch {
        precondition("\(error)".utf8.count < 100, "an error description grew with the input")
    }
    do {
        _ = try AppReceipt(base64: String(decoding: bytes, as: UTF8.self))
    } catch {
        precondition("\(error)".utf8.count < 100, "an error description grew with the input")
    }
    guard size <= 60_000 else { return 0 }
    let ours = try? AppReceipt(der: issuer.sign(bytes))
    if let ours {
        for purchase in ours.purchases {
            precondition(contains(bytes, Array(purchase.transactionID.utf8)), "an id that is not in the input")
        }
    }
    if let plain = PlainReceipt(bytes) {
        precondition(ours != nil, "a receipt of Apple's shape was refused")
        precondition(ours?.bundleID == plain.bundleID, "the bundle id differs")
        precondition(ours?.purchases.map(\.transactionID) == plain.transactionIDs, "the transaction ids differ")
    }
    return 0
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
    for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
        return true
    }
    return false
}

/// A strict, plain reading of a receipt payload, independent of OpenSSL: short tags of the
/// universal class, minimal definite lengths, minimal INTEGERs of at most eight bytes; nil for
/// anything else, or for more than 10,000 purchases.
private struct PlainReceipt {
    var bundleID: String?
    var transactionIDs: [String] = []

    struct Element { var tag: UInt8; var content: ArraySlice<UInt8>; var end: Int }

    init?(_ bytes: [UInt8]) {
        guard var top = Self.element(bytes[...]), top.end == bytes.count else { return nil }
        if top.tag == 0x04 {
            guard let inner = Self.element(top.content), inner.end == top.content.endIndex else { return nil }
            top = inner
        }
        guard top.tag == 0x31, let attributes = Self.attributes(top.content) else { return nil }
        for (type, value) in attributes {
            if type == 2 {
                guard let text = Self.text(value) else { return nil }
                bundleID = text.value
            } else if type == 17 {
                guard transactionIDs.count < 10_000, let set = Self.element(value), set.tag == 0x31, set.end == value.endIndex,
                      let fields = Self.attributes(set.content) else { return nil }
                var id: String?
                for (field, inner) in fields {
                    switch field {
                    case 1703, 1705, 1702:
                        guard let text = Self.text(inner) else { return nil }
                        if field == 1703 { id = text.value }
                    case 1701:
                        guard let integer = Self.element(inner), integer.tag == 0x02, integer.end == inner.endIndex,
                              Self.integer(integer.content) != nil else { return nil }
                    case 1704:
                        guard Self.text(inner) != nil else { return nil }
                    default: continue
                    }
                }
                if let id, !id.isEmpty { transactionIDs.append(id) }
            }
        }
    }

    static func element(_ bytes: ArraySlice<UInt8>) -> Element? {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { return nil }
        let tag = bytes[index]
        guard tag & 0xC0 == 0, tag & 0x1F != 0x1F else { return nil }
        index += 1
        guard index < bytes.endIndex else { return nil }
        var length = Int(bytes[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 3, index + count <= bytes.endIndex, bytes[index] != 0 else { return nil }
            length = 0
            for byte in bytes[index..<(index + count)] { length = length << 8 | Int(byte) }
            guard length >= 0x80 else { return nil }
            index += count
        }
        guard index + length <= bytes.endIndex else { return nil }
        return Element(tag: tag, content: bytes[index..<(index + length)], end: index + length)
    }

    static func integer(_ content: ArraySlice<UInt8>) -> Int64? {
        guard !content.isEmpty, content.count <= 8 else { return nil }
        if content.count > 1 {
            let first = content[content.startIndex], second = content[content.startIndex + 1]
            if (first == 0 && second & 0x80 == 0) || (first == 0xFF && second & 0x80 != 0) { return nil }
        }
        var value: Int64 = content[content.startIndex] & 0x80 != 0 ? -1 : 0
        for byte in content { value = value << 8 | Int64(byte) }
        return value
    }

    /// (type, value content) of each attribute of a SET's content.
    static func attributes(_ content: ArraySlice<UInt8>) -> [(Int64, ArraySlice<UInt8>)]? {
        var result: [(Int64, ArraySlice<UInt8>)] = []
        var rest = content
        while !rest.isEmpty {
            guard let sequence = element(rest), sequence.tag == 0x30,
                  let type = element(sequence.content), type.tag == 0x02, let number = integer(type.content),
                  let version = element(sequence.content[type.end...]), version.tag == 0x02, integer(version.content) != nil,
                  let value = element(sequence.content[version.end...]), value.tag == 0x04,
                  value.end == sequence.content.endIndex
            else { return nil }
            result.append((number, value.content))
            rest = rest[sequence.end...]
        }
        return result
    }

    /// A UTF8String or IA5String inside a value: nil when malformed; `value` nil for another type.
    static func text(_ content: ArraySlice<UInt8>) -> (value: String?, ())? {
        guard let inner = element(content), inner.end == content.endIndex else { return nil }
        guard inner.tag == 0x0C || inner.tag == 0x16 else { return (nil, ()) }
        guard inner.content.count <= 256, let text = String(validating: inner.content, as: UTF8.self) else { return nil }
        return (text, ())
    }
}
