/*
 * tests/unit/test_store_lmdb.c - the LMDB store: creation modes and format
 * check, point operations, prefix scans, map growth (also under concurrent
 * readers), and the skip proof: listing children costs cursor steps in
 * proportion to the number of children, not to the size of their subtrees;
 * a STORE_QUEUE_LATER batch, and other processes' opens waiting for it.
 */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "tests/unit/unit.h"

static char tmp_root[64];
static int dir_serial;

/* A fresh, not yet existing path under the test's temporary directory. */
static const char *new_dir(char *buf, size_t len)
{
	snprintf(buf, len, "%s/s%d", tmp_root, dir_serial++);
	return buf;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

/* Key ("<name>", i) for tests that need many distinct keys. */
static size_t key2(uint8_t *buf, const char *name, int64_t i)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	tuple_put_string(&w, name, strlen(name));
	tuple_put_int(&w, i);
	return w.len;
}

static size_t key1(uint8_t *buf, const char *name)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	tuple_put_string(&w, name, strlen(name));
	return w.len;
}

static struct store *open_new(char *dir, size_t len)
{
	struct store *st = NULL;
	char why[256] = "";
	int rc = store_open(new_dir(dir, len), STORE_OPEN_CREATE, &st, why, sizeof(why));

	if (rc)
		fprintf(stderr, "#   store_open: %d %s\n", rc, why);
	return st;
}

/* ---- small write callbacks ---- */

struct kv {
	enum store_space space;
	const void *key;
	size_t key_len;
	const void *val;
	size_t val_len;
	int result;
};

static int put_fn(struct store_txn *txn, void *arg)
{
	struct kv *kv = arg;

	return store_put(txn, kv->space, kv->key, kv->key_len, kv->val, kv->val_len);
}

static int put_then_fail(struct store_txn *txn, void *arg)
{
	put_fn(txn, arg);
	return -ECANCELED;
}

static int del_fn(struct store_txn *txn, void *arg)
{
	struct kv *kv = arg;

	kv->result = store_del(txn, kv->space, kv->key, kv->key_len);
	return 0;
}

static int put_kv(struct store *st, enum store_space space, const void *k, size_t kl,
		  const void *v, size_t vl)
{
	struct kv kv = { space, k, kl, v, vl, 0 };

	return store_write(st, put_fn, &kv);
}

/* Reads key into buf: its length, or -errno. */
static long get_kv(struct store *st, enum store_space space, const void *k, size_t kl,
		   void *buf, size_t cap)
{
	struct store_txn *txn;
	struct store_val v;
	long rc = store_read_begin(st, &txn);

	if (rc)
		return rc;
	rc = store_get(txn, space, k, kl, &v);
	if (rc == 0) {
		memcpy(buf, v.data, v.len < cap ? v.len : cap);
		rc = (long)v.len;
	}
	store_txn_end(txn);
	return rc;
}

/* ---- opening ---- */

static void test_open_modes(void)
{
	char dir[128], path[160], why[256] = "";
	struct store *st = NULL;
	struct stat sb;
	mode_t old = umask(0277);
	uint8_t buf[16];

	CHECK_EQ_INT(store_open(new_dir(dir, sizeof(dir)), STORE_OPEN_CREATE, &st, why, sizeof(why)), 0);
	umask(old);
	CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 07777) == 0700);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0600);
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0600);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_META, "format", 6, buf, sizeof(buf)), 4);
	CHECK_MEM(buf, 4, "\0\0\0\4", 4);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_META, "created", 7, buf, sizeof(buf)), 8);
	store_close(st);

	/* reopen without CREATE, and read-only */
	CHECK_EQ_INT(store_open(dir, 0, &st, why, sizeof(why)), 0);
	store_close(st);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_READONLY, &st, why, sizeof(why)), 0);
	store_close(st);
}

static void test_open_missing(void)
{
	char dir[128], why[256] = "";
	struct store *st = (struct store *)1;

	CHECK_EQ_INT(store_open(new_dir(dir, sizeof(dir)), 0, &st, why, sizeof(why)), -ENOENT);
	CHECK(st == NULL);
	CHECK(strstr(why, dir) != NULL);
	printf("# missing: %s\n", why);
	/* an existing empty directory without CREATE is no store either */
	CHECK(mkdir(dir, 0700) == 0);
	CHECK_EQ_INT(store_open(dir, 0, &st, why, sizeof(why)), -ENOENT);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_READONLY | STORE_OPEN_CREATE, &st, why, sizeof(why)),
		     -ENOENT);
}

