/*
 * tests/unit/test_etcd_store_rw.c - the etcd backend's opening (create,
 * refuse, reopen), buffered writes, paged scans, the prefetch of a
 * listing's pages, and a write's scans over its own buffer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_etcd_store.h"

void test_open(void)
{
	struct store *st = NULL, *st2 = NULL;
	struct etcd_client *c;
	char why[256], u[512];
	int rc;

	CHECK_EQ_INT(t_open("etcd://", 0, &st, why, sizeof(why)), -EINVAL);
	CHECK_EQ_INT(t_open("etcd://127.0.0.1:1", 0, &st, why, sizeof(why)), -EINVAL);
	snprintf(u, sizeof(u), "etcd://%s/", endpoints);
	CHECK_EQ_INT(t_open(u, STORE_OPEN_CREATE, &st, why, sizeof(why)), -EINVAL);
	CHECK_EQ_INT(t_open(url("none"), 0, &st, why, sizeof(why)), -ENOENT);
	CHECK(strstr(why, "no kvfs store") != NULL);
	/* nothing answers there: connection refused, with the reason */
	CHECK_EQ_INT(t_open("etcd://127.0.0.1:1/x", 0, &st, why, sizeof(why)), -ECONNREFUSED);
	CHECK(st == NULL);

	st = open_new("a");
	CHECK_EQ_INT(st->format, STORE_FORMAT_VERSION);
	put1(st, "k", "in a");
	/* "a/b" is another store: it does not see a's keys, and a does not see its */
	st2 = open_new("a/b");
	char buf[64];
	CHECK_EQ_INT(get1(st2, "k", buf, sizeof(buf)), -ENOENT);
	put1(st2, "k", "in a/b");
	CHECK_EQ_INT(get1(st, "k", buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "in a") == 0);
	t_close(st2, false);
	/* a reopen without CREATE finds it; a trailing / names the same store */
	t_close(st, false);
	snprintf(u, sizeof(u), "%s/", url("a"));
	rc = t_open(u, 0, &st, why, sizeof(why));
	CHECK_EQ_INT(rc, 0);
	if (rc == 0) {
		CHECK_EQ_INT(get1(st, "k", buf, sizeof(buf)), 0);
		t_close(st, false);
	}

	/* someone else's keys under the prefix: refused, untouched */
	CHECK_EQ_INT(etcd_client_open(endpoints, &c, why, sizeof(why)), 0);
	char fk[128];
	int fl = snprintf(fk, sizeof(fk), "kvfs-unit/%d/foreign", (int)getpid());
	fk[fl] = 0;
	CHECK_EQ_INT(etcd_client_put(c, fk, (size_t)fl + 2, "v", 1, 0, NULL), 0);	/* "...\0\0" */
	CHECK_EQ_INT(t_open(url("foreign"), STORE_OPEN_CREATE, &st, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "not a kvfs store") != NULL);
	struct etcd_range_result r;
	CHECK_EQ_INT(etcd_client_range(c, fk, (size_t)fl + 2, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	etcd_range_result_release(&r);
	etcd_client_close(c);

	/* discard removes what this handle created */
	st = open_new("gone");
	put1(st, "x", "y");
	t_close(st, true);
	CHECK_EQ_INT(t_open(url("gone"), 0, &st, why, sizeof(why)), -ENOENT);
}

struct rw_arg {
	int step;
	int rc[8];
};

static int rw_fn(struct store_txn *t, void *arg)
{
	struct rw_arg *a = arg;
	struct store_val v;
	uint64_t n = 99;

	a->rc[0] = store_etcd_put(t, STORE_SPACE_DATA, "p1", 2, "one", 3);
	a->rc[1] = store_etcd_get(t, STORE_SPACE_DATA, "p1", 2, &v);	/* reads its own write */
	a->rc[2] = v.len == 3 && memcmp(v.data, "one", 3) == 0 ? 0 : -1;
	a->rc[3] = store_etcd_del(t, STORE_SPACE_DATA, "nothere", 7);
	a->rc[4] = store_etcd_del(t, STORE_SPACE_DATA, "p1", 2);
	a->rc[5] = store_etcd_get(t, STORE_SPACE_DATA, "p1", 2, &v);
	a->rc[6] = store_etcd_del_prefix(t, STORE_SPACE_DATA, "q", 1, &n);
	a->rc[7] = (int)n;
	return store_etcd_put(t, STORE_SPACE_DATA, "p2", 2, "two", 3);
}

static int reserve_fn(struct store_txn *t, void *arg)
{
	void *p;
	int rc = store_etcd_put_reserve(t, STORE_SPACE_DATA, "r", 1, 5, &p);

	(void)arg;
	if (rc == 0)
		memcpy(p, "hello", 5);
	return rc;
}

static int fail_fn(struct store_txn *t, void *arg)
{
	(void)arg;
	store_etcd_put(t, STORE_SPACE_DATA, "never", 5, "x", 1);
	return -EPERM;
}

void test_writes(void)
{
	struct store *st = open_new("w");
	struct rw_arg a = { 0 };
	char buf[64];

	put1(st, "q1", "a");
	put1(st, "q2", "b");
	CHECK_EQ_INT(store_etcd_write(st, rw_fn, &a), 0);
	CHECK_EQ_INT(a.rc[0], 0);
	CHECK_EQ_INT(a.rc[1], 0);
	CHECK_EQ_INT(a.rc[2], 0);
	CHECK_EQ_INT(a.rc[3], -ENOENT);
	CHECK_EQ_INT(a.rc[4], 0);
	CHECK_EQ_INT(a.rc[5], -ENOENT);
	CHECK_EQ_INT(a.rc[6], 0);
	CHECK_EQ_INT(a.rc[7], 2);
	CHECK_EQ_INT(get1(st, "p1", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(get1(st, "q1", buf, sizeof(buf)), -ENOENT);
	CHECK_EQ_INT(get1(st, "p2", buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "two") == 0);
	CHECK_EQ_INT(store_etcd_write(st, reserve_fn, NULL), 0);
	CHECK_EQ_INT(get1(st, "r", buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, "hello") == 0);
	/* a refusing fn commits nothing */
	CHECK_EQ_INT(store_etcd_write(st, fail_fn, NULL), -EPERM);
	CHECK_EQ_INT(get1(st, "never", buf, sizeof(buf)), -ENOENT);

	struct store_info info;
	uint64_t before;
	CHECK_EQ_INT(store_etcd_info(st, &info), 0);
	CHECK_EQ_INT(info.entries, 2);	/* p2, r */
	before = info.last_txn_id;
	put1(st, "z", "1");
	CHECK_EQ_INT(store_etcd_info(st, &info), 0);
	CHECK(info.last_txn_id > before);
	CHECK_EQ_INT(atomic_load(&ETCD(st)->last_commit), info.last_txn_id);
	t_close(st, true);
}

void test_scans(void)
{
	struct store *st = open_new("scan");
	struct store_txn *t, *t2;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16];
	size_t pl = dir_key(pfx, sizeof(pfx), 0, false), child_end;
	int n = 700, count = 0, rc;
	int64_t last = -1;
	bool ordered = true;

	CHECK_EQ_INT(store_etcd_write(st, many_fn, &n), 0);
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, pfx, pl, &s), 0);
	while ((rc = store_scan_next_distinct(s, 1, &k, &v, &child_end)) == 1) {
		struct tuple_reader r;
		struct tuple_elem e;

		tuple_reader_init(&r, (const uint8_t *)k.data + pl, child_end - pl);
		if (tuple_next(&r, &e) != 1 || e.type != TUPLE_TYPE_INT || e.integer <= last)
			ordered = false;
		else
			last = e.integer;
		count++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(count, n);
	CHECK(ordered);
	CHECK(ESCAN(s)->fetches >= 2);	/* a page of 256, then the rest read on in a bigger one */
	t_scan_close(s);

	/* the snapshot holds: another commit is not seen by t, even by a new scan */
	uint8_t k5[32];
	size_t k5l = dir_key(k5, sizeof(k5), 5, true);
	CHECK_EQ_INT(t_read(st, &t2), 0);
	CHECK(store_etcd_txn_id(t2) > 0);
	put1(st, "zz", "late");
	CHECK_EQ_INT(store_etcd_get(t, STORE_SPACE_DATA, "zz", 2, &v), -ENOENT);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, NULL, 0, &s), 0);
	count = 0;
	while ((rc = store_etcd_scan_next(s, &k, &v)) == 1)
		count++;
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(count, n + n / 10);
	t_scan_close(s);
	CHECK(store_etcd_txn_id(t2) < etcd_newest_revision(ETCD(st)));
	/* seek inside and back */
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, pfx, pl, &s), 0);
	CHECK_EQ_INT(store_etcd_scan_seek(s, k5, k5l), 0);
	CHECK_EQ_INT(store_etcd_scan_next(s, &k, &v), 1);
	CHECK_MEM(k.data, k.len, k5, k5l);
	CHECK_EQ_INT(store_etcd_scan_seek(s, "", 0), 0);	/* below the prefix: its start */
	CHECK_EQ_INT(store_etcd_scan_next(s, &k, &v), 1);
	CHECK(v.len == 2 && memcmp(v.data, "v0", 2) == 0);
	CHECK_EQ_INT(store_etcd_scan_seek(s, "\xff", 1), 0);	/* past it: the end */
	CHECK_EQ_INT(store_etcd_scan_next(s, &k, &v), 0);
	t_scan_close(s);
	CHECK(!store_etcd_space_is_empty(t, STORE_SPACE_DATA));
	CHECK(store_etcd_space_is_empty(t, STORE_SPACE_INDEX));
	t_end(t2);
	t_end(t);
	t_close(st, true);
}

