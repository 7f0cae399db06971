// SPDX-License-Identifier: Apache-2.0

/// What Apple charged, as a transaction says it: `price` in milli-units of `currency` (ISO 4217),
/// so CNY 13.99 is 13990 and JPY 120 is 120000.
public enum AppStorePrice {
    /// ISO 4217 currencies without a minor unit (JPY, KRW, …) and with three decimals (BHD, KWD, …);
    /// every other has two.
    static let zeroDecimals: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    static let threeDecimals: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]

    /// The decimals of the currency's minor unit: 2 for CNY (fen), 0 for JPY, 3 for KWD.
    public static func decimals(_ currency: String) -> Int {
        zeroDecimals.contains(currency) ? 0 : threeDecimals.contains(currency) ? 3 : 2
    }

    /// The largest price believed, in milli-units: a billion units of any currency, far above
    /// anything the App Store sells (its top prices are in the thousands of dollars, the millions
    /// of won), and far below what would overflow an amount.
    public static let maximumMilli: Int64 = 1_000_000_000_000

    /// `milli` in the currency's minor unit (CNY 13990 → 1399 fen; JPY 120000 → 120), rounded to the
    /// nearest; nil for a negative price, one above `maximumMilli`, or a currency that is not three
    /// capitals.
    public static func minorUnits(milli: Int64, currency: String) -> Int64? {
        guard (0...maximumMilli).contains(milli), currency.utf8.count == 3,
              currency.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A })
        else { return nil }
        var divisor: Int64 = 1
        for _ in 0..<(3 - decimals(currency)) { divisor *= 10 }
        return (milli + divisor / 2) / divisor
    }

    /// Milli-units as a decimal: 68000 → `68.000`.
    public static func decimal(_ milli: Int64) -> String {
        let sign = milli < 0 ? "-" : ""
        let value = milli.magnitude
        let fraction = String(value % 1000)
        return "\(sign)\(value / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
