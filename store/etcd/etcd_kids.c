/*
 * store/etcd/etcd_kids.c - the children space of the etcd backend (docs/ETCD.md
 * section 7): an entry k<depth><container key> for every container that
 * holds keys, written in the same Txn as the keys under it, its value a
 * hint (the tuple key of one key under it, meant to be its first), so that
 * a listing learns its containers' names in one range and reads each
 * container's first key with one range of O(1) keys, many to a request,
 * instead of ranges over the subtrees (etcd 3.4 visits every key of a
 * range whatever its limit). Entries and hints may be stale (a listing
 * checks and reads on), no entry is ever missing in a store created with
 * them (the marker key k says so). A key holding a container record (an
 * empty object or array) has an entry of its own, hinting at itself, in a
 * store whose marker says "2": the live entries below a child are then
 * exactly its containers, which gives a listing its children's nlink.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

#define KIDS_TXN_OPS 128	/* ranges per request: etcd's default --max-txn-ops */
#define KIDS_PAGE 4096	/* entries per range of the children space */
/*
 * Entries one level below a listing's children read for the free answer
 * (no entry: no subdirectory) at once: the rest of a first readdir's
 * buffer (a few hundred names), not the entries of the whole window.
 */
#define KIDS_FREE_PAGE 512
#define KIDS_THREADS 4	/* batches in flight at once */
#define KIDS_DEPTH_MAX 255	/* an entry's depth is one byte: deeper containers have none */
/* The depth byte of a range stamp `x 0xfe container`: a deleted range began with it. */
#define KIDS_RANGE_STAMP 0xfe
/* Listings of containers deeper than this trust nothing (one read per ancestor's range stamp). */
#define KIDS_TRUST_DEPTH 32
/*
 * Children one prefetch covers at most. A readdir asks for a hundred or so
 * and each starts a new scan, so reading every later name each time would
 * make a big listing quadratic; a scan that walks past the window reads the
 * next one (etcd_scan.c).
 */
#define KIDS_WINDOW 512
/* The first window: one request's worth, as a readdir hands out a few dozen names per call. */
#define KIDS_FIRST_WINDOW KIDS_TXN_OPS

size_t etcd_kids_marker(const struct store_etcd *st, uint8_t *out)
{
	memcpy(out, st->prefix, st->prefix_len);
	out[st->prefix_len] = ETCD_SPACE_KIDS;
	return st->prefix_len + 1;
}

size_t etcd_kids_lease_flag(const struct store_etcd *st, uint8_t *out)
{
	memcpy(out, st->prefix, st->prefix_len);
	out[st->prefix_len] = ETCD_SPACE_FLAGS;
	return st->prefix_len + 1;
}

/* out[0..n) (a space's key), then the byte depth and key[0..len): the whole length. */
static size_t depth_key(uint8_t *out, size_t n, unsigned depth, const uint8_t *key, size_t len)
{
	out[n++] = (uint8_t)depth;
	memcpy(out + n, key, len);
	return n + len;
}

/* Delete stamp key of the container key[0..len) with `depth` elements before its last one. */
static size_t stamp_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
			size_t len, uint8_t *out)
{
	return depth_key(out, etcd_key(st, ETCD_SPACE_STAMP, NULL, 0, out), depth, key, len);
}

/* Leaf flag key of the container key[0..len) of `depth` elements: it has (had) a leaf child. */
static size_t leaf_flag_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
			    size_t len, uint8_t *out)
{
	return depth_key(out, etcd_kids_lease_flag(st, out), depth, key, len);
}

/* Entry key of the container key[0..len) with `depth` elements before its last one. */
static size_t kids_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		       size_t len, uint8_t *out)
{
	return depth_key(out, etcd_kids_marker(st, out), depth, key, len);
}

/* Elements in key[0..len); -1 when it does not end on an element's end. */
static int elements(const uint8_t *key, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int n = 0;

	tuple_reader_init(&r, key, len);
	while (r.pos < len) {
		if (tuple_next(&r, &e) != 1)
			return -1;
		n++;
	}
	return n;
}

/*
 * Keys, each a heap copy: the entries a commit puts whose old value in
 * etcd may name a smaller hint (a container it adds keys to without
 * rewriting it); the containers a check found entries for.
 */
struct key_list {
	uint8_t **keys;
	size_t *lens;
	size_t n, cap;
};

static int key_list_add(struct key_list *h, const uint8_t *k, size_t kl)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		uint8_t **gk = realloc(h->keys, cap * sizeof(*gk));

		if (!gk)
			return -ENOMEM;
		h->keys = gk;
		size_t *gl = realloc(h->lens, cap * sizeof(*gl));

		if (!gl)
			return -ENOMEM;
		h->lens = gl;
		h->cap = cap;
	}
	h->keys[h->n] = malloc(kl);
	if (!h->keys[h->n])
		return -ENOMEM;
	memcpy(h->keys[h->n], k, kl);
	h->lens[h->n++] = kl;
	return 0;
}

static void key_list_release(struct key_list *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->keys[i]);
	free(h->keys);
	free(h->lens);
}

/*
 * Adds the entries of every container above one data key (tuple part
 * tk[0..len), the etcd key's data-space bytes before it dk[0..base)), each
 * naming this key as its hint: the puts come in key order, so the first
 * one under a container is the smallest this commit writes there.
 */
static int note_key(struct store_etcd_txn *t, const uint8_t *dk, size_t base, const uint8_t *tk,
		    size_t len, struct key_list *h)
{
	struct tuple_reader r;
	struct tuple_elem e;
	uint8_t k[ETCD_KEY_MAX];
	unsigned depth = 0;

	tuple_reader_init(&r, tk, len);
	while (tuple_next(&r, &e) == 1 && r.pos < len && depth < KIDS_DEPTH_MAX) {
		size_t kl = kids_key(t->st, depth, tk, r.pos, k);
		const void *v, *end;
		size_t vl, el;
		int rc;

		depth++;
		if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1)
			continue;	/* written by this commit already */
		rc = etcd_buf_put(t->buf, k, kl, tk, len);
		if (rc)
			return rc;
		/* a container this commit deleted whole is rewritten: its hint is exact */
		if (!etcd_buf_covering(t->buf, dk, base + r.pos, &end, &el) && (rc = key_list_add(h, k, kl)))
			return rc;
	}
	return 0;
}

