// SPDX-License-Identifier: Apache-2.0

/// SplitMix64: a small, fast generator whose sequence is fixed by its seed, so a fault-injection
/// run can be replayed exactly.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with probability `rate` (0…1).
    public mutating func chance(_ rate: Double) -> Bool {
        rate > 0 && Double(next() >> 11) * 0x1.0p-53 < rate
    }

    /// `count` random decimal digits.
    public mutating func digits(_ count: Int) -> String {
        String((0..<count).map { _ in Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(next() % 10))) })
    }

    /// `count` random characters from [A-Za-z0-9].
    public mutating func alphanumerics(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] })
    }
}
