/*
 * tests/unit/test_etcd_store_kids.c - the children space (docs/ETCD.md
 * section 7): its hints, the windows a listing reads, and its check and
 * repair.
 */
#include <errno.h>
#include <string.h>

#include "tests/unit/test_etcd_store.h"

/* ---- the children space's hints (docs/ETCD.md section 7) ---- */

struct hint_arg {
	int child;	/* the container ("h", child) */
	const char *leaf;	/* its key ("h", child, leaf) = leaf; NULL: the leaf ("h", child) */
	bool del, rewrite;	/* delete that key instead; delete the container first */
};

static size_t hint_key(uint8_t *out, size_t cap, int child, const char *leaf)
{
	struct tuple_writer w;

	tuple_writer_init(&w, out, cap);
	tuple_put_string(&w, "h", 1);
	tuple_put_int(&w, child);
	if (leaf)
		tuple_put_string(&w, leaf, strlen(leaf));
	return w.len;
}

static int hint_fn(struct store_txn *t, void *arg)
{
	const struct hint_arg *a = arg;
	uint8_t k[64];
	size_t kl;
	int rc;

	if (a->rewrite) {
		kl = hint_key(k, sizeof(k), a->child, NULL);
		if ((rc = store_etcd_del_prefix(t, STORE_SPACE_DATA, k, kl, NULL)))
			return rc;
	}
	kl = hint_key(k, sizeof(k), a->child, a->leaf);
	if (a->del)
		return store_etcd_del(t, STORE_SPACE_DATA, k, kl);
	return store_etcd_put(t, STORE_SPACE_DATA, k, kl, a->leaf ? a->leaf : "leaf",
			      a->leaf ? strlen(a->leaf) : 4);
}

/* Whether the entry of ("h", child) names ("h", child, leaf) as its hint. */
static bool hint_is(struct store *st, int child, const char *leaf)
{
	struct store_etcd *e = ETCD(st);
	struct etcd_client *c = NULL;
	struct etcd_range_opts o = { 0 };
	struct etcd_range_result r = { 0 };
	uint8_t k[ETCD_KEY_MAX], want[64];
	size_t kl = e->prefix_len, wl = hint_key(want, sizeof(want), child, leaf);
	bool is;

	memcpy(k, e->prefix, kl);
	k[kl++] = ETCD_SPACE_KIDS;
	k[kl++] = 1;	/* ("h") has one element */
	kl += hint_key(k + kl, sizeof(k) - kl, child, NULL);
	if (etcd_client_take(e, &c) || etcd_range_retry(c, k, kl, &o, &r)) {
		etcd_client_give(e, c);
		return false;
	}
	etcd_client_give(e, c);
	is = r.len == 1 && r.kvs[0].val_len == wl && memcmp(r.kvs[0].val, want, wl) == 0;
	etcd_range_result_release(&r);
	return is;
}

void test_kids_hints(void)
{
	struct store *st = open_new("hints");
	struct hint_arg a = { 1, "m", false, false };
	struct store_txn *t;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16], want[64];
	size_t pl, end, wl;
	struct tuple_writer w;
	int n = 0, rc;

	tuple_writer_init(&w, pfx, sizeof(pfx));
	tuple_put_string(&w, "h", 1);
	pl = w.len;

	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK(hint_is(st, 1, "m"));
	a.leaf = "z";	/* a later key keeps the older, smaller hint */
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK(hint_is(st, 1, "m"));
	a.leaf = "c";	/* a smaller one replaces it */
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK(hint_is(st, 1, "c"));
	a.del = true;	/* deleting it leaves the hint: the listing reads on after it */
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK(hint_is(st, 1, "c"));
	a = (struct hint_arg){ 2, "b", false, false };
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	a = (struct hint_arg){ 3, NULL, false, false };	/* a leaf child */
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	a = (struct hint_arg){ 4, "q", false, false };
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	a = (struct hint_arg){ 4, "x", false, true };	/* rewritten whole: the hint is exact */
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK(hint_is(st, 4, "x"));

	/* the listing: each child's real first key and value, no page of the whole range */
	const char *firsts[] = { "m", "b", NULL, "x" };

	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, pfx, pl, &s), 0);
	store_scan_expect_children(s);
	while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1 && n < 4) {
		const char *f = firsts[n];

		wl = hint_key(want, sizeof(want), n + 1, f);
		CHECK_MEM(k.data, k.len, want, wl);
		CHECK_MEM(v.data, v.len, f ? f : "leaf", strlen(f ? f : "leaf"));
		n++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT((int)ESCAN(s)->fetches, 0);	/* the children space served it all */
	t_scan_close(s);
	t_end(t);
	t_close(st, true);
}

/* ---- the windows a listing reads ---- */

