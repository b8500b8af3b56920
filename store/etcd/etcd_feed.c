/*
 * store/etcd/etcd_feed.c - the etcd backend's change feed (docs/ETCD.md section
 * 8): one watch thread per handle, with a client of its own, on the
 * store's whole prefix; the events it receives are kept in a bounded ring
 * that store_feed_read and store_changed_elsewhere read. Started by the
 * first call that needs it (a mount's watcher), so one-shot verbs never
 * run it. A watch that broke resumes after the last revision it applied;
 * one that fell behind compaction, or a ring that overflowed, makes the
 * next read answer -ESTALE (re-check everything). Also whether what the
 * handle reads may be stale (store_stale): the watch is down, or its
 * member has not confirmed for ETCD_FRESH_MS that it is current.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FEED_RING 8192	/* events kept */
#define FEED_MINE 256	/* revisions of our own recent commits kept */
/*
 * A watch that resumes this many revisions behind its member skips the
 * backlog: the reader re-checks everything instead. Such a backlog would
 * mostly end so anyway (more paths than the fs side lists, FEED_RING
 * overwritten), and its events came first: traced after a 13 s minority
 * cut, 17,364 events of 1,918 revisions took the member and the parse
 * 0.93 s before the first new commit; 4,579 of 509 revisions, 0.9 s (at
 * load 8).
 */
#define FEED_SKIP_REVS 256
/*
 * A watch whose member confirmed this recently that it is current (every
 * ETCD_CONFIRM_MS while all is well) is fresh: 2 to 3 s between probes
 * (libcurl looks in about once a second), and a loaded machine's delays.
 */
#define ETCD_FRESH_MS 5000

struct feed_ev {
	uint64_t rev;
	uint8_t *key;	/* heap: the tuple key */
	size_t len;
	enum store_change_kind kind;	/* a deleted key: its node and whatever was below it */
	bool gone;	/* store_change's: a key deleted, or a subtree a commit's entry names deleted */
	bool own;	/* from an entry this handle wrote: mine however many commits since
			 * (the revisions kept for mine hold only the last FEED_MINE) */
};

struct etcd_feed {
	struct store_etcd *st;
	struct etcd_client *c;	/* the watch's own handle */
	pthread_t thread;
	atomic_bool stop;
	pthread_mutex_t lock;	/* guards everything below */
	struct feed_ev ring[FEED_RING];
	size_t head, count;	/* the next slot to write; events held */
	uint64_t start;	/* the feed knows every change after this revision ... */
	uint64_t lost;	/* ... except those up to this one (0: none lost) */
	uint64_t applied;	/* every change up to here is in the ring */
	uint64_t seen;	/* store_changed_elsewhere looked up to here */
	uint64_t skip_to;	/* a backlog up to here is not read (FEED_SKIP_REVS); 0: none */
	bool live;	/* the watch is established (etcd_feed_current) */
	int64_t start_ns;	/* CLOCK_MONOTONIC when start was read: current then */
	char why[160];	/* why the last watch ended ("": none has) */
	unsigned test_lag_us;	/* the test hook KVFS_ETCD_TEST_WATCH_LAG_MS: each event waits so long */
	uint64_t mine[FEED_MINE];
	size_t mine_head;
};

static void ring_push(struct etcd_feed *f, uint64_t rev, enum store_change_kind kind,
		      bool gone, bool own, const uint8_t *key, size_t len)
{
	struct feed_ev *e = &f->ring[f->head];
	uint8_t *copy = malloc(len ? len : 1);

	if (f->count == FEED_RING) {
		if (e->rev > f->lost)
			f->lost = e->rev;	/* overwritten unread: the reader must re-check */
		free(e->key);
	} else {
		f->count++;
	}
	if (!copy) {
		/* no memory for the key: say this revision is lost instead */
		if (rev > f->lost)
			f->lost = rev;
		e->key = NULL;
		e->len = 0;
		e->rev = 0;
	} else {
		if (len)
			memcpy(copy, key, len);
		e->key = copy;
		e->len = len;
		e->rev = rev;
		e->kind = kind;
		e->gone = gone;
		e->own = own;
	}
	f->head = (f->head + 1) % FEED_RING;
}

