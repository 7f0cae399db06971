// SPDX-License-Identifier: Apache-2.0

extension GatewayConfiguration {
    /// What `serve` warns about at start without refusing it: a set variable with one of the
    /// gateway's prefixes that is not one it knows (with the known name it most likely meant), and
    /// a `GATEWAY_CRASH_POINT` that this build ignores. Names only, never values.
    public static func warnings(for environment: Environment) -> [String] {
        let known = Set(variables.map(\.name))
        var warnings = environment.names(withPrefixes: variablePrefixes).filter { !known.contains($0) }.map { name in
            var text = "\(name) is set but is not a variable the gateway knows; it has no effect"
            if let guess = closestKnownName(to: name) { text += " (did you mean \(guess)?)" }
            return text
        }
        if !CrashPoint.isCompiledIn && environment.get("GATEWAY_CRASH_POINT") != nil {
            warnings.append("GATEWAY_CRASH_POINT is set but ignored: the crash hook exists only in builds made with "
                            + "-DGATEWAY_FAULT_INJECTION (the reliability battery's), not in this one")
        }
        if !TestClock.isCompiledIn && environment.get("GATEWAY_TEST_CLOCK_FILE") != nil {
            warnings.append("GATEWAY_TEST_CLOCK_FILE is set but ignored: the shifted clock exists only in builds made with "
                            + "-DGATEWAY_FAULT_INJECTION (the reliability battery's), not in this one")
        }
        // Not refused (a gateway taking StoreKit 2 reports only needs no receipt root), but said: a
        // StoreKit 1 purchase without a token is then credited by nothing its owner can send.
        if environment.get("APPSTORE_PRIVATE_KEY_FILE") != nil && environment.get("APPSTORE_RECEIPT_ROOT_CA_FILE") == nil {
            warnings.append("APPSTORE_RECEIPT_ROOT_CA_FILE is not set: StoreKit 1 receipts are read without verifying them, "
                            + "so a purchase made without an appAccountToken (an interrupted purchase, an app without "
                            + "applicationUsername) is not credited from its owner's receipt; set it to Apple Root CA "
                            + "(AppleIncRootCertificate.cer)")
        }
        return warnings
    }

    /// The known name within a few typing slips of `name` (two edits, or three for long names), if
    /// any, or one whose last word was left off (`APPSTORE_ISSUER` for `APPSTORE_ISSUER_ID`, within
    /// a slip of what remains, which must still be two words).
    static func closestKnownName(to name: String) -> String? {
        let typed = Array(name.utf8)
        var best: (name: String, distance: Int)?
        for candidate in variables.map(\.name) {
            let whole = Array(candidate.utf8)
            var distance = editDistance(typed, whole)
            if distance > (typed.count > 16 ? 3 : 2) { distance = .max }
            if let cut = whole.lastIndex(of: UInt8(ascii: "_")), whole[..<cut].contains(UInt8(ascii: "_")) {
                let shortened = editDistance(typed, Array(whole[..<cut]))
                if shortened <= 1 { distance = min(distance, shortened + 1) }
            }
            if distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Levenshtein distance, with a swap of two neighbours counted as one edit (`ULR` for `URL`).
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