/*
 * Walks the children of ("kids") in t from after child `after` (-1: from
 * the first), noting each child's first key (its address: an answer read
 * once is the same bytes for every listing that takes it); the count.
 */
static int list_kids(struct store_txn *t, int after, const void **firsts, int max, uint64_t *fetches)
{
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16], seek[32];
	struct tuple_writer w;
	size_t end;
	int n = 0, rc;

	tuple_writer_init(&w, pfx, sizeof(pfx));
	tuple_put_string(&w, "kids", 4);
	if (t_scan(t, STORE_SPACE_DATA, pfx, w.len, &s))
		return -1;
	store_scan_expect_children(s);
	if (after >= 0) {
		tuple_writer_init(&w, seek, sizeof(seek));
		tuple_put_string(&w, "kids", 4);
		tuple_put_int(&w, after);
		seek[w.len] = 0xff;	/* past that child's subtree */
		CHECK_EQ_INT(store_scan_seek(s, seek, w.len + 1), 0);
	}
	while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1 && n < max)
		firsts[n++] = k.data;
	*fetches = ESCAN(s)->fetches;
	t_scan_close(s);
	return rc < 0 ? rc : n;
}

/*
 * A readdir fills its buffer in a transaction of its own, so one `ls`
 * is several listings, each from where the last stopped: in one
 * snapshot they take the children's first keys the first one read.
 */
void test_kids_windows(void)
{
	struct store *st = open_new("windows");
	struct store_txn *t1, *t2, *t3;
	const void *a[300], *b[300], *c[300];
	struct fill_arg f = { 0, 100, 40 };
	struct store_scan *s;
	struct store_val k, v;
	uint64_t fetches;

	for (f.from = 0; f.from < 300; f.from += 100, f.to += 100)
		CHECK_EQ_INT(store_etcd_write(st, fill_fn, &f), 0);
	(void)store_etcd_position(st);	/* a mount's watch: snapshots are shared */
	CHECK(watch_caught_up(st));
	for (int tries = 0;; tries++) {
		CHECK_EQ_INT(t_read(st, &t1), 0);
		/* a lookup's page first (the first children's keys): listings go on from its end */
		CHECK_EQ_INT(t_scan(t1, STORE_SPACE_DATA, "\x02kids\x00", 6, &s), 0);
		CHECK_EQ_INT(store_scan_next(s, &k, &v), 1);
		t_scan_close(s);
		CHECK_EQ_INT(list_kids(t1, -1, a, 300, &fetches), 300);
		CHECK(ETXN(t1)->snap != NULL);
		CHECK(fetches < 10);	/* the children space served the walk, not pages of subtrees */
		CHECK_EQ_INT(t_read(st, &t2), 0);
		CHECK_EQ_INT(t_read(st, &t3), 0);
		if ((ETXN(t2)->snap == ETXN(t1)->snap && ETXN(t3)->snap == ETXN(t1)->snap) || tries == 4)
			break;
		t_end(t3);	/* the snapshot's second ran out meanwhile (a loaded machine): again */
		t_end(t2);
		t_end(t1);
	}
	CHECK(ETXN(t2)->snap == ETXN(t1)->snap && ETXN(t3)->snap == ETXN(t1)->snap);
	CHECK_EQ_INT(list_kids(t2, 149, b, 300, &fetches), 150);
	for (int i = 0; i < 150; i++)
		CHECK(b[i] == a[150 + i]);	/* the same answers: not read again */
	CHECK_EQ_INT(fetches, 0);
	t_end(t1);	/* t2, t3 (and the snapshot) still hold them */
	CHECK_EQ_INT(list_kids(t3, -1, c, 300, &fetches), 300);
	for (int i = 0; i < 300; i++)
		CHECK(c[i] == a[i]);
	t_end(t3);
	t_end(t2);
	t_close(st, true);
}

/*
 * A lookup of a container reads its first page; etcd 3.4 visits the whole
 * range of a page whatever its limit, so once a scan has seen a container
 * hold more than ETCD_BIG_KEYS keys its first page ends at its first
 * child's hint instead, and a scan past it reads on as before. The root,
 * which holds every key, is bounded so from the first scan.
 */