/* Hint h[0..hl) of the entry key ek[0..el): a key under its container (or the container's own), or NULL. */
static const uint8_t *hint_of(const struct store_etcd *st, const uint8_t *ek, size_t el,
			      const uint8_t *h, size_t hl)
{
	size_t skip = st->prefix_len + 2, cl;

	if (!h || el < skip)
		return NULL;
	cl = el - skip;
	if (hl < cl || hl > STORE_KEY_MAX || memcmp(h, ek + skip, cl) != 0)
		return NULL;
	return h;
}

/*
 * Whether the older hint old (data key dk[0..dl)) of entry ek[0..el) is to
 * be kept: smaller than this commit's and not deleted by it.
 */
static bool keeps(struct store_etcd_txn *t, const uint8_t *ek, size_t el, const uint8_t *old,
		  size_t ol, const uint8_t *dk, size_t dl)
{
	const void *mine, *end;
	size_t ml, endl;

	if (etcd_buf_get(t->buf, ek, el, &mine, &ml) != 1 || store_key_cmp(old, ol, mine, ml) >= 0)
		return false;
	/* not one this commit deletes */
	return etcd_buf_get(t->buf, dk, dl, &mine, &ml) != 0 &&
	       !etcd_buf_covering(t->buf, dk, dl, &end, &endl);
}

/*
 * In a write run again, which of the n hints (data keys) in ops[] are still
 * there, into live[]: the commit before may have failed on a kept hint's
 * guard (keep_older), and keeping it again would fail every time.
 */
static int hints_live(struct store_etcd_txn *t, struct etcd_op *ops, size_t n, bool *live)
{
	struct etcd_txn_result res;
	int rc;

	for (size_t i = 0; i < n; i++)
		live[i] = true;
	if (!t->attempt || !n)
		return 0;
	for (size_t i = 0; i < n; i++)
		ops[i].keys_only = true;
	rc = etcd_client_txn(t->c, NULL, 0, ops, n, NULL, 0, &res);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && i < res.len; i++)
		live[i] = res.ranges[i].len == 1;
	etcd_txn_result_release(&res);
	return 0;
}

/*
 * Keeps an older hint where it is smaller than this commit's and this
 * commit does not delete it. Read without a guard, so writers of one
 * directory never conflict on entries; in a store whose listings trust
 * entries (kids_trust) the kept hint is guarded live instead, the one
 * thing a trusting listing relies on (section 7).
 */
static int keep_older(struct store_etcd_txn *t, struct key_list *h)
{
	size_t n_max = h->n < KIDS_TXN_OPS ? h->n : KIDS_TXN_OPS;
	struct etcd_op *ops = calloc(n_max ? n_max : 1, sizeof(*ops));
	struct etcd_op *hops = calloc(n_max ? n_max : 1, sizeof(*hops));
	uint8_t (*dks)[ETCD_KEY_MAX] = calloc(n_max ? n_max : 1, sizeof(*dks));
	size_t *which = calloc(n_max ? n_max : 1, sizeof(*which));
	bool *live = calloc(n_max ? n_max : 1, sizeof(*live));
	int rc = ops && hops && dks && which && live ? 0 : -ENOMEM;

	for (size_t from = 0; rc == 0 && from < h->n; from += KIDS_TXN_OPS) {
		size_t n = h->n - from < KIDS_TXN_OPS ? h->n - from : KIDS_TXN_OPS, n_keep = 0;
		struct etcd_txn_result res;

		for (size_t i = 0; i < n; i++)
			ops[i] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = h->keys[from + i],
						   .key_len = h->lens[from + i] };
		rc = etcd_client_txn(t->c, NULL, 0, ops, n, NULL, 0, &res);
		if (rc)
			break;
		for (size_t i = 0; i < n && i < res.len; i++) {
			const struct etcd_range_result *r = &res.ranges[i];
			const uint8_t *ek = h->keys[from + i], *old;
			size_t el = h->lens[from + i], dl;

			if (r->len != 1 || !(old = hint_of(t->st, ek, el, r->kvs[0].val, r->kvs[0].val_len)))
				continue;
			dl = etcd_key(t->st, STORE_SPACE_DATA, old, r->kvs[0].val_len, dks[n_keep]);
			if (!keeps(t, ek, el, old, r->kvs[0].val_len, dks[n_keep], dl))
				continue;
			hops[n_keep] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = dks[n_keep],
							 .key_len = dl };
			which[n_keep++] = i;
		}
		if (t->st->kids_trust)
			rc = hints_live(t, hops, n_keep, live);
		for (size_t j = 0; rc == 0 && j < n_keep; j++) {
			const struct etcd_kv *kv = &res.ranges[which[j]].kvs[0];

			if (!t->st->kids_trust) {
				rc = etcd_buf_put(t->buf, h->keys[from + which[j]], h->lens[from + which[j]],
						  kv->val, kv->val_len);
				continue;
			}
			if (!live[j])
				continue;	/* gone: this commit's own hint stands */
			rc = etcd_buf_put(t->buf, h->keys[from + which[j]], h->lens[from + which[j]],
					  kv->val, kv->val_len);
			if (rc == 0)
				rc = etcd_buf_guard_live(t->buf, hops[j].key, hops[j].key_len);
		}
		etcd_txn_result_release(&res);
	}
	free(ops);
	free(hops);
	free(dks);
	free(which);
	free(live);
	return rc;
}

/*
 * The entry of a key that holds a container record (tk[0..len)), hinting
 * at the key itself: so that the entries below a child name every
 * container it holds, empty ones included (etcd_kids_child_subdirs).
 */
