/*
 * store/etcd/etcd_kids_list.c - what a listing reads from the children space:
 * each child's first key, in batches of ranges sent at once (trusted entries,
 * windows shared in a snapshot), and the first page of a big container.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

#define KIDS_THREADS 4	/* batches in flight at once */
/*
 * Children one prefetch covers at most. A readdir asks for a hundred or so
 * and each starts a new scan, so reading every later name each time would
 * make a big listing quadratic; a scan that walks past the window reads the
 * next one (etcd_scan.c).
 */
#define KIDS_WINDOW 512
/* The first window: one request's worth, as a readdir hands out a few dozen names per call. */
#define KIDS_FIRST_WINDOW KIDS_TXN_OPS

bool etcd_kids_is_child_end(const struct store_etcd_scan *s, const uint8_t *key, size_t len)
{
	size_t pl = s->base.prefix_len;

	return len > pl + 1 && key[len - 1] == 0xff && etcd_kids_elements(key + pl, len - 1 - pl) == 1;
}

/*
 * The names of P's containers from `from` on (full etcd entry keys, in
 * order), at most max of them; *more when there are others after them.
 * *out: heap pages, each to etcd_range_result_release, the array to free.
 */
static int read_names(struct store_etcd_scan *s, unsigned depth, const uint8_t *from_t,
		      size_t from_len, size_t max, struct etcd_range_result **out, size_t *n_out,
		      bool *more)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t lo_len = etcd_kids_key(s->txn->st, depth, from_t, from_len, lo);
	size_t hi_len = etcd_kids_key(s->txn->st, depth, s->base.prefix, s->base.prefix_len, hi);
	struct etcd_range_result *pages = NULL;
	size_t n = 0, got = 0;
	int rc = 0;

	*more = false;
	hi[hi_len++] = 0xff;	/* no element starts with 0xff: just P's own containers */
	for (;;) {
		struct etcd_range_opts o = { .range_end = hi, .range_end_len = hi_len,
					     .keys_only = false,	/* the values are the hints */
					     .limit = (int64_t)(max - got < KIDS_PAGE ? max - got : KIDS_PAGE),
					     .revision = s->txn->rev };
		struct etcd_range_result *grown = realloc(pages, (n + 1) * sizeof(*pages));

		if (!grown) {
			rc = -ENOMEM;
			break;
		}
		pages = grown;
		rc = etcd_range_retry(s->txn->c, lo, lo_len, &o, &pages[n]);
		if (rc)
			break;
		n++;
		got += pages[n - 1].len;
		if (!pages[n - 1].more || !pages[n - 1].len)
			break;
		if (got >= max) {
			*more = true;
			break;
		}
		lo_len = etcd_key_after(&pages[n - 1].kvs[pages[n - 1].len - 1], lo);
	}
	*out = pages;
	*n_out = n;
	return rc;
}

/* The scan's next skeleton slot (not counted yet), or NULL without memory. */
static struct etcd_skel *skel_slot(struct store_etcd_scan *s)
{
	if (s->n_skel == s->cap_skel) {
		size_t cap = s->cap_skel ? 2 * s->cap_skel : 256;
		struct etcd_skel *g = realloc(s->skel, cap * sizeof(*g));

		if (!g)
			return NULL;
		s->skel = g;
		s->cap_skel = cap;
	}
	return &s->skel[s->n_skel];
}

/* Copies src's range into dst, with keys of its own. */
static int skel_copy(struct etcd_skel *dst, const struct etcd_skel *src)
{
	dst->keys = malloc(src->from_len + src->end_len + 1);
	if (!dst->keys)
		return -ENOMEM;
	memcpy(dst->keys, src->from, src->from_len);
	dst->from = dst->keys;
	dst->from_len = src->from_len;
	dst->end = dst->keys + src->from_len;
	memcpy(dst->end, src->end, src->end_len);
	dst->end_len = src->end_len;
	dst->r = src->r;
	return 0;
}

/*
 * Takes the ranges of a window another listing of this container read in
 * the same snapshot, from the one holding from[0..fl) on: no request.
 */
