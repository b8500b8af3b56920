/*
 * store/lmdb/lmdb_int.h - private to the LMDB backend (store/lmdb/): its
 * handle, transaction and scan (each beginning with store_ops.h's shared
 * part), and what its files share. The only header that includes lmdb.h.
 *
 * Locking. mdb_env_set_mapsize() may only run while this process has no
 * transaction open, so every transaction is counted in a "gate" for its
 * whole life, and growth waits until the count is zero. The order is always
 *     write_mutex  ->  gate (shared)  ->  LMDB's writer lock
 * and growth runs holding write_mutex only, after its own transaction has
 * ended and left the gate. So a writer never waits for the gate while
 * holding LMDB's writer lock, and a thread waiting for LMDB's writer lock
 * holds the write mutex, which keeps every other writer of this process out.
 * The gate is a counter under a mutex rather than a pthread_rwlock because
 * a read transaction may be ended by another thread of a FUSE pool
 * (MDB_NOTLS), and a rwlock must be unlocked by the thread that locked it.
 *
 * The gate prefers whoever wants to close it: a closer first counts itself
 * in `closers`, which keeps new transactions out, and then waits for the
 * open ones to end. Otherwise readers that overlap one another would keep
 * the count above zero forever and a growing writer (holding write_mutex)
 * would never get in. Hence a thread must not begin any transaction while
 * it holds one: the inner begin could wait for a closer that waits for the
 * outer transaction.
 *
 * store_copy (a backup) stays in the gate for the whole copy, because
 * mdb_env_copy2 runs its own read transaction all along and the map must
 * not be resized under it. A closer waits for running copies to finish
 * before it counts itself, so readers and other copies are not held up by
 * a backup; only a write that needs to grow the map (and writers queued
 * behind it on write_mutex) waits for the backup to end.
 */
#ifndef KVFS_STORE_LMDB_INT_H
#define KVFS_STORE_LMDB_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "store/store_int.h"
#include "store/store_ops.h"

/*
 * LMDB_ENGINE(call): call (an mdb_* that reads pages) with the thread
 * marked inside the engine for lmdb_in_engine (the table's
 * admin.in_engine, which store_in_engine asks). The mark is a thread-local
 * counter, the one global of the backend: a signal handler has no handle
 * to look in.
 */
extern _Thread_local volatile sig_atomic_t lmdb_engine_depth;
static inline void lmdb_engine_enter(void)
{
	lmdb_engine_depth++;
}
static inline int lmdb_engine_leave(int rc)
{
	lmdb_engine_depth--;
	return rc;
}
#define LMDB_ENGINE(call) (lmdb_engine_enter(), lmdb_engine_leave(call))

/* Which file a name led to when looked at (ino 0: there was none). */
struct lmdb_file_id {
	dev_t dev;
	ino_t ino;
};

struct lmdb_store {
	struct store base;	/* first: store.c's shared part (name = the directory) */
	MDB_env *env;
	MDB_dbi dbi[STORE_SPACES_ALL];
	bool absent[STORE_SPACES_ALL];	/* read-only open of an older store: not there yet */
	pthread_mutex_t write_mutex;	/* one writer of this process at a time; seen_txnid, foreign */
	uint64_t seen_txnid;		/* the last commit accounted for (ours or noticed) */
	bool foreign;			/* another process committed since store_changed_elsewhere */
	pthread_mutex_t q_mutex;	/* the group commit's queue: the three fields below */
	pthread_cond_t q_cond;
	struct lmdb_req *q_head, *q_tail;
	bool q_leader;			/* a writer is committing a batch */
	pthread_mutex_t gate_mutex;	/* guards the four fields below */
	pthread_cond_t gate_cond;
	unsigned active_txns;		/* transactions open in this process */
	unsigned copies;		/* store_copy calls inside the gate */
	unsigned closers;		/* waiting to close the gate: no new txns */
	bool resizing;			/* mapsize change in progress */
	struct lmdb_queue *queue;	/* queued commits (lmdb_queue.c), or NULL */
	unsigned stale_cleared;	/* dead readers' slots cleared at open */
	bool created_dir;	/* store_open made these: store_close_discard */
	bool created_data;	/* removes them again */
	bool created_lock;
	struct lmdb_file_id data_id, lock_id;	/* lmdb_dir.c: seen before LMDB opened them */
};

