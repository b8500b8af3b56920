/*
 * store/etcd/etcd_snap_carry.c - a handle's shared answers carried across
 * a commit of its own (docs/ETCD.md section 8a, "Carried"): the pages and
 * points the commit did not change, moved to a snapshot at its revision.
 */
#include "store/etcd/etcd_snap_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- carried across a commit of ours (docs/ETCD.md section 8a, "Carried") ---- */

/* A copy of kv (value too unless keys_only): 0 or -ENOMEM. */
static int kv_copy(struct etcd_kv *to, const uint8_t *key, size_t key_len, const void *val,
		   size_t val_len, bool keys_only)
{
	memset(to, 0, sizeof(*to));
	to->key = malloc(key_len ? key_len : 1);
	if (!to->key)
		return -ENOMEM;
	memcpy(to->key, key, key_len);
	to->key_len = key_len;
	if (keys_only || !val)
		return 0;
	to->val = malloc(val_len + 1);	/* a NUL after the bytes, as the wire's */
	if (!to->val) {
		free(to->key);
		return -ENOMEM;
	}
	memcpy(to->val, val, val_len);
	to->val[val_len] = 0;
	to->val_len = val_len;
	return 0;
}

/*
 * kv (there when `was`) at revision rev: as it was (b left it alone), as
 * b put it (written at rev), or none: 1 when out holds a key, 0 when not.
 */
static int kv_after(const struct etcd_buf *b, const struct etcd_kv *kv, bool was, bool keys_only,
		    int64_t rev, struct etcd_kv *out)
{
	const void *v;
	size_t vl;
	int w = etcd_buf_get(b, kv->key, kv->key_len, &v, &vl), rc;

	if (w == 0 || (w < 0 && !was))
		return 0;
	if (w < 0) {
		v = kv->val;
		vl = kv->val_len;
	}
	rc = kv_copy(out, kv->key, kv->key_len, v, vl, keys_only);
	if (rc)
		return rc;
	out->create_rev = kv->create_rev;
	out->mod_rev = w < 0 ? kv->mod_rev : rev;
	out->version = w < 0 ? kv->version : kv->version + 1;
	return 1;
}

/* Appends kv to r (capacity *cap): 0 or -ENOMEM (kv released then). */
static int result_push(struct etcd_range_result *r, size_t *cap, struct etcd_kv *kv)
{
	if (r->len == *cap) {
		size_t n = *cap ? 2 * *cap : 4;
		struct etcd_kv *g = realloc(r->kvs, n * sizeof(*g));

		if (!g) {
			free(kv->key);
			free(kv->val);
			return -ENOMEM;
		}
		r->kvs = g;
		*cap = n;
	}
	r->kvs[r->len++] = *kv;
	return 0;
}

/*
 * Page k at revision rev: its keys merged with the buffer's puts inside
 * [from, end) and without its deletes, so that it still holds every key
 * of that range. Heap; NULL when out of memory.
 */