static int window_take(struct store_etcd_scan *s, struct etcd_window *w, const uint8_t *from,
		       size_t fl)
{
	size_t i = 0;

	while (i < w->n_skel && store_key_cmp(from, fl, w->skel[i].end, w->skel[i].end_len) >= 0)
		i++;
	for (; i < w->n_skel; i++) {
		struct etcd_skel *sk = skel_slot(s);

		if (!sk || skel_copy(sk, &w->skel[i]))
			return -ENOMEM;
		s->n_skel++;
	}
	s->skel_more = w->more;
	memcpy(s->skel_until, w->until, w->until_len);
	s->skel_until_len = w->until_len;
	s->skel_pos = 0;
	s->win = w;
	return 0;
}

/* Remembers where the scan's first window ends, once it has one; rc passed through. */
static int note_first_window(struct store_etcd_scan *s, int rc)
{
	const struct etcd_skel *last = s->n_skel ? &s->skel[s->n_skel - 1] : NULL;

	if (rc == 0 && last && !s->first_end_len && last->end_len <= sizeof(s->first_end)) {
		memcpy(s->first_end, last->end, last->end_len);
		s->first_end_len = last->end_len;
	}
	return rc;
}

/* Offers the ranges this prefetch read (from skel0 on) to the listings after it. */
static void window_offer(struct store_etcd_scan *s, size_t skel0)
{
	struct etcd_window *w = calloc(1, sizeof(*w));
	size_t n = s->n_skel - skel0;

	if (!w || !(w->skel = calloc(n ? n : 1, sizeof(*w->skel)))) {
		free(w);
		return;	/* only a later listing's requests are lost */
	}
	memcpy(w->prefix, s->base.prefix, s->base.prefix_len);
	w->prefix_len = s->base.prefix_len;
	w->keys_only = s->keys_only;
	w->any_key = s->skel_any;
	w->more = s->skel_more;
	memcpy(w->until, s->skel_until, s->skel_until_len);
	w->until_len = s->skel_until_len;
	for (; w->n_skel < n; w->n_skel++)
		if (skel_copy(&w->skel[w->n_skel], &s->skel[skel0 + w->n_skel]))
			break;
	if (w->n_skel < n || !etcd_snap_window_keep(s->txn, w))
		etcd_window_free(w);
	else
		s->win = w;
}

/* Keeps one answer as a skeleton page of [from, scan_hi) until the transaction (or its snapshot) ends. */
static int keep(struct store_etcd_scan *s, struct etcd_range_result *r, const uint8_t *from,
		size_t fl, const uint8_t *hi, size_t hl)
{
	struct etcd_kept *k = calloc(1, sizeof(*k));
	struct etcd_skel *sk = skel_slot(s);

	if (!k || !sk) {
		free(k);
		return -ENOMEM;
	}
	k->r = *r;	/* the transaction owns it now */
	memset(r, 0, sizeof(*r));
	etcd_txn_keep(s->txn, k);	/* not in pages: other scans' lookups pass over it */
	sk->r = &k->r;
	sk->keys = malloc(fl + hl + ETCD_KEY_MAX);
	if (!sk->keys)
		return -ENOMEM;
	sk->from = sk->keys;
	sk->from_len = fl;
	memcpy(sk->keys, from, fl);
	sk->end = sk->keys + fl;
	if (k->r.more && k->r.len) {
		sk->end_len = etcd_key_after(&k->r.kvs[k->r.len - 1], sk->end);
	} else {
		memcpy(sk->end, hi, hl);
		sk->end_len = hl;
	}
	s->n_skel++;
	return 0;
}

/* Batches of ranges sent by a few threads at once (each with its own client). */
struct batches {
	struct store_etcd *st;
	const struct etcd_op *ops;
	size_t n_ops, n_batches;
	struct etcd_txn_result *res;	/* one per batch */
	int *rc;	/* one per batch */
	atomic_size_t next;	/* the next batch to send */
	atomic_size_t threads;	/* threads started: each asks its own member */
	struct etcd_deadline deadline;	/* the caller's, its helpers' too */
};

