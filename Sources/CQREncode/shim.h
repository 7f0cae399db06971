// SPDX-License-Identifier: Apache-2.0
// libqrencode for the QR codes of NATIVE (PC web) orders' code_url. Its functions are plain C,
// callable from Swift as they are; nothing needs wrapping.
#ifndef WXPAY_CQRENCODE_SHIM_H
#define WXPAY_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
