/*
 * store/etcd/etcd_snap.c - answers shared by a mount's read transactions
 * (docs/ETCD.md section 8a): while the watch shows no commit after
 * revision R, every read transaction that begins reads at R and finds
 * there what the others read, instead of asking etcd again.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SNAP_AGE_NS (1000ull * 1000 * 1000)	/* a snapshot serves new transactions for 1 s at most */
#define SNAP_BYTES_MAX (16u << 20)	/* keys and values it holds before it serves no new ones */
#define SNAP_PAGES_MAX 1024u	/* pages (searched one by one) before the same */
#define SNAP_POINTS_MAX 16384u	/* point answers before the same */

/* A point get's answer, by its etcd key (open addressing). */
struct snap_point {
	const uint8_t *key;	/* borrowed from kept (its request key) */
	size_t len;
	struct etcd_kept *kept;
};

struct etcd_snap {
	int64_t rev;
	uint64_t born_ns;
	pthread_mutex_t lock;	/* guards everything below but pages' readers */
	unsigned refs;	/* transactions attached, plus one while it is the handle's current one */
	struct etcd_kept *kept;	/* every answer, owned */
	/* the pages, newest first: published whole (release), read without the lock (acquire) */
	struct etcd_kept *_Atomic pages;
	struct snap_point *points;
	size_t cap_points, n_points, n_pages, bytes;
	struct etcd_window *windows;	/* listings' skeletons, newest first (etcd_kids_list.c) */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t answer_bytes(const struct etcd_range_result *r)
{
	size_t n = sizeof(*r);

	for (size_t i = 0; i < r->len; i++)
		n += r->kvs[i].key_len + r->kvs[i].val_len + sizeof(r->kvs[i]);
	return n;
}

static void snap_free(struct etcd_snap *s)
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
		snap_free(s);
}

/* Whether new transactions may still begin in it (under st->snap_lock). */
static bool snap_serves(struct etcd_snap *s)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	ok = s->bytes < SNAP_BYTES_MAX && s->n_pages < SNAP_PAGES_MAX &&
	     s->n_points < SNAP_POINTS_MAX && now_ns() - s->born_ns < SNAP_AGE_NS;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void etcd_snap_attach(struct store_etcd_txn *t)
{
	struct store_etcd *st = t->st;
	struct etcd_snap *s, *old = NULL;

	pthread_mutex_lock(&st->snap_lock);
	s = st->snap;
	if (s && !snap_serves(s))
		old = etcd_snap_unset(st, INT64_MAX);	/* too old or too big: the next read starts anew */
	/* after that retirement: it was no commit, and t may start the next snapshot */
	t->snap_epoch = st->snap_epoch;
	s = st->snap;
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
		s->born_ns = now_ns();
		s->refs = 2;	/* t, and the handle */
	}
	pthread_mutex_lock(&st->snap_lock);
	refuse = !s || t->rev < st->snap_floor || st->snap_epoch != t->snap_epoch ||
		 !etcd_feed_current(st, t->rev);
	/* a newer state was read: what an older snapshot answers would go back in time */
	if (t->rev > st->snap_floor)
		st->snap_floor = t->rev;
	old = st->snap && st->snap->rev < t->rev ? etcd_snap_unset(st, t->rev) : NULL;
	if (refuse) {
		/*
		 * A write; or a commit of ours or one the watch saw since t began
		 * may be newer than t->rev, or another transaction read a newer
		 * state; or no watch runs to retire it.
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
		s->bytes += answer_bytes(&k->r);
	for (struct etcd_kept *k = t->pages; k; k = k->next_page)
		s->n_pages++;
	t->kept = t->pages = NULL;
	t->snap = s;
	prev = st->snap;	/* one at the same revision: this one replaces it */
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

int etcd_txn_guard_page(struct store_etcd_txn *t, const struct etcd_kept *k)
{
	int rc;

	if (!t->base.write || !t->snap)
		return 0;	/* a page of its own was guarded when it read it */
	for (size_t i = 0; i < t->n_guarded; i++)
		if (t->guarded[i] == k)
			return 0;
	if (t->n_guarded == t->cap_guarded) {
		size_t cap = t->cap_guarded ? 2 * t->cap_guarded : 16;
		const struct etcd_kept **g = realloc(t->guarded, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		t->guarded = g;
		t->cap_guarded = cap;
	}
	rc = etcd_txn_guard_range(t, k->from, k->from_len, k->end, k->end_len);
	if (rc == 0)
		t->guarded[t->n_guarded++] = k;
	return rc;
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
	s->bytes += answer_bytes(&k->r);
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
static struct snap_point *point_slot(struct etcd_snap *s, const uint8_t *k, size_t len)
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
		found = point_slot(s, k, len)->kept;
	pthread_mutex_unlock(&s->lock);
	return found;
}

/* Doubles the table (under s->lock): false when there is no memory. */
static bool points_grow(struct etcd_snap *s)
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
			*point_slot(s, old[i].key, old[i].len) = old[i];
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
	if ((2 * (s->n_points + 1) > s->cap_points && !points_grow(s)) ||
	    !(copy = malloc(len ? len : 1))) {
		pthread_mutex_unlock(&s->lock);
		return;	/* a cache: the next get asks etcd */
	}
	p = point_slot(s, k, len);
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
