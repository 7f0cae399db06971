// SPDX-License-Identifier: Apache-2.0
internal import CCurl
import Crypto
import Synchronization

/// One request's life inside the ``CurlMultiLoop``: its options, the easy handle while it runs,
/// the response as it arrives, and the continuation of the task waiting for it.
///
/// `@unchecked Sendable`: created by the calling task, then handed to the loop thread through the
/// loop's mutex; from then on only the loop thread touches its mutable fields. The one exception is
/// `cancelled`, an atomic written by the cancellation handler.
final class CurlTransfer: @unchecked Sendable {
    typealias Completion = CheckedContinuation<Result<HTTPClientResponse, HTTPClientError>, Never>

    let request: HTTPClientRequest
    let timeouts: HTTPClient.Timeouts
    let maxBodyBytes: Int
    let configuration: HTTPClient.Configuration

    /// Set by the task's cancellation handler before it asks the loop to remove the transfer, so a
    /// cancellation that overtakes the submission is still seen when the loop picks it up.
    private let cancelled = Atomic<Bool>(false)
    var continuation: Completion?

    // Loop thread only, from here on.
    var easy: UnsafeMutableRawPointer?
    var deadline: ContinuousClock.Instant = .now
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var responseHeaders = HTTPHeaders()
    private var responseHeaderBytes = 0
    private var responseBody: [UInt8] = []
    /// How much of the request body libcurl has taken (the read callback).
    private var uploaded = 0
    private(set) var exceededSizeCap = false
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Header blocks beyond this are refused like an oversized body; libcurl's own limit is per line.
    private static let maxResponseHeaderBytes = 64 << 10

    init(request: HTTPClientRequest, configuration: HTTPClient.Configuration) {
        self.request = request
        self.configuration = configuration
        timeouts = request.timeouts ?? configuration.timeouts
        maxBodyBytes = request.maxResponseBodyBytes ?? configuration.maxResponseBodyBytes
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        errorBuffer.deallocate()
        if let headerList { curl_slist_free_all(headerList) }
    }

    /// Called by the task's cancellation handler, before it asks the loop to remove the transfer.
    func markCancelled() { cancelled.store(true, ordering: .releasing) }

    /// Whether the task was cancelled (loop thread).
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Resumes the waiting task exactly once.
    func complete(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(returning: result)
    }

    /// libcurl's message for the last failure, empty when it left none.
    var curlMessage: String { String(cString: errorBuffer) }