static void *send_batches(void *arg)
{
	struct batches *b = arg;
	struct etcd_client *c = NULL;
	size_t i;
	int rc = etcd_client_take(b->st, &c);

	if (rc == 0)
		etcd_client_spread(c, atomic_fetch_add(&b->threads, 1));
	while ((i = atomic_fetch_add(&b->next, 1)) < b->n_batches) {
		size_t from = i * KIDS_TXN_OPS, n = b->n_ops - from;

		if (n > KIDS_TXN_OPS)
			n = KIDS_TXN_OPS;
		b->rc[i] = rc ? rc : etcd_client_txn(c, NULL, 0, b->ops + from, n, NULL, 0, &b->res[i]);
		if (b->rc[i] == 0 && b->res[i].len != n) {
			etcd_txn_result_release(&b->res[i]);
			b->rc[i] = -EPROTO;
		}
	}
	etcd_client_give(b->st, c);
	return NULL;
}

/* A helper thread: the caller's deadline holds for its calls too. */
static void *helper_main(void *arg)
{
	struct batches *b = arg;

	etcd_deadline_adopt(b->deadline);
	return send_batches(b);
}

/*
 * Sends ops[0..n) in read-only Txns of KIDS_TXN_OPS, a few at once: *res
 * (heap, each to etcd_txn_result_release, the array to free) holds one
 * answer per batch, in order. 0, or the first batch's error (none kept).
 */
int etcd_kids_send_ops(struct store_etcd_scan *s, const struct etcd_op *ops, size_t n,
	     struct etcd_txn_result **res)
{
	struct batches b = { .st = s->txn->st, .ops = ops, .n_ops = n,
			     .n_batches = (n + KIDS_TXN_OPS - 1) / KIDS_TXN_OPS };
	pthread_t th[KIDS_THREADS];
	size_t n_th = 0;
	int rc = 0;

	*res = NULL;
	b.res = calloc(b.n_batches ? b.n_batches : 1, sizeof(*b.res));
	b.rc = calloc(b.n_batches ? b.n_batches : 1, sizeof(*b.rc));
	if (!b.res || !b.rc) {
		free(b.res);
		free(b.rc);
		return -ENOMEM;
	}
	atomic_init(&b.next, 0);
	atomic_init(&b.threads, 0);
	b.deadline = etcd_deadline_mine();
	while (n_th + 1 < KIDS_THREADS && n_th + 1 < b.n_batches &&
	       pthread_create(&th[n_th], NULL, helper_main, &b) == 0)
		n_th++;
	send_batches(&b);
	for (size_t i = 0; i < n_th; i++)
		pthread_join(th[i], NULL);
	for (size_t i = 0; i < b.n_batches && rc == 0; i++)
		rc = b.rc[i];
	for (size_t i = 0; rc && i < b.n_batches; i++)
		if (b.rc[i] == 0)
			etcd_txn_result_release(&b.res[i]);
	free(b.rc);
	if (rc)
		free(b.res);
	else
		*res = b.res;
	return rc;
}

/*
 * The page a trusted range op stands for, made up: op's range holds no key
 * but op's last one, the child's hint (op's end without its 0x00), whose
 * value a listing does not read (the empty string). With no limit, an
 * empty page: no leaf after the last container.
 */
static int made_up(const struct store_etcd_scan *s, const struct etcd_op *op,
		   struct etcd_range_result *r)
{
	memset(r, 0, sizeof(*r));
	r->revision = s->txn->rev;
	if (op->limit != 1)
		return 0;
	r->kvs = calloc(1, sizeof(*r->kvs));
	if (!r->kvs)
		return -ENOMEM;
	r->len = r->count = 1;
	r->kvs[0].key = malloc(op->range_end_len - 1);
	r->kvs[0].val = calloc(1, 1);
	if (!r->kvs[0].key || !r->kvs[0].val) {
		etcd_range_result_release(r);
		return -ENOMEM;
	}
	memcpy(r->kvs[0].key, op->range_end, op->range_end_len - 1);
	r->kvs[0].key_len = op->range_end_len - 1;
	r->kvs[0].create_rev = r->kvs[0].mod_rev = op->revision;
	r->kvs[0].version = 1;
	return 0;
}

