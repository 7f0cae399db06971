// SPDX-License-Identifier: Apache-2.0
import CZlib

/// gzip for downloadbill bodies (`tar_type=GZIP`), through zlib.
///
/// Decompression is bounded: a gzip body is attacker-sized only through WeChat or a man in the
/// middle, but a few kilobytes can inflate to gigabytes (a zip bomb), so output beyond
/// `maximumOutput` stops the work with an error instead of exhausting memory.
///
/// ```swift
/// let text = try Gzip.decompress(body, maximumOutput: 256 * 1024 * 1024)
/// let body = Gzip.compress(Bill.render(…))        // the simulator's side
/// ```
public enum Gzip {
    /// Output is produced in chunks of this size, so the bound is checked at least this often.
    private static let chunkSize = 64 * 1024

    /// Inflates a gzip body; concatenated gzip members are joined, as `gzip -d` does.
    /// - Parameters:
    ///   - input: the compressed bytes.
    ///   - maximumOutput: the most decompressed bytes accepted.
    /// - Throws: `GzipError.notGzip` (no gzip magic: an XML error body, say), `.truncated`,
    ///   `.corrupt` (bad data, a bad CRC or length, trailing garbage), `.tooLarge`.
    public static func decompress(_ input: [UInt8], maximumOutput: Int) throws(GzipError) -> [UInt8] {
        guard input.count >= 2, input[0] == 0x1F, input[1] == 0x8B else { throw .notGzip }
        guard input.count <= Int(UInt32.max) else { throw .tooLarge(limit: maximumOutput) }
        return try withStream(end: { inflateEnd($0) }) { stream throws(GzipError) in
            // 15 + 16: a 32 KiB window and a gzip (not zlib) wrapper.
            guard wxpay_inflate_init2(stream, 15 + 16) == Z_OK else {
                fatalError("zlib could not allocate an inflate stream")
            }
            var output: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: chunkSize)
            let result: Result<Void, GzipError> = input.withUnsafeBufferPointer { inputBuffer in
                chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                    stream.pointee.next_in = UnsafeMutablePointer(mutating: inputBuffer.baseAddress!)
                    stream.pointee.avail_in = UInt32(inputBuffer.count)
                    while true {
                        stream.pointee.next_out = chunkBuffer.baseAddress
                        stream.pointee.avail_out = UInt32(chunkBuffer.count)
                        let status = inflate(stream, Z_NO_FLUSH)
                        let produced = chunkBuffer.count - Int(stream.pointee.avail_out)
                        guard output.count + produced <= maximumOutput else {
                            return .failure(.tooLarge(limit: maximumOutput))
                        }
                        output.append(contentsOf: chunkBuffer[0..<produced])
                        switch status {
                        case Z_OK:
                            continue
                        case Z_STREAM_END:
                            if stream.pointee.avail_in == 0 { return .success(()) }
                            // Another member follows; anything that is not gzip fails in the next inflate.
                            guard inflateReset(stream) == Z_OK else { return .failure(.corrupt) }
                        case Z_BUF_ERROR where stream.pointee.avail_in == 0:
                            // No progress possible and nothing left to read: the stream stops mid-way.
                            return .failure(.truncated)
                        default:
                            // Z_DATA_ERROR (bad data, CRC or length), Z_NEED_DICT (not gzip), Z_MEM_ERROR.
                            return .failure(.corrupt)
                        }
                    }
                }
            }
            try result.get()
            return output
        }
    }

    /// Deflates `input` into a single gzip member (no file name, no timestamp, so the output
    /// depends on the input alone).
    /// - Parameter level: zlib's 0 (store) to 9 (smallest); 6 is zlib's and gzip's default.
    public static func compress(_ input: [UInt8], level: Int32 = 6) -> [UInt8] {
        precondition((0...9).contains(level), "zlib compression levels are 0...9")
        precondition(input.count <= Int(UInt32.max), "gzip input over 4 GiB is not supported")
        return withStream(end: { deflateEnd($0) }) { stream in
            guard wxpay_deflate_init2(stream, level, 15 + 16) == Z_OK else {
                fatalError("zlib could not allocate a deflate stream")
            }
            var output: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: chunkSize)
            input.withUnsafeBufferPointer { inputBuffer in
                chunk.withUnsafeMutableBufferPointer { chunkBuffer in
                    // zlib accepts a null next_in when avail_in is 0 (an empty input).
                    stream.pointee.next_in = inputBuffer.baseAddress.map { UnsafeMutablePointer(mutating: $0) }
                    stream.pointee.avail_in = UInt32(inputBuffer.count)
                    var status = Z_OK
                    // Each Z_FINISH call either fills the chunk or ends the stream, so this terminates.
                    while status != Z_STREAM_END {
                        stream.pointee.next_out = chunkBuffer.baseAddress
                        stream.pointee.avail_out = UInt32(chunkBuffer.count)
                        status = deflate(stream, Z_FINISH)
                        precondition(status == Z_OK || status == Z_STREAM_END, "zlib deflate failed with \(status)")
                        output.append(contentsOf: chunkBuffer[0..<(chunkBuffer.count - Int(stream.pointee.avail_out))])
                    }
                }
            }
            return output
        }
    }

    /// Runs `body` with a z_stream at one fixed address, ended by `end` afterwards: zlib keeps a
    /// pointer back to the z_stream and checks it on every call, so the stream cannot live in a
    /// Swift variable that may move.
    private static func withStream<T, E: Error>(end: (UnsafeMutablePointer<z_stream>) -> Int32,
                                               _ body: (UnsafeMutablePointer<z_stream>) throws(E) -> T) throws(E) -> T {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        defer {
            _ = end(stream)
            stream.deinitialize(count: 1)
            stream.deallocate()
        }
        return try body(stream)
    }
}
