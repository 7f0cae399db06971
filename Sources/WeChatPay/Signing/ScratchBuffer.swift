// SPDX-License-Identifier: Apache-2.0

/// Calls `body` with memory for `capacity` values of `T` (contents unspecified): on the stack
/// when 2 KiB is enough (every realistic document), the heap beyond.
///
/// The hot paths (signing, the duplicate-name check) used `withUnsafeTemporaryAllocation`, until
/// a release build with Swift 6.3.1 trapped inside it: once the closure outgrew the inliner's
/// budget, the out-of-line specialization came back reporting a thrown `Never` (the trap after
/// `swift_willThrowTypedImpl`). A tuple on the stack needs none of that machinery. The memory
/// is bound to `T` only for the call; `T` must be trivial (no references to release).
@inline(__always)
func withScratchBuffer<T, R>(of type: T.Type, capacity: Int, _ body: (UnsafeMutableBufferPointer<T>) -> R) -> R {
    // The generic part stays out here, in code the caller specialises; the closures below only
    // see raw memory. (A first version bound memory inside them; the optimiser merged their
    // specialisations into one that looked up type metadata at run time on every call.)
    withScratchBytes(MemoryLayout<T>.stride * capacity) { raw in
        body(UnsafeMutableBufferPointer(start: raw.bindMemory(to: T.self, capacity: capacity), count: capacity))
    }
}

/// `byteCount` bytes of scratch memory, 16-byte aligned, contents unspecified.
@inline(__always)
func withScratchBytes<R>(_ byteCount: Int, _ body: (UnsafeMutableRawPointer) -> R) -> R {
    // Two sizes, because Swift zeroes the tuple first: 512 bytes covers a signing message,
    // 2 KiB the duplicate-name table, and neither costs more than a few dozen cycles to clear.
    if byteCount <= 512 {
        var storage = (SIMD32<UInt64>(), SIMD32<UInt64>())
        return withUnsafeMutableBytes(of: &storage) { body($0.baseAddress!) }
    }
    if byteCount <= 2048 {
        var storage = (SIMD32<UInt64>(), SIMD32<UInt64>(), SIMD32<UInt64>(), SIMD32<UInt64>(),
                       SIMD32<UInt64>(), SIMD32<UInt64>(), SIMD32<UInt64>(), SIMD32<UInt64>())
        return withUnsafeMutableBytes(of: &storage) { body($0.baseAddress!) }
    }
    let heap = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 16)
    defer { heap.deallocate() }
    return body(heap)
}
