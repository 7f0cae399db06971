// SPDX-License-Identifier: Apache-2.0

/// Why a gzip body could not be inflated.
public struct GzipError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case notGzip
        case truncated
        case corrupt
        case tooLarge(limit: Int)
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// The body does not start with the gzip magic bytes (WeChat's XML error bodies land here).
    public static let notGzip = GzipError(.notGzip)
    /// The stream ends before its last block and trailer.
    public static let truncated = GzipError(.truncated)
    /// Invalid deflate data, a wrong CRC or length, or trailing bytes that are not gzip.
    public static let corrupt = GzipError(.corrupt)
    /// Decompressing would exceed `limit` bytes (the zip-bomb guard).
    public static func tooLarge(limit: Int) -> GzipError { GzipError(.tooLarge(limit: limit)) }

    /// A stable label without data, for metrics.
    public var shortDescription: String {
        switch code {
        case .notGzip: "not_gzip"
        case .truncated: "truncated"
        case .corrupt: "corrupt"
        case .tooLarge: "too_large"
        }
    }

    public var description: String {
        switch code {
        case .notGzip: "body is not gzip"
        case .truncated: "gzip stream is truncated"
        case .corrupt: "gzip stream is corrupt"
        case .tooLarge(let limit): "gzip stream inflates to more than \(limit) bytes"
        }
    }
}
