/*
 * store/etcd/etcd_int.h - PRIVATE to store/etcd/: the etcd backend's handle,
 * transaction and key layout (docs/ETCD.md section 3), and what the
 * backend's files offer one another. Included by 13 of its 14 .c files
 * (all but etcd_buf.c, the write buffer, which has etcd_buf.h) and by its
 * store unit test, tests/unit/test_etcd_store.c.
 */
#ifndef KVFS_ETCD_INT_H
#define KVFS_ETCD_INT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "store/etcd/etcd_buf.h"
#include "lib/etcd/etcd_client.h"
#include "store/store_int.h"
#include "store/store_ops.h"

#define ETCD_PREFIX_MAX 200	/* bytes of the URL's PREFIX */
/* A full etcd key: PREFIX, 0x00, space byte, tuple key, room for a 0x00/0xff suffix. */
#define ETCD_KEY_MAX (ETCD_PREFIX_MAX + 2 + STORE_KEY_MAX + 2)
#define ETCD_POOL_MAX 16	/* idle client handles kept */
#define ETCD_PAGE 256		/* keys per range request of a scan */
#define ETCD_PAGE_AHEAD 1024	/* keys per request when a scan continues an earlier one's range */
#define ETCD_AHEAD_MAX 2	/* store_txn_expect_reads ranges a read transaction keeps */
#define ETCD_AHEAD_FIRST 64	/* keys of the first page a get reads ahead */
#define ETCD_TXN_BYTES (6u << 20)	/* raw bytes per Txn (docs/ETCD.md section 5) */
#define ETCD_TXN_OPS 8000u	/* operations per Txn (the cluster script allows 8192) */
#define ETCD_TXN_OPS_LOW 120u	/* the same under etcd's default --max-txn-ops (128) */
#define ETCD_TXN_ROOM 8u	/* of a budget's operations, kept for a Txn's own guards and markers */
#define ETCD_TXN_BYTES_LOW (900u << 10)	/* the same under etcd's default 1.5 MiB requests */
#define ETCD_DEL_KEYS 4000u	/* a prefix delete of up to this many keys deletes them one by one */

/* Private key spaces (docs/ETCD.md section 3), after the store's own bytes. */
#define ETCD_SPACE_STAMP 'x'	/* the delete stamp: put by every commit that deletes */
#define ETCD_SPACE_WRITER 'w'	/* w<writer id> = attempt number: did a lost commit land? */
/* A commit over one request (store/etcd/etcd_big.c, docs/ETCD.md section 6): */
#define ETCD_SPACE_RECORD 'c'	/* c = the store's one commit record being applied */
#define ETCD_SPACE_STAGE 'b'	/* b<id><chunk> = the staged operations of commit id */
#define ETCD_SPACE_PENDING 'q'	/* q<id> = "", on the writer's lease while it works */
#define ETCD_SPACE_KIDS 'k'	/* k<depth><container key> = hint key: the children space (etcd_kids_*.c) */
/* f = "" once a key was put with a lease; f<depth><container key> = "" once a leaf was put in it */
#define ETCD_SPACE_FLAGS 'f'
#define ETCD_LEASES 64	/* leases by deadline second kept in the handle (etcd_lease.c) */
#define ETCD_SPACE_VALUE 'v'	/* v<space><tuple key>0xfe<n> = chunk n of a big value (etcd_val.c) */
#define ETCD_SPACE_TURN 'u'	/* u = "", on its holder's lease: one write's turn (etcd_turn.c) */
#define ETCD_VAL_CHUNK (1u << 20)	/* bytes per chunk; a bigger data value is chunked */
#define ETCD_VKEY_MAX (ETCD_KEY_MAX + 8)	/* a chunk's key: 'v', the full key, 0xfe, number */
#define ETCD_CMPS_MAX 4096u	/* compares per commit Txn before key guards are coalesced */
#define ETCD_KIDS_WALK 16	/* a walk that skipped fewer children per page reads the children space */
#define ETCD_BIG_KEYS 4096	/* a container this big is read from its first child's hint (etcd_kids_list.c) */
#define ETCD_BIG_MAX 64	/* big containers a handle remembers */
#define ETCD_ROOM_MS 1000	/* store_room asks the cluster at most this often */
#define ETCD_QUOTA_DEFAULT (2ull << 30)	/* etcd's storage quota when a member does not tell its own */
#define ETCD_SILENT_TRY_MS ETCD_READ_TRY_MS	/* a request begun in the cluster's known silence waits this */
/*
 * The known silence is forgotten this long after it was noted: the next
 * request waits its whole deadline again, so that a cluster that answers,
 * but slower than ETCD_SILENT_TRY_MS, is heard at least that often.
 */
#define ETCD_SILENT_KEEP_MS 30000

/* Commits of one handle under way that the feed tells apart from others' (etcd_feed.c). */
#define ETCD_INFLIGHT 16

struct etcd_feed;
struct etcd_snap;
struct etcd_blob;
struct etcd_resv;

