/*
 * store/etcd/etcd_kids_write.c - the children space's keys (entry, delete
 * stamp, leaf flag, marker) and what a commit writes to it: the entries
 * above its puts with their hints, its leaf flags and delete stamps.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

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
size_t etcd_kids_stamp_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		 size_t len, uint8_t *out)
{
	return depth_key(out, etcd_key(st, ETCD_SPACE_STAMP, NULL, 0, out), depth, key, len);
}

/* Leaf flag key of the container key[0..len) of `depth` elements: it has (had) a leaf child. */
size_t etcd_kids_leaf_flag_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		     size_t len, uint8_t *out)
{
	return depth_key(out, etcd_kids_lease_flag(st, out), depth, key, len);
}

/* Entry key of the container key[0..len) with `depth` elements before its last one. */
size_t etcd_kids_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		size_t len, uint8_t *out)
{
	return depth_key(out, etcd_kids_marker(st, out), depth, key, len);
}

/* Elements in key[0..len); -1 when it does not end on an element's end. */
int etcd_kids_elements(const uint8_t *key, size_t len)
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

int etcd_key_list_add(struct key_list *h, const uint8_t *k, size_t kl)
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

void etcd_key_list_release(struct key_list *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->keys[i]);
	free(h->keys);
	free(h->lens);
}

/*
 * The entries and leaf flags one etcd_kids_note pass makes, put at its end
 * in one etcd_buf_put_sorted: put one at a time, each moved the buffer's
 * keys after it (the entries sort after the data keys, the deeper after
 * the shallower), and a 40,000-record document's commit spent 88% of its
 * time in that memmove. The data keys come in key order, so the keys a
 * pass makes at one depth come in order too: one made already at its
 * depth is the last made there.
 */
struct note_batch {
	struct note_put {
		uint8_t *key, *val;	/* heap */
		size_t key_len, val_len;
	} *puts;
	size_t n, cap;
	size_t last_entry[KIDS_DEPTH_MAX], last_flag[KIDS_DEPTH_MAX];	/* index + 1 in puts; 0: none */
};

/* Whether k[0..kl) is the key last made at depth (last: nb's last_entry or last_flag). */
static bool batch_made(const struct note_batch *nb, const size_t *last, unsigned depth,
		       const uint8_t *k, size_t kl)
{
	const struct note_put *p = last[depth] ? &nb->puts[last[depth] - 1] : NULL;

	return p && p->key_len == kl && memcmp(p->key, k, kl) == 0;
}

