// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON

/// An AEAD_AES_256_GCM resource, as notifies and platform certificates carry one: key = the APIv3
/// key's 32 ASCII bytes, nonce = the 12-character string's bytes, associated data = the string's
/// bytes, ciphertext = base64 of ciphertext ‖ 16-byte tag.
public struct EncryptedResource: Sendable, Hashable {
    public static let algorithm = "AEAD_AES_256_GCM"

    public var ciphertext: String
    public var nonce: String
    public var associatedData: String
    /// `transaction`, `refund` in notifies; absent in certificate downloads.
    public var originalType: String?

    public init(ciphertext: String, nonce: String, associatedData: String, originalType: String? = nil) {
        self.ciphertext = ciphertext
        self.nonce = nonce
        self.associatedData = associatedData
        self.originalType = originalType
    }

    /// The members a resource has, for a document read by shape (``V3Notification``).
    static let shape = JSONShape(["algorithm", "ciphertext", "nonce", "associated_data", "original_type"])

    /// Reads a `resource` / `encrypt_certificate` object.
    /// - Throws: ``WeChatPayV3Error/Code/unsupportedAlgorithm`` for another algorithm, and the
    ///   missing or invalid field otherwise.
    public init(json: JSONValue) throws(WeChatPayV3Error) {
        guard case .object = json else { throw .invalid("resource") }
        try self.init(FieldReader(json))
    }

    /// Reads the resource's members (an object: its caller checked).
    init(_ reader: FieldReader) throws(WeChatPayV3Error) {
        guard let algorithm = reader.value("algorithm")?.stringValue else { throw .missing("algorithm") }
        guard algorithm == Self.algorithm else { throw WeChatPayV3Error(.unsupportedAlgorithm) }
        ciphertext = try reader.string("ciphertext", maxLength: 1 << 20)
        nonce = try reader.string("nonce", maxLength: 64)
        associatedData = try reader.optionalString("associated_data", maxLength: 256) ?? ""
        originalType = try reader.optionalString("original_type", maxLength: 64)
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "algorithm": .string(Self.algorithm), "ciphertext": .string(ciphertext), "nonce": .string(nonce),
            "associated_data": .string(associatedData),
        ]
        if let originalType { members["original_type"] = .string(originalType) }
        return .object(members)
    }

    /// The plaintext. Only ever call this on a resource whose envelope's signature verified.
    public func decrypt(with key: APIv3Key) throws(WeChatPayV3Error) -> [UInt8] {
        guard let sealed = Base64.decode(ciphertext, .standardPadded), sealed.count >= AES256GCM.tagByteCount else {
            throw WeChatPayV3Error(.decryptionFailed)
        }
        do {
            return try key.cipher.open(sealed, nonce: Array(nonce.utf8), associatedData: Array(associatedData.utf8))
        } catch {
            throw WeChatPayV3Error(.decryptionFailed)
        }
    }

    /// Encrypts `plaintext` as WeChat does (the simulator's half; `nonce` is 12 characters).
    public static func seal(_ plaintext: [UInt8], key: APIv3Key, nonce: String, associatedData: String,
                            originalType: String? = nil) -> EncryptedResource {
        let sealed: [UInt8]
        do {
            sealed = try key.cipher.seal(plaintext, nonce: Array(nonce.utf8), associatedData: Array(associatedData.utf8))
        } catch {
            preconditionFailure("AES-256-GCM refused a 32-byte key and a non-empty nonce")
        }
        return EncryptedResource(ciphertext: Base64.encode(sealed, .standardPadded), nonce: nonce,
                                 associatedData: associatedData, originalType: originalType)
    }
}
