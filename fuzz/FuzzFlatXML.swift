// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the strict XML parser (built by scripts/fuzz with -sanitize=fuzzer,address).
@testable import WeChatPay

/// Every input must satisfy, or the process traps and libFuzzer saves the input:
/// - the UTF-8/XML-character screen agrees with the standard library's UTF-8 validation;
/// - the parser and libxml2 (`LibXML2Oracle`) accept the same documents with the same fields;
/// - the canonical-form scanner changes nothing: decoding through libxml2 alone gives the same
///   fields or the same error;
/// - an accepted document re-encodes to bytes that decode to the same fields;
/// - no error description echoes the input at length.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFlatXML(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    checkScreen(bytes)

    let maximumSize = 70_000
    let ours: Result<Fields, FlatXMLError>
    do {
        ours = .success(try FlatXML.decode(bytes, maximumSize: maximumSize))
    } catch {
        ours = .failure(error)
    }
    let libxml2Only: Result<Fields, FlatXMLError>
    do {
        libxml2Only = .success(try FlatXML.decode(bytes, maximumSize: maximumSize, route: .libxml2))
    } catch {
        libxml2Only = .failure(error)
    }
    precondition(ours == libxml2Only, "the canonical-form scanner changed a verdict")
    switch (ours, LibXML2Oracle.verdict(bytes, maximumSize: maximumSize)) {
    case (_, .unknown), (.failure, .refused):
        break
    case (.success(let fields), .accepted(let elements)):
        precondition(fields.elements == elements, "parser and libxml2 decode different fields")
    case (.success, .refused):
        preconditionFailure("parser accepts a document libxml2 refuses")
    case (.failure(let error), .accepted):
        preconditionFailure("parser refuses (\(error.shortDescription)) a document libxml2 accepts")
    }

    switch ours {
    case .success(let fields):
        if let encoded = try? FlatXML.encode(fields) {
            precondition((try? FlatXML.decode(encoded, maximumSize: Int.max)) == fields, "encode/decode round trip differs")
        }
    case .failure(let error):
        precondition("\(error)".utf8.count < 160, "an error description grew with the input")
    }
    return 0
}

/// The screen, restated with the standard library: no NUL, valid UTF-8, XML 1.0 characters only.
private func checkScreen(_ bytes: [UInt8]) {
    let expected: Bool
    if bytes.contains(0) {
        expected = false
    } else if let text = String(validating: bytes, as: UTF8.self) {
        expected = text.unicodeScalars.allSatisfy { scalar in
            switch scalar.value {
            case 0x09, 0x0A, 0x0D, 0x20...0xD7FF, 0xE000...0xFFFD, 0x1_0000...0x10_FFFF: true
            default: false
            }
        }
    } else {
        expected = false
    }
    let screened = bytes.withUnsafeBufferPointer { buffer in
        buffer.baseAddress.map { FlatXML.screen($0, count: buffer.count) == nil } ?? true
    }
    precondition(screened == expected, "the screen disagrees with the standard library")
}
