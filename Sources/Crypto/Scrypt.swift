// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// scrypt (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`: the console's password hashes.
public enum Scrypt {
    /// The key derived from `password` and `salt` with N = 2^`logN`, `r` and `p`, `length` bytes;
    /// nil when OpenSSL refuses the parameters. Runs on the calling thread and needs
    /// 128 · r · N bytes of memory: call it off the cooperative pool.
    public static func derive(password: [UInt8], salt: [UInt8], logN: Int, r: Int, p: Int, length: Int) -> [UInt8]? {
        guard (1...62).contains(logN), r > 0, p > 0, length > 0 else { return nil }
        // The memory scrypt needs, and a little more for OpenSSL's own limit check; parameters
        // whose need does not even fit in 64 bits are refused, not trapped on.
        let (perBlock, blockOverflow) = UInt64(128).multipliedReportingOverflow(by: UInt64(r))
        let (blocks, overflow) = perBlock.multipliedReportingOverflow(by: UInt64(1) << UInt64(logN))
        guard !blockOverflow, !overflow, blocks <= UInt64.max - (1 << 20) else { return nil }
        let memoryLimit = blocks + (1 << 20)
        var out = [UInt8](repeating: 0, count: length)
        // NUL-terminated so the buffer is never empty (an empty password still has an address).
        let pass = password + [0]
        let ok = pass.withUnsafeBufferPointer { pass in
            salt.withUnsafeBufferPointer { salt in
                out.withUnsafeMutableBufferPointer { key in
                    pass.withMemoryRebound(to: CChar.self) { pass in
                        EVP_PBE_scrypt(pass.baseAddress, pass.count - 1, salt.baseAddress, salt.count, UInt64(1) << UInt64(logN),
                                       UInt64(r), UInt64(p), memoryLimit, key.baseAddress, key.count)
                    }
                }
            }
        }
        guard ok == 1 else {
            ERR_clear_error()
            return nil
        }
        return out
    }
}
