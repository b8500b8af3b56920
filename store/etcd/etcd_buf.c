/*
 * store/etcd/etcd_buf.c - a write attempt buffered for one guarded etcd Txn
 * (store/etcd/etcd_buf.h): a sorted array of written keys (value or tombstone),
 * a sorted list of disjoint deleted ranges, and the guards read so far.
 */
#include "store/etcd/etcd_buf.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bkey {
	uint8_t *key;
	size_t key_len;
	uint8_t *val;	/* NULL for a tombstone */
	size_t val_len;
	int64_t lease;	/* a put's etcd lease (etcd_buf_lease_puts); 0: none */
};

/* [key, end); an end of the one byte 0x00 means "to the end of the keyspace" (etcd's spelling). */
struct brange {
	uint8_t *key, *end;
	size_t key_len, end_len;
};

struct bguard {
	uint8_t *key, *end;	/* end NULL: a key guard */
	size_t key_len, end_len;
	int64_t rev;
	size_t seq;	/* order of recording: the first guard per key wins */
};

struct etcd_buf {
	struct bkey *keys;
	size_t n_keys, cap_keys;
	struct brange *ranges;
	size_t n_ranges, cap_ranges;
	struct bguard *guards;
	size_t n_guards, cap_guards;
	/* etcd_buf_coalesce: over max_cmps compares, runs of key guards become range guards */
	int64_t read_rev;
	size_t space_at, max_cmps;
};

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = n;
	return 0;
}