static struct etcd_kept *page_after(const struct etcd_kept *k, const struct etcd_buf *b,
				    int64_t rev)
{
	struct etcd_kept *n = calloc(1, sizeof(*n));
	const uint8_t *from = k->from;
	size_t from_len = k->from_len, cap = 0, i = 0;
	bool incl = true;
	int rc = n ? 0 : -ENOMEM;

	if (rc)
		return NULL;
	memcpy(n->from, k->from, k->from_len);
	memcpy(n->end, k->end, k->end_len);
	memcpy(n->scan_hi, k->scan_hi, k->scan_hi_len);
	n->from_len = k->from_len;
	n->end_len = k->end_len;
	n->scan_hi_len = k->scan_hi_len;
	n->has_vals = k->has_vals;
	n->reader = k->reader;
	n->r.more = k->r.more;
	n->r.revision = rev;
	while (rc == 0) {
		const void *pk = NULL, *pv = NULL;
		size_t pkl = 0, pvl = 0;
		bool put = etcd_buf_next_put(b, from, from_len, incl, k->end, k->end_len, &pk, &pkl,
					     &pv, &pvl) == 1;
		struct etcd_kv kv;
		int c;

		/* the page's next key, or the buffer's next put, whichever sorts first */
		c = i == k->r.len ? 1 : !put ? -1 :
		    store_key_cmp(k->r.kvs[i].key, k->r.kvs[i].key_len, pk, pkl);
		if (i == k->r.len && !put)
			break;
		if (c <= 0) {
			rc = kv_after(b, &k->r.kvs[i], true, !k->has_vals, rev, &kv);
			from = k->r.kvs[i].key;
			from_len = k->r.kvs[i].key_len;
			i++;
			if (rc == 1)
				rc = result_push(&n->r, &cap, &kv);
		} else {
			rc = kv_copy(&kv, pk, pkl, pv, pvl, !k->has_vals);
			kv.create_rev = kv.mod_rev = rev;
			kv.version = 1;
			from = kv.key;
			from_len = kv.key_len;
			if (rc == 0)
				rc = result_push(&n->r, &cap, &kv);
		}
		incl = false;
	}
	n->r.count = (int64_t)n->r.len + (k->r.count - (int64_t)k->r.len);
	if (rc < 0) {
		etcd_kept_release(n);
		return NULL;
	}
	return n;
}

/* Whether key sorts before range end end ("\0": etcd's end of every key). */
static bool key_before_end(const void *key, size_t len, const uint8_t *end, size_t end_len)
{
	return (end_len == 1 && !end[0]) || store_key_cmp(key, len, end, end_len) < 0;
}

