/*
 * store/etcd/etcd_buf.h - PRIVATE to store/: one write attempt of the etcd backend
 * (docs/ETCD.md section 4), buffered locally: puts, deletes and deleted
 * ranges coalesced per key, the guards of everything the attempt read, and
 * the one guarded Txn that commits it all. Keys here are full etcd keys
 * (store prefix + space byte + tuple key); the buffer knows no spaces.
 *
 * etcd refuses a key twice in one Txn, a put inside a deleted range
 * included; etcd_buf_commit therefore sends each deleted range as the gaps
 * between the keys put inside it, and drops single deletes a range covers.
 */
#ifndef KVFS_ETCD_BUF_H
#define KVFS_ETCD_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/etcd/etcd_client.h"

struct etcd_buf;

/* *out is heap; free it with etcd_buf_free. 0 or -ENOMEM. */
int etcd_buf_new(struct etcd_buf **out);
void etcd_buf_free(struct etcd_buf *b);

/* Buffered writes (the bytes are copied). 0 or -ENOMEM. */
int etcd_buf_put(struct etcd_buf *b, const void *key, size_t key_len,
		 const void *val, size_t val_len);

/* One put of a batch for etcd_buf_put_sorted (the bytes are copied). */
struct etcd_buf_kv {
	const void *key, *val;
	size_t key_len, val_len;
};

/*
 * Puts kvs[0..n) at once, in one merge with what b holds: kvs sorted by
 * key, no key twice; a key b holds already takes the new value. A put at a
 * time moves the array's tail at each: a commit putting many keys that
 * sort before others it holds (the children space's entries of a big
 * document) spent 88% of its time in that memmove. 0 or -ENOMEM (b as it was).
 */
int etcd_buf_put_sorted(struct etcd_buf *b, const struct etcd_buf_kv *kvs, size_t n);
int etcd_buf_del(struct etcd_buf *b, const void *key, size_t key_len);
/*
 * A put of val_len zero bytes whose value the caller fills in: *out points
 * at the buffered copy (valid until the next write to b). 0 or -ENOMEM.
 */
int etcd_buf_put_reserve(struct etcd_buf *b, const void *key, size_t key_len,
			 size_t val_len, void **out);
/* Deletes [key, end): every key put or buffered in it before is dropped. */
int etcd_buf_del_range(struct etcd_buf *b, const void *key, size_t key_len,
		       const void *end, size_t end_len);

/*
 * What the buffer says about key: 1 = written here (*val and *val_len borrowed,
 * valid until the next write to b), 0 = deleted here, -ENOENT = not touched
 * (read it from etcd at the attempt's revision).
 */
int etcd_buf_get(const struct etcd_buf *b, const void *key, size_t key_len,
		 const void **val, size_t *val_len);

/*
 * For scans that read through the buffer. etcd_buf_next_put: the first key
 * written here (not a tombstone) at or after key (after it when !inclusive)
 * and before end (an end of the one byte 0x00: no end): 1 with *k, *v
 * borrowed (valid until the next write to b), 0 when none.
 * etcd_buf_covering: 1 when a deleted range covers key, with *end (borrowed)
 * its end, so that a scan can skip the range in one step; else 0.
 */
int etcd_buf_next_put(const struct etcd_buf *b, const void *key, size_t key_len, bool inclusive,
		      const void *end, size_t end_len, const void **k, size_t *k_len,
		      const void **v, size_t *v_len);
int etcd_buf_covering(const struct etcd_buf *b, const void *key, size_t key_len,
		      const void **end, size_t *end_len);
/*
 * The first key at or after key (after it when !inclusive) that the buffer
 * wrote or deleted, or where a deleted range starts; key itself when a
 * deleted range covers it. 1 with *k borrowed (valid until the next write
 * to b), 0 when none: every key before *k is one etcd_buf_get leaves
 * alone (-ENOENT), so a walk of many keys asks it per stretch, not per key.
 */
int etcd_buf_next_touch(const struct etcd_buf *b, const void *key, size_t key_len, bool inclusive,
			const void **k, size_t *k_len);
/* Whether the attempt writes anything, and whether it deletes anything. */
bool etcd_buf_empty(const struct etcd_buf *b);
/*
 * Deletes other than those wholly under quiet[0..quiet_len), a key prefix
 * that no reader guards (quiet_len 0: every delete counts).
 */
bool etcd_buf_deletes(const struct etcd_buf *b, const void *quiet, size_t quiet_len);

/*
 * Guards, recorded as the attempt reads: a key read from etcd with its
 * mod_revision (0: it was absent), and a range read at revision `rev`
 * (no key in it may have changed after rev). The first guard per key wins.
 */
int etcd_buf_guard_key(struct etcd_buf *b, const void *key, size_t key_len, int64_t mod_rev);
/*
 * Guards that key is there at the commit, whatever its revision (etcd_kids_write.c:
 * a hint kept from an older entry): a compare of its own beside any guard
 * of the key a read recorded.
 */
int etcd_buf_guard_live(struct etcd_buf *b, const void *key, size_t key_len);
int etcd_buf_guard_range(struct etcd_buf *b, const void *key, size_t key_len,
			 const void *end, size_t end_len, int64_t rev);

/*
 * Over max_cmps distinct guards, the plan turns runs of neighbouring key
 * guards (keys whose byte at space_at is the same) into range guards
 * `MOD < read_rev + 1`, read_rev being the revision every guarded key was
 * read at; the caller must then guard the delete stamp (a delete does not
 * show in a range compare). etcd_buf_guards: guards recorded so far.
 */