void test_kids_big(void)
{
	struct store *st = open_new("big-first");
	struct fill_arg f = { 0, 30, 100 };
	struct store_txn *t;
	struct store_scan *s;
	struct store_val k, v;
	uint8_t want[32], ek[ETCD_KEY_MAX];
	struct tuple_writer w;
	size_t kl;
	int n = 0, rc;

	for (; f.from < 60; f.from += 30, f.to += 30)
		CHECK_EQ_INT(store_etcd_write(st, fill_fn, &f), 0);
	tuple_writer_init(&w, want, sizeof(want));
	tuple_put_string(&w, "kids", 4);
	tuple_put_int(&w, 0);
	tuple_put_int(&w, 0);
	/* the root holds every key: its first page is bounded from the start */
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK(store_etcd_txn_id(t) > 0);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, "", 0, &s), 0);
	CHECK_EQ_INT(store_scan_next(s, &k, &v), 1);
	CHECK_MEM(k.data, k.len, want, w.len);
	CHECK(ESCAN(s)->page && ESCAN(s)->page->count == 1);
	for (n = 1; (rc = store_scan_next(s, &k, &v)) == 1;)
		n++;
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(n, 6000);
	t_scan_close(s);
	t_end(t);

	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, "\x02kids\x00", 6, &s), 0);
	CHECK_EQ_INT(store_scan_next(s, &k, &v), 1);
	CHECK(ESCAN(s)->page && ESCAN(s)->page->count == 6000);	/* the whole subtree's range */
	t_scan_close(s);
	t_end(t);
	kl = etcd_key(ETCD(st), STORE_SPACE_DATA, "\x02kids\x00", 6, ek);
	CHECK(etcd_kids_is_big(ETCD(st), ek, kl));	/* remembered by the handle */

	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK(store_etcd_txn_id(t) > 0);	/* pinned, as a mount's reads are by its snapshot */
	CHECK_EQ_INT(t_scan(t, STORE_SPACE_DATA, "\x02kids\x00", 6, &s), 0);
	CHECK_EQ_INT(store_scan_next(s, &k, &v), 1);
	CHECK_MEM(k.data, k.len, want, w.len);
	CHECK(ESCAN(s)->page && ESCAN(s)->page->count == 1);	/* up to the first child's hint */
	n = 1;
	while ((rc = store_scan_next(s, &k, &v)) == 1)
		n++;
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(n, 6000);	/* and on past it, every key */
	t_scan_close(s);
	t_end(t);
	t_close(st, true);
}

/* Deletes the key ("kids", 7, 0): child 7's entry keeps naming it (a stale hint). */
static int del_hint_fn(struct store_txn *t, void *arg)
{
	uint8_t k[32];
	struct tuple_writer w;

	(void)arg;
	tuple_writer_init(&w, k, sizeof(k));
	tuple_put_string(&w, "kids", 4);
	tuple_put_int(&w, 7);
	tuple_put_int(&w, 0);
	return store_del(t, STORE_SPACE_DATA, k, w.len);
}

/* Scans ("kids", i) in t: its first page's key count into *first, the keys handed out. */
static int scan_child(struct store_txn *t, int i, size_t *first)
{
	struct store_scan *s;
	struct store_val k, v;
	uint8_t pfx[16];
	struct tuple_writer w;
	int n = 0, rc;

	tuple_writer_init(&w, pfx, sizeof(pfx));
	tuple_put_string(&w, "kids", 4);
	tuple_put_int(&w, i);
	if (t_scan(t, STORE_SPACE_DATA, pfx, w.len, &s))
		return -1;
	rc = store_scan_next(s, &k, &v);
	*first = rc == 1 && ESCAN(s)->page ? ESCAN(s)->page->len : 0;
	for (n = rc == 1; rc == 1 && (rc = store_scan_next(s, &k, &v)) == 1;)
		n++;
	t_scan_close(s);
	return rc < 0 ? rc : n;
}

/*
 * A lookup of a container that a listing of its parent in the same
 * snapshot read (or trusted) as the range up to the container's hint
 * reads its first page up to that hint, not its whole subtree (etcd 3.4
 * visits every key of a range whatever its limit); a stale hint still
 * gives every key.
 */
void test_kids_window_bound(void)
{
	struct store *st = open_new("window-bound");
	struct fill_arg f = { 0, 60, 100 };
	struct store_txn *t1, *t2;
	const void *a[60];
	uint64_t fetches;
	size_t first;

	CHECK_EQ_INT(store_etcd_write(st, fill_fn, &f), 0);
	CHECK_EQ_INT(store_etcd_write(st, del_hint_fn, NULL), 0);
	(void)store_etcd_position(st);	/* a mount's watch: snapshots are shared */
	CHECK(watch_caught_up(st));
	/* no listing of ("kids") yet: the whole child is one page */
	CHECK_EQ_INT(t_read(st, &t1), 0);
	CHECK_EQ_INT(scan_child(t1, 5, &first), 100);
	CHECK_EQ_INT(first, 100);
	t_end(t1);
	for (int tries = 0;; tries++) {
		CHECK_EQ_INT(t_read(st, &t1), 0);
		CHECK_EQ_INT(list_kids(t1, -1, a, 60, &fetches), 60);
		CHECK_EQ_INT(t_read(st, &t2), 0);
		if (ETXN(t2)->snap == ETXN(t1)->snap || tries == 4)
			break;
		t_end(t2);	/* the snapshot's second ran out meanwhile: again */
		t_end(t1);
	}
	CHECK(ETXN(t2)->snap && ETXN(t2)->snap == ETXN(t1)->snap);
	CHECK_EQ_INT(scan_child(t2, 6, &first), 100);
	CHECK_EQ_INT(first, 1);	/* up to its hint, its first key */
	CHECK_EQ_INT(scan_child(t2, 7, &first), 99);	/* the hint is gone: read on past it */
	t_end(t2);
	t_end(t1);
	t_close(st, true);
}