static uint8_t *dup_bytes(const void *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

/* Byte order, a prefix before its extensions: etcd's key order. */
static bool end_is_infinite(const uint8_t *end, size_t end_len)
{
	return end_len == 1 && end[0] == 0;
}

/* a < end (where end may be infinite) */
static bool before_end(const void *a, size_t al, const uint8_t *end, size_t end_len)
{
	return end_is_infinite(end, end_len) || store_key_cmp(a, al, end, end_len) < 0;
}

static bool range_covers(const struct brange *r, const void *k, size_t kl)
{
	return store_key_cmp(k, kl, r->key, r->key_len) >= 0 && before_end(k, kl, r->end, r->end_len);
}

/* The first key index >= k. */
static size_t keys_lower(const struct etcd_buf *b, const void *k, size_t kl)
{
	size_t lo = 0, hi = b->n_keys;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(b->keys[mid].key, b->keys[mid].key_len, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The range that may cover k: the last one starting at or before k (ranges are sorted, disjoint); or NULL. */
static const struct brange *range_at(const struct etcd_buf *b, const void *k, size_t kl)
{
	size_t lo = 0, hi = b->n_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(b->ranges[mid].key, b->ranges[mid].key_len, k, kl) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &b->ranges[lo - 1] : NULL;
}

static bool covered(const struct etcd_buf *b, const void *k, size_t kl)
{
	const struct brange *r = range_at(b, k, kl);

	return r && range_covers(r, k, kl);
}

int etcd_buf_new(struct etcd_buf **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void etcd_buf_free(struct etcd_buf *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_keys; i++) {
		free(b->keys[i].key);
		free(b->keys[i].val);
	}
	for (size_t i = 0; i < b->n_ranges; i++) {
		free(b->ranges[i].key);
		free(b->ranges[i].end);
	}
	for (size_t i = 0; i < b->n_guards; i++) {
		free(b->guards[i].key);
		free(b->guards[i].end);
	}
	free(b->keys);
	free(b->ranges);
	free(b->guards);
	free(b);
}

/* Sets key to val (NULL: a tombstone), inserting it in order. */
static int set_key(struct etcd_buf *b, const void *key, size_t key_len, const void *val, size_t val_len)
{
	size_t i = keys_lower(b, key, key_len);
	uint8_t *v = NULL;

	if (val && !(v = dup_bytes(val, val_len)))
		return -ENOMEM;
	if (i < b->n_keys && store_key_cmp(b->keys[i].key, b->keys[i].key_len, key, key_len) == 0) {
		free(b->keys[i].val);
		b->keys[i].val = v;
		b->keys[i].val_len = val_len;
		b->keys[i].lease = 0;	/* a write after etcd_buf_lease_puts: asked again */
		return 0;
	}
	struct bkey nk = { .key = dup_bytes(key, key_len), .key_len = key_len, .val = v, .val_len = val_len };
	if (!nk.key || grow((void **)&b->keys, &b->cap_keys, b->n_keys + 1, sizeof(*b->keys)) < 0) {
		free(nk.key);
		free(v);
		return -ENOMEM;
	}
	memmove(&b->keys[i + 1], &b->keys[i], (b->n_keys - i) * sizeof(*b->keys));
	b->keys[i] = nk;
	b->n_keys++;
	return 0;
}

int etcd_buf_put(struct etcd_buf *b, const void *key, size_t key_len, const void *val, size_t val_len)
{
	return set_key(b, key, key_len, val ? val : "", val_len);
}

int etcd_buf_put_sorted(struct etcd_buf *b, const struct etcd_buf_kv *kvs, size_t n)
{
	struct bkey *fresh, *m;
	size_t i = 0, j, o = 0, cap = b->n_keys + n;

	if (!n)
		return 0;
	fresh = calloc(n, sizeof(*fresh));
	m = malloc(cap * sizeof(*m));
	if (!fresh || !m)
		goto free_copies;
	/* every copy first: past this loop nothing can fail, and b is changed only then */
	for (j = 0; j < n; j++) {
		fresh[j].key = dup_bytes(kvs[j].key, kvs[j].key_len);
		fresh[j].key_len = kvs[j].key_len;
		fresh[j].val = dup_bytes(kvs[j].val, kvs[j].val_len);
		fresh[j].val_len = kvs[j].val_len;
		if (!fresh[j].key || !fresh[j].val)
			goto free_copies;
	}
	for (j = 0; i < b->n_keys || j < n;) {
		int c = i == b->n_keys ? 1 : j == n ? -1 :
			store_key_cmp(b->keys[i].key, b->keys[i].key_len, fresh[j].key, fresh[j].key_len);

		if (c < 0) {
			m[o++] = b->keys[i++];
			continue;
		}
		if (c == 0) {	/* replaced */
			free(b->keys[i].key);
			free(b->keys[i].val);
			i++;
		}
		m[o++] = fresh[j++];
	}
	free(b->keys);
	free(fresh);
	b->keys = m;
	b->n_keys = o;
	b->cap_keys = cap;
	return 0;

free_copies:
	for (j = 0; fresh && j < n; j++) {
		free(fresh[j].key);
		free(fresh[j].val);
	}
	free(fresh);
	free(m);
	return -ENOMEM;
}

int etcd_buf_del(struct etcd_buf *b, const void *key, size_t key_len)
{
	return set_key(b, key, key_len, NULL, 0);
}

/*
 * Inserts r (owned from here) into the sorted, disjoint ranges, merged with
 * every range it overlaps or touches. A binary search and a local merge: a
 * transaction adding ranges in key order (one per key it puts) stays linear.
 */
static void ranges_insert(struct etcd_buf *b, struct brange r)
{
	size_t lo = 0, hi = b->n_ranges, first, j;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(b->ranges[mid].key, b->ranges[mid].key_len, r.key, r.key_len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = j = lo;
	if (lo > 0) {
		struct brange *p = &b->ranges[lo - 1];

		if (end_is_infinite(p->end, p->end_len) || store_key_cmp(r.key, r.key_len, p->end, p->end_len) <= 0) {
			/* the one before reaches r's start: r begins where it does, ends at the later end */
			first = lo - 1;
			free(r.key);
			r.key = p->key;
			r.key_len = p->key_len;
			if (!end_is_infinite(r.end, r.end_len) &&
			    (end_is_infinite(p->end, p->end_len) || store_key_cmp(p->end, p->end_len, r.end, r.end_len) > 0)) {
				free(r.end);
				r.end = p->end;
				r.end_len = p->end_len;
			} else {
				free(p->end);
			}
		}
	}
	for (; j < b->n_ranges; j++) {
		struct brange *o = &b->ranges[j];

		if (!end_is_infinite(r.end, r.end_len) && store_key_cmp(o->key, o->key_len, r.end, r.end_len) > 0)
			break;	/* starts after r ends */
		if (!end_is_infinite(r.end, r.end_len) &&
		    (end_is_infinite(o->end, o->end_len) || store_key_cmp(o->end, o->end_len, r.end, r.end_len) > 0)) {
			free(r.end);
			r.end = o->end;
			r.end_len = o->end_len;
		} else {
			free(o->end);
		}
		free(o->key);
	}
	/* ranges[first, j) are merged into r: one slot for them all */
	if (j == first) {
		memmove(&b->ranges[first + 1], &b->ranges[first], (b->n_ranges - first) * sizeof(*b->ranges));
		b->n_ranges++;
	} else if (j > first + 1) {
		memmove(&b->ranges[first + 1], &b->ranges[j], (b->n_ranges - j) * sizeof(*b->ranges));
		b->n_ranges -= j - first - 1;
	}
	b->ranges[first] = r;
}

int etcd_buf_del_range(struct etcd_buf *b, const void *key, size_t key_len,
		       const void *end, size_t end_len)
{
	struct brange r = { .key = dup_bytes(key, key_len), .key_len = key_len,
			    .end = dup_bytes(end, end_len), .end_len = end_len };
	size_t i = keys_lower(b, key, key_len), j = i;

	if (!r.key || !r.end || grow((void **)&b->ranges, &b->cap_ranges, b->n_ranges + 1,
				     sizeof(*b->ranges)) < 0) {
		free(r.key);
		free(r.end);
		return -ENOMEM;
	}
	/* keys written earlier in the range are gone with it */
	while (j < b->n_keys && before_end(b->keys[j].key, b->keys[j].key_len, r.end, r.end_len)) {
		free(b->keys[j].key);
		free(b->keys[j].val);
		j++;
	}
	if (j > i) {
		memmove(&b->keys[i], &b->keys[j], (b->n_keys - j) * sizeof(*b->keys));
		b->n_keys -= j - i;
	}
	ranges_insert(b, r);
	return 0;
}

int etcd_buf_get(const struct etcd_buf *b, const void *key, size_t key_len,
		 const void **val, size_t *val_len)
{
	size_t i = keys_lower(b, key, key_len);

	if (i < b->n_keys && store_key_cmp(b->keys[i].key, b->keys[i].key_len, key, key_len) == 0) {
		if (!b->keys[i].val)
			return 0;
		*val = b->keys[i].val;
		*val_len = b->keys[i].val_len;
		return 1;
	}
	return covered(b, key, key_len) ? 0 : -ENOENT;
}

int etcd_buf_put_reserve(struct etcd_buf *b, const void *key, size_t key_len,
			 size_t val_len, void **out)
{
	size_t i;
	int rc = set_key(b, key, key_len, "", 0);

	if (rc)
		return rc;
	i = keys_lower(b, key, key_len);
	free(b->keys[i].val);
	b->keys[i].val = calloc(1, val_len ? val_len : 1);
	b->keys[i].val_len = b->keys[i].val ? val_len : 0;
	if (!b->keys[i].val) {
		/* leave a valid empty value rather than a tombstone the caller did not ask for */
		b->keys[i].val = dup_bytes("", 0);
		return -ENOMEM;
	}
	*out = b->keys[i].val;
	return 0;
}

int etcd_buf_next_put(const struct etcd_buf *b, const void *key, size_t key_len, bool inclusive,
		      const void *end, size_t end_len, const void **k, size_t *k_len,
		      const void **v, size_t *v_len)
{
	size_t i = keys_lower(b, key, key_len);

	for (; i < b->n_keys; i++) {
		const struct bkey *e = &b->keys[i];

		if (!before_end(e->key, e->key_len, end, end_len))
			return 0;
		if (!e->val || (!inclusive && store_key_cmp(e->key, e->key_len, key, key_len) == 0))
			continue;
		*k = e->key;
		*k_len = e->key_len;
		*v = e->val;
		*v_len = e->val_len;
		return 1;
	}
	return 0;
}

int etcd_buf_next_touch(const struct etcd_buf *b, const void *key, size_t key_len, bool inclusive,
			const void **k, size_t *k_len)
{
	const struct brange *r = range_at(b, key, key_len);
	const struct brange *next = r ? r + 1 : b->ranges;
	size_t i = keys_lower(b, key, key_len);

	if (r && range_covers(r, key, key_len)) {
		*k = key;	/* inside a deleted range: every key from here may be touched */
		*k_len = key_len;
		return 1;
	}
	if (!inclusive && i < b->n_keys &&
	    store_key_cmp(b->keys[i].key, b->keys[i].key_len, key, key_len) == 0)
		i++;
	if (next == b->ranges + b->n_ranges)
		next = NULL;
	if (i < b->n_keys && (!next || store_key_cmp(b->keys[i].key, b->keys[i].key_len, next->key,
						     next->key_len) < 0)) {
		*k = b->keys[i].key;
		*k_len = b->keys[i].key_len;
		return 1;
	}
	if (!next)
		return 0;
	*k = next->key;
	*k_len = next->key_len;
	return 1;
}

int etcd_buf_covering(const struct etcd_buf *b, const void *key, size_t key_len,
		      const void **end, size_t *end_len)
{
	const struct brange *r = range_at(b, key, key_len);

	if (!r || !range_covers(r, key, key_len))
		return 0;
	*end = r->end;
	*end_len = r->end_len;
	return 1;
}

bool etcd_buf_empty(const struct etcd_buf *b)
{
	return b->n_keys == 0 && b->n_ranges == 0;
}

static bool under(const uint8_t *key, size_t key_len, const void *prefix, size_t prefix_len)
{
	return key_len >= prefix_len && memcmp(key, prefix, prefix_len) == 0;
}

bool etcd_buf_deletes(const struct etcd_buf *b, const void *quiet, size_t quiet_len)
{
	for (size_t i = 0; i < b->n_ranges; i++)
		if (!under(b->ranges[i].key, b->ranges[i].key_len, quiet, quiet_len) ||
		    (b->ranges[i].end_len == 1 && !b->ranges[i].end[0]) ||
		    !under(b->ranges[i].end, b->ranges[i].end_len, quiet, quiet_len))
			return true;
	for (size_t i = 0; i < b->n_keys; i++)
		if (!b->keys[i].val && !under(b->keys[i].key, b->keys[i].key_len, quiet, quiet_len))
			return true;
	return false;
}

static int add_guard(struct etcd_buf *b, const void *key, size_t key_len,
		     const void *end, size_t end_len, int64_t rev)
{
	struct bguard g = { .key = dup_bytes(key, key_len), .key_len = key_len,
			    .end = end ? dup_bytes(end, end_len) : NULL, .end_len = end_len,
			    .rev = rev, .seq = b->n_guards };

	if (!g.key || (end && !g.end) ||
	    grow((void **)&b->guards, &b->cap_guards, b->n_guards + 1, sizeof(*b->guards)) < 0) {
		free(g.key);
		free(g.end);
		return -ENOMEM;
	}
	b->guards[b->n_guards++] = g;
	return 0;
}

int etcd_buf_guard_key(struct etcd_buf *b, const void *key, size_t key_len, int64_t mod_rev)
{
	return add_guard(b, key, key_len, NULL, 0, mod_rev);
}

int etcd_buf_guard_live(struct etcd_buf *b, const void *key, size_t key_len)
{
	return add_guard(b, key, key_len, NULL, 0, -1);
}

int etcd_buf_guard_range(struct etcd_buf *b, const void *key, size_t key_len,
			 const void *end, size_t end_len, int64_t rev)
{
	return add_guard(b, key, key_len, end, end_len, rev);
}

size_t etcd_buf_largest(const struct etcd_buf *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n_keys; i++)
		if (b->keys[i].key_len + b->keys[i].val_len > n)
			n = b->keys[i].key_len + b->keys[i].val_len;
	return n;
}

size_t etcd_buf_ops(const struct etcd_buf *b)
{
	/* what etcd_buf_plan sends: each range as its gaps (one more than the puts inside it), the rest one each */
	size_t n = b->n_ranges, r = 0;

	for (size_t i = 0; i < b->n_keys; i++) {
		const struct bkey *k = &b->keys[i];

		while (r < b->n_ranges && !before_end(k->key, k->key_len, b->ranges[r].end, b->ranges[r].end_len))
			r++;
		bool in = r < b->n_ranges && range_covers(&b->ranges[r], k->key, k->key_len);

		if (k->val)
			n += in ? 2 : 1;	/* the put, and the gap after it */
		else if (!in)
			n++;
	}
	return n;
}

size_t etcd_buf_guards(const struct etcd_buf *b)
{
	return b->n_guards;
}

void etcd_buf_coalesce(struct etcd_buf *b, int64_t read_rev, size_t space_at, size_t max_cmps)
{
	b->read_rev = read_rev;
	b->space_at = space_at;
	b->max_cmps = max_cmps;
}

size_t etcd_buf_bytes(const struct etcd_buf *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n_keys; i++)
		n += b->keys[i].key_len + b->keys[i].val_len;
	for (size_t i = 0; i < b->n_ranges; i++)
		n += b->ranges[i].key_len + b->ranges[i].end_len;
	for (size_t i = 0; i < b->n_guards; i++)
		n += b->guards[i].key_len + b->guards[i].end_len;
	return n;
}

/* Guards by (kind, key, end), the first recorded first: duplicates become adjacent. */
static int guard_cmp(const void *x, const void *y)
{
	const struct bguard *a = x, *c = y;
	int k;

	if (!a->end != !c->end)
		return a->end ? 1 : -1;
	k = store_key_cmp(a->key, a->key_len, c->key, c->key_len);
	if (k == 0 && a->end)
		k = store_key_cmp(a->end, a->end_len, c->end, c->end_len);
	if (k == 0 && (a->rev < 0) != (c->rev < 0))
		k = a->rev < 0 ? 1 : -1;	/* a liveness guard is a compare of its own */
	if (k == 0)
		k = a->seq < c->seq ? -1 : a->seq > c->seq;
	return k;
}

static bool same_guard(const struct bguard *a, const struct bguard *c)
{
	return !a->end == !c->end && (a->rev < 0) == (c->rev < 0) &&
	       store_key_cmp(a->key, a->key_len, c->key, c->key_len) == 0 &&
	       (!a->end || store_key_cmp(a->end, a->end_len, c->end, c->end_len) == 0);
}

/* The compares of the attempt's guards, one per distinct key or range. */
static size_t build_compares(struct etcd_buf *b, struct etcd_cmp *cmps)
{
	size_t n = 0;

	if (b->n_guards > 1)
		qsort(b->guards, b->n_guards, sizeof(*b->guards), guard_cmp);
	for (size_t i = 0; i < b->n_guards; i++) {
		const struct bguard *g = &b->guards[i];

		if (n > 0 && same_guard(&b->guards[i - 1], g))
			continue;
		cmps[n] = (struct etcd_cmp){ .key = g->key, .key_len = g->key_len, .rev = g->rev };
		if (g->end) {	/* nothing in the range changed after rev */
			cmps[n].target = ETCD_CMP_MOD;
			cmps[n].result = ETCD_CMP_LESS;
			cmps[n].range_end = g->end;
			cmps[n].range_end_len = g->end_len;
			cmps[n].rev = g->rev + 1;
		} else if (g->rev < 0) {	/* there: etcd_buf_guard_live */
			cmps[n].target = ETCD_CMP_CREATE;
			cmps[n].result = ETCD_CMP_GREATER;
			cmps[n].rev = 0;
		} else {	/* unchanged since read; absent (create_revision 0) if it was */
			cmps[n].target = g->rev ? ETCD_CMP_MOD : ETCD_CMP_CREATE;
			cmps[n].result = ETCD_CMP_EQUAL;
		}
		n++;
	}
	return n;
}

/* The space byte of a full key (keys shorter than the prefix: none). */
static int space_of(const struct etcd_buf *b, const struct etcd_cmp *c)
{
	return c->key_len > b->space_at ? ((const uint8_t *)c->key)[b->space_at] : -1;
}

/*
 * Too many compares for one Txn (etcd refuses more than --max-txn-ops):
 * runs of neighbouring key guards of one space become one range guard
 * `MOD < read_rev + 1` over [first key, last key 0x00). Sound because every
 * key in the run was read at read_rev: a put or re-creation after it shows
 * as a newer MOD, and a delete bumps the delete stamp, which the caller
 * guards (etcd_txn_guard_stamp) whenever this applies. It may add false
 * conflicts (keys between the ones read); those only run the attempt again.
 * The range ends are heap, kept in p->ends. Returns the new count.
 */
static size_t coalesce(struct etcd_buf *b, struct etcd_cmp *cmps, size_t n, struct etcd_buf_plan *p)
{
	size_t n_keys = 0, group = 1, out = 0;

	if (!b->max_cmps || n <= b->max_cmps)
		return n;
	while (n_keys < n && !cmps[n_keys].range_end)
		n_keys++;	/* key guards sort first (guard_cmp) */
	if (n - n_keys + 16 >= b->max_cmps)
		return n;	/* ranges alone fill it: nothing to gain here */
	for (;; group *= 2) {
		size_t groups = 0;

		for (size_t i = 0; i < n_keys;) {
			size_t j = i + 1;

			while (j < n_keys && j - i < group && space_of(b, &cmps[j]) == space_of(b, &cmps[i]))
				j++;
			groups++;
			i = j;
		}
		if (groups + (n - n_keys) <= b->max_cmps || group >= n_keys)
			break;	/* fits; or one group per space is all it can do */
	}
	size_t cap = n_keys / group + 300;	/* groups: at most that plus one per space change */

	p->ends = calloc(cap, sizeof(*p->ends));
	if (!p->ends)
		return n;	/* no memory: the Txn goes as it is (and may be refused) */
	for (size_t i = 0; i < n_keys;) {
		size_t j = i + 1;

		while (j < n_keys && j - i < group && space_of(b, &cmps[j]) == space_of(b, &cmps[i]))
			j++;
		if (j - i == 1) {
			cmps[out++] = cmps[i];	/* alone: the exact guard stays */
		} else {
			uint8_t *end = p->n_ends < cap ? malloc(cmps[j - 1].key_len + 1) : NULL;

			if (!end) {
				/* keep the rest exact: sound, only maybe too many for etcd */
				memmove(&cmps[out], &cmps[i], (n - i) * sizeof(*cmps));
				return out + (n - i);
			}
			memcpy(end, cmps[j - 1].key, cmps[j - 1].key_len);
			end[cmps[j - 1].key_len] = 0;	/* the first key after the run's last */
			p->ends[p->n_ends++] = end;
			cmps[out++] = (struct etcd_cmp){ .target = ETCD_CMP_MOD, .result = ETCD_CMP_LESS,
							 .key = cmps[i].key, .key_len = cmps[i].key_len,
							 .range_end = end, .range_end_len = cmps[j - 1].key_len + 1,
							 .rev = b->read_rev + 1 };
		}
		i = j;
	}
	memmove(&cmps[out], &cmps[n_keys], (n - n_keys) * sizeof(*cmps));
	return out + (n - n_keys);
}

/*
 * The deletes of range r: the gaps between the keys put inside it. Gap
 * starts (put key + 0x00) are heap, kept in gaps[] for the caller to free.
 */
static int range_ops(const struct etcd_buf *b, const struct brange *r, struct etcd_op *ops,
		     size_t *n, uint8_t **gaps, size_t *n_gaps)
{
	const uint8_t *start = r->key;
	size_t start_len = r->key_len;

	for (size_t i = keys_lower(b, r->key, r->key_len);
	     i < b->n_keys && before_end(b->keys[i].key, b->keys[i].key_len, r->end, r->end_len); i++) {
		const struct bkey *k = &b->keys[i];
		uint8_t *next;

		if (!k->val)
			continue;	/* a tombstone inside: the range deletes it anyway */
		if (store_key_cmp(start, start_len, k->key, k->key_len) < 0)
			ops[(*n)++] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = start,
							.key_len = start_len, .range_end = k->key,
							.range_end_len = k->key_len };
		next = malloc(k->key_len + 1);
		if (!next)
			return -ENOMEM;
		memcpy(next, k->key, k->key_len);
		next[k->key_len] = 0;	/* the first key after k */
		gaps[(*n_gaps)++] = next;
		start = next;
		start_len = k->key_len + 1;
	}
	if (before_end(start, start_len, r->end, r->end_len))
		ops[(*n)++] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = start, .key_len = start_len,
						.range_end = r->end, .range_end_len = r->end_len };
	return 0;
}