    /// Sets every option the request needs on a fresh (or reset) easy handle.
    func configure(_ easy: UnsafeMutableRawPointer) -> CURLcode {
        self.easy = easy
        let context = Unmanaged.passUnretained(self).toOpaque()
        var failure = CURLE_OK
        func check(_ code: CURLcode) { if failure == CURLE_OK, code != CURLE_OK { failure = code } }

        check(wxpay_curl_setopt_string(easy, CURLOPT_URL, request.url))
        check(wxpay_curl_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        // Signals cannot be used for timeouts in a multi-threaded process.
        check(wxpay_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        check(wxpay_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, UnsafeMutableRawPointer(errorBuffer)))
        if configuration.curlEnforcesTimeouts {
            check(wxpay_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeouts.connect.curlMilliseconds))
            check(wxpay_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeouts.total.curlMilliseconds))
        }
        // Rejects an announced Content-Length up front; the write callback catches the rest.
        check(wxpay_curl_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(maxBodyBytes)))
        check(wxpay_curl_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent))
        // "" switches off libcurl's reading of http_proxy/https_proxy/no_proxy from the environment:
        // an egress proxy must be chosen on purpose.
        check(wxpay_curl_setopt_string(easy, CURLOPT_PROXY, configuration.proxy ?? ""))

        check(wxpay_curl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().receiveBody(data, size * count)
        })
        check(wxpay_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, context))
        check(wxpay_curl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().receiveHeader(data, size * count)
        })
        check(wxpay_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, context))

        check(configureMethod(easy))
        check(configureHeaders(easy))
        check(configureTLS(easy))
        deadline = .now + timeouts.total + configuration.watchdogSlack
        return failure
    }

    private func configureMethod(_ easy: UnsafeMutableRawPointer) -> CURLcode {
        let method = request.method
        if method == .head {
            return wxpay_curl_setopt_long(easy, CURLOPT_NOBODY, 1)
        }
        if request.body.isEmpty, method != .post {
            let code = wxpay_curl_setopt_long(easy, CURLOPT_HTTPGET, 1)
            guard code == CURLE_OK, method != .get else { return code }
            return wxpay_curl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue)
        }
        // The body goes through a read callback whose seek refuses to go back over bytes already
        // taken. With POSTFIELDS, libcurl resends a request by itself, on a fresh connection, when
        // the reused one closes before any answer byte, and reports the second answer as the only
        // one: a request the server had read and dropped reached it twice with the same bytes
        // (WeChat's nonce_str and sign), and the caller never heard of the first. The battery's T3
        // and T8 saw it as faults missing from the metrics and orderqueries 1 ms apart. Now that
        // is a `receiveFailed` the caller decides about (the pipeline resends with a new nonce).
        // A connection that closed while idle is still caught before reuse (libcurl checks it).
        var code = wxpay_curl_setopt_long(easy, CURLOPT_POST, 1)
        if code == CURLE_OK {
            code = wxpay_curl_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(request.body.count))
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        if code == CURLE_OK {
            code = wxpay_curl_setopt_data_callback(easy, CURLOPT_READFUNCTION) { buffer, size, count, context in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().sendBody(buffer, size * count)
            }
        }
        if code == CURLE_OK { code = wxpay_curl_setopt_pointer(easy, CURLOPT_READDATA, context) }
        if code == CURLE_OK {
            code = wxpay_curl_setopt_seek_callback(easy) { context, offset, origin in
                Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue().rewindBody(offset, origin)
            }
        }
        if code == CURLE_OK { code = wxpay_curl_setopt_pointer(easy, CURLOPT_SEEKDATA, context) }
        if code == CURLE_OK, method != .post {
            code = wxpay_curl_setopt_string(easy, CURLOPT_CUSTOMREQUEST, method.rawValue)
        }
        return code
    }

    private func configureHeaders(_ easy: UnsafeMutableRawPointer) -> CURLcode {
        var list: UnsafeMutablePointer<curl_slist>?
        for field in request.headers {
            // "Name;" is libcurl's spelling of a header with an empty value; "Name:" would remove it.
            let line = field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)"
            guard let appended = curl_slist_append(list, line) else { break }
            list = appended
        }
        // No "Expect: 100-continue" round trip: bodies here are small and some servers stall on it.
        if !request.headers.contains("Expect"), let appended = curl_slist_append(list, "Expect:") {
            list = appended
        }
        headerList = list
        return wxpay_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
    }

    private func configureTLS(_ easy: UnsafeMutableRawPointer) -> CURLcode {
        var failure = CURLE_OK
        func check(_ code: CURLcode) { if failure == CURLE_OK, code != CURLE_OK { failure = code } }
        if let caFile = configuration.tls.caFile {
            check(wxpay_curl_setopt_string(easy, CURLOPT_CAINFO, caFile))
        }
        switch request.clientIdentity?.storage {
        case .pem(let certificateFile, let keyFile, let keyPassword):
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLCERT, certificateFile))
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLCERTTYPE, "PEM"))
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLKEY, keyFile))
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLKEYTYPE, "PEM"))
            if let keyPassword { check(wxpay_curl_setopt_string(easy, CURLOPT_KEYPASSWD, keyPassword)) }
        case .pkcs12(let file, let password):
            // RC2/3DES-encrypted files (the usual merchant certificate bundle) need OpenSSL 3's
            // legacy provider in the default library context libcurl's OpenSSL uses.
            _ = LegacyAlgorithms.available
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLCERT, file))
            check(wxpay_curl_setopt_string(easy, CURLOPT_SSLCERTTYPE, "P12"))
            check(wxpay_curl_setopt_string(easy, CURLOPT_KEYPASSWD, password))
        case nil:
            break
        }
        return failure
    }

    /// What the error classification needs, read before the handle is reset.
    func progress(of easy: UnsafeMutableRawPointer) -> TransferProgress {
        var requestSize = 0
        _ = wxpay_curl_getinfo_long(easy, CURLINFO_REQUEST_SIZE, &requestSize)
        var nameLookup: curl_off_t = 0
        _ = wxpay_curl_getinfo_off_t(easy, CURLINFO_NAMELOOKUP_TIME_T, &nameLookup)
        return TransferProgress(
            requestBytesSent: requestSize, nameResolved: nameLookup > 0, exceededSizeCap: exceededSizeCap)
    }

    /// The finished response; moves the body out rather than copying it.
    func takeResponse(from easy: UnsafeMutableRawPointer) -> HTTPClientResponse {
        var status = 0
        _ = wxpay_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var connects = 0
        _ = wxpay_curl_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        let body = responseBody
        responseBody = []
        return HTTPClientResponse(status: status, headers: responseHeaders, body: body, openedNewConnection: connects > 0)
    }

    /// Frees what libcurl borrowed for the transfer; the handle itself goes back to the loop.
    func releaseHandle() {
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        easy = nil
    }

    // MARK: libcurl callbacks (loop thread)

    private func receiveBody(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0, let data else { return 0 }
        guard responseBody.count + count <= maxBodyBytes else {
            exceededSizeCap = true
            return 0  // anything but `count` aborts the transfer with CURLE_WRITE_ERROR
        }
        responseBody.append(contentsOf: UnsafeRawBufferPointer(start: data, count: count))
        return count
    }

    /// Hands libcurl the next part of the request body.
    private func sendBody(_ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
        guard let buffer, capacity > 0 else { return 0 }
        let count = min(capacity, request.body.count - uploaded)
        guard count > 0 else { return 0 }
        request.body.withUnsafeBytes { bytes in
            UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + uploaded, byteCount: count)
        }
        uploaded += count
        return count
    }

    /// libcurl asks to go back to `offset` to send the body again: only allowed before any of it
    /// was taken, so a request is never resent behind the caller's back (see `configureMethod`).
    private func rewindBody(_ offset: curl_off_t, _ origin: Int32) -> Int32 {
        guard offset == 0, origin == 0 /* SEEK_SET */, uploaded == 0 else { return CURL_SEEKFUNC_CANTSEEK }
        return CURL_SEEKFUNC_OK
    }

    private func receiveHeader(_ data: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard count > 0, let data else { return 0 }
        responseHeaderBytes += count
        guard responseHeaderBytes <= Self.maxResponseHeaderBytes else {
            exceededSizeCap = true
            return 0
        }
        var line = UnsafeRawBufferPointer(start: data, count: count)[...]
        // Line ending and trailing whitespace (RFC 9110's optional whitespace) are not part of a value.
        while let last = line.last, last == 0x0D || last == 0x0A || last == 0x20 || last == 0x09 { line = line.dropLast() }
        if line.starts(with: "HTTP/".utf8) {
            // A new status line (after `100 Continue`, say) starts a new header block.
            responseHeaders = HTTPHeaders()
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let value = line[(colon + 1)...].drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            responseHeaders.add(
                name: String(decoding: line[..<colon], as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        }
        return count
    }
}