/*
 * Sends ops[0..n) in read-only Txns and keeps every answer, in order; an
 * op that trust[] marks is not sent: its page is made up (made_up).
 */
static int send_all(struct store_etcd_scan *s, const struct etcd_op *ops, const bool *trust,
		    size_t n)
{
	struct etcd_op *sent = calloc(n ? n : 1, sizeof(*sent));
	struct etcd_txn_result *res = NULL;
	size_t n_sent = 0, at = 0;
	int rc = sent ? 0 : -ENOMEM;

	for (size_t i = 0; rc == 0 && i < n; i++)
		if (!trust || !trust[i])
			sent[n_sent++] = ops[i];
	if (rc == 0)
		rc = etcd_kids_send_ops(s, sent, n_sent, &res);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct etcd_range_result made, *r = &made;

		if (!trust || !trust[i])
			r = &res[at / KIDS_TXN_OPS].ranges[at % KIDS_TXN_OPS], at++;
		else
			rc = made_up(s, &ops[i], &made);
		if (rc == 0)
			rc = keep(s, r, ops[i].key, ops[i].key_len, ops[i].range_end,
				  ops[i].range_end_len);
		if (r == &made)
			etcd_range_result_release(&made);
	}
	for (size_t b = 0; res && b < (n_sent + KIDS_TXN_OPS - 1) / KIDS_TXN_OPS; b++)
		etcd_txn_result_release(&res[b]);
	free(res);
	free(sent);
	return rc;
}

/*
 * From which revision on entries can be trusted without reading their
 * container (0: none may be), read once per scan at its revision, with
 * the delete stamps of the listed container's children (s->stamps). An
 * entry of child C written at E whose hint lies under C names a live key
 * there when no commit deleted a key under C after E (C's stamp, put by
 * every such commit, is at most E): a commit puts an entry with a hint it
 * puts too, or one it keeps from an older entry and guards live. Nothing
 * is trusted where keys may have gone without a stamp (the lease flag:
 * etcd expired them), nor before the marker said "3" (or moved, section
 * 7). s->leafless: the listed container never had a leaf child (no leaf
 * flag), so no leaf lies between its containers and a listing may skip
 * the gaps.
 */
int etcd_kids_trust_from(struct store_etcd_scan *s, int depth)
{
	uint8_t keys[4 + KIDS_TRUST_DEPTH + 1][ETCD_KEY_MAX];
	struct etcd_op ops[4 + KIDS_TRUST_DEPTH + 1];
	size_t lens[4 + KIDS_TRUST_DEPTH + 1], n = 4;
	struct etcd_txn_result res;
	struct tuple_reader r;
	struct tuple_elem e;
	int rc;

	if (s->trust_read)
		return 0;
	s->trust_read = true;
	if (!s->listing || !s->txn->st->kids_trust || depth < 0 || depth > KIDS_TRUST_DEPTH)
		return 0;
	/* the range stamps of the root, every container above the listed one, and its own */
	lens[n] = etcd_kids_stamp_key(s->txn->st, KIDS_RANGE_STAMP, s->base.prefix, 0, keys[n]);
	n++;
	tuple_reader_init(&r, s->base.prefix, s->base.prefix_len);
	while (tuple_next(&r, &e) == 1) {	/* depth of them at most */
		lens[n] = etcd_kids_stamp_key(s->txn->st, KIDS_RANGE_STAMP, s->base.prefix, r.pos, keys[n]);
		n++;
	}
	lens[0] = etcd_kids_stamp_key(s->txn->st, (unsigned)depth, s->base.prefix, s->base.prefix_len, keys[0]);
	keys[0][lens[0]] = 0xff;	/* no element starts with 0xff: the children's stamps */
	lens[1] = etcd_kids_lease_flag(s->txn->st, keys[1]);
	lens[2] = etcd_kids_leaf_flag_key(s->txn->st, (unsigned)depth, s->base.prefix, s->base.prefix_len,
				keys[2]);
	lens[3] = etcd_kids_marker(s->txn->st, keys[3]);
	for (size_t i = 0; i < n; i++)
		ops[i] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = keys[i], .key_len = lens[i],
					   .keys_only = i != 3, .revision = s->txn->rev };
	ops[0].range_end = keys[0];
	ops[0].range_end_len = lens[0] + 1;
	rc = etcd_client_txn(s->txn->c, NULL, 0, ops, n, NULL, 0, &res);
	if (rc)
		return rc;
	if (res.len == n && !res.ranges[0].more && !res.ranges[1].len && res.ranges[3].len == 1 &&
	    res.ranges[3].kvs[0].val_len == 1 && res.ranges[3].kvs[0].val[0] == '3') {
		s->trust_from = res.ranges[3].kvs[0].mod_rev;
		for (size_t i = 4; i < n; i++)	/* a range deleted over the listed container */
			if (res.ranges[i].len && res.ranges[i].kvs[0].mod_rev > s->trust_from)
				s->trust_from = res.ranges[i].kvs[0].mod_rev;
		s->leafless = !res.ranges[2].len;
		s->stamps = res.ranges[0];	/* the scan's now, in key order */
		memset(&res.ranges[0], 0, sizeof(res.ranges[0]));
	}
	etcd_txn_result_release(&res);
	return 0;
}

