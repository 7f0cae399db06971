// SPDX-License-Identifier: Apache-2.0
// SQLite for the order store.
#ifndef WXPAY_CSQLITE_SHIM_H
#define WXPAY_CSQLITE_SHIM_H
#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro that casts -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type _Nullable wxpay_sqlite_transient(void) { return SQLITE_TRANSIENT; }
#endif
