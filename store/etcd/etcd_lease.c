/*
 * store/etcd/etcd_lease.c - keys that expire by themselves on etcd (docs/ETCD.md
 * section 9): store_txn_expire_puts asks the caller for each put's deadline
 * and attaches the put to the lease of that deadline's second, one lease
 * per second shared by every key expiring then, granted once per handle.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* A cached lease is reused only while this many seconds are left: the commit must land first. */
#define LEASE_MARGIN_S 2

#define WALK_LEASES 8
struct lease_walk {
	struct store_etcd_txn *t;
	store_expiry_fn fn;
	void *arg;
	int64_t now_s;
	/*
	 * The leases this commit granted, by deadline second: its keys of one
	 * deadline share one, however near (a big value's chunks and stub
	 * expire in one revision), where the store's cache keeps only those
	 * far enough from their end to serve later commits.
	 */
	struct { int64_t second, id; } granted[WALK_LEASES];
	size_t n_granted;
};

static int64_t now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

void etcd_lease_forget(struct store_etcd *st)
{
	st->n_leases = 0;
}

/* The public space stored under byte b (META excluded: it never expires), or -1. */
static int space_of_byte(int b)
{
	for (int s = STORE_SPACE_DATA; s < STORE_SPACE_COUNT; s++)
		if (etcd_space_byte((enum store_space)s) == b)
			return s;
	return -1;
}

/* Keeps (second, id) in the cache, dropping leases too close to their end, else the oldest. */
static void cache_put(struct store_etcd *st, int64_t now_s, int64_t second, int64_t id)
{
	size_t out = 0, oldest = 0;

	for (size_t i = 0; i < st->n_leases; i++)
		if (st->leases[i].second >= now_s + LEASE_MARGIN_S)
			st->leases[out++] = st->leases[i];
	st->n_leases = out;
	if (st->n_leases == ETCD_LEASES) {
		for (size_t i = 1; i < st->n_leases; i++)
			if (st->leases[i].second < st->leases[oldest].second)
				oldest = i;
		st->leases[oldest] = st->leases[--st->n_leases];
	}
	st->leases[st->n_leases].second = second;
	st->leases[st->n_leases].id = id;
	st->n_leases++;
}

/*
 * The lease for deadline_ns: etcd runs it out no earlier than the deadline
 * (its TTL counts from the grant, rounded up to the second); a deadline
 * already past gets the shortest one.
 */
static int lease_for(struct lease_walk *w, int64_t deadline_ns, int64_t *id)
{
	struct store_etcd *st = w->t->st;
	int64_t second = (deadline_ns + 999999999) / 1000000000, ttl = second - w->now_s;
	int rc;

	for (size_t i = 0; i < w->n_granted; i++)
		if (w->granted[i].second == second) {
			*id = w->granted[i].id;
			return 0;
		}
	for (size_t i = 0; i < st->n_leases; i++)
		if (st->leases[i].second == second && second >= w->now_s + LEASE_MARGIN_S) {
			*id = st->leases[i].id;
			return 0;
		}
	rc = etcd_client_lease_grant(w->t->c, ttl > 0 ? ttl : 1, id, NULL);
	if (rc)
		return rc;
	if (w->n_granted < WALK_LEASES) {
		w->granted[w->n_granted].second = second;
		w->granted[w->n_granted].id = *id;
		w->n_granted++;
	}
	if (second >= w->now_s + LEASE_MARGIN_S)
		cache_put(st, w->now_s, second, *id);
	return 0;
}

static int lease_of_put(const uint8_t *key, size_t len, int64_t *lease, void *arg)
{
	struct lease_walk *w = arg;
	const struct store_etcd *st = w->t->st;
	int64_t deadline = 0;
	int space, rc;

	if (len <= st->prefix_len || memcmp(key, st->prefix, st->prefix_len) != 0)
		return 0;
	if (key[st->prefix_len] == ETCD_SPACE_VALUE && len >= st->prefix_len + 7 &&
	    key[len - 5] == 0xfe) {
		/* a chunk of a big value (etcd_val.c) expires with the key it belongs to */
		key++;
		len -= 5 + 1;
	}
	if (key[st->prefix_len] == ETCD_SPACE_KIDS) {
		/*
		 * A children-space entry (k, depth, container key) lives as long as
		 * its container: it takes the container's lease, or etcd's expiry
		 * would leave it behind (etcd_kids_write.c).
		 */
		if (len <= st->prefix_len + 2)
			return 0;	/* the marker */
		rc = w->fn(&w->t->base, w->arg, STORE_SPACE_DATA, key + st->prefix_len + 2,
			   len - st->prefix_len - 2, &deadline);
		return rc || deadline <= 0 ? rc : lease_for(w, deadline, lease);
	}
	space = space_of_byte(key[st->prefix_len]);
	if (space < 0)
		return 0;	/* the backend's own keys (stamps, log) */
	rc = w->fn(&w->t->base, w->arg, (enum store_space)space, key + st->prefix_len + 1,
		   len - st->prefix_len - 1, &deadline);
	if (rc || deadline <= 0)
		return rc;
	return lease_for(w, deadline, lease);
}

int store_etcd_expire_puts(struct store_txn *txn, store_expiry_fn fn, void *arg)
{
	struct lease_walk w = { .t = ETXN(txn), .fn = fn, .arg = arg, .now_s = now_seconds() };
	int rc = etcd_val_flush(w.t);	/* a reserved big value's chunks and stub are puts now */

	if (rc == 0)
		rc = etcd_kids_note(w.t);	/* the entries too, so that they take leases (the
						 * commit's own call then finds them made) */
	if (rc == 0)
		rc = etcd_buf_lease_puts(w.t->buf, lease_of_put, &w);
	if (rc == 0 && w.t->st->kids_trust && etcd_buf_has_leases(w.t->buf)) {
		/* etcd's expiry deletes keys with no delete stamp: listings stop trusting entries */
		uint8_t k[ETCD_KEY_MAX];

		rc = etcd_buf_put(w.t->buf, k, etcd_kids_lease_flag(w.t->st, k), "", 0);
	}
	return rc;
}