/* ---- check and repair ---- */

struct check_seen {
	int n;
	uint8_t key[64];
	size_t len;
};

static void check_note(void *arg, const uint8_t *key, size_t len, const char *message)
{
	struct check_seen *c = arg;

	(void)message;
	if (c->n++ == 0 && len <= sizeof(c->key)) {
		memcpy(c->key, key, len);
		c->len = len;
	}
}

/*
 * Deletes, behind kvfs's back, the key k[0..kl) (the children space's
 * marker, or the flags' space) followed by `depth` and ("h", child): an
 * entry (depth 1) or a leaf flag (depth 2).
 */
static int check_unkeep(struct store *st, size_t kl, uint8_t *k, int child)
{
	struct etcd_client *c = NULL;
	int rc;

	k[kl] = (uint8_t)(k[kl - 1] == ETCD_SPACE_KIDS ? 1 : 2);
	kl++;
	kl += hint_key(k + kl, ETCD_KEY_MAX - kl, child, NULL);
	if ((rc = etcd_client_take(ETCD(st), &c)))
		return rc;
	rc = etcd_client_delete_range(c, k, kl, NULL, 0, NULL, NULL);
	etcd_client_give(ETCD(st), c);
	return rc;
}

static int repair_fn(struct store_txn *t, void *arg)
{
	(void)arg;
	return store_etcd_repair(t);
}

/* A leaf 300 containers deep: ("h", 0, 0, ..., "x"). */
static int deep_fn(struct store_txn *t, void *arg)
{
	struct tuple_writer w;
	uint8_t k[STORE_KEY_MAX];

	(void)arg;
	tuple_writer_init(&w, k, sizeof(k));
	tuple_put_string(&w, "h", 1);
	for (int i = 0; i < 300; i++)
		tuple_put_int(&w, 0);
	tuple_put_string(&w, "x", 1);
	return w.len > sizeof(k) ? -ENAMETOOLONG :
	       store_etcd_put(t, STORE_SPACE_DATA, k, w.len, "1", 1);
}

/*
 * kvfs check of the children space: clean as written (containers deeper
 * than an entry's one-byte depth have none, and need none); an entry gone
 * (a listing would pass its container over) is named, once, by its key.
 */
void test_kids_check(void)
{
	struct store *st = open_new("kcheck");
	struct hint_arg a = { 1, "m", false, false };
	struct check_seen seen = { 0 };
	struct store_txn *t;
	uint8_t k[ETCD_KEY_MAX], want[64];
	size_t wl;

	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	a.leaf = "n";
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	a = (struct hint_arg){ 2, "b", false, false };
	CHECK_EQ_INT(store_etcd_write(st, hint_fn, &a), 0);
	CHECK_EQ_INT(store_etcd_write(st, deep_fn, NULL), 0);
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, check_note, &seen), 0);
	CHECK_EQ_INT(seen.n, 0);
	t_end(t);

	/* the entry of ("h", 1) removed behind kvfs's back */
	CHECK_EQ_INT(check_unkeep(st, etcd_kids_marker(ETCD(st), k), k, 1), 0);
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, check_note, &seen), 0);
	CHECK_EQ_INT(seen.n, 1);	/* two keys under it, one report */
	wl = hint_key(want, sizeof(want), 1, NULL);
	CHECK_MEM(seen.key, seen.len, want, wl);
	t_end(t);
	CHECK_EQ_INT(store_etcd_write(st, repair_fn, NULL), 0);

	/* the leaf flag of ("h", 2) removed: its leaf ("h", 2, "b") is named; a repair puts it back */
	CHECK_EQ_INT(check_unkeep(st, etcd_kids_lease_flag(ETCD(st), k), k, 2), 0);
	seen = (struct check_seen){ 0 };
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, check_note, &seen), 0);
	CHECK_EQ_INT(seen.n, 1);
	wl = hint_key(want, sizeof(want), 2, "b");
	CHECK_MEM(seen.key, seen.len, want, wl);
	t_end(t);
	CHECK_EQ_INT(store_etcd_write(st, repair_fn, NULL), 0);
	seen = (struct check_seen){ 0 };
	CHECK_EQ_INT(t_read(st, &t), 0);
	CHECK_EQ_INT(store_etcd_check(t, check_note, &seen), 0);
	CHECK_EQ_INT(seen.n, 0);
	t_end(t);
	t_close(st, true);
}
