// SPDX-License-Identifier: Apache-2.0
internal import COpenSSL

/// Cryptographically random bytes from OpenSSL's CSPRNG, which the kernel seeds: no system call
/// per draw. (Foundation's `UUID()` opened and read /dev/urandom for every id on Linux, about 2 %
/// of a notify's CPU for the outbox event id.)
public enum RandomBytes {
    public static func take(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        // OpenSSL fails only when it cannot seed itself; never settle for weak bytes.
        if RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) != 1 {
            ERR_clear_error()
            var generator = SystemRandomNumberGenerator()
            for index in 0..<buffer.count { buffer[index] = generator.next() }
        }
    }
}