struct lmdb_txn {
	struct store_txn base;	/* first */
	MDB_txn *txn;
	bool map_full;		/* an operation hit MDB_MAP_FULL: grow and retry */
	bool borrowed;		/* a read of the queued batch (lmdb_queue.c): no txn of its own */
	uint64_t *written;	/* queued batch: bytes put, counted (nested ones too), or NULL */
	/*
	 * A put or delete succeeded in it, or in a child committed into it.
	 * A clean write transaction's commit makes no new txnid: the next
	 * one, maybe another process's, takes the number it would have had,
	 * so only a dirty commit may be noted as ours (lmdb_note_own_commit).
	 */
	bool dirty;
	/*
	 * A read transaction of the map: the bytes its pages span, which no
	 * key or value read can be longer than (a damaged page can claim
	 * more, and reading it would fault). 0: no bound (a write's values
	 * may live in its own new pages).
	 */
	size_t span;
};

/* One write handed to the group commit or to the committer (lmdb_txn.c). */
struct lmdb_req {
	store_write_fn fn;
	void *arg;
	int rc;
	bool later;		/* store_write_later: may stay in a STORE_QUEUE_LATER batch */
	uint64_t epoch;		/* lmdb_queue.c: the batch it was applied in */
	bool done;		/* q_mutex */
	struct lmdb_req *next;	/* q_mutex */
};

enum lmdb_scan_state { SCAN_START, SCAN_SEEK, SCAN_NEXT, SCAN_END };

struct lmdb_scan {
	struct store_scan base;	/* first */
	MDB_cursor *cursor;
	enum lmdb_scan_state state;
	bool at_last;		/* the cursor is at base.last (the step before handed it out) */
	bool stepped;		/* the last move's answer came by a step, which no seek checked */
	bool seeks_needed;	/* a seek from the cursor needed more than its steps */
	size_t target_len;
	uint8_t target[STORE_KEY_MAX + 1];	/* where SCAN_SEEK positions next */
};

static inline struct lmdb_store *lmdb_of(struct store *st)
{
	return (struct lmdb_store *)st;
}

static inline struct lmdb_txn *lmdb_txn_of(struct store_txn *txn)
{
	return (struct lmdb_txn *)txn;
}

static inline struct lmdb_scan *lmdb_scan_of(struct store_scan *scan)
{
	return (struct lmdb_scan *)scan;
}

/* The size of the map as this process has it. */
static inline size_t lmdb_mapsize(struct lmdb_store *ls)
{
	MDB_envinfo info;

	mdb_env_info(ls->env, &info);
	return info.me_mapsize;
}

/* lmdb_env.c: the LMDB database a space is kept in ("data", "changes", ...; static). */
const char *lmdb_space_name(enum store_space space);
/* lmdb_check.c: store_txn_check, the B-trees' order as walks and seeks see it. */
int lmdb_check(struct store_txn *txn, store_check_fn fn, void *arg);
/* lmdb_env.c: the one place LMDB codes become -errno. */
int lmdb_err(int rc);
/* A commit's failure: a short write on a full disk is -ENOSPC. */
int lmdb_commit_err(const struct lmdb_store *ls, int rc);
/* An operation's failure, remembering a full map for the write path. */
int lmdb_txn_err(struct lmdb_txn *t, int rc);

/* lmdb_dir.c: the store directory. */
int lmdb_dir_prepare(struct lmdb_store *ls, const char *dir, unsigned flags, char *why,
		     size_t why_len);
/* After mdb_env_open: the files LMDB opened are the ones looked at, one link each. */
int lmdb_dir_verify(struct lmdb_store *ls, const char *dir, char *why, size_t why_len);
void lmdb_dir_undo_create(struct lmdb_store *ls);
int lmdb_dir_fix_modes(const char *dir);

