// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a verified, decrypted notify says.
public enum V3NotifyEvent: Sendable, Hashable {
    /// TRANSACTION.SUCCESS: the order is paid.
    case payment(V3Transaction)
    /// REFUND.SUCCESS, REFUND.ABNORMAL or REFUND.CLOSED.
    case refund(V3RefundNotice)
}

/// A v3 notify's envelope: `id, create_time, resource_type:"encrypt-resource", event_type, summary,
/// resource{…}`. The envelope is read only after its signature verified.
public struct V3Notification: Sendable, Hashable {
    public static let paymentEvent = "TRANSACTION.SUCCESS"
    public static let refundEvents: Set<String> = ["REFUND.SUCCESS", "REFUND.ABNORMAL", "REFUND.CLOSED"]

    public var id: String
    public var createTime: String
    public var eventType: String
    public var summary: String
    public var resource: EncryptedResource

    public init(id: String, createTime: String, eventType: String, summary: String, resource: EncryptedResource) {
        self.id = id
        self.createTime = createTime
        self.eventType = eventType
        self.summary = summary
        self.resource = resource
    }

    /// The envelope's members: the rest of a notify is checked by the strict reader, never kept.
    static let shape = JSONShape(["id", "create_time", "resource_type", "event_type", "summary", "resource"],
                                 objects: ["resource": EncryptedResource.shape])

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        try self.init(try FieldReader.document(body, shape: Self.shape))
    }

    /// Reads the envelope's members, however the document was read (tests compare the two ways).
    init(_ reader: FieldReader) throws(WeChatPayV3Error) {
        guard try reader.string("resource_type", maxLength: 64) == "encrypt-resource" else { throw .invalid("resource_type") }
        guard reader.isPresent("resource") else { throw .missing("resource") }
        self.init(id: try reader.string("id", maxLength: 64), createTime: try reader.string("create_time", maxLength: 64),
                  eventType: try reader.string("event_type", maxLength: 64),
                  summary: try reader.optionalString("summary", maxLength: 256) ?? "",
                  resource: try Self.resource(reader))
    }

    /// The present `resource` member: null or anything but an object is invalid.
    private static func resource(_ reader: FieldReader) throws(WeChatPayV3Error) -> EncryptedResource {
        guard let object = try? reader.optionalObject("resource") else { throw .invalid("resource") }
        return try EncryptedResource(object.unprefixed)
    }

    public var body: [UInt8] {
        JSONValue.object([
            "id": .string(id), "create_time": .string(createTime), "resource_type": "encrypt-resource",
            "event_type": .string(eventType), "summary": .string(summary), "resource": resource.json,
        ]).bytes()
    }
}

/// Opens notifies: signature first (over the raw body, with the key the serial names, within five
/// minutes, probes refused), then the envelope, then the resource decrypted with the APIv3 key,
/// then its plaintext read as the event type says. Nothing of an unverified body is read.
///
/// ```swift
/// let opener = V3NotifyOpener(verifier: verifier, key: apiV3Key)
/// switch try opener.open(headers: request.headers, body: request.body, now: Date()) { … }
/// ```
public struct V3NotifyOpener: Sendable {
    public let verifier: V3Verifier
    public let key: APIv3Key
    /// The merchant number the notify must be for.
    public let mchID: String?

    public init(verifier: V3Verifier, key: APIv3Key, mchID: String? = nil) {
        self.verifier = verifier
        self.key = key
        self.mchID = mchID
    }

    public func open(headers: [String: String], body: [UInt8], now: Date) throws(WeChatPayV3Error) -> V3NotifyEvent {
        try open(V3SignedMessage(headers: headers, body: body), now: now)
    }

    public func open(_ message: V3SignedMessage, now: Date) throws(WeChatPayV3Error) -> V3NotifyEvent {
        try verifier.verify(message, now: now)
        let notification = try V3Notification(body: message.body)
        let plaintext = try notification.resource.decrypt(with: key)
        let event: V3NotifyEvent
        if notification.eventType == V3Notification.paymentEvent {
            guard notification.resource.originalType == nil || notification.resource.originalType == "transaction" else {
                throw .invalid("resource.original_type")
            }
            let transaction = try V3Transaction(body: plaintext)
            guard transaction.tradeState == .success else { throw .invalid("trade_state") }
            guard mchID == nil || transaction.mchID == mchID else { throw .invalid("mchid") }
            event = .payment(transaction)
        } else if V3Notification.refundEvents.contains(notification.eventType) {
            guard notification.resource.originalType == nil || notification.resource.originalType == "refund" else {
                throw .invalid("resource.original_type")
            }
            let notice = try V3RefundNotice(body: plaintext)
            guard "REFUND." + notice.refundStatus.rawValue == notification.eventType else { throw .invalid("refund_status") }
            guard mchID == nil || notice.mchID == mchID else { throw .invalid("mchid") }
            event = .refund(notice)
        } else {
            throw .invalid("event_type")
        }
        return event
    }
}

/// What the merchant answers a notify: 204 without a body once the outcome is committed; 5xx with
/// `{"code":"FAIL","message":…}` otherwise (WeChat retries), 4xx for what must never be retried
/// as is (a forged or probe signature).
public struct V3NotifyReply: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    public static let accepted = V3NotifyReply(status: 204, body: [])

    /// `message` is fixed text of the merchant's, never input.
    public static func failed(status: Int, message: String) -> V3NotifyReply {
        V3NotifyReply(status: status, body: JSONValue.object(["code": "FAIL", "message": .string(message)]).bytes())
    }

    /// Whether WeChat counts the reply as received (any 2xx).
    public static func acknowledges(status: Int) -> Bool { (200..<300).contains(status) }
}

/// Builds notify bodies as WeChat does: the event's resource sealed with the APIv3 key in the
/// envelope; ``WeChatPaySigner`` signs each attempt. The simulator's half, and the tests'.
public struct V3NotifyBuilder: Sendable {
    public let key: APIv3Key

    public init(key: APIv3Key) {
        self.key = key
    }

    /// The envelope's bytes for `event`.
    public func body(_ event: V3NotifyEvent, id: String, createTime: String, nonce: String) -> [UInt8] {
        let (type, originalType, summary, plaintext): (String, String, String, [UInt8]) = switch event {
        case .payment(let transaction): (V3Notification.paymentEvent, "transaction", "支付成功", transaction.body)
        case .refund(let notice):
            ("REFUND." + notice.refundStatus.rawValue, "refund",
             notice.refundStatus == .success ? "退款成功" : notice.refundStatus == .closed ? "退款关闭" : "退款异常", notice.body)
        }
        let resource = EncryptedResource.seal(plaintext, key: key, nonce: nonce, associatedData: originalType,
                                              originalType: originalType)
        return V3Notification(id: id, createTime: createTime, eventType: type, summary: summary, resource: resource).body
    }
}

/// WeChat Pay's side of a signature: what it puts on its answers and notifies (the simulator's
/// half, and the tests').
public struct WeChatPaySigner: Sendable {
    public let key: RSAPrivateKey
    public let serial: String

    public init(key: RSAPrivateKey, serial: String) {
        self.key = key
        self.serial = serial
    }

    public func sign(_ body: [UInt8], timestamp: Int64, nonce: String) -> V3SignedMessage {
        let ts = String(timestamp)
        let signature = Base64.encode(key.signature(for: V3SignedMessage.message(timestamp: ts, nonce: nonce, body: body)),
                                      .standardPadded)
        return V3SignedMessage(timestamp: ts, nonce: nonce, signature: signature, serial: serial, body: body)
    }
}
