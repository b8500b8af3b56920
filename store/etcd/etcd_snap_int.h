/*
 * store/etcd/etcd_snap_int.h - the shared answers' own layout, for the two
 * files that hold them: etcd_snap.c (serving and keeping answers) and
 * etcd_snap_carry.c (carrying them across a commit of ours).
 */
#ifndef KVFS_ETCD_SNAP_INT_H
#define KVFS_ETCD_SNAP_INT_H

#include "store/etcd/etcd_int.h"

#define SNAP_AGE_NS (1000ull * 1000 * 1000)	/* a snapshot serves new transactions for 1 s at most */
#define SNAP_BYTES_MAX (16u << 20)	/* keys and values it holds before it serves no new ones */
#define SNAP_PAGES_MAX 1024u	/* pages (searched one by one) before the same */
#define SNAP_POINTS_MAX 16384u	/* point answers before the same */
#define SNAP_CARRY_BYTES (256u << 10)	/* what a commit copies to carry it, at most */
#define SNAP_CARRY_POINTS 256u	/* older point answers a carry copies, at most */

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

/* What an answer holds, in bytes, for the snapshot's bound. */
size_t etcd_snap_answer_bytes(const struct etcd_range_result *r);
/* Frees s and every answer it owns; its references are gone. */
void etcd_snap_free(struct etcd_snap *s);
/* Whether new transactions may still begin in s: bounded and young (under st->snap_lock). */
bool etcd_snap_serves(struct etcd_snap *s);
/* The slot of key in s's point answers, or the empty one where it would go (under s->lock; cap_points > 0). */
struct snap_point *etcd_snap_point_slot(struct etcd_snap *s, const uint8_t *k, size_t len);
/* Doubles s's point table (under s->lock): false when there is no memory. */
bool etcd_snap_points_grow(struct etcd_snap *s);

#endif