static void test_newer_format_refused(void)
{
	char dir[128], why[256] = "";
	struct store *st = open_new(dir, sizeof(dir));

	CHECK(st != NULL);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_META, "format", 6, "\0\0\0\5", 4), 0);
	store_close(st);
	CHECK(store_open(dir, 0, &st, why, sizeof(why)) < 0);
	CHECK(strcmp(why, "store format 5 is newer than this kvfs supports (4)") == 0);
	printf("# newer: %s\n", why);
	CHECK(store_open(dir, STORE_OPEN_READONLY, &st, why, sizeof(why)) < 0);
}

static void test_foreign_refused(void)
{
	char dir[128], path[160], why[256] = "";
	struct store *st = NULL;
	char junk[8192];
	FILE *f;

	CHECK(mkdir(new_dir(dir, sizeof(dir)), 0700) == 0);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	f = fopen(path, "w");
	memset(junk, 'x', sizeof(junk));
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
	CHECK(store_open(dir, 0, &st, why, sizeof(why)) < 0);
	CHECK(strstr(why, "not a kvfs store") != NULL);
	printf("# foreign: %s\n", why);
}

static void test_readonly(void)
{
	char dir[128], why[256] = "";
	struct store *st = open_new(dir, sizeof(dir)), *ro = NULL;
	struct store_txn *txn;

	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, "\x02k\x00", 3, "v", 1), 0);
	store_close(st);
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_READONLY, &ro, why, sizeof(why)), 0);
	CHECK_EQ_INT(put_kv(ro, STORE_SPACE_DATA, "\x02k\x00", 3, "w", 1), -EROFS);
	CHECK_EQ_INT(store_read_begin(ro, &txn), 0);
	CHECK_EQ_INT(store_put(txn, STORE_SPACE_DATA, "\x02k\x00", 3, "w", 1), -EROFS);
	CHECK_EQ_INT(store_del(txn, STORE_SPACE_DATA, "\x02k\x00", 3), -EROFS);
	store_txn_end(txn);
	CHECK_EQ_INT(store_sync(ro), 0);
	store_close(ro);
}

/* ---- point operations ---- */

static void test_point_ops(void)
{
	char dir[128], buf[32];
	struct store *st = open_new(dir, sizeof(dir));
	uint8_t k[STORE_KEY_MAX + 1], big[STORE_KEY_MAX + 1];
	size_t kl = key2(k, "users", 42);
	struct kv kv = { STORE_SPACE_DATA, k, kl, NULL, 0, 0 };

	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, k, kl, buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, k, kl, "Bob", 3), 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, k, kl, buf, sizeof(buf)), 3);
	CHECK_MEM(buf, 3, "Bob", 3);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, k, kl, "Alice", 5), 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, k, kl, buf, sizeof(buf)), 5);
	/* a failing callback commits nothing */
	kv.val = "Carol";
	kv.val_len = 5;
	CHECK_EQ_INT(store_write(st, put_then_fail, &kv), -ECANCELED);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, k, kl, buf, sizeof(buf)), 5);
	CHECK_MEM(buf, 5, "Alice", 5);
	/* the spaces are separate */
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_META, k, kl, buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(store_write(st, del_fn, &kv), 0);
	CHECK_EQ_INT(kv.result, 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, k, kl, buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(store_write(st, del_fn, &kv), 0);
	CHECK_EQ_INT(kv.result, -ENOENT);
	/* key length limit */
	memset(big, 'a', sizeof(big));
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, big, STORE_KEY_MAX, "x", 1), 0);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, big, STORE_KEY_MAX + 1, "x", 1), -ENAMETOOLONG);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, big, STORE_KEY_MAX + 1, buf, 1), -ENAMETOOLONG);
	store_close(st);
}

/* ---- prefixes and scans ---- */

static int load_abc(struct store_txn *txn, void *arg)
{
	static const char *const names[] = { "a", "ab", "b", "" };
	uint8_t k[STORE_KEY_MAX];
	int rc = 0;

	(void)arg;
	for (int n = 0; n < 4; n++)
		for (int i = -5; i < 5 && rc == 0; i++)
			rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, names[n], i), "v", 1);
	return rc;
}

