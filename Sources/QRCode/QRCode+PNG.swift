// SPDX-License-Identifier: Apache-2.0
import CZlib

extension QRCode.Matrix {
    /// The symbol as a PNG: 1-bit grayscale, `scale` pixels a module, a light quiet zone of
    /// `border` modules around it, (size + 2 × border) × scale pixels a side. Both are clamped into
    /// `QRCode.scales` and `QRCode.borders`, so the largest image is 5,024 pixels a side.
    ///
    /// The pixels are deflated by zlib, and each chunk's CRC is zlib's `crc32`.
    public func png(scale: Int = 8, border: Int = 4) -> [UInt8] {
        let scale = scale.clamped(to: QRCode.scales)
        let border = border.clamped(to: QRCode.borders)
        let side = (size + 2 * border) * scale
        let pixels = deflated(scanlines(side: side, scale: scale, border: border))

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        header.appendBigEndian(UInt32(side))
        header.appendBigEndian(UInt32(side))
        // Bit depth 1, colour type 0 (grayscale), deflate, adaptive filtering, no interlace.
        header += [1, 0, 0, 0, 0]
        png.appendChunk("IHDR", header)
        png.appendChunk("IDAT", pixels)
        png.appendChunk("IEND", [])
        return png
    }

    /// The image's scanlines as PNG filters them: each a filter byte (0, none) and `side` bits,
    /// the most significant first, 1 light and 0 dark. A module row is drawn once and copied
    /// `scale` times; the quiet zone's rows are light throughout.
    private func scanlines(side: Int, scale: Int, border: Int) -> [UInt8] {
        let rowBytes = (side + 7) / 8
        let stride = 1 + rowBytes
        // Light everywhere (the padding bits at a row's end too), then each dark module cleared.
        var lines = [UInt8](repeating: 0xFF, count: stride * side)
        for line in 0..<side { lines[line * stride] = 0 }
        var row = [UInt8](repeating: 0xFF, count: rowBytes)
        for y in 0..<size {
            for index in row.indices { row[index] = 0xFF }
            for x in 0..<size where modules[y * size + x] != 0 {
                let first = (border + x) * scale
                for pixel in first..<first + scale { row[pixel >> 3] &= ~(0x80 >> UInt8(pixel & 7)) }
            }
            let top = (border + y) * scale
            for line in top..<top + scale {
                lines.replaceSubrange(line * stride + 1..<(line + 1) * stride, with: row)
            }
        }
        return lines
    }

    /// `bytes` in the zlib format IDAT holds (deflate, zlib's default level).
    private func deflated(_ bytes: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(bytes.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        let status = compress2(&output, &length, bytes, uLong(bytes.count), Z_DEFAULT_COMPRESSION)
        // compress2 fails only for want of memory or a buffer below compressBound's, neither of
        // which a bounded image meets.
        precondition(status == Z_OK, "zlib's compress2 failed (\(status))")
        output.removeSubrange(Int(length)...)
        return output
    }
}

extension [UInt8] {
    fileprivate mutating func appendBigEndian(_ value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
    }

    /// A PNG chunk: its data's length, its type, the data, and the CRC-32 of type and data.
    fileprivate mutating func appendChunk(_ type: String, _ data: [UInt8]) {
        appendBigEndian(UInt32(data.count))
        let typed = Array(type.utf8) + data
        append(contentsOf: typed)
        appendBigEndian(UInt32(crc32(0, typed, uInt(typed.count))))
    }
}