/*
 * From which revision the entries of the listed container's child that
 * the tuple key t[0..len) lies in (or under) are trusted: the later of the
 * marker's and that child's delete stamp's; 0 when none are.
 */
static int64_t trusted_since(const struct store_etcd_scan *s, const uint8_t *t, size_t len)
{
	size_t skip = s->txn->st->prefix_len + 2, pl = s->base.prefix_len, lo = 0,
	       hi = s->stamps.len;
	struct tuple_reader r;
	struct tuple_elem e;

	if (s->trust_from <= 0 || len <= pl)
		return 0;
	tuple_reader_init(&r, t + pl, len - pl);
	if (tuple_next(&r, &e) != 1)
		return 0;
	len = pl + r.pos;	/* the child */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct etcd_kv *kv = &s->stamps.kvs[mid];
		int c = store_key_cmp(kv->key + skip, kv->key_len - skip, t, len);

		if (c == 0)
			return kv->mod_rev > s->trust_from ? kv->mod_rev : s->trust_from;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s->trust_from;
}

/*
 * Whether the entry kv (the listed container's child's, or one below a
 * child's: its hint lies under it) names a key that is there unread.
 */
bool etcd_kids_trusted(const struct store_etcd_scan *s, const struct etcd_kv *kv)
{
	size_t skip = s->txn->st->prefix_len + 2, child = kv->key_len - skip;
	int64_t since = trusted_since(s, kv->key + skip, child);

	return since > 0 && etcd_kids_hint_of(s->txn->st, kv->key, kv->key_len, kv->val, kv->val_len) &&
	       kv->val_len > child && kv->mod_rev >= since;
}

static int skel_cmp(const void *a, const void *b)
{
	const struct etcd_skel *x = a, *y = b;

	return store_key_cmp(x->from, x->from_len, y->from, y->from_len);
}

/* Appends the range [key, end) with at most limit keys to ops; the bytes go to keys. */
static void add_range(struct store_etcd_scan *s, struct etcd_op *ops, size_t *n_ops,
		      const uint8_t *key, size_t kl, const uint8_t *end, size_t el, int64_t limit)
{
	ops[(*n_ops)++] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = key, .key_len = kl,
					    .range_end = end, .range_end_len = el, .limit = limit,
					    .keys_only = s->keys_only, .revision = s->txn->rev };
}

/*
 * How much of the tuple key t[0..len) (a scan's position) the names of
 * the listed container's children start from: all of it, or, when it lies
 * inside a child's subtree past its first keys (a page read before ended
 * at a hint that is gone), that child's key, whose entry sorts before the
 * position and must still be read.
 */
static size_t names_from(const struct store_etcd_scan *s, const uint8_t *t, size_t len)
{
	size_t pl = s->base.prefix_len;
	struct tuple_reader r;
	struct tuple_elem e;

	/* at a child's end: past its subtree, nothing of it is left */
	if (len <= pl || etcd_kids_is_child_end(s, t, len))
		return len;
	tuple_reader_init(&r, t + pl, len - pl);
	if (tuple_next(&r, &e) != 1 || pl + r.pos == len)
		return len;
	return pl + r.pos;
}