/*
 * What came up to rev is unknown (a backlog skipped, a start revision
 * compacted): the reader re-checks every node. Under f->lock.
 */
static void lose_upto(struct etcd_feed *f, uint64_t rev)
{
	if (rev <= f->applied)
		return;
	if (rev > f->lost)
		f->lost = rev;
	f->applied = rev;
}

static int on_event(const struct etcd_event *ev, void *arg)
{
	struct etcd_feed *f = arg;
	const struct store_etcd *st = f->st;
	struct etcd_snap *old;

	if (atomic_load(&f->stop))
		return -ECANCELED;
	if (!ev) {
		int64_t created = etcd_client_watch_created_rev(f->c);
		int rc = 0;

		pthread_mutex_lock(&f->lock);
		if (created > 0 && (uint64_t)created > f->applied + FEED_SKIP_REVS) {
			f->skip_to = (uint64_t)created;
			rc = ETCD_WATCH_AGAIN;	/* from past the backlog, on the same member */
		} else {
			f->live = true;	/* established */
		}
		pthread_mutex_unlock(&f->lock);
		return rc;
	}
	if (f->test_lag_us)
		usleep(f->test_lag_us);	/* (a watch that lags: what shared answers must not hide) */
	/*
	 * Under snap_lock too (taken first: the lock order), so that whoever
	 * sees the revision applied finds the answers shared below it retired.
	 */
	pthread_mutex_lock(&f->st->snap_lock);
	pthread_mutex_lock(&f->lock);
	if (ev->kv->key_len > st->prefix_len &&
	    memcmp(ev->kv->key, st->prefix, st->prefix_len) == 0) {
		const uint8_t *k = ev->kv->key + st->prefix_len;
		int space = k[0];

		uint64_t rev = (uint64_t)ev->kv->mod_rev;
		struct feed_entry e;
		struct store_change c;

		if (space == 'd' || space == 'a' || space == 's')	/* the spaces naming nodes */
			/* a key deleted: removed or replaced (a marker by a child); the entry says which */
			ring_push(f, rev, ev->is_delete ? STORE_CHANGE_SUBTREE : STORE_CHANGE_KEY,
				  false, false, k + 1, ev->kv->key_len - st->prefix_len - 1);
		else if (space == 'l' && !ev->is_delete && ev->kv->val &&
			 feed_entry_decode(ev->kv->val, ev->kv->val_len, &e) == 0)
			while (feed_entry_next(&e, &c) == 1)	/* the subtrees a commit deleted */
				ring_push(f, rev, c.kind, c.gone, e.writer == st->base.writer,
					  c.key, c.len);
	}
	/* the events of one revision come in one answer: complete at its last one */
	if (ev->last && (uint64_t)ev->revision > f->applied)
		f->applied = (uint64_t)ev->revision;
	else if (ev->kv->mod_rev > 0 && (uint64_t)ev->kv->mod_rev - 1 > f->applied)
		f->applied = (uint64_t)ev->kv->mod_rev - 1;
	old = etcd_snap_unset(f->st, ev->kv->mod_rev > (int64_t)f->applied ? ev->kv->mod_rev
									   : (int64_t)f->applied);
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_unlock(&f->st->snap_lock);
	etcd_snap_drop(old);
	return 0;
}

