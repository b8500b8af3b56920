/*
 * tests/unit/test_store_lmdb_distinct.c - the distinct scans a listing makes,
 * and the skip proof: listing children costs cursor steps in proportion to
 * the number of children, not to the size of their subtrees.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/test_store_lmdb.h"

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

void test_skip_proof(void)
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

void test_depth2_distinct(void)
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

void test_distinct_bad_key(void)
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

void test_distinct_nul_sibling(void)
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