static int del_a(struct store_txn *txn, void *arg)
{
	uint8_t k[STORE_KEY_MAX];

	return store_del_prefix(txn, STORE_SPACE_DATA, k, key1(k, "a"), arg);
}

/* Counts keys under prefix ("name"), checking they come in ascending order. */
static int count_under(struct store *st, const char *name)
{
	uint8_t p[STORE_KEY_MAX], last[STORE_KEY_MAX];
	size_t pl = name ? key1(p, name) : 0, last_len = 0;
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	int n = 0;

	if (store_read_begin(st, &txn))
		return -1;
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, p, pl, &scan), 0);
	while (store_scan_next(scan, &k, &v) == 1) {
		CHECK(k.len >= pl && memcmp(k.data, p, pl) == 0);
		if (n > 0)
			CHECK(memcmp(last, k.data, last_len < k.len ? last_len : k.len) <= 0);
		memcpy(last, k.data, k.len);
		last_len = k.len;
		n++;
	}
	store_scan_close(scan);
	store_txn_end(txn);
	return n;
}

static void test_prefix_scan_and_delete(void)
{
	char dir[128];
	struct store *st = open_new(dir, sizeof(dir));
	uint64_t deleted = 0;

	CHECK_EQ_INT(store_write(st, load_abc, NULL), 0);
	CHECK_EQ_INT(count_under(st, "a"), 10);
	CHECK_EQ_INT(count_under(st, "ab"), 10);
	CHECK_EQ_INT(count_under(st, ""), 10);
	CHECK_EQ_INT(count_under(st, "zz"), 0);
	CHECK_EQ_INT(count_under(st, NULL), 40);
	CHECK_EQ_INT(store_write(st, del_a, &deleted), 0);
	CHECK_EQ_INT(deleted, 10);
	CHECK_EQ_INT(count_under(st, "a"), 0);
	CHECK_EQ_INT(count_under(st, "ab"), 10);
	CHECK_EQ_INT(count_under(st, NULL), 30);
	store_close(st);
}

static void test_scan_seek(void)
{
	char dir[128];
	struct store *st = open_new(dir, sizeof(dir));
	uint8_t p[STORE_KEY_MAX], k0[STORE_KEY_MAX];
	size_t pl = key1(p, "b"), kl;
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	struct tuple_reader r;
	struct tuple_elem e;

	CHECK_EQ_INT(store_write(st, load_abc, NULL), 0);
	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, p, pl, &scan), 0);
	kl = key2(k0, "b", 2);
	CHECK_EQ_INT(store_scan_seek(scan, k0, kl), 0);
	CHECK_EQ_INT(store_scan_next(scan, &k, &v), 1);
	CHECK_MEM(k.data, k.len, k0, kl);
	CHECK_EQ_INT(store_scan_next(scan, &k, &v), 1);
	tuple_reader_init(&r, k.data, k.len);
	tuple_next(&r, &e);
	CHECK_EQ_INT(tuple_next(&r, &e), 1);
	CHECK_EQ_INT(e.integer, 3);
	/* seeking before the prefix restarts at it; past it ends the scan */
	CHECK_EQ_INT(store_scan_seek(scan, "\x01", 1), 0);
	CHECK_EQ_INT(store_scan_next(scan, &k, &v), 1);
	CHECK_MEM(k.data, k.len, k0, key2(k0, "b", -5));
	CHECK_EQ_INT(store_scan_seek(scan, "\x03", 1), 0);
	CHECK_EQ_INT(store_scan_next(scan, &k, &v), 0);
	CHECK_EQ_INT(store_scan_next(scan, &k, &v), 0);
	store_scan_close(scan);
	store_txn_end(txn);
	store_close(st);
}

/* ---- map growth ---- */

#define BLOB 1024

struct bulk {
	int first, count;	/* keys ("bulk", first .. first+count-1) */
	int attempts;
};

static void blob_for(int i, uint8_t *blob)
{
	for (int j = 0; j < BLOB; j++)
		blob[j] = (uint8_t)(i * 31 + j);
}

static int bulk_fn(struct store_txn *txn, void *arg)
{
	struct bulk *b = arg;
	uint8_t k[STORE_KEY_MAX], blob[BLOB];
	int rc = 0;

	b->attempts++;
	for (int i = b->first; i < b->first + b->count && rc == 0; i++) {
		blob_for(i, blob);
		rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, "bulk", i), blob, BLOB);
	}
	return rc;
}

