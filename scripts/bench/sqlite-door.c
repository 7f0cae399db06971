// SPDX-License-Identifier: Apache-2.0
// A model of the SQLite work of a WeChat payment notify, in C, against the gateway's own schema:
// the statements the one door runs for a NOTPAY -> SUCCESS payment (SQLiteOrderStore.transition:
// the state read, the conditional UPDATE, the changed row read back, the state-change and receipt
// events in one INSERT, the outbox row), prepared once, 30 payments per transaction, WAL with
// synchronous=FULL, each payment inside a SAVEPOINT as the writer's careful pass runs it or not.
// Parts can be left out (the FLAGS bits below), so that running it under callgrind, which counts
// instructions the same way every time whatever else the machine does, says what each part costs.
// scripts/bench-sqlite-door runs it; the statements are copied from SQLiteOrderStore+Orders.swift
// and must be kept in step with it by hand.
//
//   sqlite-door DATABASE SCHEMA.sql FLAGS
//   FLAGS: 1 no read-back, 2 foreign keys off, 4 synchronous=OFF, 8 no state read, 16 no outbox row,
//          32 no events, 128 a SAVEPOINT around each payment, 256 seed only (no payments)
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { PAYMENTS = 12000, BATCH = 30 };
static sqlite3 *db;

static void check(int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "sqlite-door: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static sqlite3_stmt *prepare(const char *sql) {
    sqlite3_stmt *statement;
    check(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &statement, 0), sql);
    return statement;
}

static void run(sqlite3_stmt *statement, const char *what) {
    check(sqlite3_step(statement), what);
    sqlite3_reset(statement);
}

static char *slurp(const char *path) {
    FILE *file = fopen(path, "r");
    if (!file) { perror(path); exit(1); }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    rewind(file);
    char *text = malloc(size + 1);
    if (fread(text, 1, size, file) != (size_t)size) { perror(path); exit(1); }
    text[size] = 0;
    fclose(file);
    return text;
}

