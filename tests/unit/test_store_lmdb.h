/*
 * tests/unit/test_store_lmdb.h - what test_store_lmdb.c shares with its
 * parts (test_store_lmdb_*.c): the fixtures it defines, the tests they hold.
 */
#ifndef KVFS_TEST_STORE_LMDB_H
#define KVFS_TEST_STORE_LMDB_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#define UNIT_SHARED
#include "tests/unit/unit.h"

/* One key and value for the write callbacks below; result: del_fn's store_del. */
struct kv {
	enum store_space space;
	const void *key;
	size_t key_len;
	const void *val;
	size_t val_len;
	int result;
};

/* test_store_lmdb.c: the fixtures */
/* A new path under the run's temporary directory, written into buf; returns buf. */
const char *new_dir(char *buf, size_t len);
/* The tuple ("<name>", i) or ("<name>") into buf (STORE_KEY_MAX bytes): its length. */
size_t key2(uint8_t *buf, const char *name, int64_t i);
size_t key1(uint8_t *buf, const char *name);
/* A new store in a new directory, its path into dir; NULL when it fails. The caller closes it. */
struct store *open_new(char *dir, size_t len);
/* store_write callbacks on a struct kv */
int put_fn(struct store_txn *txn, void *arg);
int put_then_fail(struct store_txn *txn, void *arg);
int del_fn(struct store_txn *txn, void *arg);
int put_kv(struct store *st, enum store_space space, const void *k, size_t kl,
	   const void *v, size_t vl);
long get_kv(struct store *st, enum store_space space, const void *k, size_t kl,
	    void *buf, size_t cap);
int count_under(struct store *st, const char *name);

/* test_store_lmdb_ops.c */
void test_open_modes(void);
void test_open_missing(void);
void test_newer_format_refused(void);
void test_foreign_refused(void);
void test_readonly(void);
void test_point_ops(void);
void test_prefix_scan_and_delete(void);
void test_scan_seek(void);
void test_del_prefix_too_long(void);

/* test_store_lmdb_growth.c */
void test_growth_one_txn(void);
void test_growth_many_txns_with_readers(void);
void test_growth_not_starved_by_readers(void);

/* test_store_lmdb_distinct.c */
void test_skip_proof(void);
void test_depth2_distinct(void);
void test_distinct_bad_key(void);
void test_distinct_nul_sibling(void);

/* test_store_lmdb_commit.c */
void test_info_copy_sync(void);
void test_nosync(void);
void test_queue_later(void);

#endif