static int note_record(struct store_etcd_txn *t, const uint8_t *tk, size_t len)
{
	uint8_t k[ETCD_KEY_MAX];
	int n = elements(tk, len);
	const void *v;
	size_t kl, vl;

	if (n < 1 || n - 1 >= KIDS_DEPTH_MAX)
		return 0;	/* deeper keys have no entries: their parents' counts are never asked */
	kl = kids_key(t->st, (unsigned)n - 1, tk, len, k);
	if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1)
		return 0;	/* a key under it gave it one already */
	return etcd_buf_put(t->buf, k, kl, tk, len);
}

/*
 * The length of the container key that holds tk[0..len) (its elements but
 * the last), its elements into *depth; SIZE_MAX when tk is no whole key.
 */
static size_t parent_of(const uint8_t *tk, size_t len, unsigned *depth)
{
	struct tuple_reader r;
	struct tuple_elem e;
	size_t parent = 0;

	*depth = 0;
	tuple_reader_init(&r, tk, len);
	while (r.pos < len && tuple_next(&r, &e) == 1)
		if (r.pos < len) {
			parent = r.pos;
			(*depth)++;
		}
	return r.pos == len && len ? parent : SIZE_MAX;
}

/*
 * The leaf flag of the container that holds the leaf tk[0..len): a listing
 * of a container without one has no leaf children to look for between its
 * containers. Put again by every commit that puts a leaf there (etcd keeps
 * one value whatever the order), deleted with the container whole.
 */
static int note_leaf(struct store_etcd_txn *t, const uint8_t *tk, size_t len)
{
	uint8_t k[ETCD_KEY_MAX];
	unsigned depth;
	size_t parent = parent_of(tk, len, &depth), kl;
	const void *v;
	size_t vl;

	if (parent == SIZE_MAX || depth >= KIDS_DEPTH_MAX)
		return 0;
	kl = leaf_flag_key(t->st, depth, tk, parent, k);
	if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1)
		return 0;	/* put by this commit already */
	return etcd_buf_put(t->buf, k, kl, "", 0);
}

int etcd_kids_note(struct store_etcd_txn *t)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX], cur[ETCD_KEY_MAX];
	size_t lo_len, hi_len, cur_len;
	struct key_list h = { 0 };
	bool incl = true;
	int rc = 0;

	if (!t->st->kids)
		return 0;
	lo_len = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, lo);
	hi_len = etcd_prefix_end(lo, lo_len, hi);
	memcpy(cur, lo, lo_len);
	cur_len = lo_len;
	for (;;) {
		const void *k, *v;
		size_t kl, vl;

		if (etcd_buf_next_put(t->buf, cur, cur_len, incl, hi, hi_len, &k, &kl, &v, &vl) != 1)
			break;
		bool record = t->st->base.container_test && t->st->base.container_test(v, vl);

		memcpy(cur, k, kl);	/* the entries written next move the buffer */
		cur_len = kl;
		incl = false;
		rc = note_key(t, cur, lo_len, cur + lo_len, cur_len - lo_len, &h);
		if (rc == 0 && record)
			rc = note_record(t, cur + lo_len, cur_len - lo_len);
		else if (rc == 0 && t->st->kids_trust)
			rc = note_leaf(t, cur + lo_len, cur_len - lo_len);
		if (rc)
			break;
	}
	if (rc == 0 && h.n)
		rc = keep_older(t, &h);
	key_list_release(&h);
	return rc;
}

/*
 * Whether every key of [key[0..len)..., end) lies under key[0..len) (its
 * subtree ends no sooner than the range): end runs on under it, or is the
 * first key after it. end[0..1) == 0x00 is etcd's "no end". The model
 * deletes a container K's children by their type byte (K 0x02, K 0x14 to
 * K 0x1c, merged when they touch), so a range ends under K or at K's end.
 * A range ending just after a string child "a" would be misread (the
 * sibling "a\0x" sorts inside it); no delete makes one.
 */
static bool holds_range(const uint8_t *key, size_t len, const uint8_t *end, size_t end_len)
{
	uint8_t after[ETCD_KEY_MAX];
	size_t al = len;

	if (end_len >= len && memcmp(end, key, len) == 0)
		return true;
	memcpy(after, key, len);
	while (al && after[al - 1] == 0xff)
		al--;
	if (!al)
		return false;	/* nothing sorts after it */
	after[al - 1]++;
	return store_key_cmp(after, al, end, end_len) == 0;
}

/*
 * Stamps the containers above one deleted data key (etcd key key[0..len),
 * end NULL), or, for a deleted range [key, end), the containers that hold
 * the whole range: the whole elements of its start, itself included, as
 * far as the range stays under them. A range also puts the range stamp of
 * the longest of them (the root's when none), since it deletes under every
 * child of that container at once: a listing reads the range stamps of the
 * listed container and its ancestors. (Touching ranges merge in the
 * buffer: the prefix deletes of N/0 and of N/1..N/255 are one range that
 * starts with N/0 but is N's.)
 */
static int stamp_one(const uint8_t *key, size_t len, const uint8_t *end, size_t end_len,
		     void *arg)
{
	struct store_etcd_txn *t = arg;
	uint8_t k[ETCD_KEY_MAX];
	size_t base = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, k), kl;
	struct tuple_reader r;
	struct tuple_elem e;
	unsigned depth = 0;
	int rc = 0;

	if (len < base || memcmp(key, k, base) != 0)
		return 0;	/* not the data space */
	size_t whole = 0;	/* the longest container that holds the range */

	tuple_reader_init(&r, key + base, len - base);
	/* listings deeper than KIDS_TRUST_DEPTH trust nothing: their children's stamps are not read */
	while (rc == 0 && depth <= KIDS_TRUST_DEPTH && tuple_next(&r, &e) == 1) {
		if (!end && r.pos == len - base)
			break;	/* the deleted key itself, not a container above it */
		if (end && !holds_range(key, base + r.pos, end, end_len))
			break;	/* the range runs on past this container's subtree */
		kl = stamp_key(t->st, depth++, key + base, r.pos, k);
		rc = etcd_buf_put(t->buf, k, kl, "", 0);
		whole = r.pos;
	}
	if (rc == 0 && end) {
		kl = stamp_key(t->st, KIDS_RANGE_STAMP, key + base, whole, k);
		rc = etcd_buf_put(t->buf, k, kl, "", 0);
	}
	return rc;
}

