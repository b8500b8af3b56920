/*
 * store/etcd_buf.c - a write attempt buffered for one guarded etcd Txn
 * (store/etcd_buf.h): a sorted array of written keys (value or tombstone),
 * a sorted list of disjoint deleted ranges, and the guards read so far.
 */
#include "store/etcd_buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bkey {
	uint8_t *key;
	size_t key_len;
	uint8_t *val;	/* NULL for a tombstone */
	size_t val_len;
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
static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c != 0)
		return c;
	return al < bl ? -1 : al > bl;
}

static bool end_is_infinite(const uint8_t *end, size_t end_len)
{
	return end_len == 1 && end[0] == 0;
}

/* a < end (where end may be infinite) */
static bool before_end(const void *a, size_t al, const uint8_t *end, size_t end_len)
{
	return end_is_infinite(end, end_len) || key_cmp(a, al, end, end_len) < 0;
}

static bool range_covers(const struct brange *r, const void *k, size_t kl)
{
	return key_cmp(k, kl, r->key, r->key_len) >= 0 && before_end(k, kl, r->end, r->end_len);
}

/* The first key index >= k. */
static size_t keys_lower(const struct etcd_buf *b, const void *k, size_t kl)
{
	size_t lo = 0, hi = b->n_keys;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(b->keys[mid].key, b->keys[mid].key_len, k, kl) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool covered(const struct etcd_buf *b, const void *k, size_t kl)
{
	for (size_t i = 0; i < b->n_ranges; i++)
		if (range_covers(&b->ranges[i], k, kl))
			return true;
	return false;
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
	if (i < b->n_keys && key_cmp(b->keys[i].key, b->keys[i].key_len, key, key_len) == 0) {
		free(b->keys[i].val);
		b->keys[i].val = v;
		b->keys[i].val_len = val_len;
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

int etcd_buf_del(struct etcd_buf *b, const void *key, size_t key_len)
{
	return set_key(b, key, key_len, NULL, 0);
}

static int range_cmp(const void *x, const void *y)
{
	const struct brange *a = x, *c = y;

	return key_cmp(a->key, a->key_len, c->key, c->key_len);
}

/* Sorts the ranges and merges overlapping or touching ones into one. */
static void ranges_normalize(struct etcd_buf *b)
{
	size_t out = 0;

	qsort(b->ranges, b->n_ranges, sizeof(*b->ranges), range_cmp);
	for (size_t i = 0; i < b->n_ranges; i++) {
		struct brange *last = out ? &b->ranges[out - 1] : NULL;
		struct brange *r = &b->ranges[i];
		bool absorbed = false;

		if (last && end_is_infinite(last->end, last->end_len)) {
			absorbed = true;	/* last already runs to the end */
		} else if (last && key_cmp(r->key, r->key_len, last->end, last->end_len) <= 0) {
			/* r starts inside last or right at its end: one range */
			if (!before_end(r->end, r->end_len, last->end, last->end_len) ||
			    end_is_infinite(r->end, r->end_len)) {
				uint8_t *e = last->end;

				last->end = r->end;
				last->end_len = r->end_len;
				r->end = e;
			}
			absorbed = true;
		}
		if (absorbed) {
			free(r->key);
			free(r->end);
			continue;
		}
		b->ranges[out++] = *r;
	}
	b->n_ranges = out;
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
	b->ranges[b->n_ranges++] = r;
	ranges_normalize(b);
	return 0;
}

int etcd_buf_get(const struct etcd_buf *b, const void *key, size_t key_len,
		 const void **val, size_t *val_len)
{
	size_t i = keys_lower(b, key, key_len);

	if (i < b->n_keys && key_cmp(b->keys[i].key, b->keys[i].key_len, key, key_len) == 0) {
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
		if (!e->val || (!inclusive && key_cmp(e->key, e->key_len, key, key_len) == 0))
			continue;
		*k = e->key;
		*k_len = e->key_len;
		*v = e->val;
		*v_len = e->val_len;
		return 1;
	}
	return 0;
}

int etcd_buf_covering(const struct etcd_buf *b, const void *key, size_t key_len,
		      const void **end, size_t *end_len)
{
	for (size_t i = 0; i < b->n_ranges; i++)
		if (range_covers(&b->ranges[i], key, key_len)) {
			*end = b->ranges[i].end;
			*end_len = b->ranges[i].end_len;
			return 1;
		}
	return 0;
}

bool etcd_buf_empty(const struct etcd_buf *b)
{
	return b->n_keys == 0 && b->n_ranges == 0;
}

bool etcd_buf_deletes(const struct etcd_buf *b)
{
	if (b->n_ranges)
		return true;
	for (size_t i = 0; i < b->n_keys; i++)
		if (!b->keys[i].val)
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

int etcd_buf_guard_range(struct etcd_buf *b, const void *key, size_t key_len,
			 const void *end, size_t end_len, int64_t rev)
{
	return add_guard(b, key, key_len, end, end_len, rev);
}

size_t etcd_buf_ops(const struct etcd_buf *b)
{
	/* without ranges one op per key; else an upper bound: a gap per range and per put inside it */
	return b->n_ranges ? 2 * b->n_keys + b->n_ranges : b->n_keys;
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
	k = key_cmp(a->key, a->key_len, c->key, c->key_len);
	if (k == 0 && a->end)
		k = key_cmp(a->end, a->end_len, c->end, c->end_len);
	if (k == 0)
		k = a->seq < c->seq ? -1 : a->seq > c->seq;
	return k;
}

static bool same_guard(const struct bguard *a, const struct bguard *c)
{
	return !a->end == !c->end && key_cmp(a->key, a->key_len, c->key, c->key_len) == 0 &&
	       (!a->end || key_cmp(a->end, a->end_len, c->end, c->end_len) == 0);
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
		} else {	/* unchanged since read; absent (create_revision 0) if it was */
			cmps[n].target = g->rev ? ETCD_CMP_MOD : ETCD_CMP_CREATE;
			cmps[n].result = ETCD_CMP_EQUAL;
		}
		n++;
	}
	return n;
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
		if (key_cmp(start, start_len, k->key, k->key_len) < 0)
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
							       .val_len = k->val_len };
		else if (!covered(b, k->key, k->key_len))
			p->ops[p->n_ops++] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = k->key,
							       .key_len = k->key_len };
	}
	if (rc == 0)
		p->n_cmps = build_compares(b, p->cmps);
	if (rc)
		etcd_buf_plan_release(p);
	return rc;
}

int etcd_buf_commit(struct etcd_buf *b, struct etcd_client *c, bool *committed, int64_t *revision)
{
	struct etcd_buf_plan p;
	struct etcd_txn_result t;
	int rc = etcd_buf_plan(b, &p);

	*committed = false;
	if (rc)
		return rc;
	rc = etcd_client_txn(c, p.cmps, p.n_cmps, p.ops, p.n_ops, NULL, 0, &t);
	if (rc == 0) {
		*committed = t.succeeded;
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
