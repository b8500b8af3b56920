/*
 * tests/unit/test_etcd_store_trust.c - listings that trust the children
 * space's entries (docs/ETCD.md section 7, marker "3").
 */
#include <errno.h>
#include <string.h>

#include "tests/unit/test_etcd_store.h"

struct trust_arg {
	int child, from, to;	/* keys ("t", child, j) for j in [from, to) */
	bool del;	/* deleted one by one instead of put */
	bool leaf;	/* also the leaf child ("t", "leaf") */
	int64_t deadline_ns;	/* >0: the keys put get it (a lease) */
};

static size_t trust_key(uint8_t *k, size_t size, int child, int j)
{
	struct tuple_writer w;

	tuple_writer_init(&w, k, size);
	tuple_put_string(&w, "t", 1);
	if (child >= 0)
		tuple_put_int(&w, child);
	if (j >= 0)
		tuple_put_int(&w, j);
	return w.len;
}

static int trust_deadline(struct store_txn *t, void *arg, enum store_space space, const uint8_t *key,
			  size_t len, int64_t *deadline_ns)
{
	(void)t;
	(void)space;
	(void)key;
	(void)len;
	*deadline_ns = ((struct trust_arg *)arg)->deadline_ns;
	return 0;
}

static int trust_fn(struct store_txn *t, void *arg)
{
	struct trust_arg *a = arg;
	uint8_t k[64];
	size_t kl;
	int rc = 0;

	for (int j = a->from; rc == 0 && j < a->to; j++) {
		kl = trust_key(k, sizeof(k), a->child, j);
		rc = a->del ? store_etcd_del(t, STORE_SPACE_DATA, k, kl) :
		     store_etcd_put(t, STORE_SPACE_DATA, k, kl, "0123", 4);
	}
	if (rc == 0 && a->leaf) {
		struct tuple_writer w;

		tuple_writer_init(&w, k, sizeof(k));
		tuple_put_string(&w, "t", 1);
		tuple_put_string(&w, "leaf", 4);
		rc = store_etcd_put(t, STORE_SPACE_DATA, k, w.len, "L", 1);
	}
	if (rc == 0 && a->deadline_ns)
		rc = store_etcd_expire_puts(t, trust_deadline, a);
	return rc;
}

/*
 * Lists ("t") as `ls` does; each child's handed-out key into keys[] (by
 * child number, -1 for the leaf child: "leaf" counted in *leaves). The
 * number of children, or <0; *trusting: whether the listing trusted entries.
 */
static int trust_list(struct store *st, int (*keys)[2], int max, int *leaves, bool *trusting)
{
	struct store_txn *t;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16];
	size_t pl = trust_key(pfx, sizeof(pfx), -1, -1), end;
	int n = 0, rc = t_read(st, &t);

	*leaves = 0;
	if (rc)
		return rc;
	if ((rc = t_scan(t, STORE_SPACE_DATA, pfx, pl, &s)) == 0) {
		store_scan_expect_children(s);
		while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1) {
			struct tuple_reader r;
			struct tuple_elem e1, e2;

			tuple_reader_init(&r, (const uint8_t *)k.data + pl, k.len - pl);
			if (tuple_next(&r, &e1) != 1) {
				rc = -EIO;
				break;
			}
			if (e1.type == TUPLE_TYPE_STRING) {
				(*leaves)++;
				continue;
			}
			if (n >= max || tuple_next(&r, &e2) != 1) {
				rc = -EIO;
				break;
			}
			keys[n][0] = (int)e1.integer;
			keys[n++][1] = (int)e2.integer;
		}
		*trusting = ESCAN(s)->trust_from > 0 && ESCAN(s)->skel_any;
		t_scan_close(s);
	}
	t_end(t);
	return rc < 0 ? rc : n;
}

/* Whether the entry of ("t", child) names ("t", child, j) as its hint. */
static bool trust_hint_is(struct store *st, int child, int j)
{
	struct store_etcd *e = ETCD(st);
	struct etcd_client *c = NULL;
	struct etcd_range_result r = { 0 };
	uint8_t k[ETCD_KEY_MAX], want[64], ck[64];
	size_t cl = trust_key(ck, sizeof(ck), child, -1), wl = trust_key(want, sizeof(want), child, j);
	size_t kl = etcd_kids_marker(e, k);
	bool is;

	k[kl++] = 1;	/* depth: ("t") */
	memcpy(k + kl, ck, cl);
	kl += cl;
	if (etcd_client_take(e, &c) || etcd_client_range(c, k, kl, NULL, &r)) {
		etcd_client_give(e, c);
		return false;
	}
	is = r.len == 1 && r.kvs[0].val_len == wl && memcmp(r.kvs[0].val, want, wl) == 0;
	etcd_range_result_release(&r);
	etcd_client_give(e, c);
	return is;
}

