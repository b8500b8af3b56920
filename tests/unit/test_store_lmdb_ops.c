/*
 * tests/unit/test_store_lmdb_ops.c - the LMDB store's opening (creation
 * modes, the format check, read-only), point operations, prefix scans and
 * deletes, and prefixes longer than any key.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/unit/test_store_lmdb.h"

/* ---- opening ---- */

void test_open_modes(void)
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

void test_open_missing(void)
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

void test_newer_format_refused(void)
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

void test_foreign_refused(void)
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

void test_readonly(void)
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

void test_point_ops(void)
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

void test_prefix_scan_and_delete(void)
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

void test_scan_seek(void)
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
void test_del_prefix_too_long(void)
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