static int verify_bulk(struct store *st, int n)
{
	uint8_t k[STORE_KEY_MAX], blob[BLOB], got[BLOB];
	int bad = 0;

	for (int i = 0; i < n; i++) {
		blob_for(i, blob);
		if (get_kv(st, STORE_SPACE_DATA, k, key2(k, "bulk", i), got, BLOB) != BLOB ||
		    memcmp(got, blob, BLOB) != 0)
			bad++;
	}
	return bad;
}

static struct store *open_small(char *dir, size_t len)
{
	struct store *st;

	setenv("KVFS_MAPSIZE", "1M", 1);
	st = open_new(dir, len);
	unsetenv("KVFS_MAPSIZE");
	return st;
}

static void test_growth_one_txn(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct bulk b = { 0, 50 * 1024, 0 };
	struct store_info info;

	CHECK_EQ_INT(store_info(st, &info), 0);
	CHECK_EQ_INT(info.map_size, 1 << 20);
	CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
	CHECK_EQ_INT(store_info(st, &info), 0);
	printf("# 50 MiB in one txn: %d attempts, map %llu MiB, used %llu MiB\n", b.attempts,
	       (unsigned long long)info.map_size >> 20, (unsigned long long)info.used_bytes >> 20);
	CHECK(b.attempts > 1);
	CHECK(info.map_size >= (uint64_t)50 << 20);
	CHECK_EQ_INT(info.entries, b.count);
	CHECK_EQ_INT(verify_bulk(st, b.count), 0);
	store_close(st);
}

struct reader_arg {
	struct store *st;
	volatile int stop;
	long reads, errors;
};

/* Reads the fixed key ("bulk", 0) and scans a little, until told to stop. */
static void *reader_main(void *p)
{
	struct reader_arg *a = p;
	uint8_t k[STORE_KEY_MAX], blob[BLOB], got[BLOB];
	size_t kl = key2(k, "bulk", 0);

	blob_for(0, blob);
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		if (get_kv(a->st, STORE_SPACE_DATA, k, kl, got, BLOB) != BLOB ||
		    memcmp(got, blob, BLOB) != 0)
			__atomic_add_fetch(&a->errors, 1, __ATOMIC_RELAXED);
		if (count_under(a->st, "none") != 0)
			__atomic_add_fetch(&a->errors, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&a->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_growth_many_txns_with_readers(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct reader_arg ra = { st, 0, 0, 0 };
	struct bulk b = { 0, 1, 0 };
	struct store_info info;
	pthread_t th[4];
	int attempts = 0, txns = 0;

	CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, reader_main, &ra);
	for (int first = 1; first < 50 * 1024; first += 100, txns++) {
		b = (struct bulk){ first, first + 100 <= 50 * 1024 ? 100 : 50 * 1024 - first, 0 };
		CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
		attempts += b.attempts;
	}
	__atomic_store_n(&ra.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ_INT(store_info(st, &info), 0);
	printf("# 50 MiB in %d txns: %d retries, map %llu MiB; %ld concurrent reads, %ld errors\n",
	       txns, attempts - txns, (unsigned long long)info.map_size >> 20, ra.reads, ra.errors);
	CHECK(attempts > txns);
	CHECK_EQ_INT(ra.errors, 0);
	CHECK(ra.reads > 0);
	CHECK_EQ_INT(info.entries, 50 * 1024);
	CHECK_EQ_INT(verify_bulk(st, 50 * 1024), 0);
	store_close(st);
}

/* ---- prefixes longer than any key ---- */

struct del_prefix_arg {
	const uint8_t *prefix;
	size_t len;
	uint64_t deleted;
};

static int del_prefix_fn(struct store_txn *txn, void *arg)
{
	struct del_prefix_arg *a = arg;

	return store_del_prefix(txn, STORE_SPACE_DATA, a->prefix, a->len, &a->deleted);
}

/* No key starts with a prefix longer than STORE_KEY_MAX: nothing to delete. */
static void test_del_prefix_too_long(void)
{
	char dir[128];
	struct store *st = open_new(dir, sizeof(dir));
	uint8_t key[STORE_KEY_MAX + 1];
	struct del_prefix_arg a = { key, STORE_KEY_MAX + 1, 99 };
	char got[8];

	memset(key, 'k', sizeof(key));
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, key, STORE_KEY_MAX, "v", 1), 0);
	CHECK_EQ_INT(store_write(st, del_prefix_fn, &a), 0);
	CHECK_EQ_INT(a.deleted, 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, key, STORE_KEY_MAX, got, sizeof(got)), 1);
	a.len = STORE_KEY_MAX;
	CHECK_EQ_INT(store_write(st, del_prefix_fn, &a), 0);
	CHECK_EQ_INT(a.deleted, 1);
	store_close(st);
}