/*
 * For each container child C named in the window, with hint H (a key under
 * C, the entry's value): [the end of the previous child, H) with the leaf
 * children before C and any key of C before H (none while H is the first),
 * and [H, H 0x00): H itself. Both touch O(1) keys besides the leaves, where
 * a range over C's subtree costs O(keys in it) even with limit 1 (etcd 3.4
 * collects every revision of a range before applying the limit). Without
 * a hint (an entry written before hints) H is C and the second range is
 * C's subtree with limit 1. When H is gone, a second round reads
 * [H 0x00, end of C) with limit 1. When the scan starts inside C (at
 * H 0x00, where a page bounded by a stale hint ended), C's range is
 * [start, end of C) with limit 1, read whatever the trust.
 */
int etcd_kids_prefetch(struct store_etcd_scan *s, const uint8_t *from, size_t fl)
{
	struct etcd_range_result *names = NULL;
	size_t n_names = 0, n_ops = 0, base = s->base_len, total = 1, used = 0, skel0 = s->n_skel;
	int depth = etcd_kids_elements(s->base.prefix, s->base.prefix_len);
	struct etcd_op *ops = NULL;
	bool *trust = NULL;	/* per op: its page is made up, not read (trusted) */
	size_t *hinted = NULL, n_hinted = 0;	/* ops that read a hint, for the second round */
	const uint8_t **c_end = NULL, **c_key = NULL;	/* each hinted op's container and its end */
	size_t *c_end_len = NULL, *c_key_len = NULL;
	uint8_t *keys = NULL;
	const uint8_t *gap = from;
	size_t gap_len = fl;
	struct etcd_window *w;
	bool more = false;
	int rc;

	s->skel_more = false;
	if (depth < 0 || depth > 255 || fl < base)
		return 0;	/* not a container listing: the ordinary pages serve */
	if (!s->txn->rev && !store_etcd_txn_id(&s->txn->base))
		return 0;	/* every range is read at the pinned revision: pin it first */
	w = etcd_snap_window(s->txn, s->base.prefix, s->base.prefix_len, s->keys_only, s->listing,
			     from, fl);
	if (w)
		return note_first_window(s, window_take(s, w, from, fl));
	rc = etcd_kids_trust_from(s, depth);
	if (rc == 0)
		rc = read_names(s, (unsigned)depth, from + base, names_from(s, from + base, fl - base),
			s->n_skel ? KIDS_WINDOW : KIDS_FIRST_WINDOW, &names, &n_names,
			&more);
	for (size_t p = 0; p < n_names; p++)
		total += names[p].len;
	if (rc == 0) {
		ops = calloc(3 * total, sizeof(*ops));
		trust = calloc(3 * total, sizeof(*trust));
		hinted = calloc(total, sizeof(*hinted));
		c_end = calloc(total, sizeof(*c_end));
		c_end_len = calloc(total, sizeof(*c_end_len));
		c_key = calloc(total, sizeof(*c_key));
		c_key_len = calloc(total, sizeof(*c_key_len));
		keys = malloc(total * 4 * (ETCD_KEY_MAX + 1));
		if (!ops || !trust || !hinted || !c_end || !c_end_len || !c_key || !c_key_len || !keys)
			rc = -ENOMEM;
	}
	/* past a window, the skeleton ends with its last child's subtree, not the scan */
	for (size_t p = 0; rc == 0 && p < n_names; p++) {
		for (size_t i = 0; i < names[p].len; i++) {
			const struct etcd_kv *kv = &names[p].kvs[i];
			size_t skip = s->txn->st->prefix_len + 2, cl, el, hl = 0;
			uint8_t *c = keys + used, *end, *h = NULL;
			const uint8_t *hint = etcd_kids_hint_of(s->txn->st, kv->key, kv->key_len, kv->val,
						      kv->val_len);

			cl = etcd_key(s->txn->st, STORE_SPACE_DATA, kv->key + skip, kv->key_len - skip, c);
			end = c + cl;
			memcpy(end, c, cl);
			end[cl] = 0xff;
			el = cl + 1;
			used += cl + el;
			if (cl < gap_len && memcmp(gap, c, cl) == 0) {
				/* the scan starts inside C: C's next key, wherever its hint is */
				add_range(s, ops, &n_ops, gap, gap_len, end, el, 1);
			} else if (hint && s->leafless && etcd_kids_trusted(s, kv)) {
				h = keys + used;
				hl = etcd_key(s->txn->st, STORE_SPACE_DATA, hint, kv->val_len, h);
				h[hl++] = 0;
				used += hl;
				trust[n_ops] = s->skel_any = true;
				add_range(s, ops, &n_ops, gap, gap_len, h, hl, 1);
			} else if (hint) {
				h = keys + used;
				hl = etcd_key(s->txn->st, STORE_SPACE_DATA, hint, kv->val_len, h);
				h[hl++] = 0;	/* up to h 0x00: h included */
				used += hl;
				c_key[n_hinted] = c;
				c_key_len[n_hinted] = cl;
				c_end[n_hinted] = end;
				c_end_len[n_hinted] = el;
				hinted[n_hinted++] = n_ops;
				add_range(s, ops, &n_ops, gap, gap_len, h, hl, ETCD_PAGE);
			} else {
				add_range(s, ops, &n_ops, gap, gap_len, c, cl, ETCD_PAGE);
				add_range(s, ops, &n_ops, c, cl, end, el, 1);
			}
			gap = end;
			gap_len = el;
		}
	}
	if (rc == 0 && !more) {	/* the last gap, to the scan's end: no leaf there where trusted */
		trust[n_ops] = s->trust_from > 0 && s->leafless;
		add_range(s, ops, &n_ops, gap, gap_len, s->hi, s->hi_len, ETCD_PAGE);
	}
	if (rc == 0 && more && n_ops) {
		memcpy(s->skel_until, gap, gap_len);	/* where the next window starts */
		s->skel_until_len = gap_len;
		s->skel_more = true;
	}
	if (rc == 0)
		rc = send_all(s, ops, trust, n_ops);
	if (rc == 0 && n_hinted) {
		/* hints that are gone: the rest of their container, from after them */
		size_t n2 = 0;

		for (size_t j = 0; j < n_hinted; j++) {
			const struct etcd_op *o = &ops[hinted[j]];
			const struct etcd_range_result *r = s->skel[skel0 + hinted[j]].r;

			if (r->more || (r->len && store_key_cmp(r->kvs[r->len - 1].key, r->kvs[r->len - 1].key_len,
							   c_key[j], c_key_len[j]) >= 0))
				continue;	/* C's first key is there (or the page stopped before C) */
			add_range(s, ops + n_ops, &n2, o->range_end, o->range_end_len, c_end[j],
				  c_end_len[j], 1);
		}
		if (n2)
			rc = send_all(s, ops + n_ops, NULL, n2);
		if (rc == 0 && n2)
			qsort(s->skel + skel0, s->n_skel - skel0, sizeof(*s->skel), skel_cmp);
	}
	for (size_t p = 0; p < n_names; p++)
		etcd_range_result_release(&names[p]);
	free(names);
	free(ops);
	free(trust);
	free(hinted);
	free(c_end);
	free(c_end_len);
	free(c_key);
	free(c_key_len);
	free(keys);
	s->skel_pos = 0;
	if (rc == 0 && s->n_skel > skel0)
		window_offer(s, skel0);
	note_first_window(s, rc);
	return rc;
}

