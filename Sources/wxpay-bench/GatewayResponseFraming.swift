// SPDX-License-Identifier: Apache-2.0
import Crypto
import Glibc

/// Just enough of an HTTP/1.1 response parser for the load generator: the status code, where the
/// response ends (Content-Length or chunked), whether the server closes, and the body.
enum GatewayResponseFraming {
    enum Parsed: Equatable {
        case incomplete
        case malformed(String)
        /// `length`: bytes of `bytes` the response took, head and body.
        case complete(status: Int, length: Int, closes: Bool)
    }

    /// Parses the response at the start of `bytes`; on `.complete`, `body` holds its body (chunks joined).
    static func parse(_ bytes: UnsafeRawBufferPointer, body: inout [UInt8]) -> Parsed {
        guard let headEnd = find(crlfcrlf, in: bytes, from: 0) else {
            return bytes.count > 16 * 1024 ? .malformed("response head over 16 KiB") : .incomplete
        }
        // "HTTP/1.1 201 Created": the code is bytes 9..<12.
        guard headEnd >= 12, bytes.starts(with: "HTTP/1.".utf8), bytes[8] == UInt8(ascii: " ") else {
            return .malformed("not an HTTP/1.x status line")
        }
        var status = 0
        for byte in bytes[9..<12] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return .malformed("bad status code") }
            status = status * 10 + Int(byte - UInt8(ascii: "0"))
        }
        var contentLength: Int?
        var chunked = false
        var closes = false
        // Header lines, from after the status line to the blank line.
        var lineStart = (find(crlf, in: bytes, from: 0) ?? headEnd) + 2
        while lineStart < headEnd + 2 {
            let lineEnd = find(crlf, in: bytes, from: lineStart) ?? headEnd
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd])
            if let value = headerValue(line, named: "content-length") {
                guard let length = Int(String(decoding: value, as: UTF8.self)), length >= 0 else {
                    return .malformed("bad Content-Length")
                }
                contentLength = length
            } else if let value = headerValue(line, named: "transfer-encoding") {
                chunked = equalsIgnoringCase(value, "chunked")
            } else if let value = headerValue(line, named: "connection") {
                closes = equalsIgnoringCase(value, "close")
            }
            lineStart = lineEnd + 2
        }
        let bodyStart = headEnd + 4
        // 204 and 304 have no body and carry no length (RFC 9110): a v3 notify's acknowledgement is 204.
        if status == 204 || status == 304 {
            body.removeAll(keepingCapacity: true)
            return .complete(status: status, length: bodyStart, closes: closes)
        }
        if chunked { return dechunk(bytes, from: bodyStart, status: status, closes: closes, body: &body) }
        // Every other answer the gateway gives has a length; reading to EOF is not supported here.
        guard let contentLength else { return .malformed("response without Content-Length or chunked") }
        guard bytes.count >= bodyStart + contentLength else { return .incomplete }
        body.removeAll(keepingCapacity: true)
        body.append(contentsOf: bytes[bodyStart..<bodyStart + contentLength])
        return .complete(status: status, length: bodyStart + contentLength, closes: closes)
    }

    private static func dechunk(_ bytes: UnsafeRawBufferPointer, from start: Int, status: Int, closes: Bool,
                                body: inout [UInt8]) -> Parsed {
        body.removeAll(keepingCapacity: true)
        var position = start
        while true {
            guard let sizeEnd = find(crlf, in: bytes, from: position) else { return .incomplete }
            // Chunk extensions (";name=value") are allowed and ignored.
            var size = 0
            var digits = 0
            for byte in bytes[position..<sizeEnd] {
                guard let digit = Hex.value(ofDigit: byte).map(Int.init) else { break }
                size = size * 16 + digit
                digits += 1
                guard size <= 1 << 24 else { return .malformed("chunk too large") }
            }
            guard digits > 0 else { return .malformed("bad chunk size") }
            position = sizeEnd + 2
            if size == 0 {
                // Trailer fields, if any, end with an empty line.
                guard let end = find(crlf, in: bytes, from: position) else { return .incomplete }
                if end == position { return .complete(status: status, length: end + 2, closes: closes) }
                guard let trailersEnd = find(crlfcrlf, in: bytes, from: position) else { return .incomplete }
                return .complete(status: status, length: trailersEnd + 4, closes: closes)
            }
            guard bytes.count >= position + size + 2 else { return .incomplete }
            guard bytes[position + size] == 13, bytes[position + size + 1] == 10 else {
                return .malformed("chunk not followed by CRLF")
            }
            body.append(contentsOf: bytes[position..<position + size])
            position += size + 2
        }
    }

    /// The value of `line` when it is the header `name` (lowercase), without surrounding spaces.
    private static func headerValue(_ line: UnsafeRawBufferPointer, named name: String) -> UnsafeRawBufferPointer? {
        let nameLength = name.utf8.count
        guard line.count > nameLength, line[nameLength] == UInt8(ascii: ":") else { return nil }
        for (byte, expected) in zip(line, name.utf8) where byte | 0x20 != expected {
            return nil
        }
        var start = nameLength + 1
        var end = line.count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: line[start..<end])
    }

    private static func equalsIgnoringCase(_ value: UnsafeRawBufferPointer, _ lowercase: String) -> Bool {
        value.count == lowercase.utf8.count && zip(value, lowercase.utf8).allSatisfy { $0 | 0x20 == $1 }
    }


    private static let crlf: [UInt8] = [13, 10]
    private static let crlfcrlf: [UInt8] = [13, 10, 13, 10]

    /// The offset of `needle` in `bytes` at or after `start`. (Glibc's `memmem` needs _GNU_SOURCE,
    /// which Swift's Glibc module does not define; `memchr` + `memcmp` are as quick for these sizes.)
    static func find(_ needle: [UInt8], in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let first = needle.first, let base = bytes.baseAddress else { return nil }
        var position = start
        return needle.withUnsafeBytes { needle -> Int? in
            while bytes.count - position >= needle.count {
                guard let needleBase = needle.baseAddress,
                      let hit = memchr(base + position, Int32(first), bytes.count - position - needle.count + 1)
                else {
                    return nil
                }
                let offset = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(hit, needleBase, needle.count) == 0 { return offset }
                position = offset + 1
            }
            return nil
        }
    }
}