void etcd_buf_plan_release(struct etcd_buf_plan *p)
{
	for (size_t i = 0; p->gaps && i < p->n_gaps; i++)
		free(p->gaps[i]);
	for (size_t i = 0; p->ends && i < p->n_ends; i++)
		free(p->ends[i]);
	free(p->ends);
	free(p->gaps);
	free(p->ops);
	free(p->cmps);
	memset(p, 0, sizeof(*p));
}

int etcd_buf_plan(struct etcd_buf *b, struct etcd_buf_plan *p)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->cmps = calloc(b->n_guards + 1, sizeof(*p->cmps));
	p->ops = calloc(etcd_buf_ops(b) + 1, sizeof(*p->ops));
	p->gaps = calloc(b->n_keys + 1, sizeof(*p->gaps));
	rc = p->cmps && p->ops && p->gaps ? 0 : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < b->n_ranges; i++)
		rc = range_ops(b, &b->ranges[i], p->ops, &p->n_ops, p->gaps, &p->n_gaps);
	for (size_t i = 0; rc == 0 && i < b->n_keys; i++) {
		const struct bkey *k = &b->keys[i];

		if (k->val)
			p->ops[p->n_ops++] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = k->key,
							       .key_len = k->key_len, .val = k->val,
							       .val_len = k->val_len, .lease = k->lease };
		else if (!covered(b, k->key, k->key_len))
			p->ops[p->n_ops++] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = k->key,
							       .key_len = k->key_len };
	}
	if (rc == 0)
		p->n_cmps = coalesce(b, p->cmps, build_compares(b, p->cmps), p);
	if (rc)
		etcd_buf_plan_release(p);
	return rc;
}

