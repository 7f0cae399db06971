// SPDX-License-Identifier: Apache-2.0
// What the CCrypto translation units share and nobody else calls.
#ifndef WXPAY_CCRYPTO_INTERNAL_H
#define WXPAY_CCRYPTO_INTERNAL_H
#include "include/ccrypto.h"
#include <openssl/bio.h>

/// Copies what a memory BIO holds into a buffer the caller frees with `OPENSSL_free`, and frees
/// the BIO; returns the length, or 0 when `written` is not 1 or the BIO is empty.
int wxpay_bio_take(BIO *_Nonnull bio, int written, char *_Nullable *_Nonnull out);
#endif
