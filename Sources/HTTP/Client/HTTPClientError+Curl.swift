// SPDX-License-Identifier: Apache-2.0
internal import CCurl

/// What the transfer had done when it ended, as far as the error classification needs.
struct TransferProgress: Sendable {
    /// Request bytes written to the connection (`CURLINFO_REQUEST_SIZE`: the headers and the body
    /// sent with them). A partial write counts: the server may hold part of the request.
    var requestBytesSent: Int
    /// Whether name resolution finished (`CURLINFO_NAMELOOKUP_TIME_T` > 0).
    var nameResolved: Bool
    /// Whether the write callback refused the body for exceeding the size cap.
    var exceededSizeCap: Bool
}

extension HTTPClientError {
    /// The one place where a libcurl result becomes a client error.
    ///
    /// The delivery flag comes from `progress`, never from the code alone: the same
    /// `CURLE_OPERATION_TIMEDOUT` means "never connected" or "the server went silent after reading
    /// the request", and only the latter may have reached the server.
    static func fromCurl(_ result: CURLcode, progress: TransferProgress, message: String) -> Self {
        let sent = progress.requestBytesSent > 0
        let base: Self
        switch result {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_BAD_FUNCTION_ARGUMENT:
            base = .invalidRequest
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            base = .dnsFailure
        case CURLE_COULDNT_CONNECT:
            base = .connectFailed
        case CURLE_OPERATION_TIMEDOUT:
            // Nothing written means the connection (or the resolver) never got that far.
            if sent { base = .timeout } else if progress.nameResolved { base = .connectTimeout } else { base = .dnsFailure }
        case CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE,
             CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED:
            base = .tlsConfigurationUnusable
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CIPHER,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED:
            base = .tlsFailure
        case CURLE_SEND_ERROR:
            // With TLS 1.3 the server checks the client certificate after the client has finished
            // its handshake, so a refusal surfaces as a TLS alert on the first read or write.
            base = Self.isTLSAlert(message) ? .tlsFailure : .sendFailed
        case CURLE_SEND_FAIL_REWIND:
            // libcurl wanted to send the body again on a fresh connection because the one it had
            // sent it on closed without an answer; the transfer refuses (CurlTransfer.rewindBody).
            base = .receiveFailed
        case CURLE_RECV_ERROR:
            base = Self.isTLSAlert(message) ? .tlsFailure : .receiveFailed
        case CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            base = .receiveFailed
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING, CURLE_HTTP3, CURLE_RANGE_ERROR:
            base = .protocolViolation
        case CURLE_FILESIZE_EXCEEDED:
            base = .responseTooLarge
        case CURLE_WRITE_ERROR where progress.exceededSizeCap:
            base = .responseTooLarge
        default:
            base = .internalFailure
        }
        // A size-cap refusal means the server answered, so it certainly got the request.
        let delivered = base == .responseTooLarge || sent || result == CURLE_SEND_FAIL_REWIND
        return base.with(mayHaveBeenDelivered: delivered, curlCode: Int32(bitPattern: result.rawValue), detail: message)
    }

    /// OpenSSL's alert reasons read "sslv3 alert bad certificate", "tlsv13 alert certificate
    /// required", "tlsv1 alert unknown ca"; libcurl passes them through in its error buffer.
    private static func isTLSAlert(_ message: String) -> Bool {
        message.contains("SSL") && message.contains(" alert ")
    }
}
