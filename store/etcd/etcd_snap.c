/*
 * store/etcd/etcd_snap.c - answers shared by a handle's read transactions
 * (docs/ETCD.md section 8a): while the watch shows no commit after
 * revision R (a mount's), or for 1 s in a one-shot process that runs no
 * watch (a CLI verb's), every read transaction that begins reads at R and
 * finds there what the others read, instead of asking etcd again.
 */
#include "store/etcd/etcd_int.h"
#include "store/etcd/etcd_snap_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t etcd_snap_answer_bytes(const struct etcd_range_result *r)
{
	size_t n = sizeof(*r);

	for (size_t i = 0; i < r->len; i++)
		n += r->kvs[i].key_len + r->kvs[i].val_len + sizeof(r->kvs[i]);
	return n;
}

void etcd_snap_free(struct etcd_snap *s)
{
	etcd_kept_release(s->kept);
	while (s->windows) {
		struct etcd_window *w = s->windows;

		s->windows = w->next;
		etcd_window_free(w);
	}
	for (size_t i = 0; i < s->cap_points; i++)
		free((void *)s->points[i].key);
	free(s->points);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Drops one reference; the last frees it. */
static void snap_put(struct etcd_snap *s)
{
	unsigned left;

	pthread_mutex_lock(&s->lock);
	left = --s->refs;
	pthread_mutex_unlock(&s->lock);
	if (!left)
		etcd_snap_free(s);
}

/* Whether it holds fewer answers than its bounds (under s->lock). */
static bool snap_bounded_locked(const struct etcd_snap *s)
{
	return s->bytes < SNAP_BYTES_MAX && s->n_pages < SNAP_PAGES_MAX &&
	       s->n_points < SNAP_POINTS_MAX;
}

/*
 * Whether it may be kept: within its bounds, however old. An old one
 * still holds the state at its revision, which a read at the newest
 * revision may find unchanged (snap_renew).
 */
static bool snap_bounded(struct etcd_snap *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = snap_bounded_locked(s);
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Whether new transactions may still begin in it: bounded and young (under st->snap_lock). */
bool etcd_snap_serves(struct etcd_snap *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = snap_bounded_locked(s) && (uint64_t)store_mono_ns() - s->born_ns < SNAP_AGE_NS;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

bool etcd_snap_current(struct store_etcd *st, int64_t rev)
{
	/*
	 * A one-shot process follows nobody else's commits: what it reads
	 * first is no older than its start, and a snapshot ages out in
	 * SNAP_AGE_NS as a mount's does when its watch is stuck.
	 */
	if (st->oneshot && !etcd_feed_running(st))
		return true;
	return etcd_feed_current(st, rev);
}

int64_t etcd_snap_position(struct store_etcd *st)
{
	int64_t rev = 0;

	pthread_mutex_lock(&st->snap_lock);
	if (st->snap && etcd_snap_serves(st->snap))
		rev = st->snap->rev;
	pthread_mutex_unlock(&st->snap_lock);
	return rev;
}

void etcd_snap_attach(struct store_etcd_txn *t)
{
	struct store_etcd *st = t->st;
	struct etcd_snap *s, *old = NULL;

	pthread_mutex_lock(&st->snap_lock);
	s = st->snap;
	if (s && !etcd_snap_serves(s)) {
		/*
		 * Too big: the next read starts anew. Too old: t reads at the
		 * newest revision, and renews it if that is still its own
		 * (etcd_snap_start); until then nobody joins it.
		 */
		if (!snap_bounded(s))
			old = etcd_snap_unset(st, INT64_MAX);
		s = NULL;
	}
	/* after that retirement: it was no commit, and t may start the next snapshot */
	t->snap_epoch = st->snap_epoch;
	if (s) {
		pthread_mutex_lock(&s->lock);
		s->refs++;
		pthread_mutex_unlock(&s->lock);
		t->snap = s;
		t->rev = s->rev;
	}
	pthread_mutex_unlock(&st->snap_lock);
	etcd_snap_drop(old);
}

/*
 * t's first read, at the newest revision, found the cluster at s's
 * revision still: nobody committed since s was read (a revision is the
 * whole cluster's), so s holds the state now, as fresh as t's own
 * answers, however old it is. It serves again for SNAP_AGE_NS with t's
 * answers added, and t reads in it. Before, the transaction that found s
 * too old started a snapshot of its own answers alone: what s had
 * gathered before a pause of over 1 s was lost, the pages a mkdir read
 * of its new directory among them, and a copy into it read each file's
 * attribute key and subtree from then on (docs/ETCD.md section 8a).
 * Under st->snap_lock.
 */
static void snap_renew(struct etcd_snap *s, struct store_etcd_txn *t)
{
	struct etcd_kept *k, *last = NULL;

	pthread_mutex_lock(&s->lock);
	for (k = t->kept; k; k = k->next) {
		s->bytes += etcd_snap_answer_bytes(&k->r);
		last = k;
	}
	if (last) {
		last->next = s->kept;
		s->kept = t->kept;
	}
	last = NULL;
	for (k = t->pages; k; k = k->next_page) {
		s->n_pages++;
		last = k;
	}
	if (last) {	/* t's pages first, described whole before they are published */
		last->next_page = atomic_load_explicit(&s->pages, memory_order_relaxed);
		atomic_store_explicit(&s->pages, t->pages, memory_order_release);
	}
	s->born_ns = (uint64_t)store_mono_ns();
	s->refs++;	/* t's */
	pthread_mutex_unlock(&s->lock);
	t->kept = t->pages = NULL;
	t->snap = s;
}

void etcd_snap_start(struct store_etcd_txn *t)
{
	struct store_etcd *st = t->st;
	struct etcd_snap *s = NULL, *old, *prev;
	bool refuse;

	if (t->snap || !t->rev)
		return;
	if (!t->base.write && (s = calloc(1, sizeof(*s))) != NULL) {
		pthread_mutex_init(&s->lock, NULL);
		s->rev = t->rev;
		s->born_ns = (uint64_t)store_mono_ns();
		s->refs = 2;	/* t, and the handle */
	}
	pthread_mutex_lock(&st->snap_lock);
	refuse = !s || t->rev < st->snap_floor || st->snap_epoch != t->snap_epoch ||
		 !etcd_snap_current(st, t->rev);
	/* a newer state was read: what an older snapshot answers would go back in time */
	if (t->rev > st->snap_floor)
		st->snap_floor = t->rev;
	old = st->snap && st->snap->rev < t->rev ? etcd_snap_unset(st, t->rev) : NULL;
	if (!refuse && st->snap && st->snap->rev == t->rev) {
		snap_renew(st->snap, t);	/* (older ones were retired just above) */
		refuse = true;	/* s is not needed */
	}
	if (refuse) {
		/*
		 * A write; or a commit of ours or one the watch saw since t began
		 * may be newer than t->rev, or another transaction read a newer
		 * state; or no watch runs to retire it (in a mount).
		 */
		pthread_mutex_unlock(&st->snap_lock);
		etcd_snap_drop(old);
		if (s) {
			pthread_mutex_destroy(&s->lock);
			free(s);
		}
		return;
	}
	/* t's answers so far are the snapshot's first */
	s->kept = t->kept;
	atomic_store_explicit(&s->pages, t->pages, memory_order_relaxed);
	for (struct etcd_kept *k = t->kept; k; k = k->next)
		s->bytes += etcd_snap_answer_bytes(&k->r);
	for (struct etcd_kept *k = t->pages; k; k = k->next_page)
		s->n_pages++;
	t->kept = t->pages = NULL;
	t->snap = s;
	prev = st->snap;	/* none: one at t->rev was renewed, an older one retired */
	st->snap = s;	/* the lock's release publishes s whole */
	pthread_mutex_unlock(&st->snap_lock);
	etcd_snap_drop(old);
	etcd_snap_drop(prev);
}

void etcd_snap_detach(struct store_etcd_txn *t)
{
	if (t->snap)
		snap_put(t->snap);
	t->snap = NULL;
	free(t->guarded);
	t->guarded = NULL;
	t->n_guarded = t->cap_guarded = 0;
}

#define ETCD_PAGE_PARTS 8	/* stretches of one page a write guards before it guards it whole */

/* Whether range end a sorts after range end b ("\0": etcd's end of every key). */
static bool end_after(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	bool a_inf = al == 1 && !a[0], b_inf = bl == 1 && !b[0];

	if (a_inf || b_inf)
		return a_inf && !b_inf;
	return store_key_cmp(a, al, b, bl) > 0;
}

int etcd_txn_guard_page(struct store_etcd_txn *t, const struct etcd_kept *k, const uint8_t *lo,
			size_t lo_len, const uint8_t *hi, size_t hi_len)
{
	struct etcd_guarded *g = NULL;

	if (!t->base.write || !t->snap || k->reader == t->id)
		return 0;	/* a page of its own was guarded when it read it */
	for (size_t i = 0; i < t->n_guarded && !g; i++)
		if (t->guarded[i].page == k)
			g = &t->guarded[i];
	if (g && g->whole)
		return 0;
	if (!g) {
		if (t->n_guarded == t->cap_guarded) {
			size_t cap = t->cap_guarded ? 2 * t->cap_guarded : 16;
			struct etcd_guarded *n = realloc(t->guarded, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			t->guarded = n;
			t->cap_guarded = cap;
		}
		g = &t->guarded[t->n_guarded++];
		*g = (struct etcd_guarded){ .page = k };
	}
	if (g->parts == ETCD_PAGE_PARTS) {
		g->whole = true;
		return etcd_txn_guard_range(t, k->from, k->from_len, k->end, k->end_len);
	}
	g->parts++;
	/* [lo, hi) within the page's range: what the scan can take from it */
	if (store_key_cmp(lo, lo_len, k->from, k->from_len) < 0) {
		lo = k->from;
		lo_len = k->from_len;
	}
	if (end_after(hi, hi_len, k->end, k->end_len)) {
		hi = k->end;
		hi_len = k->end_len;
	}
	return etcd_txn_guard_range(t, lo, lo_len, hi, hi_len);
}

struct etcd_snap *etcd_snap_unset(struct store_etcd *st, int64_t seen)
{
	struct etcd_snap *old = NULL;

	st->snap_epoch++;
	if (st->snap && st->snap->rev < seen) {
		old = st->snap;
		st->snap = NULL;
	}
	return old;
}

void etcd_snap_drop(struct etcd_snap *s)
{
	if (s)
		snap_put(s);
}

void etcd_snap_retire(struct store_etcd *st, int64_t seen)
{
	struct etcd_snap *old;

	pthread_mutex_lock(&st->snap_lock);
	old = etcd_snap_unset(st, seen);
	pthread_mutex_unlock(&st->snap_lock);
	etcd_snap_drop(old);
}

void etcd_txn_keep(struct store_etcd_txn *t, struct etcd_kept *k)
{
	struct etcd_snap *s = t->snap;

	if (!s) {
		k->next = t->kept;
		t->kept = k;
		return;
	}
	pthread_mutex_lock(&s->lock);
	k->next = s->kept;
	s->kept = k;
	s->bytes += etcd_snap_answer_bytes(&k->r);
	pthread_mutex_unlock(&s->lock);
}

void etcd_txn_keep_page(struct store_etcd_txn *t, struct etcd_kept *k)
{
	struct etcd_snap *s = t->snap;

	if (!s) {
		k->next_page = t->pages;
		t->pages = k;
		return;
	}
	pthread_mutex_lock(&s->lock);
	k->next_page = atomic_load_explicit(&s->pages, memory_order_relaxed);
	atomic_store_explicit(&s->pages, k, memory_order_release);
	s->n_pages++;
	pthread_mutex_unlock(&s->lock);
}

struct etcd_kept *etcd_txn_pages(const struct store_etcd_txn *t)
{
	if (t->snap)
		return atomic_load_explicit(&t->snap->pages, memory_order_acquire);
	return t->pages;
}

/* FNV-1a: the table's hash of an etcd key. */
static size_t key_hash(const uint8_t *k, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ k[i]) * 1099511628211ull;
	return (size_t)h;
}

/* The slot of key, or the empty one where it would go (under s->lock; cap_points > 0). */
struct snap_point *etcd_snap_point_slot(struct etcd_snap *s, const uint8_t *k, size_t len)
{
	size_t i = key_hash(k, len) & (s->cap_points - 1);

	for (;; i = (i + 1) & (s->cap_points - 1)) {
		struct snap_point *p = &s->points[i];

		if (!p->key || (p->len == len && memcmp(p->key, k, len) == 0))
			return p;
	}
}

struct etcd_kept *etcd_snap_point(struct store_etcd_txn *t, const uint8_t *k, size_t len)
{
	struct etcd_snap *s = t->snap;
	struct etcd_kept *found = NULL;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (s->cap_points)
		found = etcd_snap_point_slot(s, k, len)->kept;
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Doubles the table (under s->lock): false when there is no memory. */
bool etcd_snap_points_grow(struct etcd_snap *s)
{
	size_t cap = s->cap_points ? 2 * s->cap_points : 256;
	struct snap_point *old = s->points, *g = calloc(cap, sizeof(*g));
	size_t old_cap = s->cap_points;

	if (!g)
		return false;
	s->points = g;
	s->cap_points = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key)
			*etcd_snap_point_slot(s, old[i].key, old[i].len) = old[i];
	free(old);
	return true;
}

void etcd_snap_point_keep(struct store_etcd_txn *t, const uint8_t *k, size_t len,
			  struct etcd_kept *kept)
{
	struct etcd_snap *s = t->snap;
	struct snap_point *p;
	uint8_t *copy;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if ((2 * (s->n_points + 1) > s->cap_points && !etcd_snap_points_grow(s)) ||
	    !(copy = malloc(len ? len : 1))) {
		pthread_mutex_unlock(&s->lock);
		return;	/* a cache: the next get asks etcd */
	}
	p = etcd_snap_point_slot(s, k, len);
	if (p->key) {
		free(copy);	/* another transaction kept the same answer first */
	} else {
		memcpy(copy, k, len);
		*p = (struct snap_point){ .key = copy, .len = len, .kept = kept };
		s->n_points++;
		s->bytes += len;
	}
	pthread_mutex_unlock(&s->lock);
}

void etcd_below_free(struct etcd_below *b)
{
	if (!b)
		return;
	etcd_range_result_release(&b->r);
	free(b->live);
	free(b);
}

void etcd_window_free(struct etcd_window *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n_skel; i++)
		free(w->skel[i].keys);
	free(w->skel);
	etcd_below_free(w->below);
	free(w);
}

bool etcd_snap_window_keep(struct store_etcd_txn *t, struct etcd_window *w)
{
	struct etcd_snap *s = t->snap;

	if (!s)
		return false;
	pthread_mutex_lock(&s->lock);
	w->next = s->windows;
	s->windows = w;
	s->bytes += sizeof(*w);
	for (size_t i = 0; i < w->n_skel; i++)
		s->bytes += sizeof(w->skel[i]) + w->skel[i].from_len + w->skel[i].end_len + 1;
	pthread_mutex_unlock(&s->lock);
	return true;
}

/* Whether one of w's ranges holds key[0..len). */
static bool window_holds(const struct etcd_window *w, const uint8_t *key, size_t len)
{
	size_t lo = 0, hi = w->n_skel;

	while (lo < hi) {	/* the last range that starts at or before key */
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(w->skel[mid].from, w->skel[mid].from_len, key, len) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && store_key_cmp(key, len, w->skel[lo - 1].end, w->skel[lo - 1].end_len) < 0;
}

struct etcd_window *etcd_snap_window(struct store_etcd_txn *t, const uint8_t *prefix,
				     size_t len, bool keys_only, bool any_key, const uint8_t *from,
				     size_t from_len)
{
	struct etcd_snap *s = t->snap;
	struct etcd_window *found = NULL;

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	for (struct etcd_window *w = s->windows; w && !found; w = w->next)
		if (w->prefix_len == len && memcmp(w->prefix, prefix, len) == 0 &&
		    (keys_only || !w->keys_only) && (any_key || !w->any_key) &&
		    window_holds(w, from, from_len))
			found = w;
	pthread_mutex_unlock(&s->lock);
	return found;
}

const struct etcd_below *etcd_snap_below(struct store_etcd_txn *t, const struct etcd_window *w)
{
	const struct etcd_below *b;

	if (!t->snap || !w)
		return NULL;
	pthread_mutex_lock(&t->snap->lock);
	b = w->below;
	pthread_mutex_unlock(&t->snap->lock);
	return b;
}

bool etcd_snap_below_keep(struct store_etcd_txn *t, struct etcd_window *w, struct etcd_below *b)
{
	struct etcd_snap *s = t->snap;
	bool kept = false;

	if (!s || !w)
		return false;
	pthread_mutex_lock(&s->lock);
	if (!w->below) {
		w->below = b;	/* read-only from now on: the listings after it count from it */
		s->bytes += sizeof(*b) + b->r.len * (sizeof(*b->live) + sizeof(*b->r.kvs));
		for (size_t i = 0; i < b->r.len; i++)
			s->bytes += b->r.kvs[i].key_len + b->r.kvs[i].val_len;
		kept = true;
	}
	pthread_mutex_unlock(&s->lock);
	return kept;
}