/* The handle: store.c's shared part first (store/store_ops.h). */
struct store_etcd {
	struct store base;
	char *endpoints;
	uint8_t prefix[ETCD_PREFIX_MAX + 1];	/* PREFIX 0x00 */
	size_t prefix_len;	/* including the 0x00 */
	bool created;	/* this handle created the store */
	atomic_uint_fast64_t last_commit;
	/*
	 * Commits of ours under way (etcd_feed_commit_begin): each slot 1 + the
	 * revision the watch had applied when it was sent, 0 when free. The
	 * feed hands out no event past the lowest: it may be that commit's,
	 * not yet noted as ours (store_etcd_feed_mine).
	 */
	atomic_uint_fast64_t inflight[ETCD_INFLIGHT];
	unsigned test_note_late_us;	/* fixed: the test hook KVFS_ETCD_TEST_NOTE_LATE_MS,
					 * a commit's answer read so late (tests/36) */
	atomic_uint_fast64_t seq;	/* write attempts made, the value of the writer key */
	atomic_uint_fast64_t txn_ids;	/* transactions begun: each one's id (etcd_kept.reader) */
	pthread_mutex_t write_lock;	/* one write transaction at a time per handle */
	/*
	 * Our writer key's mod revision as we last knew it (0: absent, -1:
	 * unknown); under write_lock. Every commit guards it, so that of a
	 * write's attempts at most one can land, however late (section 4).
	 */
	int64_t writer_rev;
	/*
	 * The turn (etcd_turn.c, docs/ETCD.md section 4a), all under
	 * write_lock: the mod revision of the turn key as our last settle read
	 * it (0: absent, -1: unknown); while our write holds the turn, the
	 * revision of our put of it and its lease (0: not held), and the
	 * attempts it lost while holding.
	 */
	int64_t turn_seen;
	int64_t turn_rev;
	int64_t turn_lease;
	unsigned turn_losses;
	unsigned test_read_us;	/* fixed: the test hook KVFS_ETCD_TEST_READ_MS, each
				 * point read of a write so late (test_turn) */
	struct etcd_health health;	/* members that stopped answering, for all its clients */
	/*
	 * The cluster's silence as a request met it (docs/ETCD.md section 12):
	 * health.answered_ns when a request last waited its whole deadline,
	 * silent_span_ns long, with no answer to any client. While nothing has
	 * answered since, a request with a deadline no longer than that waits
	 * ETCD_SILENT_TRY_MS for a first answer (store_etcd_deadline), not a
	 * whole deadline again: one file-system call is several requests.
	 * Until ETCD_SILENT_KEEP_MS after silent_noted_ns. All three under
	 * silent_lock, so that no request reads half of a mark.
	 */
	pthread_mutex_t silent_lock;
	int64_t silent_answered_ns;
	int64_t silent_span_ns;	/* 0: no silence met yet */
	int64_t silent_noted_ns;
	int64_t silent_keep_ns;	/* fixed: ETCD_SILENT_KEEP_MS, or the test hook
				 * KVFS_ETCD_TEST_SILENT_KEEP_MS (tests/90) */
	pthread_mutex_t pool_lock;	/* guards pool[] and n_pool */
	struct etcd_client *pool[ETCD_POOL_MAX];
	size_t n_pool;
	bool kids;	/* the store keeps the children space (its marker key is there) */
	/*
	 * ... and has given container records (store_set_container_test)
	 * entries since its creation (the marker's value is "2"), so the live
	 * entries below a child are its containers (etcd_kids_child_subdirs)
	 */
	bool kids_records;
	/*
	 * ... and since its creation kept the facts that let a listing trust an
	 * entry without reading its child (marker "3", docs/ETCD.md section 7):
	 * every kept hint guarded live, a leaf flag per container that got a
	 * leaf child, the lease flag.
	 */
	bool kids_trust;
	struct etcd_feed *feed;	/* the watch (store/etcd/etcd_feed.c), started by the first feed call */
	pthread_mutex_t feed_lock;	/* guards starting it */
	/*
	 * Opened with STORE_OPEN_ONESHOT (fixed at open): store_position
	 * starts no watch, and until one runs a snapshot is shared with no
	 * watch to retire it (etcd_snap_current).
	 */
	bool oneshot;
	/*
	 * The answers read transactions share while the watch shows no commit
	 * after theirs, or in a one-shot handle for SNAP_AGE_NS
	 * (store/etcd/etcd_snap.c); NULL when none. Lock order:
	 * snap_lock, then feed_lock, then the feed's own.
	 */
	pthread_mutex_t snap_lock;
	struct etcd_snap *snap;
	/* retirements so far (snap_lock): a read that began before one may not start a snapshot */
	uint64_t snap_epoch;
	/* the newest revision a transaction of the handle pinned (snap_lock): none starts below it */
	int64_t snap_floor;
	/* TTL leases, one per deadline second (store/etcd/etcd_lease.c); guarded by write_lock */
	struct etcd_lease_slot {
		int64_t second;	/* the lease runs out at the earliest then (unix seconds) */
		int64_t id;
	} leases[ETCD_LEASES];
	size_t n_leases;
	struct etcd_blob *val_cache;	/* the last big value assembled (etcd_val.c); pool_lock */
	/*
	 * The cluster's request limits as this handle knows them (docs/ETCD.md
	 * section 5): what the cluster script allows until the cluster refuses
	 * a Txn as too big, then etcd's defaults (etcd_limits_lower).
	 */
	atomic_size_t txn_ops;	/* operations (and, separately, compares) per Txn */
	atomic_size_t txn_bytes;	/* raw bytes of keys and values per Txn */
	atomic_bool limits_probed;	/* etcd_limits_probe asked the cluster */
	/*
	 * Containers whose subtree a scan found to hold more than
	 * ETCD_BIG_KEYS keys (data-space etcd keys, a ring; big_lock): their
	 * first page is read up to their first child's hint (etcd_kids_list.c).
	 */
	pthread_mutex_t big_lock;
	uint8_t big[ETCD_BIG_MAX][ETCD_KEY_MAX];
	size_t big_len[ETCD_BIG_MAX];
	size_t n_big, big_next;
	/* store_room's last answer and when it was asked (CLOCK_MONOTONIC ns, 0: never); room_lock */
	pthread_mutex_t room_lock;
	struct store_room room;
	int64_t room_ns;
};

