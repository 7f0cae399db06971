// SPDX-License-Identifier: Apache-2.0
import Crypto
/// What a console user may do. Each role has the rights of the one before it and more.
public enum ConsoleRole: String, Sendable, Hashable, CaseIterable {
    /// Search, view orders, recheck with WeChat.
    case viewer
    /// Also refund, redeliver fulfilment events, assign an unclaimed App Store purchase to an
    /// order and mark an order's attention flags handled.
    case refunder
    /// Also read the audit log.
    case admin

    public func allows(_ right: ConsoleRight) -> Bool {
        switch right {
        case .search, .view, .recheck: true
        case .refund, .redeliver, .assign, .handleAttention, .extendSubscription: self == .refunder || self == .admin
        case .audit: self == .admin
        }
    }
}

/// One thing a console user may be allowed to do (`ConsoleRole.allows`).
public enum ConsoleRight: String, Sendable, Hashable, CaseIterable {
    case search, view, recheck, refund, redeliver, audit
    /// Assign an unclaimed App Store purchase to an order (credits it, as a refund moves money).
    case assign
    /// Mark an order's attention flags handled (takes it off the attention list).
    case handleAttention = "handle_attention"
    /// Ask Apple to extend a subscription's renewal date (compensation: the customer gets days free).
    case extendSubscription = "extend_subscription"
}

/// A console account as the user file holds it.
public struct ConsoleUser: Sendable, Hashable {
    public var name: String
    public var role: ConsoleRole
    public var password: PasswordHash

    public init(name: String, role: ConsoleRole, password: PasswordHash) {
        self.name = name
        self.role = role
        self.password = password
    }

    /// Names are 1–64 of lowercase ASCII letters, digits and `. _ @ -`: safe in the file's
    /// `name:role:hash` lines, in logs and in the audit log, and typed the same way by everyone
    /// (the login form lowercases what it is given).
    public static func isValidName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { byte in
            (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || "._@-".utf8.contains(byte)
        }
    }

    /// A digest of the password entry: a session remembers it, and ends when it changes (a new
    /// password, or the user removed and added again). Not secret, and says nothing about the password.
    public var credentialStamp: String { String(Hex.encode(SHA256.hash(password.encoded)).prefix(32)) }
}