/* lmdb_txn.c: the gate, transactions, group commit. */
void lmdb_gate_enter(struct lmdb_store *ls, bool copy);
void lmdb_gate_leave(struct lmdb_store *ls, bool copy);
int lmdb_read_begin(struct store *st, struct store_txn *txn);
void lmdb_read_end(struct store_txn *txn);
uint64_t lmdb_txn_id(const struct store_txn *txn);
bool lmdb_txn_snapshot(const struct store_txn *txn, uint64_t *id);
int lmdb_write(struct store *st, store_write_fn fn, void *arg);
int lmdb_write_later(struct store *st, store_write_fn fn, void *arg);
uint64_t lmdb_position(struct store *st);
bool lmdb_changed_elsewhere(struct store *st);
/* For lmdb_queue.c: a top-level txn in the gate; map growth (write_mutex
 * held, no txn of ours open); a commit of ours accounted (write_mutex held);
 * one request in a nested txn of t (0, or <0: t itself failed). */
int lmdb_begin(struct lmdb_store *ls, unsigned flags, MDB_txn **out);
int lmdb_grow(struct lmdb_store *ls);
int lmdb_reserve(struct store *base, uint64_t bytes);
void lmdb_note_own_commit(struct lmdb_store *ls, uint64_t txnid);
int lmdb_run_nested(struct lmdb_txn *t, struct lmdb_req *r, bool *map_full);
/* The group commit of a list of requests (write_mutex not held; no batch open). */
void lmdb_batch_run(struct lmdb_store *ls, struct lmdb_req *batch);

/* lmdb_queue.c: queued commits (store_queue_start). */
int lmdb_queue_start(struct store *st, unsigned ms, enum store_queue_mode mode);
void lmdb_queue_stop(struct lmdb_store *ls);
int lmdb_queue_flush(struct lmdb_store *ls);
/*
 * Hands req to the committer and waits for it: 0 (req->rc is its result),
 * or 1 when the queue holds nothing open for an urgent req (STORE_QUEUE_LATER):
 * the caller runs it in the group commit, which waits while
 * lmdb_queue_owned_locked (q_mutex held) says the committer works.
 */
int lmdb_queue_write(struct lmdb_store *ls, struct lmdb_req *req);
bool lmdb_queue_owned_locked(struct lmdb_store *ls);
/* true: t reads the open batch, and holds its lock until lmdb_queue_read_end */
bool lmdb_queue_read_begin(struct lmdb_store *ls, struct lmdb_txn *t);
void lmdb_queue_read_end(struct lmdb_store *ls);
/* Waits (at most 10 s) while another process holds a STORE_QUEUE_LATER batch open. */
void lmdb_queue_barrier(struct lmdb_store *ls);
uint64_t lmdb_version(struct store *st);

/* lmdb_kv.c: point operations and scans. */
int lmdb_get(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
	     struct store_val *out);
int lmdb_put(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
	     const void *val, size_t val_len);
int lmdb_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
		     size_t key_len, size_t val_len, void **out);
int lmdb_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len);
int lmdb_del_prefix(struct store_txn *txn, enum store_space space, const void *prefix,
		    size_t prefix_len, uint64_t *deleted);
bool lmdb_space_is_empty(struct store_txn *txn, enum store_space space);
void lmdb_trim(struct store_txn *txn);
int lmdb_scan_open(struct store_scan *scan);
int lmdb_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val);
int lmdb_scan_seek(struct store_scan *scan, const void *key, size_t key_len);
void lmdb_scan_close(struct store_scan *scan);

/* lmdb_usage.c: space, readers, sync and copies. */
int lmdb_info(struct store *st, struct store_info *out);
int lmdb_usage(struct store *st, struct store_usage *out);
int lmdb_readers_check(struct store *st, unsigned *cleared);
int lmdb_sync(struct store *st);
int lmdb_copy(struct store *st, const char *dir);

#endif