/* ---- growth under steady read load ---- */

struct busy_arg {
	struct store *st;
	volatile int stop;
	volatile int done;
	int result;
};

/* Begins and ends read transactions back to back, so some are always open. */
static void *busy_reader(void *p)
{
	struct busy_arg *a = p;
	struct store_txn *txn;

	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		if (store_read_begin(a->st, &txn) == 0)
			store_txn_end(txn);
	}
	return NULL;
}

static void *growing_writer(void *p)
{
	struct busy_arg *a = p;
	struct bulk b = { 0, 8 * 1024, 0 };	/* 8 MiB into a 1 MiB map */

	a->result = store_write(a->st, bulk_fn, &b);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A writer that must grow the map gets in although readers never pause. */
static void test_growth_not_starved_by_readers(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct busy_arg a = { st, 0, 0, -1 };
	pthread_t readers[16], writer;
	int waited_ms = 0;

	for (int i = 0; i < 16; i++)
		pthread_create(&readers[i], NULL, busy_reader, &a);
	pthread_create(&writer, NULL, growing_writer, &a);
	while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE) && waited_ms < 10000) {
		usleep(10000);
		waited_ms += 10;
	}
	CHECK(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE));	/* in time, with readers on */
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);	/* also unblocks a starved writer */
	pthread_join(writer, NULL);
	for (int i = 0; i < 16; i++)
		pthread_join(readers[i], NULL);
	CHECK_EQ_INT(a.result, 0);
	printf("# growth from 1 MiB under 16 busy readers: %d ms\n", waited_ms);
	store_close(st);
}

/*
 * The setup of the distinct-scan tests: a new store filled by load, a read
 * transaction, and a scan of the data space under the key ("<name>") in p.
 * Everything is owned by the fixture; scan_fixture_close ends it.
 */
struct scan_fixture {
	char dir[128];
	struct store *st;
	uint8_t p[STORE_KEY_MAX];
	size_t pl;
	struct store_txn *txn;
	struct store_scan *scan;
};

static void scan_fixture_open(struct scan_fixture *f, store_write_fn load, const char *name)
{
	f->st = open_new(f->dir, sizeof(f->dir));
	f->pl = key1(f->p, name);
	CHECK_EQ_INT(store_write(f->st, load, NULL), 0);
	CHECK_EQ_INT(store_read_begin(f->st, &f->txn), 0);
	CHECK_EQ_INT(store_scan_open(f->txn, STORE_SPACE_DATA, f->p, f->pl, &f->scan), 0);
}

static void scan_fixture_close(struct scan_fixture *f)
{
	store_scan_close(f->scan);
	store_txn_end(f->txn);
	store_close(f->st);
}

/* ---- the skip proof ---- */

#define CHILDREN 10
#define PER_CHILD 100000

/* ("tree", "child<c>", j) for every child c and j < PER_CHILD, plus noise around. */
static int load_tree(struct store_txn *txn, void *arg)
{
	uint8_t k[STORE_KEY_MAX];
	struct tuple_writer w;
	char name[24];
	int rc = 0;

	(void)arg;
	for (int c = 0; c < CHILDREN && rc == 0; c++) {
		snprintf(name, sizeof(name), "child%d", c);
		for (int j = 0; j < PER_CHILD && rc == 0; j++) {
			tuple_writer_init(&w, k, sizeof(k));
			tuple_put_string(&w, "tree", 4);
			tuple_put_string(&w, name, strlen(name));
			tuple_put_int(&w, j);
			rc = store_put(txn, STORE_SPACE_DATA, k, w.len, "", 0);
		}
	}
	if (rc == 0)	/* neighbours that must not be listed */
		rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, "tree0", 1), "", 0);
	if (rc == 0)
		rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, "trea", 1), "", 0);
	return rc;
}

