/*
 * tests/unit/test_store_lmdb.c - the LMDB store's unit program: main, the
 * order its tests run in (each part, test_store_lmdb_*.c, holds a concern),
 * and the fixtures they share: temporary stores, keys, write callbacks.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define UNIT_MAIN
#include "tests/unit/test_store_lmdb.h"

static char tmp_root[96];	/* under 128: the tests' own dir buffers */
static int dir_serial;

/* A fresh, not yet existing path under the test's temporary directory. */
const char *new_dir(char *buf, size_t len)
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
size_t key2(uint8_t *buf, const char *name, int64_t i)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	tuple_put_string(&w, name, strlen(name));
	tuple_put_int(&w, i);
	return w.len;
}

size_t key1(uint8_t *buf, const char *name)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	tuple_put_string(&w, name, strlen(name));
	return w.len;
}

struct store *open_new(char *dir, size_t len)
{
	struct store *st = NULL;
	char why[256] = "";
	int rc = store_open(new_dir(dir, len), STORE_OPEN_CREATE, &st, why, sizeof(why));

	if (rc)
		fprintf(stderr, "#   store_open: %d %s\n", rc, why);
	return st;
}

/* ---- small write callbacks ---- */

int put_fn(struct store_txn *txn, void *arg)
{
	struct kv *kv = arg;

	return store_put(txn, kv->space, kv->key, kv->key_len, kv->val, kv->val_len);
}

int put_then_fail(struct store_txn *txn, void *arg)
{
	put_fn(txn, arg);
	return -ECANCELED;
}

int del_fn(struct store_txn *txn, void *arg)
{
	struct kv *kv = arg;

	kv->result = store_del(txn, kv->space, kv->key, kv->key_len);
	return 0;
}

int put_kv(struct store *st, enum store_space space, const void *k, size_t kl,
		  const void *v, size_t vl)
{
	struct kv kv = { space, k, kl, v, vl, 0 };

	return store_write(st, put_fn, &kv);
}

/* Reads key into buf: its length, or -errno. */
long get_kv(struct store *st, enum store_space space, const void *k, size_t kl,
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

/* Counts keys under prefix ("name"), checking they come in ascending order. */
int count_under(struct store *st, const char *name)
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

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	int rc, n;

	n = snprintf(tmp_root, sizeof(tmp_root), "%s/kvfs-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(tmp_root) || !mkdtemp(tmp_root)) {
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