/* A write whose scan sees its own buffer: deletes hidden, puts shown, in order. */
static int merge_fn(struct store_txn *t, void *arg)
{
	char *out = arg;
	struct store_scan *s;
	struct store_val k, v;
	int rc;

	out[0] = 0;
	if ((rc = store_etcd_del(t, STORE_SPACE_DATA, "b", 1)) ||
	    (rc = store_etcd_put(t, STORE_SPACE_DATA, "bb", 2, "new", 3)) ||
	    (rc = store_etcd_put(t, STORE_SPACE_DATA, "a", 1, "A2", 2)) ||
	    (rc = store_etcd_del_prefix(t, STORE_SPACE_DATA, "d", 1, NULL)) ||
	    (rc = store_etcd_put(t, STORE_SPACE_DATA, "d2", 2, "D2", 2)))
		return rc;
	if ((rc = t_scan(t, STORE_SPACE_DATA, NULL, 0, &s)))
		return rc;
	while ((rc = store_etcd_scan_next(s, &k, &v)) == 1)
		snprintf(out + strlen(out), 200 - strlen(out), "%.*s=%.*s ", (int)k.len,
			 (const char *)k.data, (int)v.len, (const char *)v.data);
	t_scan_close(s);
	return rc;
}

/* pages_of: how many pages with values the read transaction t keeps. */
static int pages_of(struct store_txn *t)
{
	int n = 0;

	for (const struct etcd_kept *k = ETXN(t)->pages; k; k = k->next_page)
		n += k->has_vals;
	return n;
}

