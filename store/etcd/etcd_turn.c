/*
 * store/etcd/etcd_turn.c - a bounded turn for a write that keeps losing
 * (docs/ETCD.md section 4a). A write whose reads take long loses its
 * guards to a writer that commits once a round trip, attempt after
 * attempt. Once it is starving it puts the store's turn key, if absent, on
 * a short lease of its own; every commit guards that key absent (or, for
 * its holder, at the holder's put), so while it stands no other write of a
 * kvfs that knows turns can land, and the holder's next attempt does. The
 * holder gives the turn up by revoking the lease when its write ends, or
 * loses it when the lease runs out (a holder that died).
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

/*
 * A write is starving after TURN_LOSSES lost attempts in a row, or after
 * one lost attempt once TURN_AFTER_MS were spent in lost attempts: an
 * attempt that long is lost again to a writer that commits every round
 * trip, while a few short losses are ordinary contention that a retry
 * wins (and a turn costs three requests: a grant, the put, the revoke).
 */
#define TURN_LOSSES 4
#define TURN_AFTER_MS 2000
/* The turn's lease: how long a holder that died keeps every other writer waiting. */
#define TURN_LEASE_S 6
/* Attempts a holder may lose (to a writer that knows no turns) before it gives the turn up. */
#define TURN_HOLD 4
/* The longest pause between two reads of a turn another write holds. */
#define TURN_POLL_MS 200

size_t etcd_turn_key(const struct store_etcd *st, uint8_t *out)
{
	return etcd_key(st, ETCD_SPACE_TURN, NULL, 0, out);
}

void etcd_turn_note(struct store_etcd *st, const struct etcd_range_result *r)
{
	st->turn_seen = !r ? -1 : r->len ? r->kvs[0].mod_rev : 0;
}

int etcd_turn_guard(struct store_etcd_txn *t)
{
	uint8_t k[ETCD_KEY_MAX];

	/* mod revision 0: absent; the holder's: still its own put (its lease has not run out) */
	return etcd_buf_guard_key(t->buf, k, etcd_turn_key(t->st, k), t->st->turn_rev);
}

/* Gives up the turn we hold: revoking its lease deletes the key, if etcd has not already. */
static void turn_drop(struct store_etcd *st, struct etcd_client *c)
{
	if (c && etcd_client_lease_revoke(c, st->turn_lease) == 0 && st->turn_seen == st->turn_rev)
		st->turn_seen = 0;	/* (else its lease runs out) */
	st->turn_rev = st->turn_lease = 0;
	st->turn_losses = 0;
}

/*
 * Puts the turn key if it is absent, on a lease of its own. Two starving
 * writes may try at once: the compare lets one put it, the other learns
 * the winner's revision and waits. A lost answer revokes the lease, so a
 * put that landed unknown to us is undone.
 */
static void turn_take(struct store_etcd *st, struct etcd_client *c)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_turn_key(st, k);
	struct etcd_cmp absent = { .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .key = k,
				   .key_len = kl, .rev = 0 };
	struct etcd_op put = { .type = ETCD_OP_PUT, .key = k, .key_len = kl, .val = "" };
	struct etcd_op get = { .type = ETCD_OP_RANGE, .key = k, .key_len = kl };
	struct etcd_txn_result r;
	int64_t lease;

	if (etcd_client_lease_grant(c, TURN_LEASE_S, &lease, NULL) != 0)
		return;
	put.lease = lease;
	if (etcd_client_txn(c, &absent, 1, &put, 1, &get, 1, &r) == 0) {
		if (r.succeeded) {
			st->turn_rev = r.revision;	/* the Txn's one revision: the put's */
			st->turn_lease = lease;
			st->turn_losses = 0;
		} else {
			etcd_turn_note(st, r.len == 1 ? &r.ranges[0] : NULL);
		}
		etcd_txn_result_release(&r);
	}
	if (!st->turn_rev)
		(void)etcd_client_lease_revoke(c, lease);
}

/*
 * Waits while another write holds the turn: until it is gone, or as long
 * as a lease of a holder that died could keep it (then the next attempt
 * fails its guard again and comes back here, if it still stands).
 */
static void turn_wait(struct store_etcd *st, struct etcd_client *c)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_turn_key(st, k);
	int64_t until = store_mono_ns() + (TURN_LEASE_S + 1) * INT64_C(1000000000);
	unsigned pause_ms = 2;

	while (st->turn_seen > 0 && store_mono_ns() < until && !etcd_deadline_passed()) {
		struct etcd_range_result r;

		usleep(pause_ms * 1000);
		if (pause_ms < TURN_POLL_MS)
			pause_ms *= 2;
		if (etcd_range_retry(c, k, kl, NULL, &r) != 0) {
			etcd_turn_note(st, NULL);
			return;
		}
		etcd_turn_note(st, &r);
		etcd_range_result_release(&r);
	}
}

void etcd_turn_between(struct store_etcd *st, unsigned lost, int64_t losing_ns)
{
	bool starving = lost >= TURN_LOSSES || losing_ns >= TURN_AFTER_MS * INT64_C(1000000);
	struct etcd_client *c;

	if (etcd_client_take(st, &c) != 0)
		return;
	if (st->turn_rev) {
		/*
		 * Lost while holding it: to a writer that knows no turns, or a
		 * commit record, and the turn still ours (renewed); or the
		 * lease ran out (it is gone, or another's now).
		 */
		if (st->turn_seen == st->turn_rev && ++st->turn_losses < TURN_HOLD &&
		    etcd_client_lease_keepalive(c, st->turn_lease, NULL) == 0)
			goto out_give;
		starving = starving && st->turn_seen != st->turn_rev;	/* held long enough: let others by */
		turn_drop(st, c);
	}
	if (st->turn_seen > 0)
		turn_wait(st, c);
	if (starving && st->turn_seen <= 0)
		turn_take(st, c);
out_give:
	etcd_client_give(st, c);
}

void etcd_turn_release(struct store_etcd *st)
{
	struct etcd_client *c = NULL;

	if (!st->turn_lease)
		return;
	if (etcd_client_take(st, &c) != 0)
		c = NULL;
	turn_drop(st, c);
	etcd_client_give(st, c);
}
