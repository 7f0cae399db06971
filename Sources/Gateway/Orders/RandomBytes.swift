// SPDX-License-Identifier: Apache-2.0
import COpenSSL

/// Cryptographically random bytes from OpenSSL's CSPRNG, which the kernel seeds: no system call
/// per draw. (Foundation's `UUID()` opened and read /dev/urandom for every id on Linux, about 2 %
/// of a notify's CPU for the outbox event id.)
enum RandomBytes {
    static func take(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = bytes.withUnsafeMutableBufferPointer { buffer in
            RAND_bytes(buffer.baseAddress!, Int32(buffer.count)) == 1
        }
        // OpenSSL fails only when it cannot seed itself; never settle for weak bytes.
        if !filled {
            var generator = SystemRandomNumberGenerator()
            for index in bytes.indices { bytes[index] = generator.next() }
        }
        return bytes
    }
}
