// SPDX-License-Identifier: Apache-2.0
// libmicrohttpd for the HTTP server, plus the few GnuTLS calls the server needs to check client
// certificates (libmicrohttpd is built with GnuTLS and hands out the session).
#ifndef WXPAY_CMICROHTTPD_SHIM_H
#define WXPAY_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <microhttpd.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/// `MHD_start_daemon` is variadic; Swift cannot call it. This wrapper passes every option through
/// one `MHD_OPTION_ARRAY`, so Swift builds a plain array of `struct MHD_OptionItem`.
static inline struct MHD_Daemon *_Nullable wxpay_mhd_start_daemon(
    unsigned int flags, uint16_t port,
    MHD_AccessHandlerCallback _Nonnull handler, void *_Nullable handler_cls,
    struct MHD_OptionItem *_Nonnull options) {
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/// Swift does not import the constants of `enum MHD_FEATURE` (a closed enum with duplicate values,
/// MHD_FEATURE_TLS == MHD_FEATURE_SSL), so the feature check we need is spelled out here.
static inline int wxpay_mhd_supports_tls(void) {
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

// MARK: - Daemon flags
// `enum MHD_FLAG` has the same duplicate-value problem as MHD_FEATURE, so the one combination the
// server uses is spelled out here rather than rebuilt from constants Swift may not see.

/// Internal polling threads on epoll (a pool of them when MHD_OPTION_THREAD_POOL_SIZE > 1), with
/// suspend/resume (which implies MHD_USE_ITC, the inter-thread channel that wakes a worker when
/// another thread resumes one of its connections), optionally TLS. No MHD_USE_ERROR_LOG: library
/// messages would go to stderr unfiltered and may quote client input. No listening socket either:
/// the server accepts on a thread of its own and hands each connection over with
/// MHD_add_connection, because libmicrohttpd 0.9.75's MHD_quiesce_daemon races its epoll workers
/// for the listening socket and aborts the process when it loses (daemon.c, "Failed to remove
/// listen FD from epoll set").
static inline unsigned int wxpay_mhd_server_flags(bool tls) {
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC
        | MHD_USE_NO_LISTEN_SOCKET;
    if (tls) flags |= MHD_USE_TLS;
    return flags;
}

// MARK: - Option items
// Options that take a function pointer travel in `MHD_OptionItem.value` as an `intptr_t`; Swift
// cannot cast a C function pointer to an integer without unsafeBitCast, so these typed builders do it.

static inline struct MHD_OptionItem wxpay_mhd_option_end(void) {
    struct MHD_OptionItem item = { MHD_OPTION_END, 0, NULL };
    return item;
}

/// For options whose argument is an `unsigned int` or a `size_t` (both travel in `value`).
static inline struct MHD_OptionItem wxpay_mhd_option_value(enum MHD_OPTION option, intptr_t value) {
    struct MHD_OptionItem item = { option, value, NULL };
    return item;
}

/// For options whose argument is one pointer (`MHD_OPTION_HTTPS_MEM_KEY` and friends).
static inline struct MHD_OptionItem wxpay_mhd_option_pointer(enum MHD_OPTION option, const void *_Nonnull pointer) {
    struct MHD_OptionItem item = { option, 0, (void *)pointer };
    return item;
}

static inline struct MHD_OptionItem wxpay_mhd_option_notify_completed(
    MHD_RequestCompletedCallback _Nonnull callback, void *_Nullable cls) {
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)callback, cls };
    return item;
}

static inline struct MHD_OptionItem wxpay_mhd_option_notify_connection(
    MHD_NotifyConnectionCallback _Nonnull callback, void *_Nullable cls) {
    struct MHD_OptionItem item = { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)callback, cls };
    return item;
}

/// libmicrohttpd calls this with the raw request-target as soon as the request line is read, before
/// it splits the query into arguments; what it returns becomes the request's context (`*req_cls`).
typedef void *_Nullable (*wxpay_mhd_uri_log_callback)(void *_Nullable cls, const char *_Nullable uri,
                                                     struct MHD_Connection *_Nonnull connection);

static inline struct MHD_OptionItem wxpay_mhd_option_uri_log(wxpay_mhd_uri_log_callback _Nonnull callback,
                                                             void *_Nullable cls) {
    struct MHD_OptionItem item = { MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)callback, cls };
    return item;
}

/// The unescaper libmicrohttpd applies to the path and to query arguments (the server installs one
/// that leaves them encoded, so `%2F` inside a path parameter is not mistaken for a separator).
typedef size_t (*wxpay_mhd_unescape_callback)(void *_Nullable cls, struct MHD_Connection *_Nonnull connection,
                                              char *_Nonnull string);

static inline struct MHD_OptionItem wxpay_mhd_option_unescape(wxpay_mhd_unescape_callback _Nonnull callback,
                                                              void *_Nullable cls) {
    struct MHD_OptionItem item = { MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)callback, cls };
    return item;
}

// MARK: - Request values

/// Visits the request headers and the query arguments in one pass. `enum MHD_ValueKind` is a closed
/// enum in Swift, so the bitwise OR of two kinds cannot be formed there.
static inline int wxpay_mhd_visit_headers_and_arguments(struct MHD_Connection *_Nonnull connection,
                                                        MHD_KeyValueIterator _Nonnull iterator,
                                                        void *_Nullable cls) {
    return MHD_get_connection_values(connection, (enum MHD_ValueKind)(MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND),
                                     iterator, cls);
}

// MARK: - Connection info
// `MHD_get_connection_info` is variadic; one typed accessor per field the server reads.

/// The peer's address, or NULL. Valid while the connection lives.
static inline const struct sockaddr *_Nullable wxpay_mhd_connection_client_address(
    struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

/// The connection's socket, or -1.
static inline int wxpay_mhd_connection_fd(struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// Bytes that arrived on socket `fd` and were not read yet, or -1 (`ioctl` is variadic: Swift
/// cannot call it).
static inline int wxpay_socket_unread_bytes(int fd) {
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) == 0 ? unread : -1;
}

/// What the MHD_OPTION_NOTIFY_CONNECTION callback stored for the connection, or NULL.
static inline void *_Nullable wxpay_mhd_connection_socket_context(struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The connection's GnuTLS session, or NULL on a plain-HTTP connection.
static inline gnutls_session_t _Nullable wxpay_mhd_connection_tls_session(
    struct MHD_Connection *_Nonnull connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : (gnutls_session_t)info->tls_session;
}

// MARK: - GnuTLS

/// Verifies the peer's certificate chain against the daemon's trust list (MHD_OPTION_HTTPS_MEM_TRUST)
/// and requires the leaf to allow TLS client authentication (extended key usage clientAuth), so a
/// server certificate issued by the same CA cannot pose as a client. `GNUTLS_KP_TLS_WWW_CLIENT` is a
/// string macro, which is why this lives in C. Returns a GnuTLS error code (GNUTLS_E_NO_CERTIFICATE_FOUND
/// when the client sent none) or 0 with `*status` == 0 when the certificate is trusted.
static inline int wxpay_gnutls_verify_client_certificate(gnutls_session_t _Nonnull session,
                                                        unsigned int *_Nonnull status) {
    gnutls_typed_vdata_st purpose;
    purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
    purpose.data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT;
    purpose.size = 0;
    return gnutls_certificate_verify_peers(session, &purpose, 1, status);
}
#endif