static void test_skip_proof(void)
{
	struct scan_fixture f;
	struct store_val k, v;
	struct tuple_reader r;
	struct tuple_elem e;
	char want[24];
	size_t end;
	int n = 0;

	scan_fixture_open(&f, load_tree, "tree");
	while (store_scan_next_distinct(f.scan, 1, &k, &v, &end) == 1) {
		tuple_reader_init(&r, (const uint8_t *)k.data + f.pl, end - f.pl);
		CHECK_EQ_INT(tuple_next(&r, &e), 1);
		CHECK_EQ_INT(tuple_next(&r, &e), 0);	/* child_end ends the child */
		snprintf(want, sizeof(want), "child%d", n);
		CHECK_EQ_INT(e.len, strlen(want));
		CHECK(e.raw && memcmp(e.raw, want, e.len) == 0);
		n++;
	}
	CHECK_EQ_INT(n, CHILDREN);
	printf("# skip proof: %d children of %d keys each listed in %llu cursor steps\n",
	       n, PER_CHILD, (unsigned long long)store_scan_steps(f.scan));
	CHECK(store_scan_steps(f.scan) <= 3 * CHILDREN + 3);
	scan_fixture_close(&f);
}

/* ("d", g, i, j): g in a,b,c; i in 0..4; j in 0..199; plus ("d") and ("d", "a") themselves. */
static int load_depth2(struct store_txn *txn, void *arg)
{
	uint8_t k[STORE_KEY_MAX];
	struct tuple_writer w;
	int rc;

	(void)arg;
	rc = store_put(txn, STORE_SPACE_DATA, k, key1(k, "d"), "marker", 6);
	for (int g = 0; g < 3 && rc == 0; g++)
		for (int i = 0; i < 5 && rc == 0; i++)
			for (int j = 0; j < 200 && rc == 0; j++) {
				tuple_writer_init(&w, k, sizeof(k));
				tuple_put_string(&w, "d", 1);
				tuple_put_string(&w, &"abc"[g], 1);
				tuple_put_int(&w, i);
				tuple_put_int(&w, j);
				rc = store_put(txn, STORE_SPACE_DATA, k, w.len, "", 0);
			}
	if (rc == 0)	/* a leaf at depth 1: no element at depth 2 */
		rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, "d", 7), "leaf", 4);
	return rc;
}

static void test_depth2_distinct(void)
{
	struct scan_fixture f;
	struct store_val k, v;
	struct tuple_reader r;
	struct tuple_elem e1, e2, e3;
	int n = 0, ok = 1;
	size_t end;

	scan_fixture_open(&f, load_depth2, "d");
	while (store_scan_next_distinct(f.scan, 2, &k, &v, &end) == 1) {
		tuple_reader_init(&r, (const uint8_t *)k.data + f.pl, end - f.pl);
		ok &= tuple_next(&r, &e1) == 1 && tuple_next(&r, &e2) == 1 && tuple_next(&r, &e3) == 0;
		ok &= e1.raw[0] == "abc"[n / 5] && e2.integer == n % 5;
		n++;
	}
	CHECK(ok);
	CHECK_EQ_INT(n, 15);
	printf("# depth 2: %d distinct pairs in %llu cursor steps\n", n,
	       (unsigned long long)store_scan_steps(f.scan));
	CHECK(store_scan_steps(f.scan) <= 3 * 15 + 5);
	store_scan_close(f.scan);

	/* depth 1 over the same: a, b, c and the leaf 7; the marker ("d") is skipped */
	CHECK_EQ_INT(store_scan_open(f.txn, STORE_SPACE_DATA, f.p, f.pl, &f.scan), 0);
	n = 0;
	while (store_scan_next_distinct(f.scan, 1, &k, &v, &end) == 1)
		n++;
	CHECK_EQ_INT(n, 4);
	scan_fixture_close(&f);
}

static void test_distinct_bad_key(void)
{
	char dir[128];
	struct store *st = open_new(dir, sizeof(dir));
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	size_t end;

	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, "\x02x\x00\x15", 4, "", 0), 0);	/* truncated int */
	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	CHECK_EQ_INT(store_scan_open(txn, STORE_SPACE_DATA, "\x02x\x00", 3, &scan), 0);
	CHECK_EQ_INT(store_scan_next_distinct(scan, 1, &k, &v, &end), -EIO);
	store_scan_close(scan);
	store_txn_end(txn);
	store_close(st);
}

/*
 * Children "a" and "a\0b" of ("d"): the key of "a" is a byte prefix of the
 * key of "a\0b", so skipping "a"'s subtree must not skip its sibling.
 */
