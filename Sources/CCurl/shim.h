// SPDX-License-Identifier: Apache-2.0
// libcurl for the HTTP client. `curl_easy_setopt`, `curl_easy_getinfo` and `curl_multi_setopt` are
// variadic, which Swift cannot call: each typed wrapper below fixes one argument type. They can go if
// libcurl ever ships typed setters.
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

// Sizes and times: CURLOPT_*_LARGE and CURLINFO_*_T take curl_off_t, which a `long` wrapper would
// silently truncate on 32-bit targets.
static inline CURLcode wxpay_curl_setopt_off_t(CURL *_Nonnull h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode wxpay_curl_getinfo_off_t(CURL *_Nonnull h, CURLINFO i, curl_off_t *_Nonnull v) {
    return curl_easy_getinfo(h, i, v);
}

// The header list for CURLOPT_HTTPHEADER: a `void *` wrapper would work but loses the type check.
static inline CURLcode wxpay_curl_setopt_slist(CURL *_Nonnull h, CURLoption o, struct curl_slist *_Nullable v) {
    return curl_easy_setopt(h, o, v);
}

// Callbacks: passing a C function pointer through the variadic `...` needs its exact type.
// Write and header callbacks share the `(char *, size_t, size_t, void *) -> size_t` shape.
typedef size_t (*wxpay_curl_data_callback)(char *_Nullable, size_t, size_t, void *_Nullable);
static inline CURLcode wxpay_curl_setopt_data_callback(CURL *_Nonnull h, CURLoption o,
                                                       wxpay_curl_data_callback _Nullable f) {
    return curl_easy_setopt(h, o, f);
}
// The read callback has the same shape; the seek callback (CURLOPT_SEEKFUNCTION) its own.
typedef int (*wxpay_curl_seek_callback)(void *_Nullable, curl_off_t, int);
static inline CURLcode wxpay_curl_setopt_seek_callback(CURL *_Nonnull h, wxpay_curl_seek_callback _Nullable f) {
    return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, f);
}
static inline CURLMcode wxpay_curl_multi_setopt_long(CURLM *_Nonnull m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}

// CURLMsg carries its result in an anonymous union; reading it here keeps the Swift side free of
// union layout assumptions.
static inline CURLcode wxpay_curl_msg_result(const CURLMsg *_Nonnull m) {
    return m->data.result;
}
#endif