struct etcd_skel *etcd_kids_covering(struct store_etcd_scan *s, const uint8_t *key, size_t len)
{
	/* a walk moves forward: look on from where the last one was found */
	while (s->skel_pos < s->n_skel) {
		struct etcd_skel *sk = &s->skel[s->skel_pos];

		if (store_key_cmp(key, len, sk->from, sk->from_len) < 0)
			return NULL;
		if (store_key_cmp(key, len, sk->end, sk->end_len) < 0)
			return sk;
		s->skel_pos++;
	}
	return NULL;
}

void etcd_kids_scan_release(struct store_etcd_scan *s)
{
	etcd_below_free(s->own_below);
	s->own_below = NULL;
	s->below = NULL;
	s->win = NULL;
	etcd_range_result_release(&s->stamps);
	for (size_t i = 0; i < s->n_skel; i++)
		free(s->skel[i].keys);
	free(s->skel);
	s->skel = NULL;
	s->n_skel = s->cap_skel = 0;
}

/* ---- the first page of a big container ---- */

bool etcd_kids_is_big(struct store_etcd *st, const uint8_t *key, size_t len)
{
	bool big = false;

	pthread_mutex_lock(&st->big_lock);
	for (size_t i = 0; i < st->n_big && !big; i++)
		big = st->big_len[i] == len && memcmp(st->big[i], key, len) == 0;
	pthread_mutex_unlock(&st->big_lock);
	return big;
}