static int batch_add(struct note_batch *nb, size_t *last, unsigned depth, const uint8_t *k,
		     size_t kl, const void *v, size_t vl)
{
	struct note_put *p;

	if (nb->n == nb->cap) {
		size_t cap = nb->cap ? 2 * nb->cap : 64;
		struct note_put *g = realloc(nb->puts, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		nb->puts = g;
		nb->cap = cap;
	}
	p = &nb->puts[nb->n];
	p->key = malloc(kl);
	p->val = malloc(vl ? vl : 1);
	if (!p->key || !p->val) {
		free(p->key);
		free(p->val);
		return -ENOMEM;
	}
	memcpy(p->key, k, kl);
	if (vl)
		memcpy(p->val, v, vl);
	p->key_len = kl;
	p->val_len = vl;
	last[depth] = ++nb->n;
	return 0;
}

static int put_cmp(const void *x, const void *y)
{
	const struct etcd_buf_kv *a = x, *b = y;

	return store_key_cmp(a->key, a->key_len, b->key, b->key_len);
}

/* Puts what the pass made into the buffer, in key order. */
static int batch_put(struct store_etcd_txn *t, const struct note_batch *nb)
{
	struct etcd_buf_kv *kvs;
	int rc;

	if (!nb->n)
		return 0;
	kvs = malloc(nb->n * sizeof(*kvs));
	if (!kvs)
		return -ENOMEM;
	for (size_t i = 0; i < nb->n; i++)
		kvs[i] = (struct etcd_buf_kv){ .key = nb->puts[i].key, .key_len = nb->puts[i].key_len,
					       .val = nb->puts[i].val, .val_len = nb->puts[i].val_len };
	qsort(kvs, nb->n, sizeof(*kvs), put_cmp);
	rc = etcd_buf_put_sorted(t->buf, kvs, nb->n);
	free(kvs);
	return rc;
}

static void batch_release(struct note_batch *nb)
{
	for (size_t i = 0; i < nb->n; i++) {
		free(nb->puts[i].key);
		free(nb->puts[i].val);
	}
	free(nb->puts);
	free(nb);
}

/*
 * Adds the entries of every container above one data key (tuple part
 * tk[0..len), the etcd key's data-space bytes before it dk[0..base)), each
 * naming this key as its hint: the puts come in key order, so the first
 * one under a container is the smallest this commit writes there.
 */
static int note_key(struct store_etcd_txn *t, const uint8_t *dk, size_t base, const uint8_t *tk,
		    size_t len, struct key_list *h, struct note_batch *nb)
{
	struct tuple_reader r;
	struct tuple_elem e;
	uint8_t k[ETCD_KEY_MAX];
	unsigned depth = 0;

	tuple_reader_init(&r, tk, len);
	while (tuple_next(&r, &e) == 1 && r.pos < len && depth < KIDS_DEPTH_MAX) {
		size_t kl = etcd_kids_key(t->st, depth, tk, r.pos, k);
		const void *v, *end;
		size_t vl, el;
		int rc;

		depth++;
		if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1 ||
		    batch_made(nb, nb->last_entry, depth - 1, k, kl))
			continue;	/* written by this commit already */
		rc = batch_add(nb, nb->last_entry, depth - 1, k, kl, tk, len);
		if (rc)
			return rc;
		/* a container this commit deleted whole is rewritten: its hint is exact */
		if (!etcd_buf_covering(t->buf, dk, base + r.pos, &end, &el) && (rc = etcd_key_list_add(h, k, kl)))
			return rc;
	}
	return 0;
}

/* Hint h[0..hl) of the entry key ek[0..el): a key under its container (or the container's own), or NULL. */
const uint8_t *etcd_kids_hint_of(const struct store_etcd *st, const uint8_t *ek, size_t el,
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
 * The entries ops[0..n) name, into got[]: from the snapshot the write reads
 * in when it holds them all (one carried across this handle's last commit
 * holds the entries that commit put), else read at the newest revision in
 * one Txn, into *res (the caller releases it; empty when not used).
 */
static int entries_read(struct store_etcd_txn *t, const struct etcd_op *ops, size_t n,
			struct etcd_txn_result *res, const struct etcd_range_result **got)
{
	static const struct etcd_range_result none;
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < n; i++) {
		const struct etcd_kept *k = etcd_snap_point(t, ops[i].key, ops[i].key_len);

		if (!k)
			break;
		got[i] = &k->r;
	}
	if (i == n)
		return 0;
	rc = etcd_client_txn(t->c, NULL, 0, ops, n, NULL, 0, res);
	for (i = 0; rc == 0 && i < n; i++)
		got[i] = i < res->len ? &res->ranges[i] : &none;
	return rc;
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
	const struct etcd_range_result **got = calloc(n_max ? n_max : 1, sizeof(*got));
	int rc = ops && hops && dks && which && live && got ? 0 : -ENOMEM;

	for (size_t from = 0; rc == 0 && from < h->n; from += KIDS_TXN_OPS) {
		size_t n = h->n - from < KIDS_TXN_OPS ? h->n - from : KIDS_TXN_OPS, n_keep = 0;
		struct etcd_txn_result res;

		for (size_t i = 0; i < n; i++)
			ops[i] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = h->keys[from + i],
						   .key_len = h->lens[from + i] };
		rc = entries_read(t, ops, n, &res, got);
		if (rc)
			break;
		for (size_t i = 0; i < n; i++) {
			const struct etcd_range_result *r = got[i];
			const uint8_t *ek = h->keys[from + i], *old;
			size_t el = h->lens[from + i], dl;

			if (r->len != 1 || !(old = etcd_kids_hint_of(t->st, ek, el, r->kvs[0].val, r->kvs[0].val_len)))
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
			const struct etcd_kv *kv = &got[which[j]]->kvs[0];

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
	free(got);
	return rc;
}

/*
 * The entry of a key that holds a container record (tk[0..len)), hinting
 * at the key itself: so that the entries below a child name every
 * container it holds, empty ones included (etcd_kids_child_subdirs).
 */
static int note_record(struct store_etcd_txn *t, const uint8_t *tk, size_t len,
		       struct note_batch *nb)
{
	uint8_t k[ETCD_KEY_MAX];
	int n = etcd_kids_elements(tk, len);
	const void *v;
	size_t kl, vl;

	if (n < 1 || n - 1 >= KIDS_DEPTH_MAX)
		return 0;	/* deeper keys have no entries: their parents' counts are never asked */
	kl = etcd_kids_key(t->st, (unsigned)n - 1, tk, len, k);
	if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1 ||
	    batch_made(nb, nb->last_entry, (unsigned)n - 1, k, kl))
		return 0;	/* a key under it gave it one already */
	return batch_add(nb, nb->last_entry, (unsigned)n - 1, k, kl, tk, len);
}

