// SPDX-License-Identifier: Apache-2.0

/// Where a client's calls go: production, or WeChat's sandbox ("仿真测试系统").
public enum WeChatPayEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// Production paths, the merchant's key and sign type.
    case production
    /// Paths under `/sandboxnew`, signed with MD5 and the sandbox key from
    /// `GetSignKeyRequest` (the sandbox accepts nothing else). No client certificate is needed.
    case sandbox(signKey: APIKey)

    public var isSandbox: Bool {
        if case .sandbox = self { return true }
        return false
    }

    public var description: String {
        isSandbox ? "sandbox" : "production"
    }
}
