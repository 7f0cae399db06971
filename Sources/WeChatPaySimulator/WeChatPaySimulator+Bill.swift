// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

extension WeChatPaySimulator {
    func downloadBill(_ request: DownloadBillRequest, now: Date, book: inout OrderBook) throws(BusinessFailure) -> SimulatorResponse {
        SimulatorResponse(body: encode(["return_code": "FAIL", "return_msg": "No Bill Exist"]))
    }
}