void etcd_buf_coalesce(struct etcd_buf *b, int64_t read_rev, size_t space_at, size_t max_cmps);
size_t etcd_buf_guards(const struct etcd_buf *b);

/* What the commit will send: operations and bytes of keys and values (for the budget). */
size_t etcd_buf_ops(const struct etcd_buf *b);
size_t etcd_buf_bytes(const struct etcd_buf *b);
/* The bytes of its largest put (key and value): no plan can send less in one request. */
size_t etcd_buf_largest(const struct etcd_buf *b);

/*
 * Sends the whole attempt as one Txn. *committed false: a guard failed
 * (someone changed what the attempt read; run it again from the start).
 * *revision (may be NULL): the store revision after the commit. <0: the
 * client's error (see lib/etcd/etcd_client.h; c keeps the message).
 * Sent settled (etcd_client_txn_settled): a member that does not answer
 * within 2 s while another may gives -ETIMEDOUT, which the caller settles
 * through the writer key the Txn guards (docs/ETCD.md section 4).
 */
int etcd_buf_commit(struct etcd_buf *b, struct etcd_client *c, bool *committed, int64_t *revision);
/*
 * The same Txn with the guards' compares alone, no operation: *holds,
 * whether they all pass; *revision (may be NULL), the store revision its
 * answer was judged at (the cluster's newest then).
 */
int etcd_buf_check(struct etcd_buf *b, struct etcd_client *c, bool *holds, int64_t *revision);

/*
 * The Txn etcd_buf_commit would send, for a commit split over several
 * requests (store/etcd/etcd_big.c): the compares of the guards and the
 * operations, pairwise distinct keys, none inside another's deleted range,
 * so that any subset of them may go in one Txn and applying them twice or
 * in any order gives the same keys. Keys and values are borrowed from b
 * (valid until b's next write); release with etcd_buf_plan_release.
 */
struct etcd_buf_plan {
	struct etcd_cmp *cmps;
	size_t n_cmps;
	struct etcd_op *ops;
	size_t n_ops;
	uint8_t **gaps;	/* heap: the gap starts the ops point into */
	size_t n_gaps;
	uint8_t **ends;	/* heap: the ends of coalesced guards (etcd_buf_coalesce) */
	size_t n_ends;
};

int etcd_buf_plan(struct etcd_buf *b, struct etcd_buf_plan *p);
/*
 * The plan's compares alone (n_ops 0): a staged commit takes its
 * operations one at a time from etcd_buf_op_next instead, since the ops
 * array costs 88 bytes an operation, all held while it stages (26 MB of a
 * 94 MB peak for a document of 100,000 small leaves, 300,004 operations).
 */
int etcd_buf_plan_cmps(struct etcd_buf *b, struct etcd_buf_plan *p);
void etcd_buf_plan_release(struct etcd_buf_plan *p);

/*
 * etcd_buf_plan's operations one at a time, the same and in the same
 * order. Caller-owned: zero it (or etcd_buf_op_iter_init), call
 * etcd_buf_op_next until it returns 0, then etcd_buf_op_iter_release.
 * etcd_buf_op_next: 1 with *op filled, its keys borrowed from b and from
 * it (valid until the next call or b's next write); 0 at the end;
 * -ENOMEM.
 */
struct etcd_buf_op_iter {
	size_t r;	/* the deleted range being sent as its gaps */
	size_t i;	/* the key walked: in the range, then over all keys */
	size_t after;	/* SIZE_MAX: the next gap starts at the range's start; else just after key `after` */
	bool in_range;	/* i and after are set for range r */
	bool keys;	/* past the ranges: i walks the keys from the first */
	uint8_t *gap;	/* heap: the gap start of the last op returned */
	size_t gap_cap;
};

void etcd_buf_op_iter_init(struct etcd_buf_op_iter *it);
int etcd_buf_op_next(const struct etcd_buf *b, struct etcd_buf_op_iter *it, struct etcd_op *op);
void etcd_buf_op_iter_release(struct etcd_buf_op_iter *it);

/*
 * Calls fn with every key deleted (end NULL) and every deleted range, its
 * end as etcd's (a lone 0x00: no end); stops at non-zero. Ranges that
 * touched are one by then: a range may span several containers.
 */
typedef int (*etcd_buf_delete_fn)(const uint8_t *key, size_t key_len, const uint8_t *end,
				  size_t end_len, void *arg);
int etcd_buf_walk_deletes(const struct etcd_buf *b, etcd_buf_delete_fn fn, void *arg);
/* Calls fn with every key written or deleted and every deleted range's start; stops at non-zero. */
typedef int (*etcd_buf_walk_fn)(const uint8_t *key, size_t key_len, void *arg);
int etcd_buf_walk(const struct etcd_buf *b, etcd_buf_walk_fn fn, void *arg);

/*
 * Leases (docs/ETCD.md section 9): calls fn with every key put here (not
 * the tombstones); fn sets *lease (0: none) and the put carries it. A
 * later write of the key drops its lease again. Stops at fn's non-zero.
 */
typedef int (*etcd_buf_lease_fn)(const uint8_t *key, size_t key_len, int64_t *lease, void *arg);
int etcd_buf_lease_puts(struct etcd_buf *b, etcd_buf_lease_fn fn, void *arg);
/* Whether some put carries a lease. */
bool etcd_buf_has_leases(const struct etcd_buf *b);

#endif