/* An answer kept until its transaction ends: values handed out point into it. */
struct etcd_kept {
	struct etcd_kept *next;
	struct etcd_kept *next_page;	/* the transaction's pages only (read_page, etcd_scan.c) */
	struct etcd_range_result r;
	/* a scan's page: it holds every key of [from, end) at the revision (values too when has_vals) */
	bool has_vals;
	size_t from_len, end_len, scan_hi_len;
	uint8_t from[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	uint8_t scan_hi[ETCD_KEY_MAX];	/* the end of the range its scan wanted (end <= scan_hi) */
	uint64_t reader;	/* a page: the id of the transaction that read it */
};

struct store_etcd_txn {
	struct store_txn base;
	struct store_etcd *st;
	struct etcd_client *c;	/* from the pool, given back at the end */
	int64_t rev;	/* the pinned revision; 0 until the first read */
	struct etcd_buf *buf;	/* write: the attempt's buffer */
	bool stamp_guarded;	/* write: the delete stamp's guard is recorded */
	bool sent;	/* write: a commit of it was sent (it may have landed) */
	bool staged;	/* write: its commit went over one request (etcd_big_commit) */
	int64_t landed;	/* write: the revision its one-Txn commit landed at (0: none or unknown) */
	int64_t checked;	/* write: the revision its outcome was confirmed at (0: none) */
	/*
	 * write: the prefixes it deleted, for the other mounts' feeds (the
	 * watch shows each deleted key, not that a whole subtree went): put
	 * in the log key (space 'l') as one change-log entry at commit.
	 */
	struct feed_set feed;
	struct etcd_kept *kept;
	/*
	 * read: the shared answers it reads in (etcd_snap.c); then its own
	 * kept and pages stay empty, and what it reads goes there instead.
	 */
	struct etcd_snap *snap;
	uint64_t snap_epoch;	/* the handle's when it began */
	uint64_t id;	/* from the handle's txn_ids */
	/*
	 * write: the snapshot's pages it took answers from (heap): how many
	 * stretches of each it guarded, and whether it guarded one whole
	 */
	struct etcd_guarded {
		const struct etcd_kept *page;
		unsigned parts;
		bool whole;
	} *guarded;
	size_t n_guarded, cap_guarded;
	/*
	 * The pages among them, searched by every read: a whole-store pass
	 * (kvfs check) keeps an answer per point read, which the searches
	 * must not walk (that made them quadratic).
	 */
	struct etcd_kept *pages;
	/* big values assembled for this transaction (etcd_val.c), held until it ends */
	struct etcd_blob **blobs;
	size_t n_blobs, cap_blobs;
	struct etcd_resv *resv;	/* write: a big put_reserve not yet chunked */
	/*
	 * read: store_txn_expect_reads, a few key ranges (etcd keys) where a
	 * point get that no page holds reads a page from its key on: first a
	 * small one, four times bigger each time the last one served more
	 * than the get that read it. One that served only that get (the keys
	 * between the gets are others': a listing's children whose subtrees
	 * have attributes of their own) makes the next 8 misses ask alone,
	 * then 16, 32... before a small page is tried again.
	 */
	struct etcd_ahead {
		size_t lo_len, hi_len;
		uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
		const struct etcd_kept *last;	/* the last page read ahead, or NULL */
		unsigned served;	/* gets that page answered */
		int64_t limit;		/* its size */
		unsigned skip;		/* misses still to pass over */
		unsigned backoff;	/* how many the next useless page makes */
	} ahead[ETCD_AHEAD_MAX];
	int n_ahead;
	bool kids_upgrade;	/* a repair that makes the store keep records' entries (marker "2") */
	int guard_rc;	/* write: a guard a scan's close could not record (-ENOMEM): no commit */
	unsigned attempt;	/* write: attempts of this write before this one */
};

/* One range of a listing's skeleton (etcd_kids_list.c): every key of [from, end) is in r. */
struct etcd_skel {
	uint8_t *keys;	/* heap: from and end */
	const uint8_t *from;
	uint8_t *end;
	size_t from_len, end_len;
	struct etcd_range_result *r;	/* kept by the transaction (its snapshot's, in one) */
};

/*
 * One prefetch's skeleton (a window of a listing's children), kept in the
 * snapshot for the listings after it: a readdir fills its buffer in a new
 * transaction each time, and each would otherwise read its window again.
 * Immutable once kept; freed with the snapshot, whose answers r points to.
 */
/*
 * The children space one level below a listing's children (etcd_kids_subdirs.c's
 * etcd_kids_child_subdirs): every entry of [lo, hi) (tuple keys of the
 * children) is in r; when verified, live[i] says whether entry i's
 * container still holds a key (else only that an entry is there).
 */
struct etcd_below {
	struct etcd_range_result r;
	bool verified;
	bool *live;	/* heap, one per entry */
	uint8_t lo[STORE_KEY_MAX + 1], hi[ETCD_KEY_MAX + 1];
	size_t lo_len, hi_len;
};

struct etcd_window {
	struct etcd_window *next;
	uint8_t prefix[STORE_KEY_MAX];	/* the listed container (tuple key) */
	size_t prefix_len;
	bool keys_only;	/* its pages hold no values */
	bool any_key;	/* a trusted child's page holds one key of it, not its first, and no value */
	bool more;	/* the listing goes on past it, from until */
	uint8_t until[ETCD_KEY_MAX + 1];
	size_t until_len;
	struct etcd_skel *skel;	/* heap, in key order, each with its own keys */
	size_t n_skel;
	struct etcd_below *below;	/* set once (the snapshot's lock), or NULL */
};

struct store_etcd_scan {
	struct store_scan base;
	struct store_etcd_txn *txn;
	size_t base_len;	/* bytes before the tuple key: PREFIX 0x00 SPACE */
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];	/* [lo, hi): every key with the prefix */
	size_t lo_len, hi_len;
	/* the position: the next key returned is >= cur (> cur when !incl) */
	uint8_t cur[ETCD_KEY_MAX];
	size_t cur_len;
	bool incl;
	bool keys_only;	/* counting: no values wanted */
	/* the page read last: every key of [from, pend) is in it */
	struct etcd_range_result *page;	/* kept by the transaction */
	size_t idx;
	uint8_t from[ETCD_KEY_MAX], pend[ETCD_KEY_MAX];
	size_t from_len, pend_len;
	/* etcd's keys below skip lie in a range this attempt deleted (skip_len 0: none) */
	uint8_t skip[ETCD_KEY_MAX];
	size_t skip_len;
	uint64_t fetches;	/* range requests made */
	/* a walk over children (seeks past a child's subtree): etcd_kids_list.c's skeleton */
	bool walk, skel_tried;
	/* a listing (store_scan_expect_children): a child may be handed out by any key of it */
	bool listing;
	/*
	 * Entries of the listed container written at or after this revision are
	 * trusted (etcd_kids_list.c's trust_from); 0 none; trust_read: it was read.
	 * skel_any: the skeleton holds a trusted child's made-up page.
	 */
	int64_t trust_from;
	bool trust_read, skel_any, leafless;
	/* the delete stamps of the listed container's children (their keys), read with trust_from */
	struct etcd_range_result stamps;
	bool skel_deferred;	/* its start was in a page read before: read the space after it */
	/* a skeleton that ends before the scan does: the next window from skel_until */
	bool skel_more;
	uint8_t skel_until[ETCD_KEY_MAX + 1];
	size_t skel_until_len;
	unsigned walk_seeks;	/* children skipped since the last page was read */
	struct etcd_skel *skel;	/* heap, in key order */
	size_t n_skel, cap_skel, skel_pos;
	/* the window the skeleton's newest ranges came from (the snapshot's), or NULL */
	struct etcd_window *win;
	/* the containers below the children read last: the window's, or own_below */
	const struct etcd_below *below;
	struct etcd_below *own_below;	/* heap, or NULL */
	bool stepped;	/* a key was asked for */
	bool resumed;	/* it was moved before that: a listing going on, not starting */
	/* where its first window of children ends (an etcd key; 0: none read yet) */
	uint8_t first_end[ETCD_KEY_MAX + 1];
	size_t first_end_len;
	/*
	 * A write's scan in another transaction's page (gpage): what it has
	 * looked at of it, [gfrom, gupto), guarded when it leaves the page
	 * or closes (etcd_txn_guard_page), not the page's whole range
	 */
	const struct etcd_kept *gpage;
	uint8_t gfrom[ETCD_KEY_MAX], gupto[ETCD_KEY_MAX + 1];
	size_t gfrom_len, gupto_len;
};