void etcd_kids_note_big(struct store_etcd *st, const uint8_t *key, size_t len)
{
	if (len > ETCD_KEY_MAX || etcd_kids_is_big(st, key, len))
		return;
	pthread_mutex_lock(&st->big_lock);
	memcpy(st->big[st->big_next], key, len);
	st->big_len[st->big_next] = len;
	st->big_next = (st->big_next + 1) % ETCD_BIG_MAX;
	if (st->n_big < ETCD_BIG_MAX)
		st->n_big++;
	pthread_mutex_unlock(&st->big_lock);
}

/*
 * Every container child has its entry (the marker key says so), so the
 * first one's hint H bounds the container's first key: its own record,
 * the leaf children before that child, or a key of that child up to H.
 */
int etcd_kids_first_bound(struct store_etcd_scan *s, uint8_t *out, size_t *out_len)
{
	struct store_etcd_txn *t = s->txn;
	int depth = etcd_kids_elements(s->base.prefix, s->base.prefix_len);
	struct etcd_range_result *names = NULL;
	const struct etcd_kv *kv;
	size_t n = 0;
	bool more;
	int rc;

	if (depth < 0 || depth > 255 || !t->rev || t->base.write || !t->st->kids)
		return 0;
	rc = read_names(s, (unsigned)depth, s->base.prefix, s->base.prefix_len, 1, &names, &n, &more);
	kv = rc == 0 && n == 1 && names[0].len == 1 ? &names[0].kvs[0] : NULL;
	if (kv && etcd_kids_hint_of(t->st, kv->key, kv->key_len, kv->val, kv->val_len)) {
		*out_len = etcd_key(t->st, STORE_SPACE_DATA, kv->val, kv->val_len, out);
		out[(*out_len)++] = 0;	/* up to H 0x00: H included */
		rc = 1;
	}
	for (size_t i = 0; i < n; i++)
		etcd_range_result_release(&names[i]);
	free(names);
	return rc;
}

/*
 * A listing of the container's parent in this snapshot read (or trusted)
 * the container as the range [gap, H 0x00), H its hint: the end of a first
 * page that holds its first key, known without a round trip.
 */
bool etcd_kids_window_bound(struct store_etcd_scan *s, uint8_t *out, size_t *out_len)
{
	struct etcd_window *w;
	const struct etcd_skel *sk = NULL;
	unsigned depth;
	size_t parent = etcd_kids_parent_of(s->base.prefix, s->base.prefix_len, &depth), lo = 0, hi;

	if (parent == SIZE_MAX || s->txn->base.write)
		return false;
	w = etcd_snap_window(s->txn, s->base.prefix, parent, true, true, s->lo, s->lo_len);
	if (!w)
		return false;
	for (hi = w->n_skel; lo < hi;) {	/* the last range that starts at or before it */
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(w->skel[mid].from, w->skel[mid].from_len, s->lo, s->lo_len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0)
		sk = &w->skel[lo - 1];
	/* under the container: its hint's range, not a gap's or the last leaves' */
	if (!sk || sk->end_len <= s->lo_len + 1 || sk->end_len > ETCD_KEY_MAX ||
	    memcmp(sk->end, s->lo, s->lo_len) != 0)
		return false;
	memcpy(out, sk->end, sk->end_len);
	*out_len = sk->end_len;
	return true;
}
