// SPDX-License-Identifier: Apache-2.0
// zlib for gzip-compressed downloadbill bodies.
#ifndef WXPAY_CZLIB_SHIM_H
#define WXPAY_CZLIB_SHIM_H
#include <zlib.h>

/// `inflateInit2` is a function-like macro (it passes the version and struct size); Swift cannot call it.
static inline int wxpay_inflate_init2(z_stream *_Nonnull stream, int window_bits) {
    return inflateInit2(stream, window_bits);
}
/// `deflateInit2` likewise; used by tests and the simulator to produce gzip bills.
static inline int wxpay_deflate_init2(z_stream *_Nonnull stream, int level, int window_bits) {
    return deflateInit2(stream, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
}
#endif
