// SPDX-License-Identifier: Apache-2.0

/// The field names seen so far in one document, to refuse duplicates.
///
/// Names are kept as byte ranges of the input (valid for the parse only) in an open-addressing
/// table with a word-at-a-time hash: a 28-field notify must not pay for 28 String comparisons or
/// SipHash rounds to learn that its names are distinct. The first table is the caller's (on the
/// stack); a document with more than 32 fields moves to heap tables that double, so a hostile
/// document with thousands of fields stays linear. Call `release()` when done.
struct FieldNameSet {
    struct Slot {
        var hash: UInt64 = 0  // 0: empty
        var start: UnsafePointer<UInt8>? = nil
        var count: Int = 0
    }

    private var slots: UnsafeMutableBufferPointer<Slot>
    private var ownsSlots = false
    private var used = 0

    /// - Parameter initial: zero-initialised slots, a power of two in count, outliving the set.
    init(initial: UnsafeMutableBufferPointer<Slot>) {
        precondition(initial.count > 0 && initial.count & (initial.count - 1) == 0)
        slots = initial
    }

    mutating func release() {
        if ownsSlots { slots.deallocate() }
        ownsSlots = false
    }

    /// Inserts `name`, whose `hash` is `FieldNameSet.hash(name)`; false when it was already there.
    mutating func insert(_ name: UnsafeBufferPointer<UInt8>, hash: UInt64) -> Bool {
        if (used &+ 1) &* 2 > slots.count { grow() }
        let mask = slots.count &- 1
        var index = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[index]
            if slot.hash == 0 {
                slots[index] = Slot(hash: hash, start: name.baseAddress, count: name.count)
                used &+= 1
                return true
            }
            if slot.hash == hash && slot.count == name.count
                && (name.isEmpty || memcmpEqual(slot.start!, name.baseAddress!, name.count)) {
                return false
            }
            index = (index &+ 1) & mask
        }
    }

    private mutating func grow() {
        let old = slots
        let grown = UnsafeMutableBufferPointer<Slot>.allocate(capacity: old.count &* 2)
        grown.initialize(repeating: Slot())
        let mask = grown.count &- 1
        for slot in old where slot.hash != 0 {
            var index = Int(truncatingIfNeeded: slot.hash) & mask
            while grown[index].hash != 0 { index = (index &+ 1) & mask }
            grown[index] = slot
        }
        if ownsSlots { old.deallocate() }
        slots = grown
        ownsSlots = true
    }

    /// Eight bytes per step, then a final mix; never 0, which marks an empty slot. Not seeded
    /// (the protocol core takes no randomness): crafted collisions only cost probing, and a
    /// document is at most `maximumSize` bytes.
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash = UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15
        var index = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while index &+ 8 <= bytes.count {
                hash = (hash ^ raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
                hash ^= hash >> 31
                index &+= 8
            }
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count {
                tail |= UInt64(base[index]) << shift
                shift &+= 8
                index &+= 1
            }
            hash ^= tail
        }
        hash = (hash ^ (hash >> 29)) &* 0x94D0_49BB_1331_11EB
        hash ^= hash >> 32
        return hash | 1
    }
}
