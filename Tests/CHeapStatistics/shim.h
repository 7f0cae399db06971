// SPDX-License-Identifier: Apache-2.0
// glibc's heap statistics (mallinfo2), for the tests that bound what hostile input leaves behind.
// Swift's Glibc module does not bring <malloc.h>.
#ifndef WXPAY_CHEAP_STATISTICS_SHIM_H
#define WXPAY_CHEAP_STATISTICS_SHIM_H
#include <malloc.h>
#endif
