// SPDX-License-Identifier: Apache-2.0
import CQREncode
import Glibc

/// QR codes for a NATIVE (PC web) order's `code_url`: the matrix libqrencode makes, and the PNG and
/// SVG images a payer's phone scans from the order page. Pure: no files, clock or randomness.
public enum QRCode {
    /// The longest text `Matrix.encode` takes, in UTF-8 bytes. A `code_url` is about 40 bytes
    /// (`weixin://wxpay/bizpayurl?pr=…`); the limit keeps the symbol at version 27 at most
    /// (125 modules a side), which phones still scan from a screen, and every image bounded.
    public static let maximumBytes = 1_024

    /// The pixels per module `png` and `svg` draw; a value outside is clamped into it.
    public static let scales: ClosedRange<Int> = 1...32

    /// The quiet zone around the symbol, in modules, that `png` and `svg` draw; a value outside is
    /// clamped into it. The standard asks for 4; 0 is for a page that draws its own margin.
    public static let borders: ClosedRange<Int> = 0...16

    /// The symbol's dark and light modules, row by row, with no quiet zone.
    public struct Matrix: Sendable, Equatable {
        /// The modules on a side: 21 for version 1, 4 more for each version above.
        public let size: Int
        /// The symbol's version (1…40), chosen by libqrencode as the smallest that holds the text.
        public let version: Int
        /// One byte per module, row-major: 1 is dark.
        let modules: [UInt8]

        /// The symbol of `text`, in byte (8-bit) mode at error correction level M (15 % of the
        /// codewords may be lost: a scuffed screen or a printed page still scans).
        ///
        /// Refuses an empty text, one of more than `QRCode.maximumBytes` UTF-8 bytes, and one
        /// holding a NUL, before libqrencode sees it.
        public static func encode(_ text: String) throws(QRCodeError) -> Matrix {
            let bytes = Array(text.utf8)
            guard !bytes.isEmpty else { throw .empty }
            guard bytes.count <= QRCode.maximumBytes else { throw .tooLong(bytes: bytes.count, limit: QRCode.maximumBytes) }
            guard !bytes.contains(0) else { throw .containsNUL }
            // Byte mode for the whole text (QRcode_encodeData), never libqrencode's own split into
            // numeric and alphanumeric runs: what a scanner reads back is then exactly these bytes.
            guard let symbol = QRcode_encodeData(Int32(bytes.count), bytes, 0, QR_ECLEVEL_M) else {
                throw .encodingFailed(errno: errno)
            }
            defer { QRcode_free(symbol) }
            let size = Int(symbol.pointee.width)
            // Bit 0 of each of libqrencode's bytes is the module's colour; the rest is its own bookkeeping.
            let modules = (0..<size * size).map { symbol.pointee.data[$0] & 1 }
            return Matrix(size: size, version: Int(symbol.pointee.version), modules: modules)
        }

        /// Whether the module at column `x`, row `y` (from the top left) is dark. Outside the
        /// symbol, the quiet zone, it is light.
        public func isDark(x: Int, y: Int) -> Bool {
            guard x >= 0, y >= 0, x < size, y < size else { return false }
            return modules[y * size + x] != 0
        }
    }
}

/// Why a text has no QR code. Its description names the rule, never the text.
public enum QRCodeError: Error, Equatable, CustomStringConvertible {
    /// The text is empty.
    case empty
    /// The text is longer than the limit, in UTF-8 bytes.
    case tooLong(bytes: Int, limit: Int)
    /// The text holds a NUL character, which no URL a payer scans has.
    case containsNUL
    /// libqrencode refused (its `errno`: ENOMEM, or ERANGE for data beyond version 40).
    case encodingFailed(errno: Int32)

    public var description: String {
        switch self {
        case .empty: "a QR code needs a text: it is empty"
        case .tooLong(let bytes, let limit): "a QR code's text is at most \(limit) UTF-8 bytes: it is \(bytes)"
        case .containsNUL: "a QR code's text may not contain a NUL character"
        case .encodingFailed(let code): "libqrencode could not encode the text (errno \(code))"
        }
    }
}

extension Int {
    /// The value moved into `range` if it lies outside.
    func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