/* Puts (or deletes) ("t", 60, i, 0) for i in [from, to): child 60 holds containers. */
static int nest_fn(struct store_txn *t, void *arg)
{
	const struct trust_arg *a = arg;
	int rc = 0;

	for (int i = a->from; rc == 0 && i < a->to; i++) {
		uint8_t k[64];
		struct tuple_writer w;

		tuple_writer_init(&w, k, sizeof(k));
		tuple_put_string(&w, "t", 1);
		tuple_put_int(&w, 60);
		tuple_put_int(&w, i);
		tuple_put_int(&w, 0);
		rc = a->del ? store_etcd_del(t, STORE_SPACE_DATA, k, w.len) :
		     store_etcd_put(t, STORE_SPACE_DATA, k, w.len, "x", 1);
	}
	return rc;
}

/* What store_scan_child_subdirs says of ("t", 60) in a listing of ("t"): the count, or <0. */
static int nest_count(struct store *st, bool *trusting)
{
	struct store_txn *t;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16], c60[16];
	size_t pl = trust_key(pfx, sizeof(pfx), -1, -1), cl = trust_key(c60, sizeof(c60), 60, -1), end;
	uint32_t n = 0;
	int got = -ENOENT, rc = t_read(st, &t);

	if (rc)
		return rc;
	if ((rc = t_scan(t, STORE_SPACE_DATA, pfx, pl, &s)) == 0) {
		store_scan_expect_children(s);
		while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1)
			if (end == cl && memcmp(k.data, c60, cl) == 0)
				got = store_scan_child_subdirs(s, k.data, end, &n) == 1 ? (int)n : -EIO;
		*trusting = ESCAN(s)->trust_from > 0;
		t_scan_close(s);
	}
	t_end(t);
	return rc < 0 ? rc : got;
}

/* ("t", 70) filled with 3 containers of 1,400 leaves, or (del) deleted whole as one range and (70, 0, 0) put */
static int range_fn(struct store_txn *t, void *arg)
{
	bool del = *(bool *)arg;
	uint8_t k[64];
	size_t kl;
	int rc = 0;

	if (del) {
		kl = trust_key(k, sizeof(k), 70, -1);
		rc = store_etcd_del_prefix(t, STORE_SPACE_DATA, k, kl, NULL);
	}
	for (int i = 0; rc == 0 && i < (del ? 1 : 3); i++)
		for (int j = 0; rc == 0 && j < (del ? 1 : 1400); j++) {
			struct tuple_writer w;

			tuple_writer_init(&w, k, sizeof(k));
			tuple_put_string(&w, "t", 1);
			tuple_put_int(&w, 70);
			tuple_put_int(&w, i);
			tuple_put_int(&w, j);
			rc = store_etcd_put(t, STORE_SPACE_DATA, k, w.len, "x", 1);
		}
	return rc;
}

/* The children of ("t", 70), listed as `ls` does: n, or <0. */
static int range_list(struct store *st)
{
	struct store_txn *t;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16];
	size_t pl = trust_key(pfx, sizeof(pfx), 70, -1), end;
	int n = 0, rc = t_read(st, &t);

	if (rc)
		return rc;
	if ((rc = t_scan(t, STORE_SPACE_DATA, pfx, pl, &s)) == 0) {
		store_scan_expect_children(s);
		while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1)
			n++;
		t_scan_close(s);
	}
	t_end(t);
	return rc < 0 ? rc : n;
}

