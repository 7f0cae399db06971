// SPDX-License-Identifier: Apache-2.0

/// What an earlier timeline line must share with a new one to hold it back for a quiet period
/// (`OrderStore.appendEvent(_:_:quietSince:matching:)`).
public enum QuietLineMatch: Sendable, Hashable {
    /// Its kind: one line of the kind per period (an iOS report, whoever reported).
    case kind
    /// Its kind and its detail: one line per period of each thing said (a refund notify's
    /// contradiction, per refund).
    case kindAndDetail
}
