// SPDX-License-Identifier: Apache-2.0
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `POST /pay/downloadbill`: the trade bill of one Beijing day (available from 10:00 the next day,
/// for the last three months). The answer is a file, not XML; see ``DownloadBillResponse``.
public struct DownloadBillRequest: WeChatPayRequest {
    public typealias Response = DownloadBillResponse
    public static var api: WeChatPayAPI { .downloadBill }

    /// `yyyyMMdd`, a Beijing calendar day.
    public var billDate: String
    public var billType: BillType
    /// Asks for a gzip-compressed bill (`tar_type=GZIP`).
    public var gzip: Bool
    public var deviceInfo: String?
    public var additionalFields: Fields

    public init(billDate: String, billType: BillType = .all, gzip: Bool = false, deviceInfo: String? = nil,
                additionalFields: Fields = Fields()) {
        self.billDate = billDate
        self.billType = billType
        self.gzip = gzip
        self.deviceInfo = deviceInfo
        self.additionalFields = additionalFields
    }

    /// The bill of the Beijing day `day` falls on.
    public init(day: Date, billType: BillType = .all, gzip: Bool = false) {
        self.init(billDate: BeijingTime.formatDay(day), billType: billType, gzip: gzip)
    }

    public init(fields: Fields) throws(WeChatPayMessageError) {
        let reader = FieldReader(fields)
        billDate = try reader.required("bill_date")
        guard BeijingTime.parseDay(billDate) != nil else { throw .invalidField("bill_date") }
        billType = try reader.optionalEnum("bill_type", as: BillType.self) ?? .all
        switch try reader.optional("tar_type") {
        case nil: gzip = false
        case "GZIP": gzip = true
        default: throw .invalidField("tar_type")
        }
        deviceInfo = try reader.optional("device_info", .text(maxLength: 32))
        additionalFields = reader.additionalFields(excluding: ["bill_date", "bill_type", "tar_type", "device_info"])
    }

    public func businessFields() -> Fields {
        var writer = FieldWriter()
        writer.add("device_info", deviceInfo)
        writer.add("bill_date", billDate)
        writer.add("bill_type", billType.rawValue)
        writer.add("tar_type", gzip ? "GZIP" : nil)
        writer.addAdditional(additionalFields)
        return writer.fields
    }
}