static int load_nul_siblings(struct store_txn *txn, void *arg)
{
	static const char *const names[] = { "a", "a\0b", "a\0b\0" };
	static const size_t lens[] = { 1, 3, 4 };
	uint8_t k[STORE_KEY_MAX];
	struct tuple_writer w;
	int rc = 0;

	(void)arg;
	for (int i = 0; i < 3 && rc == 0; i++) {
		for (int64_t j = 0; j < 3 && rc == 0; j++) {
			tuple_writer_init(&w, k, sizeof(k));
			tuple_put_string(&w, "d", 1);
			tuple_put_string(&w, names[i], lens[i]);
			tuple_put_int(&w, j);
			rc = store_put(txn, STORE_SPACE_DATA, k, w.len, "", 0);
		}
	}
	return rc;
}

static void test_distinct_nul_sibling(void)
{
	struct scan_fixture f;
	struct store_val k, v;
	size_t lens[4], end;
	int n = 0;

	scan_fixture_open(&f, load_nul_siblings, "d");
	while (n < 4 && store_scan_next_distinct(f.scan, 1, &k, &v, &end) == 1)
		lens[n++] = end - f.pl;
	CHECK_EQ_INT(n, 3);
	/* 02 'a' 00, 02 'a' 00 ff 'b' 00, 02 'a' 00 ff 'b' 00 ff 00 */
	CHECK_EQ_INT(lens[0], 3);
	CHECK_EQ_INT(lens[1], 6);
	CHECK_EQ_INT(lens[2], 8);
	scan_fixture_close(&f);
}

/* ---- info, copy, sync, txn ids ---- */

static void test_info_copy_sync(void)
{
	char dir[128], copy[128], buf[8], why[256] = "";
	struct store *st = open_new(dir, sizeof(dir)), *cp = NULL;
	struct store_info info;
	struct store_txn *txn;
	uint64_t id1, id2;
	struct stat sb;

	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	id1 = store_txn_id(txn);
	store_txn_end(txn);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, "\x02k\x00", 3, "v1", 2), 0);
	CHECK_EQ_INT(store_read_begin(st, &txn), 0);
	id2 = store_txn_id(txn);
	store_txn_end(txn);
	CHECK(id2 > id1);
	CHECK_EQ_INT(store_info(st, &info), 0);
	CHECK_EQ_INT(info.entries, 1);
	CHECK_EQ_INT(info.last_txn_id, id2);
	CHECK(info.page_size >= 512 && info.used_bytes >= info.page_size);
	CHECK(info.created_ns > 1600000000LL * 1000000000LL);
	CHECK_EQ_INT(store_sync(st), 0);
	CHECK_EQ_INT(store_copy(st, new_dir(copy, sizeof(copy))), 0);
	CHECK_EQ_INT(store_copy(st, copy), -EEXIST);	/* not empty any more */
	CHECK(stat(copy, &sb) == 0 && (sb.st_mode & 07777) == 0700);
	store_close(st);
	CHECK_EQ_INT(store_open(copy, STORE_OPEN_READONLY, &cp, why, sizeof(why)), 0);
	CHECK_EQ_INT(get_kv(cp, STORE_SPACE_DATA, "\x02k\x00", 3, buf, sizeof(buf)), 2);
	CHECK_MEM(buf, 2, "v1", 2);
	CHECK_EQ_INT(store_info(cp, &info), 0);
	CHECK_EQ_INT(info.entries, 1);
	store_close(cp);
}

static void test_nosync(void)
{
	char dir[128], why[256] = "", buf[4];
	struct store *st = NULL;

	CHECK_EQ_INT(store_open(new_dir(dir, sizeof(dir)), STORE_OPEN_CREATE | STORE_OPEN_NOSYNC,
				&st, why, sizeof(why)), 0);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, "\x02k\x00", 3, "v", 1), 0);
	CHECK_EQ_INT(store_sync(st), 0);
	store_close(st);
	CHECK_EQ_INT(store_open(dir, 0, &st, why, sizeof(why)), 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, "\x02k\x00", 3, buf, sizeof(buf)), 1);
	store_close(st);
}

static int put_later(struct store *st, const char *key, const char *val)
{
	struct kv kv = { STORE_SPACE_DATA, key, strlen(key) + 1, val, strlen(val), 0 };

	return store_write_later(st, put_fn, &kv);
}

