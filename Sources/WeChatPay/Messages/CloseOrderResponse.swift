// SPDX-License-Identifier: Apache-2.0

/// What became of a close. `ORDERPAID` and `ORDERCLOSED` are outcomes here, not errors: a close
/// that finds the order paid is how reconciliation learns of a payment whose notify was lost.
public struct CloseOrderResponse: WeChatPayResponse, Sendable, Hashable {
    public enum Outcome: Sendable, Hashable, CaseIterable {
        /// The order is now closed.
        case closed
        /// `ORDERPAID`: the order cannot be closed because it is paid. Settle it as paid (confirm
        /// the amount with orderquery) and fulfil it.
        case alreadyPaid
        /// `ORDERCLOSED`: it was closed already.
        case alreadyClosed

        /// The `err_code` WeChat answers for this outcome; nil for ``closed``.
        public var errorCode: WeChatPayErrorCode? {
            switch self {
            case .closed: nil
            case .alreadyPaid: .orderPaid
            case .alreadyClosed: .orderClosed
            }
        }
    }

    public var outcome: Outcome
    /// `result_msg`, when WeChat sends one.
    public var resultMessage: String?
    /// Every field received, known or not, in document order.
    public var fields: Fields

    public init(outcome: Outcome, resultMessage: String? = nil) {
        self.outcome = outcome
        self.resultMessage = resultMessage
        fields = Fields()
        fields = businessFields()
    }

    public init(verifiedFields: Fields) throws(WeChatPayMessageError) {
        outcome = .closed
        resultMessage = try FieldReader(verifiedFields).optional("result_msg")
        fields = verifiedFields
    }

    public static func acceptingBusinessFailure(_ code: WeChatPayErrorCode, verifiedFields: Fields) -> Self? {
        let outcome: Outcome
        switch code {
        case .orderPaid: outcome = .alreadyPaid
        case .orderClosed: outcome = .alreadyClosed
        default: return nil
        }
        var response = CloseOrderResponse(outcome: outcome, resultMessage: verifiedFields.nonEmpty("result_msg"))
        response.fields = verifiedFields
        return response
    }

    /// The response's own fields for a server to send on success (wrap them with
    /// ``ResponseEnvelope/success(_:appID:mchID:nonceStr:signer:signType:)``; for the other
    /// outcomes send ``ResponseEnvelope/businessFailure(_:description:business:appID:mchID:nonceStr:signer:signType:)``
    /// with ``Outcome/errorCode``).
    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("result_msg", resultMessage)
        return writer.fields
    }
}