int etcd_buf_plan_cmps(struct etcd_buf *b, struct etcd_buf_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->cmps = calloc(b->n_guards + 1, sizeof(*p->cmps));
	if (!p->cmps)
		return -ENOMEM;
	p->n_cmps = coalesce(b, p->cmps, build_compares(b, p->cmps), p);
	return 0;
}

void etcd_buf_op_iter_init(struct etcd_buf_op_iter *it)
{
	memset(it, 0, sizeof(*it));
}

void etcd_buf_op_iter_release(struct etcd_buf_op_iter *it)
{
	free(it->gap);
	etcd_buf_op_iter_init(it);
}

/* The start of the range's next gap: its start, or just after key it->after (in it->gap). */
static int iter_gap_start(const struct etcd_buf *b, struct etcd_buf_op_iter *it,
			  const uint8_t **start, size_t *start_len)
{
	const struct bkey *k;

	if (it->after == SIZE_MAX) {
		*start = b->ranges[it->r].key;
		*start_len = b->ranges[it->r].key_len;
		return 0;
	}
	k = &b->keys[it->after];
	if (grow((void **)&it->gap, &it->gap_cap, k->key_len + 1, 1) < 0)
		return -ENOMEM;
	memcpy(it->gap, k->key, k->key_len);
	it->gap[k->key_len] = 0;	/* the first key after k */
	*start = it->gap;
	*start_len = k->key_len + 1;
	return 0;
}