static void *feed_main(void *arg)
{
	struct etcd_feed *f = arg;
	const struct store_etcd *st = f->st;
	uint8_t end[ETCD_KEY_MAX];
	size_t el = etcd_prefix_end(st->prefix, st->prefix_len, end);

	while (!atomic_load(&f->stop)) {
		int64_t compact = 0, from;
		int rc;

		pthread_mutex_lock(&f->lock);
		from = (int64_t)f->applied + 1;
		pthread_mutex_unlock(&f->lock);
		rc = etcd_client_watch(f->c, st->prefix, st->prefix_len, end, el, from, on_event, f,
				       &compact);
		{
			/* until the next watch is established nothing would retire shared answers */
			struct etcd_snap *old;

			pthread_mutex_lock(&f->st->snap_lock);
			pthread_mutex_lock(&f->lock);
			f->live = false;
			if (rc == ETCD_WATCH_AGAIN) {
				snprintf(f->why, sizeof(f->why), "resumed past a backlog of %" PRIu64
					 " revisions", f->skip_to - f->applied);
				lose_upto(f, f->skip_to);
				f->skip_to = 0;
			} else {
				snprintf(f->why, sizeof(f->why), "%s", etcd_client_error(f->c));
			}
			old = etcd_snap_unset(f->st, INT64_MAX);
			pthread_mutex_unlock(&f->lock);
			pthread_mutex_unlock(&f->st->snap_lock);
			etcd_snap_drop(old);
		}
		if (atomic_load(&f->stop))
			break;
		if (rc == ETCD_WATCH_AGAIN)
			continue;	/* at once, past the backlog (lost above) */
		if (rc == ETCD_WATCH_MOVED)
			continue;	/* at once, on the member that answered */
		if (rc == -ESTALE) {
			/* fell behind compaction: what happened in between is unknown */
			uint64_t now = etcd_newest_revision(f->st);

			pthread_mutex_lock(&f->lock);
			lose_upto(f, now);
			pthread_mutex_unlock(&f->lock);
			continue;
		}
		usleep(200 * 1000);	/* the member went away: the next call tries the others */
	}
	return NULL;
}

/* Starts the watch unless it runs: 0, or -errno (the feed then says -ESTALE). */
static int feed_start(struct store_etcd *st)
{
	struct etcd_feed *f;
	uint64_t now;
	int rc;

	pthread_mutex_lock(&st->feed_lock);
	if (st->feed) {
		pthread_mutex_unlock(&st->feed_lock);
		return 0;
	}
	now = etcd_newest_revision(st);
	f = calloc(1, sizeof(*f));
	if (!f || !now) {
		free(f);
		pthread_mutex_unlock(&st->feed_lock);
		return f ? -EIO : -ENOMEM;
	}
	f->st = st;
	f->start = f->applied = f->seen = now;
	f->start_ns = store_mono_ns();
	if (getenv("KVFS_ETCD_TEST_WATCH_LAG_MS"))
		f->test_lag_us = (unsigned)atoi(getenv("KVFS_ETCD_TEST_WATCH_LAG_MS")) * 1000u;
	pthread_mutex_init(&f->lock, NULL);
	rc = etcd_client_open_for(st, &f->c, NULL, 0);
	if (rc == 0 && pthread_create(&f->thread, NULL, feed_main, f) != 0) {
		etcd_client_close(f->c);
		rc = -EAGAIN;
	}
	if (rc) {
		pthread_mutex_destroy(&f->lock);
		free(f);
	} else {
		st->feed = f;
	}
	pthread_mutex_unlock(&st->feed_lock);
	/* a one-shot handle's snapshot had no watch to retire it: from now on the watch's rules */
	if (rc == 0 && st->oneshot)
		etcd_snap_retire(st, INT64_MAX);
	return rc;
}