void test_kids_trust(void)
{
	struct store *st = open_new("trust");
	int keys[64][2], leaves, n;
	bool trusting;
	struct trust_arg a = { 0 };

	CHECK(ETCD(st)->kids_trust);
	for (a.child = 0; a.child < 40; a.child++) {
		a.from = 0;
		a.to = 3;
		CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	}
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 40);
	CHECK(trusting);
	for (int i = 0; i < n && i < 40; i++)
		CHECK(keys[i][0] == i && keys[i][1] == 0);

	/* a hint deleted (not its container): that entry is read, others still trusted */
	a = (struct trust_arg){ .child = 5, .from = 0, .to = 1, .del = true };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	/* a container emptied key by key: its entry stays, the listing must not show it */
	a = (struct trust_arg){ .child = 7, .from = 0, .to = 3, .del = true };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	/*
	 * A key put behind kvfs's back before child 12's hint, which its entry
	 * does not know: a listing that trusts the entry hands out the hint, as
	 * the deletes were in other children (each child has its own stamp).
	 */
	{
		struct etcd_client *c = NULL;
		uint8_t tk[64], dk[ETCD_KEY_MAX];
		struct tuple_writer w;
		size_t dl;

		tuple_writer_init(&w, tk, sizeof(tk));
		tuple_put_string(&w, "t", 1);
		tuple_put_int(&w, 12);
		tuple_put_int(&w, -1);	/* before (12, 0) */
		dl = etcd_key(ETCD(st), STORE_SPACE_DATA, tk, w.len, dk);
		CHECK_EQ_INT(etcd_client_take(ETCD(st), &c), 0);
		CHECK_EQ_INT(etcd_client_put(c, dk, dl, "0123", 4, 0, NULL), 0);
		etcd_client_give(ETCD(st), c);
	}
	/* written after the deletes: a key after its hint, which it keeps (guarded live) */
	a = (struct trust_arg){ .child = 9, .from = 5, .to = 6 };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	CHECK(trust_hint_is(st, 9, 0));
	/* the containers a child holds, for its nlink: trusted entries are not read */
	a = (struct trust_arg){ .from = 0, .to = 3 };
	CHECK_EQ_INT(store_etcd_write(st, nest_fn, &a), 0);
	CHECK_EQ_INT(nest_count(st, &trusting), 3);
	CHECK(trusting);
	a = (struct trust_arg){ .from = 1, .to = 2, .del = true };	/* (60, 1) emptied */
	CHECK_EQ_INT(store_etcd_write(st, nest_fn, &a), 0);
	CHECK_EQ_INT(nest_count(st, &trusting), 2);
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 40);	/* 39, and 60 */
	CHECK_EQ_INT(leaves, 0);
	for (int i = 0; i < n && i < 39; i++) {
		int want = i < 7 ? i : i + 1;

		CHECK_EQ_INT(keys[i][0], want);
		CHECK_EQ_INT(keys[i][1], want == 5 ? 1 : 0);
	}

	/*
	 * A kept hint deleted between the commit's read of the entry and its
	 * Txn (here: by a raw delete that leaves no stamp): the live guard
	 * fails, the write runs again and names its own key instead.
	 */
	{
		struct etcd_client *c = NULL;
		uint8_t tk[64], dk[ETCD_KEY_MAX];
		size_t dl = etcd_key(ETCD(st), STORE_SPACE_DATA, tk, trust_key(tk, sizeof(tk), 9, 0), dk);
		struct etcd_op del = { .type = ETCD_OP_DELETE, .key = dk, .key_len = dl };
		struct etcd_txn_result res;

		CHECK_EQ_INT(etcd_client_take(ETCD(st), &c), 0);
		CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, &del, 1, NULL, 0, &res), 0);
		etcd_txn_result_release(&res);
		etcd_client_give(ETCD(st), c);
	}
	a = (struct trust_arg){ .child = 9, .from = 7, .to = 8 };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	CHECK(trust_hint_is(st, 9, 7));
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 40);
	/* trusted (written after the last delete): the hint, which is not its first key (9, 1) */
	CHECK(n > 8 && keys[8][0] == 9 && keys[8][1] == 7);

	/*
	 * A container deleted whole as one range (over ETCD_DEL_KEYS keys) and
	 * written again: the entries of its old children stay behind, and its
	 * listing must not trust them (the range stamp).
	 */
	{
		bool del = false;

		CHECK_EQ_INT(store_etcd_write(st, range_fn, &del), 0);
		CHECK_EQ_INT(range_list(st), 3);
		del = true;
		CHECK_EQ_INT(store_etcd_write(st, range_fn, &del), 0);
		CHECK_EQ_INT(range_list(st), 1);
	}

	/* a leaf child: the listing reads every gap between containers */
	a = (struct trust_arg){ .child = 50, .from = 0, .to = 1, .leaf = true };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 42);	/* and 70 */
	CHECK_EQ_INT(leaves, 1);
	CHECK(!trusting);
	t_close(st, true);

	/* keys put with a lease: etcd may expire them with no stamp, so nothing is trusted */
	st = open_new("trust-lease");
	a = (struct trust_arg){ .child = 1, .from = 0, .to = 2 };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 1);
	CHECK(trusting);
	a = (struct trust_arg){ .child = 2, .from = 0, .to = 1, .deadline_ns = now_ns() + 60000000000LL };
	CHECK_EQ_INT(store_etcd_write(st, trust_fn, &a), 0);
	n = trust_list(st, keys, 64, &leaves, &trusting);
	CHECK_EQ_INT(n, 2);
	CHECK(!trusting);
	t_close(st, true);
}
