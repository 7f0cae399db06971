// SPDX-License-Identifier: Apache-2.0
// libcurl for the HTTP client. `curl_easy_setopt` and `curl_easy_getinfo` are variadic, which
// Swift cannot call: each typed wrapper below fixes one argument type. They can go if libcurl
// ever ships typed setters.
#ifndef WXPAY_CCURL_SHIM_H
#define WXPAY_CCURL_SHIM_H
#include <curl/curl.h>

static inline CURLcode wxpay_curl_setopt_long(CURL *_Nonnull h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode wxpay_curl_setopt_string(CURL *_Nonnull h, CURLoption o, const char *_Nullable v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode wxpay_curl_setopt_pointer(CURL *_Nonnull h, CURLoption o, void *_Nullable v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode wxpay_curl_getinfo_long(CURL *_Nonnull h, CURLINFO i, long *_Nonnull v) {
    return curl_easy_getinfo(h, i, v);
}
#endif