/* The next gap of range it->r (range_ops' walk, an op a call): 1, or 0 when the range is done. */
static int iter_range_op(const struct etcd_buf *b, struct etcd_buf_op_iter *it, struct etcd_op *op)
{
	const struct brange *r = &b->ranges[it->r];
	const uint8_t *start;
	size_t start_len;
	int rc;

	if (!it->in_range) {
		it->i = keys_lower(b, r->key, r->key_len);
		it->after = SIZE_MAX;
		it->in_range = true;
	}
	for (; it->i < b->n_keys && before_end(b->keys[it->i].key, b->keys[it->i].key_len, r->end,
					       r->end_len); it->i++) {
		const struct bkey *k = &b->keys[it->i];

		if (!k->val)
			continue;	/* a tombstone inside: the range deletes it anyway */
		if ((rc = iter_gap_start(b, it, &start, &start_len)))
			return rc;
		it->after = it->i;	/* the next gap starts just after k */
		if (store_key_cmp(start, start_len, k->key, k->key_len) < 0) {
			*op = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = start, .key_len = start_len,
						.range_end = k->key, .range_end_len = k->key_len };
			it->i++;
			return 1;
		}
	}
	it->in_range = false;
	if ((rc = iter_gap_start(b, it, &start, &start_len)))
		return rc;
	if (!before_end(start, start_len, r->end, r->end_len))
		return 0;
	*op = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = start, .key_len = start_len,
				.range_end = r->end, .range_end_len = r->end_len };
	return 1;
}

