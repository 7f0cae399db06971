// SPDX-License-Identifier: Apache-2.0
// SQLite for the order store.
#ifndef WXPAY_CSQLITE_SHIM_H
#define WXPAY_CSQLITE_SHIM_H
#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro that casts -1 to a function pointer; Swift cannot import it.
static inline sqlite3_destructor_type _Nullable wxpay_sqlite_transient(void) { return SQLITE_TRANSIENT; }

/// `sqlite3_config` is variadic; Swift cannot call it. Turns off SQLite's memory statistics, which
/// otherwise take a process-wide mutex and update counters on every allocation and free SQLite
/// makes (several per statement). Only valid before SQLite is first used: SQLITE_MISUSE after.
static inline int wxpay_sqlite_disable_memory_statistics(void) { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); }
#endif
