// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// AES-256 in ECB mode with PKCS#7 padding: the encryption of WeChat Pay v2's refund notify
/// (`req_info`). ECB has no integrity check: decrypting is no proof of anything beyond the padding,
/// so the caller must check what the plaintext says.
public enum AES256ECB {
    public static let keyByteCount = 32

    public static func encrypt(_ plaintext: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        try CipherRun(cipher: EVP_aes_256_ecb(), key: key, encrypt: true).ecb(plaintext)
    }

    /// - Throws: ``CryptoError/decryptionFailed`` for anything that is not whole blocks with valid
    ///   padding under `key` (a wrong key or tampering), the same answer every time.
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !ciphertext.isEmpty, ciphertext.count % 16 == 0 else { throw .decryptionFailed }
        return try CipherRun(cipher: EVP_aes_256_ecb(), key: key, encrypt: false).ecb(ciphertext)
    }
}

/// AES-256-GCM with associated data, as WeChat Pay API v3 encrypts notify resources and
/// certificates: a 12-byte nonce, the 16-byte tag appended to the ciphertext.
///
/// ```swift
/// let sealed = try AES256GCM.encrypt(plaintext, key: apiV3Key, nonce: nonce, associatedData: aad)
/// let opened = try AES256GCM.decrypt(sealed, key: apiV3Key, nonce: nonce, associatedData: aad)
/// ```
public enum AES256GCM {
    public static let keyByteCount = 32
    public static let tagByteCount = 16

    /// The ciphertext followed by its tag.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8],
                               associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        try CipherRun(cipher: FetchedCipher.aes256GCM, key: key, encrypt: true)
            .gcm(plaintext, nonce: nonce, associatedData: associatedData, tag: nil)
    }

    /// The plaintext of `sealed` (ciphertext followed by the tag).
    /// - Throws: ``CryptoError/decryptionFailed`` when the tag does not authenticate the ciphertext
    ///   and associated data under `key` and `nonce`.
    public static func decrypt(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8],
                               associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard sealed.count >= tagByteCount else { throw .decryptionFailed }
        let tag = Array(sealed.suffix(tagByteCount))
        return try CipherRun(cipher: FetchedCipher.aes256GCM, key: key, encrypt: false)
            .gcm(Array(sealed.dropLast(tagByteCount)), nonce: nonce, associatedData: associatedData, tag: tag)
    }
}

/// One pass of an EVP cipher: the context lives for one call, and a failure leaves nothing on
/// OpenSSL's error queue (libcurl reads that queue after TLS calls on the same thread).
private struct CipherRun {
    let cipher: OpaquePointer
    let key: [UInt8]
    let encrypt: Bool

    init(cipher: OpaquePointer, key: [UInt8], encrypt: Bool) throws(CryptoError) {
        guard key.count == 32 else { throw .invalidLength("an AES-256 key") }
        self.cipher = cipher
        self.key = key
        self.encrypt = encrypt
    }

    func ecb(_ input: [UInt8]) throws(CryptoError) -> [UInt8] {
        try run(input, outputCapacity: input.count + 16) { _ in true } finish: { _ in true }
    }

    func gcm(_ input: [UInt8], nonce: [UInt8], associatedData: [UInt8], tag: [UInt8]?) throws(CryptoError) -> [UInt8] {
        guard !nonce.isEmpty, nonce.count <= 64 else { throw .invalidLength("a GCM nonce") }
        var sealedTag = [UInt8](repeating: 0, count: AES256GCM.tagByteCount)
        var output = try run(input, outputCapacity: input.count + 16, nonce: nonce) { context in
            var written: Int32 = 0
            // Associated data goes in with a null output buffer; empty associated data is none.
            guard associatedData.isEmpty || associatedData.withUnsafeBufferPointer({
                EVP_CipherUpdate(context, nil, &written, $0.baseAddress, Int32($0.count)) == 1
            }) else { return false }
            if let tag {
                var tag = tag
                return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tag.count), &tag) == 1
            }
            return true
        } finish: { context in
            tag != nil || EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(sealedTag.count), &sealedTag) == 1
        }
        if tag == nil { output += sealedTag }
        return output
    }

    /// Sets up the context (key, and for GCM the nonce's length and value), calls `prepare`, runs
    /// `input` through, finalizes, calls `finish`.
    private func run(_ input: [UInt8], outputCapacity: Int, nonce: [UInt8]? = nil,
                     prepare: (OpaquePointer) -> Bool, finish: (OpaquePointer) -> Bool) throws(CryptoError) -> [UInt8] {
        guard input.count <= Int(Int32.max) - 32 else { throw .invalidLength("the input") }
        guard let context = EVP_CIPHER_CTX_new() else { throw .internalFailure }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: outputCapacity)
        var written: Int32 = 0
        var finalWritten: Int32 = 0
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            if let nonce {
                guard EVP_CipherInit_ex(context, cipher, nil, nil, nil, encrypt ? 1 : 0) == 1,
                      EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1,
                      EVP_CipherInit_ex(context, nil, nil, key, nonce, -1) == 1
                else { return false }
            } else {
                guard EVP_CipherInit_ex(context, cipher, nil, key, nil, encrypt ? 1 : 0) == 1 else { return false }
            }
            guard prepare(context) else { return false }
            guard input.isEmpty || EVP_CipherUpdate(context, out.baseAddress, &written, input, Int32(input.count)) == 1,
                  EVP_CipherFinal_ex(context, out.baseAddress! + Int(written), &finalWritten) == 1
            else { return false }
            return finish(context)
        }
        guard ok else {
            ERR_clear_error()
            // A failed padding or tag check is what a wrong key or tampering produces.
            throw encrypt ? .internalFailure : .decryptionFailed
        }
        output.removeSubrange(Int(written + finalWritten)...)
        return output
    }
}