static inline struct store_etcd *ETCD(struct store *st)
{
	return (struct store_etcd *)st;
}

static inline struct store_etcd_txn *ETXN(struct store_txn *txn)
{
	return (struct store_etcd_txn *)txn;
}

static inline struct store_etcd_scan *ESCAN(struct store_scan *scan)
{
	return (struct store_etcd_scan *)scan;
}

/* The first key after kv's (its key, then a 0 byte) into out; its length. */
static inline size_t etcd_key_after(const struct etcd_kv *kv, uint8_t *out)
{
	memcpy(out, kv->key, kv->key_len);
	out[kv->key_len] = 0;
	return kv->key_len + 1;
}

/* The operations (store/etcd/etcd_ops.c puts them in the table). */
int store_etcd_open(struct store *st, const char *name, unsigned flags, char *why, size_t why_len);
void store_etcd_close(struct store *st, bool discard);
int store_etcd_info(struct store *st, struct store_info *out);
/* store_end_calls: every client of st (the pool's, the watch's) shares st->health. */
void store_etcd_end_calls(struct store *st, unsigned ms);
/* store_deadline: the calling thread's deadline in the client library (etcd_deadline_begin). */
void store_etcd_deadline(struct store *st, unsigned ms);
/* store_room: a member's quota and database (etcd_client_status), kept in st->room. */
int store_etcd_room(struct store *st, struct store_room *out);
uint64_t store_etcd_position(struct store *st);
int store_etcd_stale(struct store *st, struct store_stale *out);
bool store_etcd_changed_elsewhere(struct store *st);
int store_etcd_read_begin(struct store *st, struct store_txn *txn);
void store_etcd_read_end(struct store_txn *txn);
uint64_t store_etcd_txn_id(const struct store_txn *txn);
bool store_etcd_txn_snapshot(const struct store_txn *txn, uint64_t *id);
int store_etcd_write(struct store *st, store_write_fn fn, void *arg);
int store_etcd_get(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
		   struct store_val *out);
int store_etcd_put(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
		   const void *val, size_t val_len);
int store_etcd_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
			   size_t key_len, size_t val_len, void **out);
int store_etcd_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len);
int store_etcd_del_prefix(struct store_txn *txn, enum store_space space, const void *prefix,
			  size_t prefix_len, uint64_t *deleted);
void store_etcd_note_removed(struct store_txn *txn, enum store_space space, const void *key,
			     size_t len);
bool store_etcd_space_is_empty(struct store_txn *txn, enum store_space space);
int store_etcd_scan_open(struct store_scan *scan);
int store_etcd_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val);
int store_etcd_scan_seek(struct store_scan *scan, const void *key, size_t key_len);
void store_etcd_scan_close(struct store_scan *scan);
void store_etcd_scan_expect_children(struct store_scan *scan);
int store_etcd_scan_child_subdirs(struct store_scan *scan, const void *child, size_t len,
				  uint32_t *count);
/*
 * The spaces a read transaction's first Txn also asks about (etcd_scan.c):
 * add: their ranges (keys only, one key each) to ops at *n; keep: the
 * answers r[0..ETCD_PROBES) as pages of the transaction (taken from r, its
 * ranges emptied). 0 or -ENOMEM.
 */
#define ETCD_PROBES 3
struct etcd_probes {
	uint8_t lo[ETCD_PROBES][ETCD_KEY_MAX], hi[ETCD_PROBES][ETCD_KEY_MAX];
	size_t lo_len[ETCD_PROBES], hi_len[ETCD_PROBES];
};
void etcd_probes_add(struct store_etcd_txn *t, struct etcd_probes *p, struct etcd_op *ops,
		     size_t *n);
int etcd_probes_keep(struct store_etcd_txn *t, const struct etcd_probes *p,
		     struct etcd_range_result *r);