/* The first of r's keys at or after index lo that sorts at or after key. */
static size_t kvs_lower(const struct etcd_range_result *r, size_t lo, const void *key, size_t len)
{
	size_t hi = r->len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(r->kvs[mid].key, r->kvs[mid].key_len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Moves from[0..n) to the end of r (capacity *cap): 0 or -ENOMEM (nothing moved then). */
static int result_move(struct etcd_range_result *r, size_t *cap, struct etcd_kv *from, size_t n)
{
	if (r->len + n > *cap) {
		size_t c = *cap ? 2 * *cap : 4;
		struct etcd_kv *g;

		while (c < r->len + n)
			c *= 2;
		g = realloc(r->kvs, c * sizeof(*g));
		if (!g)
			return -ENOMEM;
		r->kvs = g;
		*cap = c;
	}
	memcpy(r->kvs + r->len, from, n * sizeof(*from));
	memset(from, 0, n * sizeof(*from));	/* moved: the old array frees none of them */
	r->len += n;
	return 0;
}

/*
 * Old key o at rev into r, as b left it: moved, or with b's value (w 1,
 * v[0..vl)), or left in place for the old array to free (w 0, deleted).
 * 0 or -ENOMEM.
 */
static int kv_advance(struct etcd_range_result *r, size_t *cap, struct etcd_kv *o, bool has_vals,
		      int w, const void *v, size_t vl, int64_t rev)
{
	uint8_t *nv = NULL;

	if (w == 0)
		return 0;
	if (w > 0 && has_vals) {
		if (!(nv = malloc(vl + 1)))
			return -ENOMEM;
		memcpy(nv, v, vl);
		nv[vl] = 0;	/* as the wire's */
	}
	if (w > 0) {
		free(o->val);
		o->val = nv;
		o->val_len = nv ? vl : 0;
		o->mod_rev = rev;
		o->version++;
		o->lease = 0;
	}
	return result_move(r, cap, o, 1);
}

/*
 * Page k at revision rev, as page_after makes it, but in place: the keys
 * between two the buffer touched move to the new array as a stretch
 * (found by bisection, no key of theirs read), and only what the buffer
 * put is copied, so a carry costs a few compares and a copy of the array,
 * not two allocations a key (a directory's page holds every child, and a
 * cp -a commits once a child). 0, or -ENOMEM with k left holding no key
 * (its snapshot must serve nobody then).
 */
static int page_advance(struct etcd_kept *k, const struct etcd_buf *b, int64_t rev)
{
	struct etcd_range_result old = k->r;
	const uint8_t *from = k->from;
	const void *tk;
	size_t from_len = k->from_len, cap = old.len + 4, i = 0, tkl;
	bool incl = true;
	int rc = 0;

	if (etcd_buf_next_touch(b, from, from_len, true, &tk, &tkl) == 0 ||
	    !key_before_end(tk, tkl, k->end, k->end_len)) {
		k->r.revision = rev;	/* the buffer touched nothing in its range */
		return 0;
	}
	k->r.kvs = malloc(cap * sizeof(*k->r.kvs));
	k->r.len = 0;
	if (!k->r.kvs) {
		k->r = old;	/* untouched: it still holds its keys at the old revision */
		return -ENOMEM;
	}
	while (rc == 0) {
		const void *pk = NULL, *pv = NULL, *v = NULL;
		size_t pkl = 0, pvl = 0, vl = 0, j = old.len;
		struct etcd_kv kv, *o;
		bool put;
		int c, w;

		if (etcd_buf_next_touch(b, from, from_len, incl, &tk, &tkl) == 1)
			j = kvs_lower(&old, i, tk, tkl);
		if (j > i) {	/* the keys before the buffer's next touch, as they were */
			rc = result_move(&k->r, &cap, old.kvs + i, j - i);
			if (rc)
				break;
			i = j;
			from = k->r.kvs[k->r.len - 1].key;
			from_len = k->r.kvs[k->r.len - 1].key_len;
			incl = false;
		}
		put = etcd_buf_next_put(b, from, from_len, incl, k->end, k->end_len, &pk, &pkl, &pv,
					&pvl) == 1;
		o = i < old.len ? &old.kvs[i] : NULL;
		if (!o && !put)
			break;
		c = !o ? 1 : !put ? -1 : store_key_cmp(o->key, o->key_len, pk, pkl);
		incl = false;
		if (c > 0) {	/* a key the buffer made */
			rc = kv_copy(&kv, pk, pkl, pv, pvl, !k->has_vals);
			kv.create_rev = kv.mod_rev = rev;
			kv.version = 1;
			from = kv.key;
			from_len = kv.key_len;
			if (rc == 0)
				rc = result_push(&k->r, &cap, &kv);
			continue;
		}
		/* a deleted key stays in old.kvs until the end: from may point into it */
		from = o->key;
		from_len = o->key_len;
		i++;
		w = etcd_buf_get(b, o->key, o->key_len, &v, &vl);
		rc = kv_advance(&k->r, &cap, o, k->has_vals, w, v, vl, rev);
	}
	k->r.count = (int64_t)k->r.len + (old.count - (int64_t)old.len);
	k->r.revision = rev;
	etcd_range_result_release(&old);	/* what was deleted, and what did not move */
	if (rc < 0)
		etcd_range_result_release(&k->r);
	return rc;
}

/* A point answer for etcd key key[0..len) at rev: 0 or -ENOMEM. */
static int point_after(struct etcd_snap *n, const uint8_t *key, size_t len,
		       const struct etcd_kept *old, const struct etcd_buf *b, int64_t rev)
{
	struct etcd_kept *k = calloc(1, sizeof(*k));
	struct snap_point *p;
	uint8_t *copy = malloc(len ? len : 1);
	struct etcd_kv kv, was = { .key = (uint8_t *)key, .key_len = len };
	size_t cap = 0;
	int rc = k && copy ? 0 : -ENOMEM;

	if (rc == 0 && old && old->r.len)
		was = old->r.kvs[0];
	if (rc == 0 && (2 * (n->n_points + 1) > n->cap_points && !etcd_snap_points_grow(n)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = kv_after(b, &was, old && old->r.len, false, rev, &kv);
	if (rc == 1) {
		if (!old || !old->r.len)
			kv.create_rev = rev;	/* new: the buffer put it */
		rc = result_push(&k->r, &cap, &kv);
	}
	if (rc < 0) {
		etcd_kept_release(k);
		free(copy);
		return rc;
	}
	k->r.revision = rev;
	k->next = n->kept;
	n->kept = k;
	n->bytes += etcd_snap_answer_bytes(&k->r) + len;
	memcpy(copy, key, len);
	p = etcd_snap_point_slot(n, copy, len);
	free((void *)p->key);	/* (a key put twice: the later answer is the same) */
	if (!p->key)
		n->n_points++;
	*p = (struct snap_point){ .key = copy, .len = len, .kept = k };
	return 0;
}

struct carry_puts {
	struct etcd_snap *n;
	const struct etcd_buf *b;
	int64_t rev;
};

/* etcd_buf_walk: every key the buffer wrote or deleted (a range's start too) gets an answer. */
static int carry_put(const uint8_t *key, size_t len, void *arg)
{
	struct carry_puts *c = arg;
	const void *v;
	size_t vl;

	if (etcd_buf_get(c->b, key, len, &v, &vl) < 0 ||
	    (c->n->cap_points && etcd_snap_point_slot(c->n, key, len)->key))
		return 0;
	return point_after(c->n, key, len, NULL, c->b, c->rev);
}

/*
 * The carry n of a snapshot to rev, its pages and points made (rc: how
 * that went): the keys b put that no point answers yet are added. n, or
 * NULL (n freed) on any failure.
 */
static struct etcd_snap *carry_finish(struct etcd_snap *n, const struct etcd_buf *b, int64_t rev,
				      int rc)
{
	if (rc == 0)
		rc = etcd_buf_walk(b, carry_put, &(struct carry_puts){ n, b, rev });
	if (rc) {
		etcd_snap_free(n);
		return NULL;
	}
	return n;
}

/*
 * n's point answers at rev from s's (under s->lock): only while s has few
 * (each is a copy of its own, and a bulk copy's files never read one
 * another's); then one for every key b wrote or deleted. 0 or -ENOMEM.
 */
static int points_after(struct etcd_snap *n, struct etcd_snap *s, const struct etcd_buf *b,
			int64_t rev)
{
	int rc = 0;

	for (size_t i = 0; rc == 0 && s->n_points <= SNAP_CARRY_POINTS && i < s->cap_points; i++)
		if (s->points[i].key)
			rc = point_after(n, s->points[i].key, s->points[i].len, s->points[i].kept, b, rev);
	return rc;
}

/* A snapshot at rev, fresh, empty, one reference (the handle's): heap; NULL when out of memory. */
static struct etcd_snap *snap_new(int64_t rev)
{
	struct etcd_snap *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	pthread_mutex_init(&n->lock, NULL);
	n->rev = rev;
	/* as fresh as a first read: the commit's answer says nobody committed since */
	n->born_ns = (uint64_t)store_mono_ns();
	n->refs = 1;
	return n;
}

/* Puts page k in n, in front of the newer ones (n's lock unneeded: n is unpublished). */
static void snap_add_page(struct etcd_snap *n, struct etcd_kept *k)
{
	k->next = n->kept;
	n->kept = k;
	k->next_page = atomic_load_explicit(&n->pages, memory_order_relaxed);
	atomic_store_explicit(&n->pages, k, memory_order_relaxed);
	n->n_pages++;
	n->bytes += etcd_snap_answer_bytes(&k->r);
}

/* s's pages, newest first, into pages (SNAP_PAGES_MAX at most): how many (under s->lock). */
static size_t pages_of(struct etcd_snap *s, struct etcd_kept **pages)
{
	size_t np = 0;

	for (struct etcd_kept *k = atomic_load_explicit(&s->pages, memory_order_acquire);
	     k && np < SNAP_PAGES_MAX; k = k->next_page)
		pages[np++] = k;
	return np;
}

/*
 * s at rev, b applied, every page copied: heap, one reference (the
 * handle's); NULL when it cannot be made. Past SNAP_CARRY_POINTS point
 * answers, only the pages and the buffer's keys go.
 */
static struct etcd_snap *snap_after(struct etcd_snap *s, const struct etcd_buf *b, int64_t rev)
{
	struct etcd_snap *n = snap_new(rev);
	struct etcd_kept *pages[SNAP_PAGES_MAX];
	size_t np = 0;
	int rc = n ? 0 : -ENOMEM;

	if (rc)
		return NULL;
	pthread_mutex_lock(&s->lock);
	np = pages_of(s, pages);
	while (rc == 0 && np) {	/* oldest first: the newest stays first in the list */
		struct etcd_kept *k = page_after(pages[--np], b, rev);

		if (!k)
			rc = -ENOMEM;
		else
			snap_add_page(n, k);
	}
	if (rc == 0)
		rc = points_after(n, s, b, rev);
	pthread_mutex_unlock(&s->lock);
	return carry_finish(n, b, rev, rc);
}

/*
 * s's point answers, moved to n with their answers (the list kept, taken
 * out of s's): a point the buffer b wrote, deleted or took into a deleted
 * range gets its answer at rev; the others hold at rev as they did, as
 * nobody else committed between. Under s->lock; 0 or -ENOMEM.
 */
static int points_take(struct etcd_snap *n, struct etcd_snap *s, struct etcd_kept *kept,
		       const struct etcd_buf *b, int64_t rev)
{
	int rc = 0;

	while (kept) {
		struct etcd_kept *k = kept;

		kept = k->next;
		k->next = n->kept;
		n->kept = k;
		n->bytes += etcd_snap_answer_bytes(&k->r);
	}
	n->points = s->points;
	n->cap_points = s->cap_points;
	n->n_points = s->n_points;
	s->points = NULL;
	s->cap_points = s->n_points = 0;
	/* room now for one more, so that no answer below grows the table under the walk */
	if (n->cap_points && 2 * (n->n_points + 1) > n->cap_points && !etcd_snap_points_grow(n))
		return -ENOMEM;
	for (size_t i = 0; rc == 0 && i < n->cap_points; i++) {
		struct snap_point *p = &n->points[i];
		const void *v;
		size_t vl;

		if (!p->key)
			continue;
		n->bytes += p->len;
		if (etcd_buf_get(b, p->key, p->len, &v, &vl) != -ENOENT)
			rc = point_after(n, p->key, p->len, p->kept, b, rev);
	}
	return rc;
}

static int page_ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct etcd_kept *const *)a;
	uintptr_t y = (uintptr_t)*(struct etcd_kept *const *)b;

	return x < y ? -1 : x > y;
}

/*
 * s at rev, b applied, its pages taken from it and advanced in place
 * (page_advance): for a snapshot only the committing write holds, as no
 * reader can see its pages change. Heap, one reference (the handle's).
 * NULL when out of memory, and then s has lost its pages: the caller
 * retires it (nobody else reads it, and its write has committed).
 */
static struct etcd_snap *snap_take(struct etcd_snap *s, const struct etcd_buf *b, int64_t rev)
{
	struct etcd_snap *n = snap_new(rev);
	struct etcd_kept *pages[SNAP_PAGES_MAX], *sorted[SNAP_PAGES_MAX], **at;
	struct etcd_kept *pointed[SNAP_CARRY_POINTS], *moved = NULL;
	size_t np = 0, npt = 0;
	bool points;
	int rc = n ? 0 : -ENOMEM;

	if (rc)
		return NULL;
	pthread_mutex_lock(&s->lock);
	np = pages_of(s, pages);
	memcpy(sorted, pages, np * sizeof(*pages));
	qsort(sorted, np, sizeof(*sorted), page_ptr_cmp);
	points = s->n_points <= SNAP_CARRY_POINTS;
	for (size_t i = 0; points && i < s->cap_points; i++)
		if (s->points[i].key)
			pointed[npt++] = s->points[i].kept;
	qsort(pointed, npt, sizeof(*pointed), page_ptr_cmp);
	/*
	 * Out of s's answers: its pages, and the answers of its points when
	 * they go too. What stays (answers superseded, a listing's) s frees
	 * when its write ends: n holds only what it can still serve.
	 */
	for (at = &s->kept; *at;) {
		struct etcd_kept *k = *at;

		if (np && bsearch(at, sorted, np, sizeof(*sorted), page_ptr_cmp)) {
			*at = k->next;
		} else if (npt && bsearch(at, pointed, npt, sizeof(*pointed), page_ptr_cmp)) {
			*at = k->next;
			k->next = moved;
			moved = k;
		} else {
			at = &k->next;
		}
	}
	atomic_store_explicit(&s->pages, NULL, memory_order_relaxed);
	s->n_pages = 0;
	while (np) {	/* oldest first: the newest stays first in the list */
		struct etcd_kept *k = pages[--np];

		k->next = NULL;
		if (rc == 0)
			rc = page_advance(k, b, rev);
		if (rc == 0)
			snap_add_page(n, k);
		else
			etcd_kept_release(k);
	}
	if (points && rc == 0) {
		rc = points_take(n, s, moved, b, rev);
		moved = NULL;
	}
	while (moved) {	/* not taken: back to s, whose points still name them */
		struct etcd_kept *k = moved;

		moved = k->next;
		k->next = s->kept;
		s->kept = k;
	}
	pthread_mutex_unlock(&s->lock);
	return carry_finish(n, b, rev, rc);
}

/* What a carry of s copies: its pages, and its points while there are few. */
static size_t snap_carry_bytes(struct etcd_snap *s)
{
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	if (s->n_points <= SNAP_CARRY_POINTS)
		n = s->bytes;
	else
		for (struct etcd_kept *k = atomic_load_explicit(&s->pages, memory_order_relaxed); k;
		     k = k->next_page)
			n += etcd_snap_answer_bytes(&k->r);
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Whether the buffer puts what a copy cannot follow: chunks of a big value, leases. */
static bool buf_uncarried(const struct store_etcd *st, const struct etcd_buf *b)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t ll = etcd_key(st, ETCD_SPACE_VALUE, NULL, 0, lo), hl = etcd_prefix_end(lo, ll, hi);
	const void *k, *v;
	size_t kl, vl;

	return etcd_buf_has_leases(b) ||
	       etcd_buf_next_put(b, lo, ll, true, hi, hl, &k, &kl, &v, &vl) == 1;
}

/*
 * A write that read outside any snapshot (none was current when it began:
 * the mount's first writes, before its watch is established) and landed
 * one revision after its own reads: its pages, at rev with its buffer
 * applied, begin the snapshot, as its reads would have had it joined
 * one. NULL when there is nothing to carry.
 */
static struct etcd_snap *own_after(struct store_etcd_txn *t, int64_t rev)
{
	struct etcd_snap own = { .rev = t->rev, .refs = 1 }, *n;

	if (!t->pages || rev != t->rev + 1)
		return NULL;
	pthread_mutex_init(&own.lock, NULL);
	atomic_init(&own.pages, t->pages);	/* t's own, read at t->rev: borrowed for the copy */
	for (struct etcd_kept *k = t->pages; k; k = k->next_page) {
		own.bytes += etcd_snap_answer_bytes(&k->r);
		own.n_pages++;
	}
	n = own.bytes <= SNAP_CARRY_BYTES && own.n_pages < SNAP_PAGES_MAX ?
	    snap_after(&own, t->buf, rev) : NULL;
	pthread_mutex_destroy(&own.lock);
	return n;
}

/*
 * Whether st may make a snapshot at rev current, replacing st->snap (under
 * st->snap_lock). Not if a transaction pinned a newer revision, or the
 * watch applied one (another's commit) or broke. The watch retiring s for
 * this very commit is no reason, nor a snapshot a read began meanwhile at
 * rev (after that retirement) or before: the state at rev is the same,
 * and the carried one holds what the reads before the commit found.
 */
static bool carry_fits(struct store_etcd *st, const struct etcd_snap *s, int64_t rev)
{
	return (!st->snap || st->snap == s || st->snap->rev <= rev) && st->snap_floor <= rev &&
	       etcd_snap_current(st, rev);
}

/* Makes n current at rev (under st->snap_lock): the one it replaces, for the caller to drop. */
static struct etcd_snap *carry_publish(struct store_etcd *st, struct etcd_snap *n, int64_t rev)
{
	struct etcd_snap *old = st->snap;

	st->snap = n;
	st->snap_floor = rev;
	st->snap_epoch++;
	return old;
}

/*
 * The carry of t's snapshot s when t alone reads in it (and the handle
 * holds it): its pages advanced in place (snap_take), under st->snap_lock
 * so that nobody joins s meanwhile. False when another transaction reads
 * in s: the caller copies instead.
 */
static bool carry_alone(struct store_etcd_txn *t, int64_t rev)
{
	struct store_etcd *st = t->st;
	struct etcd_snap *s = t->snap, *n = NULL, *old = NULL;
	bool alone;

	pthread_mutex_lock(&st->snap_lock);
	pthread_mutex_lock(&s->lock);
	alone = s->refs == 1u + (st->snap == s);
	pthread_mutex_unlock(&s->lock);
	if (!alone) {
		pthread_mutex_unlock(&st->snap_lock);
		return false;
	}
	if (carry_fits(st, s, rev)) {
		n = snap_take(s, t->buf, rev);
		if (n)
			old = carry_publish(st, n, rev);
		else if (st->snap == s)
			old = etcd_snap_unset(st, INT64_MAX);	/* s lost its pages: nobody may join it */
	}
	pthread_mutex_unlock(&st->snap_lock);
	etcd_snap_drop(old);
	return true;
}

void etcd_snap_carry(struct store_etcd_txn *t, int64_t rev)
{
	struct store_etcd *st = t->st;
	struct etcd_snap *s = t->snap, *n, *old = NULL;
	bool ok;

	if (buf_uncarried(st, t->buf))
		return;
	if (!s) {
		n = own_after(t, rev);
	} else {
		/*
		 * One revision after the snapshot's: no commit of anyone's came
		 * between. And only while s still serves: each carry is young
		 * again, so carried however old, a mount whose every write read
		 * in the last one's carry committed one round trip apart for as
		 * long as nobody else landed, and another host's write, whose
		 * attempts read at the newest revision round trip after round
		 * trip, met one of those commits in every attempt and ran again
		 * for over a minute (tests/90, the 200 ms delay). A commit over
		 * 1 s after its snapshot was made ends the chain: that mount's
		 * next write reads anew, as the other's does.
		 */
		if (s->rev != t->rev || rev != s->rev + 1 || !etcd_snap_serves(s))
			return;
		if (carry_alone(t, rev))
			return;
		if (snap_carry_bytes(s) > SNAP_CARRY_BYTES)
			return;	/* the copy is per commit */
		n = snap_after(s, t->buf, rev);
	}
	if (!n)
		return;
	pthread_mutex_lock(&st->snap_lock);
	ok = carry_fits(st, s, rev);
	if (ok)
		old = carry_publish(st, n, rev);
	pthread_mutex_unlock(&st->snap_lock);
	etcd_snap_drop(old);
	if (!ok)
		etcd_snap_free(n);
}
