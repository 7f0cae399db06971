// SPDX-License-Identifier: Apache-2.0
import CCurl
import CLibPQ
import CLibXML2
import CMicroHTTPD
import COpenSSL
import CQREncode
import CSQLite
import CZlib
import Testing

/// Each system-library target must compile its shim header and link its library. These calls
/// fail to build or to link when a `-dev` package or a module map is wrong.
struct CShimsTests {
    @Test func everyCLibraryLinksAndReportsAVersion() {
        #expect(String(cString: wxpay_openssl_version()).hasPrefix("OpenSSL 3"))
        wxpay_xml_check_version()
        #expect(String(cString: curl_version()).contains("libcurl"))
        #expect(MHD_get_version() != nil)
        #expect(String(cString: sqlite3_libversion()).hasPrefix("3."))
        #expect(PQlibVersion() >= 100_000)
        #expect(String(cString: zlibVersion()).hasPrefix("1."))
        #expect(String(cString: QRcode_APIVersionString()).hasPrefix("4."))
    }

    @Test func libmicrohttpdWasBuiltWithTLS() {
        // The simulator's /secapi/ refund endpoint needs HTTPS with client certificates.
        #expect(wxpay_mhd_supports_tls() == 1)
    }
}