void store_etcd_feed_stop(struct store_etcd *st)
{
	struct etcd_feed *f;

	pthread_mutex_lock(&st->feed_lock);
	f = st->feed;
	st->feed = NULL;
	pthread_mutex_unlock(&st->feed_lock);
	if (!f)
		return;
	atomic_store(&f->stop, true);
	etcd_client_cancel(f->c);
	pthread_join(f->thread, NULL);
	etcd_client_close(f->c);
	for (size_t i = 0; i < FEED_RING; i++)
		free(f->ring[i].key);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void store_etcd_feed_mine(struct store_etcd *st, uint64_t rev)
{
	struct etcd_feed *f;

	pthread_mutex_lock(&st->feed_lock);
	f = st->feed;
	if (f) {
		pthread_mutex_lock(&f->lock);
		f->mine[f->mine_head] = rev;
		f->mine_head = (f->mine_head + 1) % FEED_MINE;
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_unlock(&st->feed_lock);
}

int etcd_feed_commit_begin(struct store_etcd *st)
{
	uint64_t floor;

	pthread_mutex_lock(&st->feed_lock);
	if (!st->feed) {
		pthread_mutex_unlock(&st->feed_lock);
		return -1;
	}
	pthread_mutex_lock(&st->feed->lock);
	floor = st->feed->applied;	/* the commit's revision will be past it */
	pthread_mutex_unlock(&st->feed->lock);
	pthread_mutex_unlock(&st->feed_lock);
	for (int i = 0; i < ETCD_INFLIGHT; i++) {
		uint_fast64_t free_slot = 0;

		if (atomic_compare_exchange_strong(&st->inflight[i], &free_slot, floor + 1))
			return i;
	}
	return -1;	/* its events may pass for another's: a needless re-check at worst */
}

void etcd_feed_commit_end(struct store_etcd *st, int slot)
{
	if (slot >= 0)
		atomic_store(&st->inflight[slot], 0);
}

/* How far the feed may hand out events from applied: short of any commit of ours under way. */
static uint64_t feed_handout_upto(struct store_etcd *st, uint64_t applied)
{
	for (size_t i = 0; i < ETCD_INFLIGHT; i++) {
		uint64_t slot = atomic_load(&st->inflight[i]);

		if (slot && slot - 1 < applied)
			applied = slot - 1;
	}
	return applied;
}

/* Under f->lock. */
static bool is_mine(const struct etcd_feed *f, uint64_t rev)
{
	for (size_t i = 0; i < FEED_MINE; i++)
		if (f->mine[i] == rev)
			return true;
	return false;
}

bool etcd_feed_current(struct store_etcd *st, int64_t rev)
{
	bool current = false;

	pthread_mutex_lock(&st->feed_lock);
	if (st->feed) {
		pthread_mutex_lock(&st->feed->lock);
		current = st->feed->live && st->feed->applied <= (uint64_t)rev;
		pthread_mutex_unlock(&st->feed->lock);
	}
	pthread_mutex_unlock(&st->feed_lock);
	return current;
}

bool etcd_feed_running(struct store_etcd *st)
{
	bool running;

	pthread_mutex_lock(&st->feed_lock);
	running = st->feed != NULL;
	pthread_mutex_unlock(&st->feed_lock);
	return running;
}

uint64_t store_etcd_position(struct store *sb)
{
	struct store_etcd *st = ETCD(sb);
	uint64_t pos, mine = atomic_load(&st->last_commit);

	if (st->oneshot && !etcd_feed_running(st)) {
		/* a one-shot verb: where its reads stand, with no watch started for it */
		pos = (uint64_t)etcd_snap_position(st);
		if (!pos)
			pos = etcd_oneshot_pin(st);
		return pos > mine ? pos : mine;
	}
	if (feed_start(st) != 0)
		return etcd_newest_revision(st);
	pthread_mutex_lock(&st->feed->lock);
	pos = st->feed->applied;
	pthread_mutex_unlock(&st->feed->lock);
	return pos > mine ? pos : mine;
}

/*
 * Fresh while the watch is established and its member confirmed within
 * ETCD_FRESH_MS that it is current (or the feed began, having read the
 * newest revision); else stale since then. No feed (a one-shot verb):
 * fresh, as it reads at a revision that was the newest less than
 * SNAP_AGE_NS before (docs/ETCD.md 8a).
 */
int store_etcd_stale(struct store *sb, struct store_stale *out)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_feed *f;
	char why[sizeof(f->why)];
	int64_t since, age;
	struct timespec real;
	bool live;

	pthread_mutex_lock(&st->feed_lock);
	f = st->feed;
	if (!f) {
		pthread_mutex_unlock(&st->feed_lock);
		return 0;
	}
	since = etcd_client_confirmed_ns(f->c);
	pthread_mutex_lock(&f->lock);
	live = f->live;
	out->position = f->applied;
	snprintf(why, sizeof(why), "%s", f->why[0] ? f->why : "not yet established");
	if (since < f->start_ns)
		since = f->start_ns;
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_unlock(&st->feed_lock);
	age = store_mono_ns() - since;
	if (live && age <= (int64_t)ETCD_FRESH_MS * 1000000)
		return 0;
	clock_gettime(CLOCK_REALTIME, &real);
	out->since_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec - age;
	if (live)
		snprintf(out->why, sizeof(out->why), "the watch's member has not confirmed for %.1f s "
			 "that it is current; reads are served from revision %" PRIu64,
			 (double)age / 1e9, out->position);
	else
		snprintf(out->why, sizeof(out->why), "the watch is down (%.120s); reads are served from "
			 "revision %" PRIu64, why, out->position);
	return 1;
}

bool store_etcd_changed_elsewhere(struct store *sb)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_feed *f;
	bool changed = false;

	if (feed_start(st) != 0)
		return true;
	f = st->feed;
	pthread_mutex_lock(&f->lock);
	/*
	 * A commit of ours the watch has not brought back yet: others may
	 * have committed before it, and store_position already counts it, so
	 * the caller must read the feed (to what it applied) or skip theirs.
	 */
	if (f->lost > f->seen || atomic_load(&st->last_commit) > f->applied)
		changed = true;
	for (size_t i = 0; !changed && i < f->count; i++) {
		const struct feed_ev *e = &f->ring[(f->head + FEED_RING - 1 - i) % FEED_RING];

		if (e->rev <= f->seen)
			break;
		changed = !is_mine(f, e->rev);
	}
	f->seen = f->applied;
	pthread_mutex_unlock(&f->lock);
	return changed;
}

