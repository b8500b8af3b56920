/*
 * tests/unit/test_etcd_store.h - what test_etcd_store.c shares with its
 * parts (test_etcd_store_*.c): the fixtures it defines, the tests they hold.
 */
#ifndef KVFS_TEST_ETCD_STORE_H
#define KVFS_TEST_ETCD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/etcd/etcd_int.h"
#include "store/tuple.h"
#define UNIT_SHARED
#include "tests/unit/unit.h"

extern const char *endpoints;	/* KVFS_ETCD_ENDPOINTS */

/* put_fn's key and value; runs: how many times store_etcd_write ran it. */
struct kv_arg {
	const char *key, *val;
	int runs;
};

/* fill_fn's children [from, to) of ("kids"), per_child leaves each. */
struct fill_arg {
	int from, to, per_child;
};

/* test_etcd_store.c: the fixtures */
/* The URL of this run's store `name`: a static buffer, valid until the next call. */
const char *url(const char *name);
/* What store/store.c does around the backend's operations; each t_ handle is closed or ended by its pair. */
int t_open(const char *name, unsigned flags, struct store **out, char *why, size_t why_len);
void t_close(struct store *st, bool discard);
int t_read(struct store *st, struct store_txn **out);
void t_end(struct store_txn *t);
int t_scan(struct store_txn *t, enum store_space space, const void *prefix, size_t pl,
	   struct store_scan **out);
void t_scan_close(struct store_scan *s);
int t_scan_count(struct store_txn *t, const char *prefix);
/* This run's new store `name` (exits 2 when it cannot be made); close it with t_close. */
struct store *open_new(const char *name);
int put_fn(struct store_txn *t, void *arg);
void put1(struct store *st, const char *k, const char *v);
int get1(struct store *st, const char *k, char *out, size_t len);
size_t dir_key(uint8_t *out, size_t cap, int64_t i, bool with_i);
int many_fn(struct store_txn *t, void *arg);
bool watch_caught_up(struct store *a);
int64_t now_ns(void);

/* test_etcd_store_rw.c */
void test_open(void);
void test_writes(void);
void test_scans(void);
void test_prefetch(void);
void test_write_scans(void);

/* test_etcd_store_guards.c */
void test_conflicts(void);
void test_writer_guard(void);
void test_big(void);
void test_big_lost_flip(void);
void test_many_guards(void);
void test_put_not_a_delete(void);
void test_big_value(void);

/* test_etcd_store_feed.c */
void test_feed(void);
void test_shared(void);

/* test_etcd_store_turn.c */
void test_turn(void);
void test_turn_two_slow(void);
void test_turn_dead_holder(void);

/* test_etcd_store_carry.c */
void test_carry(void);
void test_carry_readers(void);
void test_snap_renew(void);
void test_snap_carry_aged(void);

/* test_etcd_store_kids.c */
void test_kids_hints(void);
void test_kids_windows(void);
void test_kids_big(void);
void test_kids_window_bound(void);
void test_kids_check(void);

/* test_etcd_store_subdirs.c */
void test_kids_subdirs(void);
void test_kids_subdirs_edges(void);

/* test_etcd_store_lease.c */
void test_leases(void);

/* test_etcd_store_trust.c */
void test_kids_trust(void);

/* test_etcd_store_bench.c */
int fill_fn(struct store_txn *t, void *arg);
/* bench STORE N [reuse]: times store.h's operations on STORE (a URL or a directory); the exit status. */
int bench(const char *name, int per_child, bool reuse);

#endif