/* covered: whether the read transaction t holds ("dir", i)'s place from a page. */
static bool covered(struct store_txn *t, int64_t i)
{
	uint8_t k[64], ek[ETCD_KEY_MAX];
	size_t kl = dir_key(k, sizeof(k), i, true);
	size_t el = etcd_key(ETXN(t)->st, STORE_SPACE_DATA, k, kl, ek);

	return etcd_txn_page_covering(ETXN(t), ek, el, true) != NULL;
}

/*
 * store_txn_prefetch: the range is read in pages the transaction keeps, so
 * every later get inside it (kvfs check's index lookups, one per row) is
 * answered without a round trip; the answers are the snapshot's.
 */
void test_prefetch(void)
{
	struct store *st = open_new("prefetch");
	struct store_txn *t;
	struct store_val v;
	uint8_t pfx[16], k[64];
	size_t pl = dir_key(pfx, sizeof(pfx), 0, false), kl;
	char want[16];
	int n = 2500, rc;

	CHECK_EQ_INT(store_etcd_write(st, many_fn, &n), 0);
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK(!covered(t, 0) && !covered(t, 1300));
	CHECK_EQ_INT(store_etcd_prefetch(t, STORE_SPACE_DATA, pfx, pl), 0);
	/* more than one page of ETCD_PAGE_AHEAD keys: all of them held */
	CHECK(covered(t, 0) && covered(t, 1300) && covered(t, n - 1));
	CHECK(covered(t, n + 5));	/* and where nothing is: no read needed either */
	kl = dir_key(k, sizeof(k), 1300, true);
	CHECK_EQ_INT(store_etcd_get(t, STORE_SPACE_DATA, k, kl, &v), 0);
	CHECK_MEM(v.data, v.len, "v1300", 5);
	t_end(t);

	/* store_txn_expect_reads: a get that misses reads a page from its key on */
	CHECK_EQ_INT(t_read(st, &t), 0);
	store_etcd_expect_reads(t, STORE_SPACE_DATA, pfx, pl);
	for (int i = 7; i < n; i++) {
		kl = dir_key(k, sizeof(k), i, true);
		rc = store_etcd_get(t, STORE_SPACE_DATA, k, kl, &v);
		snprintf(want, sizeof(want), "v%d", i);
		if (rc != 0 || v.len != strlen(want) || memcmp(v.data, want, v.len) != 0) {
			CHECK(!"a get read ahead answered wrong");
			break;
		}
	}
	/* pages of 64, 256, then 1,024 keys: a handful of reads, not 2,493 */
	CHECK(pages_of(t) >= 3 && pages_of(t) <= 7);
	CHECK(!covered(t, 6) && covered(t, 7) && covered(t, n - 1));
	t_end(t);
	/* gets far apart (children with big subtrees): 8 alone after a page that
	 * served one, then 16: two pages for 25 gets */
	CHECK_EQ_INT(t_read(st, &t), 0);
	store_etcd_expect_reads(t, STORE_SPACE_DATA, pfx, pl);
	for (int i = 0; i < n; i += 100) {
		kl = dir_key(k, sizeof(k), i, true);
		CHECK_EQ_INT(store_etcd_get(t, STORE_SPACE_DATA, k, kl, &v), 0);
	}
	CHECK_EQ_INT(pages_of(t), 2);
	CHECK_EQ_INT((int)ETXN(t)->ahead[0].backoff, 16);
	/* the first read also told which of the spaces model/ probes are empty */
	{
		uint8_t ek[ETCD_KEY_MAX];
		size_t el = etcd_key(ETXN(t)->st, STORE_SPACE_TTL, NULL, 0, ek);

		CHECK(etcd_txn_page_covering(ETXN(t), ek, el, false) != NULL);
		CHECK(store_etcd_space_is_empty(t, STORE_SPACE_TTL));
	}
	t_end(t);
	t_close(st, true);
}

void test_write_scans(void)
{
	struct store *st = open_new("merge");
	char out[200];

	put1(st, "a", "A");
	put1(st, "b", "B");
	put1(st, "c", "C");
	put1(st, "d1", "D1");
	put1(st, "d3", "D3");
	put1(st, "e", "E");
	CHECK_EQ_INT(store_etcd_write(st, merge_fn, out), 0);
	CHECK(strcmp(out, "a=A2 bb=new c=C d2=D2 e=E ") == 0);
	if (strcmp(out, "a=A2 bb=new c=C d2=D2 e=E ") != 0)
		fprintf(stderr, "# got %s\n", out);
	CHECK_EQ_INT(get1(st, "d1", out, sizeof(out)), -ENOENT);
	CHECK_EQ_INT(get1(st, "d2", out, sizeof(out)), 0);
	t_close(st, true);
}