int etcd_buf_op_next(const struct etcd_buf *b, struct etcd_buf_op_iter *it, struct etcd_op *op)
{
	int rc;

	for (; it->r < b->n_ranges; it->r++) {
		if ((rc = iter_range_op(b, it, op)) != 0) {
			if (rc > 0 && !it->in_range)
				it->r++;	/* its last gap: the next call starts the next range */
			return rc;
		}
	}
	if (!it->keys) {
		it->keys = true;	/* the ranges are done: every key from the first */
		it->i = 0;
	}
	for (; it->i < b->n_keys; it->i++) {
		const struct bkey *k = &b->keys[it->i];

		if (k->val) {
			*op = (struct etcd_op){ .type = ETCD_OP_PUT, .key = k->key, .key_len = k->key_len,
						.val = k->val, .val_len = k->val_len, .lease = k->lease };
			it->i++;
			return 1;
		}
		if (!covered(b, k->key, k->key_len)) {
			*op = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = k->key,
						.key_len = k->key_len };
			it->i++;
			return 1;
		}
	}
	return 0;
}

int etcd_buf_commit(struct etcd_buf *b, struct etcd_client *c, bool *committed, int64_t *revision)
{
	struct etcd_buf_plan p;
	struct etcd_txn_result t;
	int rc = etcd_buf_plan(b, &p);

	*committed = false;
	if (rc)
		return rc;
	rc = etcd_client_txn_settled(c, p.cmps, p.n_cmps, p.ops, p.n_ops, NULL, 0, &t);
	if (rc == 0) {
		*committed = t.succeeded;
		if (revision)
			*revision = t.revision;
		etcd_txn_result_release(&t);
	}
	etcd_buf_plan_release(&p);
	return rc;
}

