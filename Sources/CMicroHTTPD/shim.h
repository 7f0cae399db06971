// SPDX-License-Identifier: Apache-2.0
// libmicrohttpd for the HTTP server.
#ifndef WXPAY_CMICROHTTPD_SHIM_H
#define WXPAY_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

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
#endif