static double cpuSeconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: sqlite-door DATABASE SCHEMA.sql FLAGS\n"); return 64; }
    const char *path = argv[1];
    int flags = atoi(argv[3]);
    char wal[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    remove(path);
    remove(wal);
    check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, 0), "open");
    check(sqlite3_exec(db, slurp(argv[2]), 0, 0, 0), "schema");
    check(sqlite3_exec(db, "PRAGMA journal_mode=WAL", 0, 0, 0), "journal_mode");
    check(sqlite3_exec(db, (flags & 4) ? "PRAGMA synchronous=OFF" : "PRAGMA synchronous=FULL", 0, 0, 0), "synchronous");
    check(sqlite3_exec(db, (flags & 2) ? "PRAGMA foreign_keys=OFF" : "PRAGMA foreign_keys=ON", 0, 0, 0), "foreign_keys");
    check(sqlite3_exec(db, "PRAGMA temp_store=MEMORY", 0, 0, 0), "temp_store");

    // Unpaid APP orders as a create leaves them (the columns a v2 create fills).
    sqlite3_stmt *create = prepare(
        "INSERT INTO orders (out_trade_no, amount, description, client_ip, user_id, product_id, sign_type, time_expire,"
        " expires_at, created_at, state, prepay_id, prepay_issued_at, parameters_digest, flags, updated_at, channel,"
        " api_version, app_id, trade_type) VALUES (?1, 100, 'A course about something', '127.0.0.1', ?2, 'course-1',"
        " 'HMAC-SHA256', '20261207120000', ?3, ?3, 'NOTPAY', ?4, ?3,"
        " 'dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd', '', ?3, 'wechat', 'v2',"
        " 'wx0000000000000000', 'APP')");
    char outTradeNo[64], text[64], eventID[64];
    check(sqlite3_exec(db, "BEGIN", 0, 0, 0), "begin");
    for (int i = 0; i < PAYMENTS; i++) {
        snprintf(outTradeNo, sizeof outTradeNo, "BENCH%020d", i);
        snprintf(text, sizeof text, "user-%d", i % 500);
        sqlite3_bind_text(create, 1, outTradeNo, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(create, 2, text, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(create, 3, 1780000000000LL + i);
        snprintf(text, sizeof text, "wx20261207120000000000000%07d", i);
        sqlite3_bind_text(create, 4, text, -1, SQLITE_TRANSIENT);
        run(create, "create");
    }
    check(sqlite3_exec(db, "COMMIT", 0, 0, 0), "commit");

    sqlite3_stmt *savepoint = prepare("SAVEPOINT operation");
    sqlite3_stmt *release = prepare("RELEASE operation");
    sqlite3_stmt *stateRead = prepare("SELECT state FROM orders WHERE out_trade_no = ?");
    sqlite3_stmt *door = prepare(
        "UPDATE orders SET state = ?1, transaction_id = COALESCE(?2, transaction_id), paid_at = COALESCE(?3, paid_at),"
        " updated_at = ?4,"
        " last_notify_at = CASE WHEN ?8 = 1 THEN MAX(COALESCE(last_notify_at, ?4), ?4) ELSE last_notify_at END,"
        " last_queried_at = CASE WHEN ?8 = 2 THEN MAX(COALESCE(last_queried_at, ?4), ?4) ELSE last_queried_at END"
        " WHERE out_trade_no = ?5 AND instr(?6, ',' || state || ',') > 0 AND (?7 IS NULL OR amount = ?7)");
    sqlite3_stmt *readBack = prepare("SELECT * FROM orders WHERE out_trade_no = ?");
    sqlite3_stmt *events = prepare(
        "INSERT INTO order_events (out_trade_no, at, kind, detail) VALUES (?1, ?2, ?3, ?4), (?1, ?5, ?6, ?7)");
    sqlite3_stmt *outbox = prepare(
        "INSERT INTO outbox (id, out_trade_no, type, payload, created_at, attempts, next_attempt_at, delivered_at,"
        " dead_at, last_error) VALUES (?, ?, ?, ?, ?, 0, ?, NULL, NULL, NULL)");
    // An order.paid event is about 800 bytes of JSON.
    char payload[800];
    memset(payload, 'x', sizeof payload - 1);
    payload[sizeof payload - 1] = 0;

    double cpuBefore = cpuSeconds();
    struct timespec wallBefore, wallAfter;
    clock_gettime(CLOCK_MONOTONIC, &wallBefore);
    for (int first = 0; first < ((flags & 256) ? 0 : PAYMENTS); first += BATCH) {
        check(sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0), "begin");
        for (int i = first; i < first + BATCH && i < PAYMENTS; i++) {
            long long now = 1780000100000LL + i;
            snprintf(outTradeNo, sizeof outTradeNo, "BENCH%020d", i);
            // Time-ordered, as the gateway's event ids are.
            snprintf(eventID, sizeof eventID, "evt_%012llx%020d", now, i);
            if (flags & 128) run(savepoint, "savepoint");
            if (!(flags & 8)) {
                sqlite3_bind_text(stateRead, 1, outTradeNo, -1, SQLITE_TRANSIENT);
                check(sqlite3_step(stateRead), "state read");
                (void)sqlite3_column_text(stateRead, 0);
                sqlite3_reset(stateRead);
            }
            snprintf(text, sizeof text, "42000000002026%010d", i);
            sqlite3_bind_text(door, 1, "SUCCESS", -1, SQLITE_STATIC);
            sqlite3_bind_text(door, 2, text, -1, SQLITE_TRANSIENT);
            sqlite3_bind_int64(door, 3, now);
            sqlite3_bind_int64(door, 4, now);
            sqlite3_bind_text(door, 5, outTradeNo, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(door, 6, ",NOTPAY,USERPAYING,PAYERROR,", -1, SQLITE_STATIC);
            sqlite3_bind_int64(door, 7, 100);
            sqlite3_bind_int64(door, 8, 1);
            run(door, "door");
            if (sqlite3_changes(db) != 1) { fprintf(stderr, "sqlite-door: %s did not change\n", outTradeNo); return 1; }
            if (!(flags & 1)) {
                sqlite3_bind_text(readBack, 1, outTradeNo, -1, SQLITE_TRANSIENT);
                check(sqlite3_step(readBack), "read back");
                for (int column = 0; column < sqlite3_column_count(readBack); column++) {
                    sqlite3_value *value = sqlite3_column_value(readBack, column);
                    if (sqlite3_value_type(value) == SQLITE_TEXT) (void)sqlite3_value_text(value);
                }
                sqlite3_reset(readBack);
            }
            if (!(flags & 32)) {
                sqlite3_bind_text(events, 1, outTradeNo, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int64(events, 2, now);
                sqlite3_bind_text(events, 3, "state_changed", -1, SQLITE_STATIC);
                sqlite3_bind_text(events, 4, "NOTPAY -> SUCCESS: notify", -1, SQLITE_STATIC);
                sqlite3_bind_int64(events, 5, now);
                sqlite3_bind_text(events, 6, "notify_received", -1, SQLITE_STATIC);
                sqlite3_bind_text(events, 7, "settled", -1, SQLITE_STATIC);
                run(events, "events");
            }
            if (!(flags & 16)) {
                sqlite3_bind_text(outbox, 1, eventID, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(outbox, 2, outTradeNo, -1, SQLITE_TRANSIENT);
                sqlite3_bind_text(outbox, 3, "order.paid", -1, SQLITE_STATIC);
                sqlite3_bind_text(outbox, 4, payload, -1, SQLITE_TRANSIENT);
                sqlite3_bind_int64(outbox, 5, now);
                sqlite3_bind_int64(outbox, 6, now);
                run(outbox, "outbox");
            }
            if (flags & 128) run(release, "release");
        }
        check(sqlite3_exec(db, "COMMIT", 0, 0, 0), "commit");
    }
    clock_gettime(CLOCK_MONOTONIC, &wallAfter);
    double cpu = cpuSeconds() - cpuBefore;
    double wall = (wallAfter.tv_sec - wallBefore.tv_sec) + (wallAfter.tv_nsec - wallBefore.tv_nsec) / 1e9;
    printf("flags %d: %d payments, CPU %.1f µs and wall %.1f µs per payment\n", flags, PAYMENTS,
           cpu / PAYMENTS * 1e6, wall / PAYMENTS * 1e6);
    sqlite3_close(db);
    return 0;
}