int store_etcd_prefetch(struct store_txn *txn, enum store_space space, const void *prefix,
			size_t prefix_len);
void store_etcd_expect_reads(struct store_txn *txn, enum store_space space, const void *prefix,
			     size_t prefix_len);
/*
 * For a point get of etcd key k that no page holds: when an expected
 * range (store_txn_expect_reads) holds k and reading ahead still pays
 * there, reads a page from k on in it and gives it (kept by the
 * transaction); else NULL. A failure gives NULL too (the get asks alone).
 */
struct etcd_kept *etcd_read_ahead(struct store_etcd_txn *t, const uint8_t *k, size_t kl);
/* A get that page answered: counted for the read-ahead that read it. */
void etcd_read_ahead_served(struct store_etcd_txn *t, const struct etcd_kept *page);
int store_etcd_feed_read(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
			 uint64_t *upto);
/* Stops the watch (store_etcd_close). */
void store_etcd_feed_stop(struct store_etcd *st);
/* Notes the revision of one of our own commits (the feed marks its events mine). */
void store_etcd_feed_mine(struct store_etcd *st, uint64_t rev);
/*
 * Around a commit's Txn, up to its store_etcd_feed_mine: the watch may
 * bring the commit's events before its answer is read, and they are held
 * back from the feed's readers meanwhile, not taken for another's. begin
 * gives the slot for end (-1: no watch, or every slot taken).
 */
int etcd_feed_commit_begin(struct store_etcd *st);
void etcd_feed_commit_end(struct store_etcd *st, int slot);
/*
 * The cluster's limits (docs/ETCD.md section 5): etcd_txn_ops and
 * etcd_txn_bytes are the handle's budget per Txn. etcd_limits_lower: the
 * cluster refused a request planned with budget `used` as too big (rc
 * -EMSGSIZE: too many operations or compares; -E2BIG: too many bytes,
 * `largest` those of its largest put); lowers the budget to etcd's
 * defaults, then halves it. True when the request is worth planning again
 * (the budget is below `used` now); false when no budget can help (the
 * floor is reached, or the largest put alone fills the budget).
 */
size_t etcd_txn_ops(struct store_etcd *st);
/* Errors after which a sent Txn may or may not have been applied (the others: it was not). */
bool etcd_outcome_unknown(int rc);
size_t etcd_txn_bytes(struct store_etcd *st);
bool etcd_limits_lower(struct store_etcd *st, int rc, size_t used, size_t largest);
/*
 * A read that may simply be asked again: the connection was refused or
 * reset, or the cluster cancelled the request (a member stopping or a
 * leader changing does that to requests in flight, quorum intact). A
 * write's lost answer is settled through its writer key instead. Never
 * once the thread's deadline passed (etcd_deadline_begin): its operation
 * has given up.
 */
static inline bool etcd_read_again(int rc)
{
	return (rc == -ECONNRESET || rc == -EAGAIN || rc == -ECONNREFUSED || rc == -EPIPE ||
		rc == -ECANCELED) && !etcd_deadline_passed();
}

/* A range, tried again for about 4 s while a member is gone or a leader is elected. */
int etcd_range_retry(struct etcd_client *c, const void *key, size_t key_len,
		     const struct etcd_range_opts *o, struct etcd_range_result *out);
/* The same for a Txn of ranges only (a read), with no compares. */
int etcd_read_txn_retry(struct etcd_client *c, const struct etcd_op *ops, size_t n_ops,
			struct etcd_txn_result *out);
/* The newest revision, read from the cluster (one round trip); 0 when unreachable. */
uint64_t etcd_newest_revision(struct store_etcd *st);
/* A new client of st's members, noting and passing over hung ones with st's other clients. */
int etcd_client_open_for(struct store_etcd *st, struct etcd_client **out, char *why,
			 size_t why_len);
/* The handle pool: one client per thread in a call. */
int etcd_client_take(struct store_etcd *st, struct etcd_client **out);
/* Back to the pool; notes the cluster's silence when the thread's request met its deadline. */
void etcd_client_give(struct store_etcd *st, struct etcd_client *c);

/* ---- the children space (store/etcd/etcd_kids_*.c) ---- */

/*
 * The children space of the etcd backend (docs/ETCD.md section 7): an entry
 * k<depth><container key> for every container that holds keys, written in
 * the same Txn as the keys under it, its value a hint (the tuple key of one
 * key under it, meant to be its first), so that a listing learns its
 * containers' names in one range and reads each container's first key with
 * one range of O(1) keys, many to a request, instead of ranges over the
 * subtrees (etcd 3.4 visits every key of a range whatever its limit).
 * Entries and hints may be stale (a listing checks and reads on), no entry
 * is ever missing in a store created with them (the marker key k says so).
 * A key holding a container record (an empty object or array) has an entry
 * of its own, hinting at itself, in a store whose marker says "2": the live
 * entries below a child are then exactly its containers, which gives a
 * listing its children's nlink.
 * Its files: etcd_kids_write.c (its keys, a commit's writes),
 * etcd_kids_list.c (a listing's reads), etcd_kids_subdirs.c (the
 * containers below each listed child), etcd_kids_check.c (kvfs check).
 */
#define KIDS_TXN_OPS 128	/* ranges per request: etcd's default --max-txn-ops */
#define KIDS_PAGE 4096	/* entries per range of the children space */
#define KIDS_DEPTH_MAX 255	/* an entry's depth is one byte: deeper containers have none */
/* The depth byte of a range stamp `x 0xfe container`: a deleted range began with it. */
#define KIDS_RANGE_STAMP 0xfe
/* Listings of containers deeper than this trust nothing (one read per ancestor's range stamp). */
#define KIDS_TRUST_DEPTH 32

/*
 * Keys, each a heap copy: the entries a commit puts whose old value in
 * etcd may name a smaller hint (a container it adds keys to without
 * rewriting it); the containers a check found entries for.
 */
