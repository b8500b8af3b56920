/*
 * model/ttl/ttl_int.h - private interface of model/ttl/ttl_space.c: time-to-live of nodes
 * (docs/FORMAT.md, "TTL: expiry and ttl spaces"). A node's deadline lives
 * twice: ttl (node key -> deadline) answers "when does this node go", expiry
 * (deadline, node key) -> "" lists what goes next, in order. Both are
 * written in the transaction that changes the node. Times are CLOCK_REALTIME
 * nanoseconds; every function that compares with "now" takes it as an
 * argument (tests inject it).
 */
#ifndef KVFS_MODEL_TTL_INT_H
#define KVFS_MODEL_TTL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct model;

#define TTL_DEADLINE_SIZE 8	/* big-endian unsigned nanoseconds since the epoch */
#define TTL_EXPIRY_KEY_MAX (TTL_DEADLINE_SIZE + STORE_KEY_MAX)
#define TTL_SECONDS_MAX 3155760000LL	/* 100 years: a deadline always fits */

/* The expiry-space key of node key[0..len] expiring at deadline_ns: its length. */
size_t ttl_expiry_key(int64_t deadline_ns, const uint8_t *key, size_t len,
		      uint8_t out[TTL_EXPIRY_KEY_MAX]);
/* Splits an expiry key; false when it is too short to hold a node key. *key borrows ek. */
bool ttl_expiry_parse(const void *ek, size_t len, int64_t *deadline_ns, const uint8_t **key,
		      size_t *key_len);
void ttl_deadline_encode(int64_t deadline_ns, uint8_t out[TTL_DEADLINE_SIZE]);
/* false when v is not a deadline value (8 bytes, above 0 and within int64). */
bool ttl_deadline_decode(const void *v, size_t len, int64_t *deadline_ns);

/* The node's own deadline: 0, -ENOENT when it has none, -EIO when the value is bad. */
int ttl_get(struct store_txn *txn, const uint8_t *key, size_t len, int64_t *deadline_ns);
/* Sets (or moves) the node's deadline: both spaces. */
int ttl_set(struct store_txn *txn, const uint8_t *key, size_t len, int64_t deadline_ns);
/* A new row of a table with a default: its deadline, unless it has one already. */
int ttl_default(struct store_txn *txn, const uint8_t *key, size_t len, int64_t seconds,
		int64_t now_ns);
/* Drops the node's own deadline, if any (an overwrite). */
int ttl_clear(struct store_txn *txn, const uint8_t *key, size_t len);
/* Drops the deadlines of key[0..len] and every node under it. */
int ttl_delete_subtree(struct store_txn *txn, const uint8_t *key, size_t len);
/*
 * Moves the deadlines of key[0..len] and the nodes under it to the keys fn
 * gives them (an attr_rekey_fn, model/tree/tree_int.h: 1 and the new key,
 * 0 to leave one where it is, or -errno; fn's new keys are keys it leaves):
 * a rename, or a container's kind change. whole (a rename): the ones fn
 * leaves are dropped too.
 */
int ttl_remap_subtree(struct store_txn *txn, const uint8_t *key, size_t len,
		      int (*fn)(void *arg, const uint8_t *key, size_t len, uint8_t *out,
				size_t *out_len),
		      void *arg, bool whole);
/* Drops the deadlines under key[0..len] whose node no longer exists. */
int ttl_prune(struct store_txn *txn, const uint8_t *key, size_t len);
/*
 * When the node or an ancestor expires: the earliest of their deadlines,
 * 0 when none has one. One O(1) look when the store has no TTL at all,
 * else one get per level.
 */
int ttl_effective(struct store_txn *txn, const uint8_t *key, size_t len, int64_t *deadline_ns);
/*
 * Hides every node whose deadline is <= now_ns from the read transaction
 * (store_txn_hide): it reads as deleted. Walks the expiry space from its
 * start while deadlines are due: nothing when the reaper keeps up.
 */
int ttl_hide_expired(struct store_txn *txn, int64_t now_ns);
/* A read transaction with expired nodes hidden: every model read starts so. */
int tree_read_begin(struct model *m, struct store_txn **out);
/*
 * Removes up to max due nodes (deadline <= now_ns), after skipping the
 * first `skip` due ones, in txn, each as rm -r does (tables are kept exact
 * at commit by tree_write's machinery). *done counts the entries handled
 * (an expiry entry without its node is only dropped).
 */
int ttl_reap_txn(struct store_txn *txn, int64_t now_ns, unsigned skip, unsigned max,
		 unsigned *done);

/*
 * Removes what is due, a few bounded batches, before a write (tree_write):
 * failures are left alone (the nodes stay hidden; the daemon's reaper tries
 * again).
 */
void ttl_reap_due(struct model *m);

/*
 * kvfs check: every ttl entry a node's, with a valid deadline and its
 * expiry entry; every expiry entry well formed and matching its ttl entry.
 * fn is a table_report_fn (model/table/table_int.h); *entries counts ttl entries.
 */
int ttl_check(struct store_txn *txn, void (*fn)(void *arg, const uint8_t *key, size_t len,
						const char *msg),
	      void *arg, uint64_t *entries);
/*
 * check --repair: rebuilds both spaces from the valid pairs either holds
 * whose node exists (the earlier deadline when they disagree).
 */
int ttl_repair(struct store_txn *txn, uint64_t *kept);

/*
 * TTLs the store enforces itself (STORE_CAN_EXPIRE; model/ttl/ttl_lease.c);
 * both do nothing on other stores. ttl_lease_txn: last in every model
 * write (tt: its tables, may be NULL): gives each key it put the earliest
 * deadline of its node and the node's ancestors, so the store deletes it
 * with the node (index entries with their row). ttl_lease_reput: puts the
 * subtree at key[0..len] again (data, attributes, schemas, deadlines,
 * index entries), so that a TTL set, changed or removed on it reaches keys
 * this write would not otherwise touch.
 */
struct table_txn;
int ttl_lease_txn(struct store_txn *txn, struct table_txn *tt);
int ttl_lease_reput(struct store_txn *txn, const uint8_t *key, size_t len);

#endif