int store_etcd_feed_read(struct store *sb, uint64_t after, store_feed_fn fn, void *arg,
			 uint64_t *upto)
{
	struct store_etcd *st = ETCD(sb);
	struct etcd_feed *f;
	struct feed_ev *evs = NULL;
	bool *mine = NULL;
	size_t n = 0, first;
	int rc = 0;

	if (feed_start(st) != 0) {
		*upto = etcd_newest_revision(st);
		return -ESTALE;
	}
	f = st->feed;
	pthread_mutex_lock(&f->lock);
	*upto = feed_handout_upto(st, f->applied);
	if (after < f->start || f->lost > after) {
		pthread_mutex_unlock(&f->lock);
		return -ESTALE;
	}
	/* the events after `after`, oldest first, copied out of the lock */
	while (n < f->count && f->ring[(f->head + FEED_RING - 1 - n) % FEED_RING].rev > after)
		n++;
	first = (f->head + FEED_RING - n) % FEED_RING;
	evs = calloc(n ? n : 1, sizeof(*evs));
	mine = calloc(n ? n : 1, sizeof(*mine));
	for (size_t i = 0; evs && mine && i < n; i++) {
		const struct feed_ev *e = &f->ring[(first + i) % FEED_RING];

		evs[i] = *e;
		evs[i].key = malloc(e->len ? e->len : 1);
		if (!evs[i].key) {
			n = i;
			rc = -ENOMEM;
			break;
		}
		memcpy(evs[i].key, e->key, e->len);
		mine[i] = e->own || is_mine(f, e->rev);
	}
	if (!evs || !mine)
		rc = -ENOMEM;
	pthread_mutex_unlock(&f->lock);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		struct store_change c = { .pos = evs[i].rev, .mine = mine[i],
					  .kind = evs[i].kind, .gone = evs[i].gone,
					  .key = evs[i].key, .len = evs[i].len };

		if (evs[i].rev <= *upto)
			rc = fn(arg, &c);
	}
	for (size_t i = 0; evs && i < n; i++)
		free(evs[i].key);
	free(evs);
	free(mine);
	return rc;
}
