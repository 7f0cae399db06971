// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// AES-256-GCM fetched from the default provider once. `EVP_aes_256_gcm()` is a legacy handle:
/// OpenSSL 3 fetches the provider's implementation again at every EVP_CipherInit_ex with it,
/// which cost more than the cipher itself on a 1 KiB v3 notify resource.
enum FetchedCipher {
    nonisolated(unsafe) static let aes256GCM: OpaquePointer = {
        guard let cipher = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil) else {
            ERR_clear_error()
            return EVP_aes_256_gcm()
        }
        return cipher
    }()
}