struct key_list {
	uint8_t **keys;
	size_t *lens;
	size_t n, cap;
};

/*
 * Shared by the children space's files only (described where defined).
 * etcd_kids_write.c: the entry, delete stamp and leaf flag keys of the
 * container key[0..len) (into out, ETCD_KEY_MAX bytes); the elements of a
 * tuple key; the container holding a key; an entry's hint; the key lists
 * a commit and a check collect; the leaf flag a commit (or a repair) puts.
 */
size_t etcd_kids_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		size_t len, uint8_t *out);
size_t etcd_kids_stamp_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		 size_t len, uint8_t *out);
size_t etcd_kids_leaf_flag_key(const struct store_etcd *st, unsigned depth, const uint8_t *key,
		     size_t len, uint8_t *out);
int etcd_kids_elements(const uint8_t *key, size_t len);
size_t etcd_kids_parent_of(const uint8_t *tk, size_t len, unsigned *depth);
const uint8_t *etcd_kids_hint_of(const struct store_etcd *st, const uint8_t *ek, size_t el,
		       const uint8_t *h, size_t hl);
int etcd_key_list_add(struct key_list *h, const uint8_t *k, size_t kl);
void etcd_key_list_release(struct key_list *h);
int etcd_kids_note_leaf(struct store_etcd_txn *t, const uint8_t *tk, size_t len);
/*
 * etcd_kids_list.c, for etcd_kids_subdirs.c too: from which revision a
 * scan trusts entries unread (read once per scan), whether it trusts one,
 * and ranges sent in read-only Txns of KIDS_TXN_OPS, a few at once.
 */
int etcd_kids_trust_from(struct store_etcd_scan *s, int depth);
bool etcd_kids_trusted(const struct store_etcd_scan *s, const struct etcd_kv *kv);
int etcd_kids_send_ops(struct store_etcd_scan *s, const struct etcd_op *ops, size_t n,
	     struct etcd_txn_result **res);

/*
 * The children space's calls. etcd_kids_note (etcd_kids_write.c): adds to a
 * write attempt's buffer the entry of every container above each data key
 * it puts (before the commit). etcd_kids_forget: drops the entry of the
 * container prefix[0..len) whose subtree the attempt deletes.
 * etcd_kids_marker: the key that says the store keeps the space (out:
 * ETCD_KEY_MAX bytes). etcd_kids_is_child_end (etcd_kids_list.c): key is
 * the end of one child's subtree of the scan's prefix (a walk's seek).
 * etcd_kids_prefetch: in a read transaction, the first key of every child
 * from `from` on, read with one bounded range per child, many to a request,
 * at the transaction's revision; etcd_kids_covering: the skeleton range
 * holding key (borrowed) or NULL.
 */
int etcd_kids_note(struct store_etcd_txn *t);
/*
 * In a commit that deletes data keys (store "3"): puts the delete stamp of
 * every container above a deleted key or range, `x depth container`, whose
 * revision a trusting listing compares its entries with (section 7).
 */
int etcd_kids_stamp(struct store_etcd_txn *t);
int etcd_kids_forget(struct store_etcd_txn *t, const void *prefix, size_t len);
/*
 * The lease flag's key (etcd key, into out): put, without a lease, by every
 * commit that puts keys with one (store/etcd/etcd_lease.c).
 */
size_t etcd_kids_lease_flag(const struct store_etcd *st, uint8_t *out);
size_t etcd_kids_marker(const struct store_etcd *st, uint8_t *out);
bool etcd_kids_is_child_end(const struct store_etcd_scan *s, const uint8_t *key, size_t len);
int etcd_kids_prefetch(struct store_etcd_scan *s, const uint8_t *from, size_t from_len);
struct etcd_skel *etcd_kids_covering(struct store_etcd_scan *s, const uint8_t *key, size_t len);
void etcd_kids_scan_release(struct store_etcd_scan *s);
/*
 * As store_scan_child_subdirs (etcd_kids_subdirs.c), for the tuple key
 * child[0..len): one range of the entries one level below the listing's
 * children, from the child to the end of the listing's window, and one O(1)
 * range per entry found (is its container still there?), many to a request,
 * answer its siblings after it too.
 */
int etcd_kids_child_subdirs(struct store_etcd_scan *s, const uint8_t *child, size_t len,
			    uint32_t *count);
/*
 * A scan's first page from the start of a container with a big subtree
 * (etcd_kids_list.c): etcd 3.4 visits every key of a range whatever its
 * limit, so a lookup of it (its first key) would cost the whole subtree.
 * etcd_kids_is_big: the handle saw the container at the etcd key
 * key[0..len) hold more than ETCD_BIG_KEYS keys (etcd_kids_note_big).
 * etcd_kids_first_bound: the end of a first page that holds the container's
 * first key (its first container child's hint, then 0x00) into out
 * (ETCD_KEY_MAX bytes): 1, or 0 when there is none to read (no container
 * child, an unpinned read).
 */
bool etcd_kids_is_big(struct store_etcd *st, const uint8_t *key, size_t len);
void etcd_kids_note_big(struct store_etcd *st, const uint8_t *key, size_t len);
int etcd_kids_first_bound(struct store_etcd_scan *s, uint8_t *out, size_t *out_len);
/*
 * The same end, when a listing of the container's parent in the scan's
 * snapshot holds the range it read up to the container's hint: true and
 * out set (ETCD_KEY_MAX bytes), without a round trip; false otherwise.
 */
bool etcd_kids_window_bound(struct store_etcd_scan *s, uint8_t *out, size_t *out_len);
/*
 * store_txn_check (etcd_kids_check.c): every container above a data key has
 * its entry, and (a store that says so) every key holding a container
 * record its own.
 */
int store_etcd_check(struct store_txn *txn, store_check_fn fn, void *arg);
/* store_txn_repair: the entries store_etcd_check would miss, put in the write transaction. */
int store_etcd_repair(struct store_txn *txn);

