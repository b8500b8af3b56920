/*
 * store/etcd/etcd_kids_subdirs.c - how many containers each listed child
 * holds (its nlink), from the children space one level below the listing's
 * children, each entry found checked live with an O(1) range.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

/*
 * Entries one level below a listing's children read for the free answer
 * (no entry: no subdirectory) at once: the rest of a first readdir's
 * buffer (a few hundred names), not the entries of the whole window.
 */
#define KIDS_FREE_PAGE 512

/* Whether entry kv's hint lies under its container (not the container's own key). */
static bool below_hinted(const struct store_etcd_scan *s, const struct etcd_kv *kv)
{
	size_t gl = kv->key_len - s->txn->st->prefix_len - 2;

	return etcd_kids_hint_of(s->txn->st, kv->key, kv->key_len, kv->val, kv->val_len) && kv->val_len > gl;
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
		rc = etcd_kids_trust_from(s, etcd_kids_elements(s->base.prefix, s->base.prefix_len));
	for (size_t i = 0; rc == 0 && i < n; i++)	/* trusted: its hint is there */
		b->live[i] = etcd_kids_trusted(s, &b->r.kvs[i]);

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
		rc = etcd_kids_send_ops(s, ops, m, &res);
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
 * Whether the scan still hands out children of the page it started in: a
 * page read before in this snapshot (the lookup's first page of the
 * container, or the root's first page) holds its start, and etcd_scan.c
 * reads the skeleton only from that page's end. A lookup with no listing
 * of the parent in the snapshot to bound its page reads ETCD_PAGE keys:
 * dozens of small children that must be counted too.
 */
static bool in_start_page(const struct store_etcd_scan *s)
{
	return s->skel_deferred && !s->skel_tried && !s->n_skel && s->page;
}

/*
 * The end (an etcd key, borrowed from s) of the children the scan has read
 * so far: its skeleton's last range's, or the end of the page it started
 * in, cut at the scan's own end; NULL when neither (no window to count in).
 */
static const uint8_t *window_end(const struct store_etcd_scan *s, size_t *len)
{
	if (s->n_skel) {
		*len = s->skel[s->n_skel - 1].end_len;
		return s->skel[s->n_skel - 1].end;
	}
	if (!in_start_page(s))
		return NULL;
	/* a wider scan's page (the root's first one) may run past the container */
	if ((s->pend_len == 1 && !s->pend[0]) || store_key_cmp(s->pend, s->pend_len, s->hi, s->hi_len) > 0) {
		*len = s->hi_len;
		return s->hi;
	}
	*len = s->pend_len;
	return s->pend;
}

/*
 * Reads the entries one level below the listed container's children from
 * lo[0..lo_len) (a tuple key) to the end of the listing's window
 * (window_end, moved to the end of the child it lies in), with their
 * hints, at the scan's revision, and (verify) which of them are live, into
 * *out (heap, to etcd_below_free). 0 and *out NULL when the window ends
 * before lo.
 */
static int below_read(struct store_etcd_scan *s, unsigned depth, const uint8_t *lo, size_t lo_len,
		      bool verify, struct etcd_below **out)
{
	size_t last_len = 0, end_len, skip = s->txn->st->prefix_len + 2;
	const uint8_t *last = window_end(s, &last_len);
	size_t pl = s->base.prefix_len;
	uint8_t from[ETCD_KEY_MAX], hi[ETCD_KEY_MAX + 1], end[STORE_KEY_MAX + 2];
	struct etcd_range_opts o = { .limit = verify ? KIDS_PAGE : KIDS_FREE_PAGE,
				     .revision = s->txn->rev };
	struct etcd_below *b;
	size_t from_len;
	int rc;

	*out = NULL;
	if (!last || last_len <= s->base_len || last_len - s->base_len > STORE_KEY_MAX + 1)
		return 0;
	end_len = last_len - s->base_len;
	memcpy(end, last + s->base_len, end_len);
	child_boundary(end, &end_len, pl);
	if (store_key_cmp(end, end_len, lo, lo_len) <= 0)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	from_len = etcd_kids_key(s->txn->st, depth, lo, lo_len, from);
	o.range_end = hi;
	o.range_end_len = etcd_kids_key(s->txn->st, depth, end, end_len, hi);
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
	int depth = etcd_kids_elements(s->base.prefix, pl);
	const struct etcd_below *b;
	uint8_t lo[ETCD_KEY_MAX];
	bool verify;
	int rc;

	*count = 0;
	/* entries one level below the children exist only up to KIDS_DEPTH_MAX */
	if (!s->txn->st->kids_records || s->txn->base.write || !s->txn->rev ||
	    (!s->n_skel && !in_start_page(s)) ||
	    depth < 0 || depth + 1 >= KIDS_DEPTH_MAX || len <= pl || len > STORE_KEY_MAX ||
	    memcmp(child, s->base.prefix, pl) != 0 || etcd_kids_elements(child + pl, len - pl) != 1)
		return 0;
	/*
	 * Checking the entries found costs a range each. A listing that starts
	 * at the directory's first name may be a plain `ls` (the kernel asks
	 * for attributes with the first readdir whatever the caller wants):
	 * past its first window (of children, whatever their kind) it takes
	 * only the free answer (no entry below: none). A listing going on from a position, which the kernel asks for
	 * with attributes when names of the directory were stat'ed (`ls -l`),
	 * and the first window of any, are counted in full; so is the page a
	 * listing starts in, which stands for its first window (a page's keys
	 * at most).
	 */
	verify = s->resumed || in_start_page(s) ||
		 (s->first_end_len > s->base_len &&
		  store_key_cmp(child, len, s->first_end + s->base_len, s->first_end_len - s->base_len) < 0);
	rc = below_find(s, (unsigned)depth + 1, child, len, verify, &b);
	if (rc || !b)
		return rc;
	return below_count(b, lo, etcd_kids_key(s->txn->st, (unsigned)depth + 1, child, len, lo), count) ? 1 : 0;
}
