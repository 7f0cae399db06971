// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL
import Synchronization

/// An AES-256-GCM key expanded once, for a key used over and over (WeChat Pay v3's APIv3 key opens
/// every notify resource and certificate with it). Calls take a context that already holds the key
/// schedule and the GHASH tables from a small pool (a copy of the template when the pool is empty)
/// and only set the nonce: what `AES256GCM` redoes per call was half the cost of a 1 KiB
/// resource. The format is ``AES256GCM``'s: the tag after the ciphertext.
public final class AES256GCMKey: @unchecked Sendable {
    // @unchecked: the templates are written only in init and then only copied (read); a pooled
    // context is used by one call at a time, handed over under the mutex.
    private let encryptTemplate: OpaquePointer
    private let decryptTemplate: OpaquePointer
    private let pool = Mutex<(encrypt: [Pooled], decrypt: [Pooled])>(([], []))
    /// A context handed between calls under the mutex.
    // @unchecked: an EVP_CIPHER_CTX (a C handle, not thread-safe) used only by the call holding it.
    private struct Pooled: @unchecked Sendable { let context: OpaquePointer }
    /// Contexts kept per direction: about the number of threads that open resources at once.
    private static let poolLimit = 16
    /// GCM's default IV length, the one a context is made with.
    static let standardNonceByteCount = 12

    /// - Throws: ``CryptoError`` for a key that is not 32 bytes.
    public init(_ key: [UInt8]) throws(CryptoError) {
        guard key.count == AES256GCM.keyByteCount else { throw .invalidLength("an AES-256 key") }
        func template(_ encrypt: Int32) -> OpaquePointer? {
            guard let context = EVP_CIPHER_CTX_new() else { return nil }
            guard EVP_CipherInit_ex(context, FetchedCipher.aes256GCM, nil, key, nil, encrypt) == 1 else {
                EVP_CIPHER_CTX_free(context)
                return nil
            }
            return context
        }
        guard let encrypt = template(1), let decrypt = template(0) else {
            ERR_clear_error()
            throw .internalFailure
        }
        encryptTemplate = encrypt
        decryptTemplate = decrypt
    }

    deinit {
        EVP_CIPHER_CTX_free(encryptTemplate)
        EVP_CIPHER_CTX_free(decryptTemplate)
        pool.withLock { pool in
            for pooled in pool.encrypt + pool.decrypt { EVP_CIPHER_CTX_free(pooled.context) }
        }
    }

    /// A keyed context: a pooled one, or a new copy of the template.
    private func take(sealing: Bool) -> OpaquePointer? {
        if let pooled = pool.withLock({ sealing ? $0.encrypt.popLast() : $0.decrypt.popLast() }) { return pooled.context }
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_CIPHER_CTX_copy(context, sealing ? encryptTemplate : decryptTemplate) == 1 else {
            EVP_CIPHER_CTX_free(context)
            return nil
        }
        return context
    }

    /// Returns a context after a call that succeeded; one whose call failed is freed instead.
    private func give(_ context: OpaquePointer, sealing: Bool, reusable: Bool) {
        let pooled = Pooled(context: context)
        let kept = reusable && pool.withLock { pool -> Bool in
            if sealing {
                guard pool.encrypt.count < Self.poolLimit else { return false }
                pool.encrypt.append(pooled)
            } else {
                guard pool.decrypt.count < Self.poolLimit else { return false }
                pool.decrypt.append(pooled)
            }
            return true
        }
        if !kept { EVP_CIPHER_CTX_free(context) }
    }

    /// The ciphertext followed by its 16-byte tag.
    public func seal(_ plaintext: [UInt8], nonce: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try run(input: plaintext[...], nonce: nonce, associatedData: associatedData, tag: nil)
    }

    /// The plaintext of `sealed` (ciphertext followed by the tag).
    /// - Throws: ``CryptoError/decryptionFailed`` when the tag does not authenticate it.
    public func open(_ sealed: [UInt8], nonce: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= AES256GCM.tagByteCount else { throw .decryptionFailed }
        let split = sealed.count - AES256GCM.tagByteCount
        return try run(input: sealed[..<split], nonce: nonce, associatedData: associatedData, tag: sealed[split...])
    }

    private func run(input: ArraySlice<UInt8>, nonce: [UInt8], associatedData: [UInt8],
                     tag: ArraySlice<UInt8>?) throws(CryptoError) -> [UInt8] {
        guard !nonce.isEmpty, nonce.count <= 64 else { throw .invalidLength("a GCM nonce") }
        guard input.count <= Int(Int32.max) - 32 else { throw .invalidLength("the input") }
        let sealing = tag == nil
        guard let context = take(sealing: sealing) else { throw .internalFailure }
        // A context that failed midway (a tag that did not verify) may hold state: never reused.
        // Contexts start at GCM's 12-byte IV, the length WeChat Pay uses: set only for another
        // length (a control call OpenSSL 3 turns into parameters looked up by name), and a context
        // that had another length is not pooled again, so a pooled one always has 12.
        let standardNonce = nonce.count == AES256GCMKey.standardNonceByteCount
        var reusable = false
        defer { give(context, sealing: sealing, reusable: reusable) }
        // The tag on the stack: no allocation besides the output.
        var tagBytes: (UInt64, UInt64) = (0, 0)
        if let tag { withUnsafeMutableBytes(of: &tagBytes) { $0.copyBytes(from: tag) } }
        let outputCount = input.count + (sealing ? AES256GCM.tagByteCount : 0)
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: max(outputCount, 1)) { out, initialized in
            initialized = 0
            var written: Int32 = 0
            var finalWritten: Int32 = 0
            let ok = (standardNonce || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1)
                && EVP_CipherInit_ex(context, nil, nil, nil, nonce, -1) == 1
                && (associatedData.isEmpty || EVP_CipherUpdate(context, nil, &written, associatedData, Int32(associatedData.count)) == 1)
                && (sealing || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tagBytes) == 1)
                && (input.isEmpty || input.withUnsafeBufferPointer {
                    EVP_CipherUpdate(context, out.baseAddress, &written, $0.baseAddress, Int32($0.count)) == 1
                })
                && EVP_CipherFinal_ex(context, out.baseAddress! + Int(input.isEmpty ? 0 : written), &finalWritten) == 1
                && (!sealing || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tagBytes) == 1)
            guard ok else {
                failed = true
                return
            }
            let count = Int(input.isEmpty ? 0 : written) + Int(finalWritten)
            if sealing {
                withUnsafeBytes(of: tagBytes) { tag in
                    UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(out)[(count)..<(count + 16)]).copyMemory(from: tag)
                }
                initialized = count + AES256GCM.tagByteCount
            } else {
                initialized = count
            }
        }
        guard !failed else {
            ERR_clear_error()
            throw sealing ? .internalFailure : .decryptionFailed
        }
        reusable = standardNonce
        return output
    }
}
