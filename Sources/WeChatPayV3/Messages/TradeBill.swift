// SPDX-License-Identifier: Apache-2.0
import Crypto
import JSON
import WeChatPay

/// `GET /v3/bill/tradebill?bill_date=YYYY-MM-DD&bill_type=ALL|SUCCESS|REFUND[&tar_type=GZIP]`:
/// WeChat answers where to fetch the bill and its SHA-1; the file itself is not signed, its hash
/// is what proves it. The file is v2's bill text (`WeChatPay.Bill` reads it).
public struct TradeBillRequest: Sendable, Hashable {
    public static let path = "/v3/bill/tradebill"

    public var billDate: String
    public var billType: String
    public var gzip: Bool

    public init(billDate: String, billType: String = "ALL", gzip: Bool = true) {
        self.billDate = billDate
        self.billType = billType
        self.gzip = gzip
    }

    /// Reads the query of a request URL (the simulator's half).
    public init(query: Substring) throws(WeChatPayV3Error) {
        var values: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let name = V3URLComponent.decode(parts[0]), let value = V3URLComponent.decode(parts[1]),
                  values[name] == nil else { throw .invalid("query") }
            values[name] = value
        }
        guard let date = values["bill_date"] else { throw .missing("bill_date") }
        let tar = values["tar_type"]
        guard tar == nil || tar == "GZIP" else { throw .invalid("tar_type") }
        self.init(billDate: date, billType: values["bill_type"] ?? "ALL", gzip: tar == "GZIP")
        try validate()
    }

    public func validate() throws(WeChatPayV3Error) {
        let bytes = Array(billDate.utf8)
        guard bytes.count == 10, bytes[4] == 0x2D, bytes[7] == 0x2D,
              bytes.enumerated().allSatisfy({ $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) })
        else { throw .invalid("bill_date") }
        guard ["ALL", "SUCCESS", "REFUND"].contains(billType) else { throw .invalid("bill_type") }
    }

    public func request() throws(WeChatPayV3Error) -> V3Request {
        try validate()
        var url = Self.path + "?bill_date=" + billDate + "&bill_type=" + billType
        if gzip { url += "&tar_type=GZIP" }
        return V3Request(method: "GET", url: url)
    }
}

/// Where the bill is and what it hashes to.
public struct TradeBillResponse: Sendable, Hashable {
    public var hashType: String
    /// Lowercase hex SHA-1 of the uncompressed bill.
    public var hashValue: String
    /// Valid five minutes; fetched with a signed GET of its path and query.
    public var downloadURL: String

    public init(hashValue: String, downloadURL: String, hashType: String = "SHA1") {
        self.hashType = hashType
        self.hashValue = hashValue
        self.downloadURL = downloadURL
    }

    public init(body: [UInt8]) throws(WeChatPayV3Error) {
        let reader = try FieldReader.document(body)
        self.init(hashValue: try reader.string("hash_value", maxLength: 64), downloadURL: try reader.string("download_url", maxLength: 2048),
                  hashType: try reader.string("hash_type", maxLength: 16))
        guard hashType == "SHA1" else { throw .invalid("hash_type") }
        guard hashValue.utf8.count == 40, Hex.decode(hashValue) != nil else { throw .invalid("hash_value") }
    }

    public var body: [UInt8] {
        JSONValue.object(["hash_type": .string(hashType), "hash_value": .string(hashValue), "download_url": .string(downloadURL)]).bytes()
    }

    /// The bill text of a download: gunzipped when it was asked for compressed (bounded), then its
    /// SHA-1 compared with `hash_value`.
    public func checkedBill(_ downloaded: [UInt8], gzip: Bool, maximumSize: Int = 256 << 20) throws(WeChatPayV3Error) -> [UInt8] {
        let text: [UInt8]
        if gzip {
            guard let inflated = try? Gzip.decompress(downloaded, maximumOutput: maximumSize) else {
                throw WeChatPayV3Error(.billHashMismatch)
            }
            text = inflated
        } else {
            text = downloaded
        }
        guard let expected = Hex.decode(hashValue), ConstantTime.equal(SHA1.hash(text), expected) else {
            throw WeChatPayV3Error(.billHashMismatch)
        }
        return text
    }

    /// The request that fetches the file: a signed GET of the URL's path and query.
    public var downloadRequest: V3Request? {
        let parts = downloadURL.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "https:" || parts[0] == "http:", parts[1].isEmpty, !parts[2].isEmpty else { return nil }
        return V3Request(method: "GET", url: "/" + parts[3])
    }
}