int etcd_kids_stamp(struct store_etcd_txn *t)
{
	if (!t->st->kids_trust)
		return 0;
	return etcd_buf_walk_deletes(t->buf, stamp_one, t);
}

int etcd_kids_forget(struct store_etcd_txn *t, const void *prefix, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	uint8_t k[ETCD_KEY_MAX];
	unsigned depth = 0;
	int rc = 0;

	if (!t->st->kids || len == 0)
		return 0;
	tuple_reader_init(&r, prefix, len);
	while (r.pos < len && (rc = tuple_next(&r, &e)) == 1)
		depth++;
	if (rc != 1 || r.pos != len || depth > 256)
		return 0;	/* not a whole container key: no entry names it */
	rc = etcd_buf_del(t->buf, k, kids_key(t->st, depth - 1, prefix, len, k));
	if (rc == 0 && t->st->kids_trust && depth < KIDS_DEPTH_MAX)
		rc = etcd_buf_del(t->buf, k, leaf_flag_key(t->st, depth, prefix, len, k));
	return rc;
}

/* ---- listings ---- */

bool etcd_kids_is_child_end(const struct store_etcd_scan *s, const uint8_t *key, size_t len)
{
	size_t pl = s->base.prefix_len;

	return len > pl + 1 && key[len - 1] == 0xff && elements(key + pl, len - 1 - pl) == 1;
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
	size_t lo_len = kids_key(s->txn->st, depth, from_t, from_len, lo);
	size_t hi_len = kids_key(s->txn->st, depth, s->base.prefix, s->base.prefix_len, hi);
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

/*
 * Sends ops[0..n) in read-only Txns of KIDS_TXN_OPS, a few at once: *res
 * (heap, each to etcd_txn_result_release, the array to free) holds one
 * answer per batch, in order. 0, or the first batch's error (none kept).
 */
static int send_ops(struct store_etcd_scan *s, const struct etcd_op *ops, size_t n,
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
	while (n_th + 1 < KIDS_THREADS && n_th + 1 < b.n_batches &&
	       pthread_create(&th[n_th], NULL, send_batches, &b) == 0)
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
		rc = send_ops(s, sent, n_sent, &res);
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
static int trust_from(struct store_etcd_scan *s, int depth)
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
	lens[n] = stamp_key(s->txn->st, KIDS_RANGE_STAMP, s->base.prefix, 0, keys[n]);
	n++;
	tuple_reader_init(&r, s->base.prefix, s->base.prefix_len);
	while (tuple_next(&r, &e) == 1) {	/* depth of them at most */
		lens[n] = stamp_key(s->txn->st, KIDS_RANGE_STAMP, s->base.prefix, r.pos, keys[n]);
		n++;
	}
	lens[0] = stamp_key(s->txn->st, (unsigned)depth, s->base.prefix, s->base.prefix_len, keys[0]);
	keys[0][lens[0]] = 0xff;	/* no element starts with 0xff: the children's stamps */
	lens[1] = etcd_kids_lease_flag(s->txn->st, keys[1]);
	lens[2] = leaf_flag_key(s->txn->st, (unsigned)depth, s->base.prefix, s->base.prefix_len,
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
static bool trusted(const struct store_etcd_scan *s, const struct etcd_kv *kv)
{
	size_t skip = s->txn->st->prefix_len + 2, child = kv->key_len - skip;
	int64_t since = trusted_since(s, kv->key + skip, child);

	return since > 0 && hint_of(s->txn->st, kv->key, kv->key_len, kv->val, kv->val_len) &&
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
	int depth = elements(s->base.prefix, s->base.prefix_len);
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
	rc = trust_from(s, depth);
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
			const uint8_t *hint = hint_of(s->txn->st, kv->key, kv->key_len, kv->val,
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
			} else if (hint && s->leafless && trusted(s, kv)) {
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

/* ---- how many containers each listed child holds ---- */

/* Whether entry kv's hint lies under its container (not the container's own key). */
static bool below_hinted(const struct store_etcd_scan *s, const struct etcd_kv *kv)
{
	size_t gl = kv->key_len - s->txn->st->prefix_len - 2;

	return hint_of(s->txn->st, kv->key, kv->key_len, kv->val, kv->val_len) && kv->val_len > gl;
}

/*
 * The range that tells whether entry kv's container still holds a key:
 * its hint H alone when H lies under it ([H, H 0x00): O(1) keys), else
 * (no hint, a record's own key, or `whole`: H was gone) the container's
 * subtree with limit 1. Values too: a key of the container's own counts
 * only while it holds a container record. The keys go to buf.
 */
static void below_probe(struct store_etcd_scan *s, const struct etcd_kv *kv, bool whole,
			struct etcd_op *op, uint8_t *buf)
{
	struct store_etcd *st = s->txn->st;
	size_t skip = st->prefix_len + 2;
	bool hint = !whole && below_hinted(s, kv);	/* [H, H 0x00), else [G, G 0xff) */
	uint8_t *end = buf + ETCD_KEY_MAX + 1;
	size_t kl = hint ? etcd_key(st, STORE_SPACE_DATA, kv->val, kv->val_len, buf) :
			   etcd_key(st, STORE_SPACE_DATA, kv->key + skip, kv->key_len - skip, buf);

	memcpy(end, buf, kl);
	end[kl] = hint ? 0 : 0xff;
	*op = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = buf, .key_len = kl, .range_end = end,
				.range_end_len = kl + 1, .limit = 1, .revision = s->txn->rev };
}

/* Whether the answer r to entry kv's probe shows its container there. */
static bool below_there(const struct store_etcd_scan *s, const struct etcd_kv *kv,
			const struct etcd_range_result *r)
{
	struct store_etcd *st = s->txn->st;
	size_t skip = st->prefix_len + 2, gl = kv->key_len - skip, base = s->base_len;

	if (r->len != 1)
		return false;
	if (r->kvs[0].key_len > base + gl)
		return true;	/* a key under it */
	return st->base.container_test && st->base.container_test(r->kvs[0].val, r->kvs[0].val_len);
}

/*
 * Which entries of b are live: a probe each, then the whole subtree of
 * those whose hint was gone (a plain delete leaves an entry and its hint
 * behind; a lease deletes keys on its own).
 */
static int below_verify(struct store_etcd_scan *s, struct etcd_below *b)
{
	size_t n = b->r.len, skip = s->txn->st->prefix_len + 2;
	struct etcd_op *ops = calloc(n ? n : 1, sizeof(*ops));
	uint8_t *keys = malloc((n ? n : 1) * 2 * (ETCD_KEY_MAX + 1));
	size_t *which = calloc(n ? n : 1, sizeof(*which));	/* op of entry i, from 1; 0: none */
	int rc = ops && keys && which ? 0 : -ENOMEM;

	if (rc == 0)
		rc = trust_from(s, elements(s->base.prefix, s->base.prefix_len));
	for (size_t i = 0; rc == 0 && i < n; i++)	/* trusted: its hint is there */
		b->live[i] = trusted(s, &b->r.kvs[i]);

	for (int round = 0; rc == 0 && round < 2; round++) {
		struct etcd_txn_result *res = NULL;
		size_t m = 0;

		for (size_t i = 0; i < n; i++) {
			if (b->live[i] || (round == 1 && !which[i]))
				continue;
			if (b->r.kvs[i].key_len - skip > STORE_KEY_MAX)
				continue;	/* not an entry kvfs writes: never counted */
			below_probe(s, &b->r.kvs[i], round == 1, &ops[m],
				    keys + i * 2 * (ETCD_KEY_MAX + 1));
			which[i] = ++m;
		}
		if (m == 0)
			break;
		rc = send_ops(s, ops, m, &res);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			size_t o = which[i] - 1;

			if (!which[i])
				continue;
			b->live[i] = below_there(s, &b->r.kvs[i], &res[o / KIDS_TXN_OPS].ranges[o % KIDS_TXN_OPS]);
			/* the second round reads the whole subtree of those whose hint is gone */
			which[i] = !b->live[i] && round == 0 && below_hinted(s, &b->r.kvs[i]);
		}
		for (size_t j = 0; res && j < (m + KIDS_TXN_OPS - 1) / KIDS_TXN_OPS; j++)
			etcd_txn_result_release(&res[j]);
		free(res);
	}
	free(ops);
	free(keys);
	free(which);
	return rc;
}

/*
 * The end of the child whose subtree holds key[0..*len) (a tuple key under
 * the listed container, pl bytes long), key[..] rewritten to the child's
 * key and 0xff; unchanged when key is at a child's end, or is the child
 * itself (which then is past the range). A range of entries that ends
 * there holds every entry below each child it reaches.
 */
static void child_boundary(uint8_t *key, size_t *len, size_t pl)
{
	struct tuple_reader r;
	struct tuple_elem e;

	if (*len <= pl)
		return;
	tuple_reader_init(&r, key + pl, *len - pl);
	if (tuple_next(&r, &e) != 1 || pl + r.pos == *len)
		return;
	if (pl + r.pos + 1 == *len && key[*len - 1] == 0xff)
		return;
	key[pl + r.pos] = 0xff;
	*len = pl + r.pos + 1;
}

/*
 * Reads the entries one level below the listed container's children from
 * lo[0..lo_len) (a tuple key) to the end of the listing's window (its last
 * skeleton range, moved to the end of the child it lies in), with their
 * hints, at the scan's revision, and (verify) which of them are live, into
 * *out (heap, to etcd_below_free). 0 and *out NULL when the window ends
 * before lo.
 */
static int below_read(struct store_etcd_scan *s, unsigned depth, const uint8_t *lo, size_t lo_len,
		      bool verify, struct etcd_below **out)
{
	const struct etcd_skel *last = &s->skel[s->n_skel - 1];
	size_t end_len = last->end_len - s->base_len, skip = s->txn->st->prefix_len + 2;
	size_t pl = s->base.prefix_len;
	uint8_t from[ETCD_KEY_MAX], hi[ETCD_KEY_MAX + 1], end[STORE_KEY_MAX + 2];
	struct etcd_range_opts o = { .limit = verify ? KIDS_PAGE : KIDS_FREE_PAGE,
				     .revision = s->txn->rev };
	struct etcd_below *b;
	size_t from_len;
	int rc;

	*out = NULL;
	if (last->end_len <= s->base_len || end_len > STORE_KEY_MAX + 1)
		return 0;
	memcpy(end, last->end + s->base_len, end_len);
	child_boundary(end, &end_len, pl);
	if (store_key_cmp(end, end_len, lo, lo_len) <= 0)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	from_len = kids_key(s->txn->st, depth, lo, lo_len, from);
	o.range_end = hi;
	o.range_end_len = kids_key(s->txn->st, depth, end, end_len, hi);
	o.keys_only = !verify;	/* the hints are for the checks */
	rc = etcd_range_retry(s->txn->c, from, from_len, &o, &b->r);
	if (rc == 0 && verify && !(b->live = calloc(b->r.len ? b->r.len : 1, sizeof(*b->live))))
		rc = -ENOMEM;
	if (rc == 0 && verify)
		rc = below_verify(s, b);
	b->verified = verify;
	if (rc) {
		etcd_below_free(b);
		return rc;
	}
	memcpy(b->lo, lo, lo_len);
	b->lo_len = lo_len;
	if (b->r.more && b->r.len) {	/* decided: the children before the last entry's */
		const struct etcd_kv *kv = &b->r.kvs[b->r.len - 1];
		struct tuple_reader r;
		struct tuple_elem e;

		b->hi_len = 0;	/* nothing decided, unless the child is found below */
		if (kv->key_len - skip > pl && kv->key_len - skip <= STORE_KEY_MAX) {
			tuple_reader_init(&r, kv->key + skip + pl, kv->key_len - skip - pl);
			if (tuple_next(&r, &e) == 1) {
				b->hi_len = pl + r.pos;	/* that child itself: it may have more */
				memcpy(b->hi, kv->key + skip, b->hi_len);
			}
		}
	} else {
		memcpy(b->hi, end, end_len);
		b->hi_len = end_len;
	}
	*out = b;
	return 0;
}

/*
 * The live entries of b below the child whose entries start with
 * lo[0..lo_len) into *n: true; false when b is not verified and has one.
 */
static bool below_count(const struct etcd_below *b, const uint8_t *lo, size_t lo_len, uint32_t *n)
{
	size_t i = 0, j = b->r.len;

	while (i < j) {	/* the first entry >= lo */
		size_t mid = i + (j - i) / 2;

		if (store_key_cmp(b->r.kvs[mid].key, b->r.kvs[mid].key_len, lo, lo_len) < 0)
			i = mid + 1;
		else
			j = mid;
	}
	/* 0xff after lo: a sibling's escaped NUL, which sorts after every key below it */
	for (; i < b->r.len; i++) {
		const struct etcd_kv *kv = &b->r.kvs[i];

		if (kv->key_len <= lo_len || memcmp(kv->key, lo, lo_len) != 0 || kv->key[lo_len] == 0xff)
			break;
		if (!b->verified)
			return false;
		*n += b->live[i];
	}
	return true;
}

static bool below_decides(const struct etcd_below *b, const uint8_t *child, size_t len)
{
	return b && b->hi_len && store_key_cmp(child, len, b->lo, b->lo_len) >= 0 &&
	       store_key_cmp(child, len, b->hi, b->hi_len) < 0;
}

/* The window's start (a tuple key) into *lo when it is at or before child[0..len). */
static bool window_first(const struct store_etcd_scan *s, const struct etcd_window *w,
			 const uint8_t *child, size_t len, const uint8_t **lo, size_t *lo_len)
{
	const struct etcd_skel *first = &w->skel[0];

	if (first->from_len < s->base_len || first->from_len - s->base_len > STORE_KEY_MAX ||
	    store_key_cmp(first->from + s->base_len, first->from_len - s->base_len, child, len) > 0)
		return false;
	*lo = first->from + s->base_len;
	*lo_len = first->from_len - s->base_len;
	return true;
}

/* b holds the entries below child[0..len) (checked ones when verify). */
static bool below_serves(const struct etcd_below *b, const uint8_t *child, size_t len, bool verify)
{
	return below_decides(b, child, len) && (b->verified || !verify);
}

/*
 * The entries below child[0..len), checked when verify: the last ones
 * read, the window's (another listing of it in this snapshot checked
 * them), or new ones read from the window's start, checked ones given to
 * it, so that the readdirs after this one count from them; NULL when none
 * can (past the skeleton).
 */
static int below_find(struct store_etcd_scan *s, unsigned depth, const uint8_t *child, size_t len,
		      bool verify, const struct etcd_below **out)
{
	const struct etcd_below *shared = etcd_snap_below(s->txn, s->win);
	const uint8_t *lo = child;
	size_t lo_len = len;
	struct etcd_below *b;
	int rc;

	*out = NULL;
	if (below_serves(s->below, child, len, verify) || below_serves(shared, child, len, verify)) {
		s->below = below_serves(s->below, child, len, verify) ? s->below : shared;
		*out = s->below;
		return 0;
	}
	/* from the window's start, unless its counts were read and stop short */
	if (s->win && !shared && s->win->n_skel)
		window_first(s, s->win, child, len, &lo, &lo_len);
	rc = below_read(s, depth, lo, lo_len, verify, &b);
	if (rc == 0 && b && !below_decides(b, child, len) && lo != child) {
		/* stale entries ahead filled the page: the child's own read, kept by this scan */
		etcd_below_free(b);
		lo = child;
		lo_len = len;
		rc = below_read(s, depth, lo, lo_len, verify, &b);
	}
	if (rc || !b)
		return rc;
	if (!below_decides(b, child, len)) {
		etcd_below_free(b);
		return 0;
	}
	if (verify && lo != child && !shared && etcd_snap_below_keep(s->txn, s->win, b)) {
		s->below = b;
	} else {
		etcd_below_free(s->own_below);
		s->own_below = b;
		s->below = b;
	}
	*out = s->below;
	return 0;
}

int etcd_kids_child_subdirs(struct store_etcd_scan *s, const uint8_t *child, size_t len,
			    uint32_t *count)
{
	size_t pl = s->base.prefix_len;
	int depth = elements(s->base.prefix, pl);
	const struct etcd_below *b;
	uint8_t lo[ETCD_KEY_MAX];
	bool verify;
	int rc;

	*count = 0;
	/* entries one level below the children exist only up to KIDS_DEPTH_MAX */
	if (!s->txn->st->kids_records || s->txn->base.write || !s->txn->rev || !s->n_skel ||
	    depth < 0 || depth + 1 >= KIDS_DEPTH_MAX || len <= pl || len > STORE_KEY_MAX ||
	    memcmp(child, s->base.prefix, pl) != 0 || elements(child + pl, len - pl) != 1)
		return 0;
	/*
	 * Checking the entries found costs a range each. A listing that starts
	 * at the directory's first name may be a plain `ls` (the kernel asks
	 * for attributes with the first readdir whatever the caller wants):
	 * past its first window (of children, whatever their kind) it takes
	 * only the free answer (no entry below: none). A listing going on from a position, which the kernel asks for
	 * with attributes when names of the directory were stat'ed (`ls -l`),
	 * and the first window of any, are counted in full.
	 */
	verify = s->resumed || (s->first_end_len > s->base_len &&
				store_key_cmp(child, len, s->first_end + s->base_len,
					      s->first_end_len - s->base_len) < 0);
	rc = below_find(s, (unsigned)depth + 1, child, len, verify, &b);
	if (rc || !b)
		return rc;
	return below_count(b, lo, kids_key(s->txn->st, (unsigned)depth + 1, child, len, lo), count) ? 1 : 0;
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
	int depth = elements(s->base.prefix, s->base.prefix_len);
	struct etcd_range_result *names = NULL;
	const struct etcd_kv *kv;
	size_t n = 0;
	bool more;
	int rc;

	if (depth < 0 || depth > 255 || !t->rev || t->base.write || !t->st->kids)
		return 0;
	rc = read_names(s, (unsigned)depth, s->base.prefix, s->base.prefix_len, 1, &names, &n, &more);
	kv = rc == 0 && n == 1 && names[0].len == 1 ? &names[0].kvs[0] : NULL;
	if (kv && hint_of(t->st, kv->key, kv->key_len, kv->val, kv->val_len)) {
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
	size_t parent = parent_of(s->base.prefix, s->base.prefix_len, &depth), lo = 0, hi;

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

/* ---- kvfs check of the space ---- */

/*
 * Calls fn for every key of [lo, hi) at the transaction's revision, a page
 * at a time (pages are given back, not kept: a check reads everything).
 */
static int walk_range(struct store_etcd_txn *t, const uint8_t *lo, size_t ll, const uint8_t *hi,
		      size_t hl, bool values, int (*fn)(void *arg, const struct etcd_kv *kv),
		      void *arg)
{
	uint8_t from[ETCD_KEY_MAX];
	size_t fl = ll;
	int rc;

	memcpy(from, lo, ll);
	for (;;) {
		struct etcd_range_opts o = { .range_end = hi, .range_end_len = hl, .limit = KIDS_PAGE,
					     .keys_only = !values, .revision = t->rev };
		struct etcd_range_result r = { 0 };
		bool more;

		rc = etcd_range_retry(t->c, from, fl, &o, &r);
		if (rc)
			return rc;
		for (size_t i = 0; i < r.len && rc == 0; i++)
			rc = fn(arg, &r.kvs[i]);
		more = r.more && r.len;
		if (more)
			fl = etcd_key_after(&r.kvs[r.len - 1], from);
		etcd_range_result_release(&r);
		if (rc || !more)
			return rc;
	}
}

struct kids_walk {
	struct store_etcd_txn *repair;	/* puts the entries missing instead of reporting them */
	int rc;	/* the first put that failed */
	struct key_list set;	/* containers with an entry, sorted */
	struct key_list flags;	/* containers with a leaf flag, sorted (a store that keeps them) */
	bool leaf_flags;	/* the store keeps them (marker "3") */
	size_t skip;	/* bytes before the container key (entries) or tuple key (data) */
	store_check_fn fn;
	void *arg;
	store_container_test_fn record;	/* keys holding a container record need their own (or NULL) */
	uint8_t prev[STORE_KEY_MAX];	/* the last data key, whose containers are checked */
	size_t prev_len;
};

static int add_entry(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;

	if (kv->key_len <= w->skip)
		return 0;	/* the marker */
	return key_list_add(&w->set, kv->key + w->skip, kv->key_len - w->skip);
}

static int add_flag(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;

	if (kv->key_len < w->skip)
		return 0;	/* the lease flag */
	return key_list_add(&w->flags, kv->key + w->skip, kv->key_len - w->skip);
}


static bool key_list_has(const struct key_list *ks, const uint8_t *key, size_t len)
{
	size_t lo = 0, hi = ks->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = store_key_cmp(ks->keys[mid], ks->lens[mid], key, len);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * The container key[0..len) has no entry: reported, or (a repair) given
 * one whose hint is hint[0..hint_len), the first key under it or its own.
 */
static void kids_missing(struct kids_walk *w, const uint8_t *key, size_t len, const uint8_t *hint,
			 size_t hint_len, const char *message)
{
	uint8_t k[ETCD_KEY_MAX];
	int n = elements(key, len);

	if (!w->repair) {
		w->fn(w->arg, key, len, message);
		return;
	}
	if (w->rc == 0 && n >= 1)
		w->rc = etcd_buf_put(w->repair->buf, k, kids_key(w->repair->st, (unsigned)n - 1, key, len, k),
				     hint, hint_len);
}

/*
 * A leaf tk[0..len) (not a record) needs its container's leaf flag, or a
 * listing that trusts entries skips it: reported, or (repair) put.
 */
static void check_leaf_flag(struct kids_walk *w, const uint8_t *tk, size_t len)
{
	unsigned depth;
	size_t parent = parent_of(tk, len, &depth);

	if (parent == SIZE_MAX || depth >= KIDS_DEPTH_MAX || key_list_has(&w->flags, tk, parent))
		return;
	if (!w->repair)
		w->fn(w->arg, tk, len, "leaf without its directory's leaf flag in the etcd children "
		      "space: ls of its directory may leave it out (docs/ETCD.md section 7)");
	else if (w->rc == 0)
		w->rc = note_leaf(w->repair, tk, len);	/* once per directory: the buffer has it after */
}

/*
 * Every container above a data key needs its entry, or a listing of its
 * parent passes it over. Keys come in order, so the containers this key
 * shares with the last one were checked with it.
 */
static int check_key(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;
	const uint8_t *tk = kv->key + w->skip;
	size_t len = kv->key_len - w->skip, same = 0;
	struct tuple_reader r;
	struct tuple_elem e;
	unsigned depth = 0;

	/*
	 * A key on a lease (a TTL) is deleted by etcd itself at its deadline,
	 * and the entries above it with it or not (another lease, or none): a
	 * check at that moment may see either first, so it is passed over (a
	 * repair gives it its entries all the same: one left behind is stale,
	 * which listings allow for).
	 */
	if (kv->key_len <= w->skip || len > STORE_KEY_MAX || (kv->lease && !w->repair))
		return 0;
	while (same < len && same < w->prev_len && tk[same] == w->prev[same])
		same++;
	tuple_reader_init(&r, tk, len);
	while (tuple_next(&r, &e) == 1 && r.pos < len && depth++ < KIDS_DEPTH_MAX) {
		if (r.pos <= same || key_list_has(&w->set, tk, r.pos))
			continue;
		kids_missing(w, tk, r.pos, tk, len, "no entry in the etcd children space: ls of "
			     "its directory does not show it (docs/ETCD.md section 7)");
	}
	if (w->record && w->record(kv->val, kv->val_len) && elements(tk, len) - 1 < KIDS_DEPTH_MAX &&
	    !key_list_has(&w->set, tk, len))
		kids_missing(w, tk, len, tk, len, "empty container without its entry in the etcd "
			     "children space: ls -l gives its parent a wrong nlink (docs/ETCD.md "
			     "section 7)");
	else if (w->leaf_flags && !(w->record && w->record(kv->val, kv->val_len)))
		check_leaf_flag(w, tk, len);
	memcpy(w->prev, tk, len);
	w->prev_len = len;
	return w->rc;
}

static int kid_cmp(const void *a, const void *b, void *arg)
{
	const struct key_list *ks = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	return store_key_cmp(ks->keys[i], ks->lens[i], ks->keys[j], ks->lens[j]);
}

/* Sorts the set by container key (the space orders it by depth first). */
static int key_list_sort(struct key_list *ks)
{
	size_t *order = malloc((ks->n ? ks->n : 1) * sizeof(*order));
	uint8_t **keys = malloc((ks->n ? ks->n : 1) * sizeof(*keys));
	size_t *lens = malloc((ks->n ? ks->n : 1) * sizeof(*lens));

	if (!order || !keys || !lens) {
		free(order);
		free(keys);
		free(lens);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ks->n; i++)
		order[i] = i;
	qsort_r(order, ks->n, sizeof(*order), kid_cmp, ks);
	for (size_t i = 0; i < ks->n; i++) {
		keys[i] = ks->keys[order[i]];
		lens[i] = ks->lens[order[i]];
	}
	free(order);
	free(ks->keys);
	free(ks->lens);
	ks->keys = keys;
	ks->lens = lens;
	ks->cap = ks->n;
	return 0;
}

/*
 * Reads every entry, then walks every data key against them (check_key),
 * at the transaction's pinned revision: a missing entry is reported to fn,
 * or (repair) put in the transaction. record: the container test that
 * records' entries are checked with, or NULL.
 */
static int kids_walk_all(struct store_etcd_txn *t, store_check_fn fn, void *arg,
			 store_container_test_fn record, bool repair)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t ll = etcd_kids_marker(t->st, lo), hl = etcd_prefix_end(lo, ll, hi);
	struct kids_walk *w;
	int rc;

	if (!store_etcd_txn_id(&t->base))
		return -EIO;	/* the revision the walks read at */
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->record = record;
	w->repair = repair ? t : NULL;
	w->skip = ll + 1;	/* the marker and the depth byte */
	rc = walk_range(t, lo, ll, hi, hl, false, add_entry, w);
	if (rc == 0)
		rc = key_list_sort(&w->set);
	w->leaf_flags = t->st->kids_trust;
	if (rc == 0 && w->leaf_flags) {
		ll = etcd_kids_lease_flag(t->st, lo);
		hl = etcd_prefix_end(lo, ll, hi);
		w->skip = ll + 1;	/* the flag's space and the depth byte */
		rc = walk_range(t, lo, ll, hi, hl, false, add_flag, w);
		if (rc == 0)
			rc = key_list_sort(&w->flags);
	}
	if (rc == 0) {
		ll = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, lo);
		hl = etcd_prefix_end(lo, ll, hi);
		w->skip = ll;
		rc = walk_range(t, lo, ll, hi, hl, w->record != NULL, check_key, w);
	}
	rc = rc ? rc : w->rc;
	key_list_release(&w->set);
	key_list_release(&w->flags);
	free(w);
	return rc;
}

int store_etcd_check(struct store_txn *txn, store_check_fn fn, void *arg)
{
	struct store_etcd_txn *t = ETXN(txn);

	if (!t->st->kids)
		return 0;	/* a store from before the space lists by its pages */
	return kids_walk_all(t, fn, arg, t->st->kids_records ? t->st->base.container_test : NULL,
			     false);
}

/*
 * Gives every container and container record without an entry one, in the
 * write transaction; a store from before records' entries then says it
 * keeps them (the marker's "2"). The reads are not guarded, as entries
 * never are (a listing allows for stale ones, and a writer of this version
 * that commits meanwhile writes its own), except for that upgrade: below.
 */
int store_etcd_repair(struct store_txn *txn)
{
	struct store_etcd_txn *t = ETXN(txn);
	uint8_t k[ETCD_KEY_MAX], lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t ll, hl;
	int rc;

	if (!t->st->kids)
		return 0;	/* a store from before the space lists by its pages */
	rc = kids_walk_all(t, NULL, NULL, t->st->base.container_test, true);
	if (rc || t->st->kids_records || !t->st->base.container_test)
		return rc;
	/*
	 * The marker's "2" promises every record an entry from now on: a data
	 * write since the walk (an older kvfs gives its records none) makes
	 * the repair run again. Writers after it must be this version or newer.
	 */
	ll = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, lo);
	hl = etcd_prefix_end(lo, ll, hi);
	rc = etcd_buf_guard_range(t->buf, lo, ll, hi, hl, t->rev);
	if (rc == 0)
		rc = etcd_buf_put(t->buf, k, etcd_kids_marker(t->st, k), "2", 1);
	t->kids_upgrade = rc == 0;
	return rc;
}