/*
 * Big data values (store/etcd/etcd_val.c, docs/ETCD.md section 3). Keys k are
 * full etcd keys. etcd_val_put: a buffered put, chunked when over one
 * chunk, clearing the chunks of a big value written before. etcd_val_reserve:
 * put_reserve; a big one is chunked by etcd_val_flush, which every operation
 * of the transaction calls first. etcd_val_forget: deletes the chunks of the
 * value at k (prefix: of every key starting with k). etcd_val_resolve: when
 * *data is a stub (read at mod_rev; 0: from the attempt's own buffer), puts
 * the assembled value there instead, borrowed until the transaction ends.
 * etcd_val_release: at the end of a transaction; etcd_val_cache_drop: at close.
 */
int etcd_val_put(struct store_etcd_txn *t, const uint8_t *k, size_t kl, const void *val, size_t len);
int etcd_val_reserve(struct store_etcd_txn *t, const uint8_t *k, size_t kl, size_t len, void **out);
int etcd_val_flush(struct store_etcd_txn *t);
int etcd_val_forget(struct store_etcd_txn *t, const uint8_t *k, size_t kl, bool prefix);
int etcd_val_resolve(struct store_etcd_txn *t, const uint8_t *k, size_t kl, int64_t mod_rev,
		     const void **data, size_t *len);
void etcd_val_release(struct store_etcd_txn *t);
void etcd_val_cache_drop(struct store_etcd *st);
/* The key of chunk n of the value at k (n < 0: the chunks' common prefix); out ETCD_VKEY_MAX bytes. */
size_t etcd_val_chunk_key(const struct store_etcd *st, const uint8_t *k, size_t kl, long n,
			  uint8_t *out);
/* In a write transaction: guards the delete stamp (once). */
int etcd_txn_guard_stamp(struct store_etcd_txn *t);

/* Full key of (space, key) into out (ETCD_KEY_MAX bytes); its length. */
size_t etcd_key(const struct store_etcd *st, int space, const void *key, size_t key_len,
		uint8_t *out);
/* Our writer key (the attempt number of our last commit, section 4) into out; its length. */
size_t etcd_writer_key(const struct store_etcd *st, uint8_t *out);
/* The byte a space is stored under. */
int etcd_space_byte(enum store_space space);

/* etcd_turn.c: a write that keeps losing its guards takes a bounded turn (section 4a) */
/* The turn key into out (ETCD_KEY_MAX bytes); its length. */
size_t etcd_turn_key(const struct store_etcd *st, uint8_t *out);
/* Notes the turn key as a settle read it (r: its range's answer, NULL when unread). */
void etcd_turn_note(struct store_etcd *st, const struct etcd_range_result *r);
/* In a commit: guards that the turn is ours, or nobody's. */
int etcd_turn_guard(struct store_etcd_txn *t);
/*
 * Between two attempts of one write, after attempt number `lost` lost its
 * guards (began_ns: when the write began): waits while another write
 * holds the turn, takes it when this write is starving, and keeps or
 * gives up one it holds. Errors are not the write's: it runs again anyway.
 */
void etcd_turn_between(struct store_etcd *st, unsigned lost, int64_t began_ns);
/* At the end of a write, whatever its outcome: gives up the turn it holds. */
void etcd_turn_release(struct store_etcd *st);
/*
 * A range read inside the transaction, at its revision (pinning it on the
 * first read); the answer is kept until the transaction ends (*out borrowed).
 */
int etcd_txn_range(struct store_etcd_txn *t, const void *key, size_t key_len,
		   const struct etcd_range_opts *opts, struct etcd_range_result **out);
/* As etcd_txn_range, giving the record that keeps the answer (to describe a page in it). */
int etcd_txn_range_kept(struct store_etcd_txn *t, const void *key, size_t key_len,
			const struct etcd_range_opts *opts, struct etcd_kept **out);
/* A page read earlier in this transaction that holds key's place (with values when vals): borrowed, or NULL. */
struct etcd_kept *etcd_txn_page_covering(struct store_etcd_txn *t, const void *key, size_t key_len,
					 bool vals);
/*
 * A page whose scan wanted key's place but stopped before it (its limit):
 * the one that read furthest, or NULL. Reading on in its range serves a
 * walk that scans the children of one range one after another.
 */
struct etcd_kept *etcd_txn_page_before(struct store_etcd_txn *t, const void *key, size_t key_len,
				       bool vals);
/* In a write transaction: records that [key, end) was read (and guards the delete stamp). */
int etcd_txn_guard_range(struct store_etcd_txn *t, const void *key, size_t key_len,
			 const void *end, size_t end_len);


/*
 * TTL leases (store/etcd/etcd_lease.c, docs/ETCD.md section 9): the
 * expire_puts operation, and forgetting the cached leases after a commit
 * that etcd refused for a lease it no longer has (caller holds write_lock).
 */
int store_etcd_expire_puts(struct store_txn *txn, store_expiry_fn fn, void *arg);
void etcd_lease_forget(struct store_etcd *st);

/*
 * Answers shared across transactions (store/etcd/etcd_snap.c, docs/ETCD.md
 * section 8a). A handle's transactions read at one revision while its
 * watch shows no commit after it, for 1 s at most, and find there the
 * pages and point answers the others read. etcd_snap_attach: at a
 * transaction's begin, joins the current snapshot when it still serves
 * (t->rev set). etcd_snap_start: after a transaction's first read pinned
 * t->rev, notes that revision as seen (an older snapshot then serves no
 * one) and, for a read transaction, makes its answers the first of a new
 * current snapshot when the watch runs and has seen nothing after t->rev,
 * or in a one-shot handle that runs none (etcd_snap_current).
 * etcd_snap_detach: at its end. etcd_snap_retire: the current snapshot
 * serves no new transaction when its revision is below `seen` (a commit
 * of ours, one the watch saw; INT64_MAX: always); those in it go on.
 * etcd_txn_keep/_keep_page: keeps an answer until the transaction (or its
 * snapshot) ends, the second also as a page the searches find
 * (etcd_txn_pages: the newest; read kept's fields before the call).
 * etcd_snap_point/_point_keep: point answers by etcd key (NULL outside a
 * snapshot).
 */
