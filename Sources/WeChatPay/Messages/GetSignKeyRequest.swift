// SPDX-License-Identifier: Apache-2.0

/// `POST /sandboxnew/pay/getsignkey`: fetches the sandbox key. Sent with `mch_id`, `nonce_str` and
/// an MD5 `sign` made with the *production* key; every other sandbox call is then signed (MD5) with
/// the returned key.
public struct GetSignKeyRequest: WeChatPayRequest {
    public typealias Response = GetSignKeyResponse
    public static var api: WeChatPayAPI { .getSignKey }

    public init() {}

    public init(fields: Fields) throws(WeChatPayMessageError) {}

    public func businessFields() -> Fields { Fields() }
}
