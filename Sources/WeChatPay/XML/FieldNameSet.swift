// SPDX-License-Identifier: Apache-2.0

/// The field names seen so far in one document, to refuse duplicates.
///
/// Names are kept as byte ranges of the input (valid for the parse only) in an open-addressing
/// table with a word-at-a-time hash: a 28-field notify must not pay for 28 String allocations
/// and SipHash rounds just to learn that its names are distinct. The table grows, so a hostile
/// document with thousands of fields stays linear.
struct FieldNameSet {
    private struct Slot {
        var hash: UInt64  // 0: empty
        var start: UnsafePointer<UInt8>?
        var count: Int
    }

    private var slots: [Slot]
    private var used = 0

    init() {
        slots = Array(repeating: Slot(hash: 0, start: nil, count: 0), count: 64)
    }

    /// Inserts `name`; false when it was already there.
    mutating func insert(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        if (used &+ 1) &* 2 > slots.count { grow() }
        let hash = Self.hash(name)
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
        slots = Array(repeating: Slot(hash: 0, start: nil, count: 0), count: old.count &* 2)
        let mask = slots.count &- 1
        for slot in old where slot.hash != 0 {
            var index = Int(truncatingIfNeeded: slot.hash) & mask
            while slots[index].hash != 0 { index = (index &+ 1) & mask }
            slots[index] = slot
        }
    }

    /// Eight bytes per step, then a final mix; never 0, which marks an empty slot.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
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