void etcd_snap_attach(struct store_etcd_txn *t);
void etcd_snap_start(struct store_etcd_txn *t);
void etcd_snap_detach(struct store_etcd_txn *t);
void etcd_snap_retire(struct store_etcd *st, int64_t seen);
/* The same in two steps, for a caller that holds snap_lock: unset under it, drop after. */
struct etcd_snap *etcd_snap_unset(struct store_etcd *st, int64_t seen);
void etcd_snap_drop(struct etcd_snap *s);
/*
 * After write t committed at rev, one revision after the snapshot it read
 * in (so nobody else committed in between): that snapshot with t's buffer
 * applied becomes the current one at rev, when the watch has seen nothing
 * newer, so that the reads after a commit of ours find what the write and
 * the reads before it read. Nothing when it cannot tell (a big value,
 * leases) or runs out of memory: the next read reads anew.
 */
void etcd_snap_carry(struct store_etcd_txn *t, int64_t rev);
void etcd_txn_keep(struct store_etcd_txn *t, struct etcd_kept *k);
/* Frees a list of kept answers (linked by next) and their ranges. */
void etcd_kept_release(struct etcd_kept *list);
/*
 * In a write transaction in a snapshot: guards what a scan over [lo, hi)
 * takes from page k (read by another transaction): that stretch of it,
 * not the whole page, whose range may hold a whole space (the probes')
 * or every child of a big directory, which etcd reads key by key to
 * judge a range compare at every commit. After ETCD_PAGE_PARTS
 * stretches of one page, the page whole, once. 0 or -ENOMEM.
 */
int etcd_txn_guard_page(struct store_etcd_txn *t, const struct etcd_kept *k, const uint8_t *lo,
			size_t lo_len, const uint8_t *hi, size_t hi_len);
void etcd_txn_keep_page(struct store_etcd_txn *t, struct etcd_kept *k);
struct etcd_kept *etcd_txn_pages(const struct store_etcd_txn *t);
struct etcd_kept *etcd_snap_point(struct store_etcd_txn *t, const uint8_t *k, size_t len);
void etcd_snap_point_keep(struct store_etcd_txn *t, const uint8_t *k, size_t len,
			  struct etcd_kept *kept);
/*
 * etcd_snap_window_keep: gives w to t's snapshot (true), or returns false
 * outside one (w stays the caller's). etcd_snap_window: a window kept for
 * the listing of prefix[0..len) whose skeleton holds the etcd key
 * from[0..from_len) (values too unless keys_only may do), or NULL; valid
 * until t ends. etcd_snap_below: w's containers below its children, or
 * NULL; etcd_snap_below_keep: gives b to w when it has none yet (true),
 * else false (b stays the caller's).
 */
bool etcd_snap_window_keep(struct store_etcd_txn *t, struct etcd_window *w);
struct etcd_window *etcd_snap_window(struct store_etcd_txn *t, const uint8_t *prefix,
				     size_t len, bool keys_only, bool any_key, const uint8_t *from,
				     size_t from_len);
const struct etcd_below *etcd_snap_below(struct store_etcd_txn *t, const struct etcd_window *w);
bool etcd_snap_below_keep(struct store_etcd_txn *t, struct etcd_window *w, struct etcd_below *b);
/* Frees b (its answer and flags). */
void etcd_below_free(struct etcd_below *b);
/* Frees a window (and its ranges' keys; not the answers). */
void etcd_window_free(struct etcd_window *w);
/* Whether the watch runs, is connected and has seen no commit after rev (etcd_feed.c). */
bool etcd_feed_current(struct store_etcd *st, int64_t rev);
/*
 * Whether a watch was started on the handle (a mount's): its snapshots
 * and what it learns of big containers serve the reads after this one.
 */
bool etcd_feed_running(struct store_etcd *st);
/*
 * Whether nobody else's commit after rev is known to the handle, so that
 * a snapshot at rev may serve (under snap_lock): the watch is current
 * (etcd_feed_current); or a one-shot handle runs no watch, and only its
 * own commits (which retire it) and its age bound what it serves.
 */
bool etcd_snap_current(struct store_etcd *st, int64_t rev);
/* The revision of the snapshot new transactions would read, or 0 when none. */
int64_t etcd_snap_position(struct store_etcd *st);
/*
 * A one-shot handle's newest revision, pinned by a read transaction's
 * first read (etcd_store.c): the snapshot it starts serves the reads that
 * come next, where a bare read of the revision served nothing. 0 when
 * unreachable.
 */
uint64_t etcd_oneshot_pin(struct store_etcd *st);

/* ---- commits over one request (store/etcd/etcd_big.c) ---- */

/*
 * Commits t's buffer, too big for one Txn, in several requests: staged,
 * made visible by one guarded Txn writing the commit record, applied.
 * *committed false: a guard failed (run the attempt again). *rev: the
 * revision at which the new state became visible (0: someone else's roll
 * forward got there first). <0: the client's error; nothing visible changed.
 */
int etcd_big_commit(struct store_etcd_txn *t, uint64_t seq, bool *committed, int64_t *rev);
/*
 * The first read of t found rec_r (the range of the commit record key) at
 * revision rev: pins t->rev below a record being applied, or rolls it
 * forward (a writer; a reader when its writer is gone) and sets *again.
 */
int etcd_big_pin(struct store_etcd_txn *t, const struct etcd_range_result *rec_r, int64_t rev,
		 bool *again);
/* After a failed commit: rolls forward a commit record if there is one (*found). */
int etcd_big_help(struct store_etcd *st, struct etcd_client *c, bool *found);

#endif
