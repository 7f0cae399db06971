// SPDX-License-Identifier: Apache-2.0
// libpq for the PostgreSQL order store (several gateway instances sharing one database).
#ifndef WXPAY_CLIBPQ_SHIM_H
#define WXPAY_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