/* In another process: opens dir read-only and counts which of keys it finds. */
static int found_elsewhere(const char *dir, const char *const *keys, int n)
{
	pid_t pid = fork();
	int status, found = 0;

	if (pid == 0) {
		struct store *ro = NULL;
		char why[256], buf[8];

		if (store_open(dir, STORE_OPEN_READONLY, &ro, why, sizeof(why)))
			_exit(100);
		for (int i = 0; i < n; i++)
			found += get_kv(ro, STORE_SPACE_DATA, keys[i], strlen(keys[i]) + 1, buf,
					sizeof(buf)) > 0;
		store_close(ro);
		_exit(found);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static uint64_t last_txn(struct store *st)
{
	struct store_info info = { 0 };

	store_info(st, &info);
	return info.last_txn_id;
}

/* Monotonic milliseconds, to tell a timer that fired under load from a defect. */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * STORE_QUEUE_LATER: store_write_later returns before its commit, which a
 * store_write then takes with it (one commit for both); another process's
 * open waits for a queued batch, so it reads what was acknowledged; a
 * refusal queues nothing; store_close commits the rest.
 */
static void test_queue_later(void)
{
	static const char *const keys[] = { "k1", "k2", "k3", "k4" };
	char dir[128], why[256] = "", buf[8];
	struct store *st = open_new(dir, sizeof(dir));
	struct kv bad = { STORE_SPACE_DATA, "kx", 3, "x", 1, 0 };
	uint64_t t0, commits;
	bool late;
	int64_t start;

	CHECK_EQ_INT(store_queue_start(st, 1000, STORE_QUEUE_LATER), 0);
	t0 = last_txn(st);
	CHECK_EQ_INT(put_later(st, "k1", "v1"), 0);
	CHECK_EQ_INT(last_txn(st), t0);	/* queued, not committed */
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, "k1", 3, buf, sizeof(buf)), 2);	/* seen here */
	/* the batch commits 1 s after k1: the other process's open waits for it */
	CHECK_EQ_INT(found_elsewhere(dir, keys, 1), 1);
	CHECK_EQ_INT(last_txn(st), t0 + 1);

	start = now_ms();
	CHECK_EQ_INT(put_later(st, "k2", "v2"), 0);
	CHECK_EQ_INT(put_kv(st, STORE_SPACE_DATA, "k3", 3, "v3", 2), 0);
	/*
	 * k3's commit took k2 with it, unless a loaded machine let k2's 1 s
	 * pass: then k2's timer may have committed it alone first (or k3 may
	 * still have been first to the committer: both are right).
	 */
	late = now_ms() - start >= 1000;
	commits = last_txn(st) - t0;
	CHECK(commits == 2 || (late && commits == 3));
	CHECK_EQ_INT(found_elsewhere(dir, keys, 3), 3);

	CHECK_EQ_INT(store_write_later(st, put_then_fail, &bad), -ECANCELED);
	CHECK_EQ_INT(put_later(st, "k4", "v4"), 0);
	store_close(st);
	st = NULL;
	CHECK_EQ_INT(store_open(dir, STORE_OPEN_READONLY, &st, why, sizeof(why)), 0);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, "k4", 3, buf, sizeof(buf)), 2);
	CHECK_EQ_INT(get_kv(st, STORE_SPACE_DATA, "kx", 3, buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(last_txn(st), t0 + commits + 1);
	store_close(st);
}

int main(void)
{
	int rc;

	snprintf(tmp_root, sizeof(tmp_root), "/tmp/kvfs-store-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_open_modes);
	TEST(test_open_missing);
	TEST(test_newer_format_refused);
	TEST(test_foreign_refused);
	TEST(test_readonly);
	TEST(test_point_ops);
	TEST(test_prefix_scan_and_delete);
	TEST(test_scan_seek);
	TEST(test_del_prefix_too_long);
	TEST(test_growth_one_txn);
	TEST(test_growth_many_txns_with_readers);
	TEST(test_growth_not_starved_by_readers);
	TEST(test_skip_proof);
	TEST(test_depth2_distinct);
	TEST(test_distinct_bad_key);
	TEST(test_distinct_nul_sibling);
	TEST(test_info_copy_sync);
	TEST(test_nosync);
	TEST(test_queue_later);
	rc = UNIT_DONE();
	nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
