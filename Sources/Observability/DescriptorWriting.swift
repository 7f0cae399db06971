// SPDX-License-Identifier: Apache-2.0
import Glibc

/// Writing whole buffers to a file descriptor, the one loop for the log and the files the gateway
/// writes itself: Foundation's `FileHandle.write(_:)` ends the process when a write fails.
public enum DescriptorWriting {
    /// Writes all of `bytes` to `descriptor`, again after a partial write or a signal. Returns 0, or
    /// the `errno` of the write that failed (nothing is retried then).
    @discardableResult
    public static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32 {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    return written < 0 ? errno : EIO
                }
            }
            return 0
        }
    }
}
