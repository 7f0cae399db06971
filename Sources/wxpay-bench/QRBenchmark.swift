// SPDX-License-Identifier: Apache-2.0
import QRCode

/// `wxpay-bench qr`: QR codes of a NATIVE order's `code_url` per second on one thread, as the
/// order's `qr.png` and `qr.svg` draw them (encode, then the image, at the default scale 8 and
/// border 4), against libqrencode's matrix alone, measured in the same alternating rounds.
enum QRBenchmark {
    static let command = BenchmarkCommand(
        name: "qr", summary: "QR code of a code_url: PNG and SVG renders against the matrix alone", options: run)

    /// A code_url as unifiedorder answers it for trade_type NATIVE.
    static let codeURL = "weixin://wxpay/bizpayurl?pr=Zk3Yq8aB9"

    static func run(_ options: BenchmarkOptions) throws {
        let matrix = try QRCode.Matrix.encode(codeURL)
        let png = matrix.png()
        let svg = matrix.svg()
        // A benchmark of a wrong image is worthless: the PNG's header must give the side the
        // matrix implies, and the SVG must draw something.
        let side = (matrix.size + 8) * 8
        let ihdrWidth = png[16..<20].reduce(0) { $0 << 8 | Int($1) }
        guard png.starts(with: [0x89, 0x50, 0x4E, 0x47]), ihdrWidth == side, svg.contains("<path fill=\"#000\" d=\"M") else {
            throw BenchmarkFailure("the QR code's images are not what the matrix implies")
        }
        print("\(codeURL): version \(matrix.version), \(matrix.size) modules a side; "
              + "PNG \(side)×\(side) px, \(png.count) bytes; SVG \(svg.utf8.count) bytes")
        let measured = try Throughput.interleaved([
            ("  PNG render (encode + png())", { blackHole(try QRCode.Matrix.encode(codeURL).png()) }),
            ("  SVG render (encode + svg())", { blackHole(try QRCode.Matrix.encode(codeURL).svg()) }),
            ("  matrix alone (libqrencode, reference)", { blackHole(try QRCode.Matrix.encode(codeURL)) }),
        ], options, batch: 50)
        print("PNG render / matrix alone: \(String(format2: measured[0].median / measured[2].median))x by wall time, "
              + "\(String(format2: measured[0].cpuMedian / measured[2].cpuMedian))x by CPU time; "
              + "SVG render / matrix alone: \(String(format2: measured[1].median / measured[2].median))x, "
              + "\(String(format2: measured[1].cpuMedian / measured[2].cpuMedian))x")
    }
}