/*
 * The length of the container key that holds tk[0..len) (its elements but
 * the last), its elements into *depth; SIZE_MAX when tk is no whole key.
 */
size_t etcd_kids_parent_of(const uint8_t *tk, size_t len, unsigned *depth)
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
 * one value whatever the order), deleted with the container whole. Within
 * a pass of etcd_kids_note, into its batch nb; else (nb NULL) at once.
 */
static int note_leaf(struct store_etcd_txn *t, const uint8_t *tk, size_t len, struct note_batch *nb)
{
	uint8_t k[ETCD_KEY_MAX];
	unsigned depth;
	size_t parent = etcd_kids_parent_of(tk, len, &depth), kl;
	const void *v;
	size_t vl;

	if (parent == SIZE_MAX || depth >= KIDS_DEPTH_MAX)
		return 0;
	kl = etcd_kids_leaf_flag_key(t->st, depth, tk, parent, k);
	if (etcd_buf_get(t->buf, k, kl, &v, &vl) == 1 ||
	    (nb && batch_made(nb, nb->last_flag, depth, k, kl)))
		return 0;	/* put by this commit already */
	return nb ? batch_add(nb, nb->last_flag, depth, k, kl, "", 0) : etcd_buf_put(t->buf, k, kl, "", 0);
}

int etcd_kids_note_leaf(struct store_etcd_txn *t, const uint8_t *tk, size_t len)
{
	return note_leaf(t, tk, len, NULL);
}

int etcd_kids_note(struct store_etcd_txn *t)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX], cur[ETCD_KEY_MAX];
	size_t lo_len, hi_len, cur_len;
	struct key_list h = { 0 };
	struct note_batch *nb;
	bool incl = true;
	int rc = 0;

	if (!t->st->kids)
		return 0;
	nb = calloc(1, sizeof(*nb));
	if (!nb)
		return -ENOMEM;
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

		memcpy(cur, k, kl);
		cur_len = kl;
		incl = false;
		rc = note_key(t, cur, lo_len, cur + lo_len, cur_len - lo_len, &h, nb);
		if (rc == 0 && record)
			rc = note_record(t, cur + lo_len, cur_len - lo_len, nb);
		else if (rc == 0 && t->st->kids_trust)
			rc = note_leaf(t, cur + lo_len, cur_len - lo_len, nb);
		if (rc)
			break;
	}
	if (rc == 0)
		rc = batch_put(t, nb);	/* before keep_older, which compares with this commit's */
	batch_release(nb);
	if (rc == 0 && h.n)
		rc = keep_older(t, &h);
	etcd_key_list_release(&h);
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
		kl = etcd_kids_stamp_key(t->st, depth++, key + base, r.pos, k);
		rc = etcd_buf_put(t->buf, k, kl, "", 0);
		whole = r.pos;
	}
	if (rc == 0 && end) {
		kl = etcd_kids_stamp_key(t->st, KIDS_RANGE_STAMP, key + base, whole, k);
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
	rc = etcd_buf_del(t->buf, k, etcd_kids_key(t->st, depth - 1, prefix, len, k));
	if (rc == 0 && t->st->kids_trust && depth < KIDS_DEPTH_MAX)
		rc = etcd_buf_del(t->buf, k, etcd_kids_leaf_flag_key(t->st, depth, prefix, len, k));
	return rc;
}
