// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// `wxpay-gateway sign --key K [--sign-type MD5|HMAC-SHA256] name=value ...` prints the signature.
enum SignCommand {
    static let usage = """
        usage: wxpay-gateway sign KEY-SOURCE [--sign-type MD5|HMAC-SHA256] name=value ...
               wxpay-gateway sign KEY-SOURCE --xml FILE|-
        KEY-SOURCE: --key-file FILE (the key on its first line), or --key KEY, or neither to read
        WXPAY_API_KEY from the environment. A key given with --key is visible to every user of the
        machine in the process list; prefer the file or the variable.
        The first form prints the signature alone; the second checks a whole XML document's sign and
        says which algorithm matched, or that none did (exit status 1).
        """

    static func run(_ arguments: [String]) -> Int32 {
        var key: String?
        var keyFile: String?
        var signType = SignType.md5
        var xmlPath: String?
        var pairs: [Fields.Field] = []
        var index = 0
        func fail(_ message: String) -> Int32 {
            FileHandle.standardError.write(Data("sign: \(message)\n\(usage)\n".utf8))
            return 64
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--key", "--key-file", "--sign-type", "--xml":
                guard index + 1 < arguments.count else { return fail("\(argument) needs a value") }
                let value = arguments[index + 1]
                index += 2
                if argument == "--key" {
                    key = value
                } else if argument == "--key-file" {
                    keyFile = value
                } else if argument == "--xml" {
                    xmlPath = value
                } else {
                    guard let type = SignType(rawValue: value.uppercased()) else {
                        return fail("--sign-type must be MD5 or HMAC-SHA256")
                    }
                    signType = type
                }
            case "-h", "--help":
                print(usage)
                return 0
            default:
                // "--kye=…" is a typo, not a field named "--kye".
                guard !argument.hasPrefix("-") else { return fail("unknown option \(argument.prefix(32))") }
                guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
                    return fail("expected name=value, got an argument without '='")
                }
                let name = String(argument[..<equals])
                guard !pairs.contains(where: { $0.name == name }) else { return fail("field \(name) given twice") }
                pairs.append(Fields.Field(name: name, value: String(argument[argument.index(after: equals)...])))
                index += 1
            }
        }
        if key != nil && keyFile != nil { return fail("give --key or --key-file, not both") }
        if let keyFile {
            guard let text = try? readAtMost(1024, from: FileHandle(forReadingFrom: URL(fileURLWithPath: keyFile))) else {
                FileHandle.standardError.write(Data("sign: cannot read the key file \(keyFile)\n".utf8))
                return 66
            }
            // The first line, without the newline an editor or `echo` leaves.
            key = String(decoding: text, as: UTF8.self).split(whereSeparator: \.isNewline).first
                .map { $0.trimmingCharacters(in: .whitespaces) }
        } else if key == nil {
            key = ProcessInfo.processInfo.environment["WXPAY_API_KEY"]
        }
        guard let key, !key.isEmpty else {
            return fail("no API key: give --key-file FILE, set WXPAY_API_KEY, or give --key KEY")
        }
        let signer = Signer(key: APIKey(key))
        if let xmlPath {
            guard pairs.isEmpty else { return fail("--xml takes no name=value fields") }
            return checkDocument(at: xmlPath, signer: signer)
        }
        guard !pairs.isEmpty else { return fail("give at least one name=value field") }
        print(signer.signature(for: Fields(pairs), type: signType))
        return 0
    }

    private static func checkDocument(at path: String, signer: Signer) -> Int32 {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            guard let file = FileHandle(forReadingAtPath: path) else {
                FileHandle.standardError.write(Data("sign: cannot read \(path)\n".utf8))
                return 66
            }
            handle = file
        }
        // Read one byte past the cap and no more: `--xml /dev/zero` or a runaway pipe must end
        // in "document larger than …", not in memory exhaustion.
        let data: Data
        do {
            data = try readAtMost(FlatXML.defaultMaximumSize + 1, from: handle)
        } catch {
            FileHandle.standardError.write(Data("sign: cannot read \(path)\n".utf8))
            return 66
        }
        let fields: Fields
        do {
            fields = try FlatXML.decode(data)
        } catch {
            FileHandle.standardError.write(Data("sign: not a WeChat Pay XML document: \(error)\n".utf8))
            return 65
        }
        guard fields.nonEmpty("sign") != nil else {
            print("no sign field in the document")
            return 1
        }
        let declaredType = fields.nonEmpty("sign_type")
        let declared = declaredType.map { " (sign_type says \($0.prefix(32)))" } ?? " (no sign_type)"
        guard let type = signer.matchingSignType(of: fields) else {
            print("signature matches neither MD5 nor HMAC-SHA256 with this key\(declared)")
            return 1
        }
        if let declaredType, declaredType != type.rawValue {
            // Signer.verify refuses this (a declared algorithm is never overridden), and so would
            // WeChat: saying "valid" here would send someone looking in the wrong place.
            print("signature matches \(type), but sign_type says \(declaredType.prefix(32)): verification would refuse it")
            return 1
        }
        print("signature valid: \(type)\(declared)")
        return 0
    }

    private static func readAtMost(_ limit: Int, from handle: FileHandle) throws -> Data {
        var data = Data()
        while data.count < limit {
            guard let chunk = try handle.read(upToCount: min(64 * 1024, limit - data.count)), !chunk.isEmpty else { break }
            data.append(chunk)
        }
        return data
    }
}
