/*
 * store/etcd_int.h - PRIVATE to store/etcd_*.c: the etcd backend's handle,
 * transaction and key layout (docs/ETCD.md section 3), shared by
 * store/etcd_store.c (open, transactions, point operations) and
 * store/etcd_scan.c (paged scans).
 */
#ifndef KVFS_ETCD_INT_H
#define KVFS_ETCD_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "store/etcd_buf.h"
#include "store/etcd_client.h"
#include "store/etcd_store.h"

#define ETCD_PREFIX_MAX 200	/* bytes of the URL's PREFIX */
/* A full etcd key: PREFIX, 0x00, space byte, tuple key, room for a 0x00/0xff suffix. */
#define ETCD_KEY_MAX (ETCD_PREFIX_MAX + 2 + STORE_KEY_MAX + 2)
#define ETCD_POOL_MAX 16	/* idle client handles kept */
#define ETCD_PAGE 256		/* keys per range request of a scan */

/* Private key spaces (docs/ETCD.md section 3), after the store's own bytes. */
#define ETCD_SPACE_STAMP 'x'	/* the delete stamp: put by every commit that deletes */
#define ETCD_SPACE_WRITER 'w'	/* w<writer id> = attempt number: did a lost commit land? */

struct store_etcd {
	char *endpoints;
	uint8_t prefix[ETCD_PREFIX_MAX + 1];	/* PREFIX 0x00 */
	size_t prefix_len;	/* including the 0x00 */
	unsigned flags;
	bool created;	/* this handle created the store */
	atomic_uint format;
	int64_t created_ns;
	uint64_t writer;	/* random id of this handle, for its writer key */
	atomic_uint_fast64_t last_commit;
	atomic_uint_fast64_t seq;	/* write attempts made, the value of the writer key */
	pthread_mutex_t write_lock;	/* one write transaction at a time per handle */
	pthread_mutex_t pool_lock;	/* guards pool[] and n_pool */
	struct etcd_client *pool[ETCD_POOL_MAX];
	size_t n_pool;
};

/* An answer kept until its transaction ends: values handed out point into it. */
struct etcd_kept {
	struct etcd_kept *next;
	struct etcd_range_result r;
};

struct store_etcd_txn {
	struct store_etcd *st;
	struct etcd_client *c;	/* from the pool, given back at the end */
	bool write;
	int64_t rev;	/* the pinned revision; 0 until the first read */
	struct etcd_buf *buf;	/* write: the attempt's buffer */
	bool stamp_guarded;	/* write: the delete stamp's guard is recorded */
	unsigned format;
	void *owner;
	struct etcd_kept *kept;
};

/* Full key of (space, key) into out (ETCD_KEY_MAX bytes); its length. */
size_t etcd_key(const struct store_etcd *st, int space, const void *key, size_t key_len,
		uint8_t *out);
/* The byte a space is stored under. */
int etcd_space_byte(enum store_space space);
/*
 * A range read inside the transaction, at its revision (pinning it on the
 * first read); the answer is kept until the transaction ends (*out borrowed).
 */
int etcd_txn_range(struct store_etcd_txn *t, const void *key, size_t key_len,
		   const struct etcd_range_opts *opts, struct etcd_range_result **out);
/* In a write transaction: records that [key, end) was read (and guards the delete stamp). */
int etcd_txn_guard_range(struct store_etcd_txn *t, const void *key, size_t key_len,
			 const void *end, size_t end_len);

#endif