int etcd_buf_check(struct etcd_buf *b, struct etcd_client *c, bool *holds, int64_t *revision)
{
	struct etcd_buf_plan p;
	struct etcd_txn_result t;
	int rc = etcd_buf_plan(b, &p);

	*holds = false;
	if (rc)
		return rc;
	rc = etcd_client_txn(c, p.cmps, p.n_cmps, NULL, 0, NULL, 0, &t);
	if (rc == 0) {
		*holds = t.succeeded;
		if (revision)
			*revision = t.revision;
		etcd_txn_result_release(&t);
	}
	etcd_buf_plan_release(&p);
	return rc;
}

int etcd_buf_walk(const struct etcd_buf *b, etcd_buf_walk_fn fn, void *arg)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < b->n_keys; i++)
		rc = fn(b->keys[i].key, b->keys[i].key_len, arg);
	for (size_t i = 0; rc == 0 && i < b->n_ranges; i++)
		rc = fn(b->ranges[i].key, b->ranges[i].key_len, arg);
	return rc;
}

int etcd_buf_walk_deletes(const struct etcd_buf *b, etcd_buf_delete_fn fn, void *arg)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < b->n_keys; i++)
		if (!b->keys[i].val)
			rc = fn(b->keys[i].key, b->keys[i].key_len, NULL, 0, arg);
	for (size_t i = 0; rc == 0 && i < b->n_ranges; i++)
		rc = fn(b->ranges[i].key, b->ranges[i].key_len, b->ranges[i].end, b->ranges[i].end_len,
			arg);
	return rc;
}

int etcd_buf_lease_puts(struct etcd_buf *b, etcd_buf_lease_fn fn, void *arg)
{
	int rc = 0;

	/* fn may read through b and add guards, never keys: indexes stay valid */
	for (size_t i = 0; rc == 0 && i < b->n_keys; i++) {
		int64_t lease = 0;

		if (!b->keys[i].val)
			continue;
		rc = fn(b->keys[i].key, b->keys[i].key_len, &lease, arg);
		if (rc == 0)
			b->keys[i].lease = lease;
	}
	return rc;
}

bool etcd_buf_has_leases(const struct etcd_buf *b)
{
	for (size_t i = 0; i < b->n_keys; i++)
		if (b->keys[i].val && b->keys[i].lease)
			return true;
	return false;
}
