/*
 * store/store_ops.h - private to store/: the seam between store.h's public
 * functions (store/store.c) and a backend (LMDB: store/lmdb/; etcd:
 * store/etcd/), in the manner of SQLite's sqlite3_vfs/sqlite3_io_methods:
 * one table of operations per backend, chosen by store_open from the name.
 *
 * Memory. store/store.c allocates a backend's handle, read transaction and
 * scan (zeroed, ops->store_size / txn_size / scan_size bytes) and fills the
 * shared part each of them begins with (struct store, struct store_txn,
 * struct store_scan below); the backend's own struct starts with that part
 * as its first member and casts back:
 *
 *     struct lmdb_store { struct store base; MDB_env *env; ... };
 *     static inline struct lmdb_store *lmdb_of(struct store *st)
 *     { return (struct lmdb_store *)st; }
 *
 * Write transactions are the exception: store.c allocates none. The
 * backend's core.write makes its own, one per attempt (it may need
 * several), and fills each one's shared part with store_txn_init_write().
 * Where they live is the backend's choice: LMDB's on its stack (each
 * attempt, and the nested transaction each write of a group commit runs
 * in), its queued batch inside the handle (lmdb_queue.c); etcd's on the
 * heap, one calloc per attempt (struct store_etcd_txn, the struct its
 * read transactions use, zeroed alike; some 3.7 KB with its read-ahead
 * ranges).
 *
 * What store.c does for every backend, so that a backend need not:
 *   - key length checks (STORE_KEY_MAX, the empty key), -EROFS for writes
 *     in a read transaction or a read-only store;
 *   - hidden subtrees (store_txn_hide): get answers -ENOENT, scans skip them
 *     with one ops->core.scan_seek;
 *   - store_scan_next_distinct from scan_next + scan_seek (unless the
 *     backend gives its own);
 *   - the owner pointer, the format bookkeeping (meta "format" through
 *     ops->core.get/put), the change log's notes (feed_set_note after a
 *     put/del when txn->feed is set) and reading the log (store_feed_read,
 *     feed.c) when the backend has no feed_read of its own.
 */
#ifndef KVFS_STORE_OPS_H
#define KVFS_STORE_OPS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct feed_set;
struct hidden;

/* The shared part of a handle (a backend's handle begins with it). */
struct store {
	const struct store_ops *ops;	/* borrowed: a static table */
	char *name;		/* heap: as given to store_open (a directory or a URL) */
	unsigned flags;		/* STORE_OPEN_* as given */
	bool readonly;		/* STORE_OPEN_READONLY */
	uint64_t writer;	/* random: marks this handle's change-log entries */
	unsigned feed_keep;	/* change-log entries kept (KVFS_CHANGES_KEEP) */
	/* Record format: the backend sets it at open (from meta "format");
	 * store.c only ever raises it to STORE_FORMAT_VERSION once a snapshot
	 * shows the store upgraded (store_txn_format). */
	_Atomic unsigned format;
	int64_t created_ns;	/* meta "created": set by the backend's open */
	store_container_test_fn container_test;	/* store_set_container_test (NULL: none) */
	_Atomic uint64_t keys_read;	/* store_keys_read: point reads, and closed scans' keys */
	const volatile sig_atomic_t *interrupt;	/* store_set_interrupt (NULL: none) */
};

/* The shared part of a transaction (a backend's transaction begins with it). */
struct store_txn {
	struct store *st;
	bool write;
	unsigned format;	/* this snapshot's format; 0 = not looked up yet */
	void *owner;		/* the caller's (store_txn_set_owner) */
	bool unconfirmed;	/* a dry run's outcome stands as read (store_txn_unconfirmed) */
	uint64_t *as_of;	/* write: the caller's (store_txn_as_of), or NULL */
	struct feed_set *feed;	/* write transactions: keys touched for the log, or NULL */
	struct hidden *hidden[2];	/* heap (read txns): data/index subtrees hidden, or NULL */
};

/* The shared part of a scan (a backend's scan begins with it). */
struct store_scan {
	struct store_txn *txn;
	enum store_space space;
	uint64_t steps;		/* the backend counts each positioning (a cursor move,
				 * a round trip): store_scan_steps */
	uint64_t keys;		/* keys handed out (store.c): added to keys_read at close */
	size_t prefix_len;
	uint8_t prefix[STORE_KEY_MAX];
	/*
	 * store.c's forward-progress checks (store_scan_next): every key a
	 * backend hands out sorts after the one before it, or, after a seek
	 * (which may go back), at or after the seek's target. A backend may
	 * read them: after a step that handed out a key, its cursor is at
	 * `last`. damage: a static description once a check failed (the
	 * backend's own too); from then on every step gives -EIO.
	 */
	bool have_last;		/* last[0..last_len) is the key handed out last */
	bool seeking;		/* a seek since: the next key is >= target */
	const char *damage;
	size_t last_len, target_len;
	uint8_t last[STORE_KEY_MAX];
	uint8_t target[STORE_KEY_MAX + 1];
};

/*
 * The operations, in four groups of a fixed order: the core every backend
 * provides, then three groups of optional members, each NULL where the
 * backend has nothing to give:
 *
 *   core     opening, transactions, reads, writes and scans: every
 *            member set, called without a test
 *   ability  what some stores can do and others cannot (deferred syncs,
 *            a change feed, expiry, a commit queue, calls ended at exit):
 *            a STORE_CAN_* bit in abilities declares each but the last
 *            two (store_can), and
 *            without one the public call gives its documented answer
 *            (store.h: a no-op, -ENOTSUP or -ESTALE)
 *   hint     cheaper ways to the same answers (a backend's own distinct
 *            listing, reads ahead, memory given back, room made early):
 *            NULL, store.c takes its own way or does nothing, and a
 *            caller cannot tell but by the cost (what a caller of
 *            store_scan_expect_children allows for is said there)
 *   admin    the store's upkeep and inspection (hot copies, space and
 *            reader slots, integrity checks and repairs, a crash's
 *            diagnosis), never on the path of a read or a write of data;
 *            copy, usage and readers_check are also declared by
 *            STORE_CAN_* bits
 *
 * They are sub-structs rather than commented runs of one struct so that
 * each table's initializer and every call in store.c name the group
 * (ops->core.get, ops->hint.prefetch): the reader sees at the call whether
 * a NULL test is due, and the compiler keeps a member in its group.
 *
 * All return 0 or -errno (each backend maps its own codes in one place)
 * unless they say otherwise. Rules every backend honours:
 *
 *   - Order: scans return keys in byte order (memcmp, a shorter key before
 *     its extensions), only keys that start with the scan's prefix.
 *   - Borrowed values (store_val) from get and scan_next stay valid until
 *     the transaction ends or the next write in it: model/ holds several at
 *     once. A backend that fetches over the network keeps its answers for
 *     the transaction's life.
 *   - A read transaction is one consistent snapshot; it may be ended by a
 *     thread other than the one that began it, and is used by one thread at
 *     a time. Reads never block on writers.
 *   - write(st, fn, arg) runs fn(txn, arg) in one transaction and commits
 *     it when fn returns 0; fn's other results abort and are returned. The
 *     backend may run fn again from the start (a map to grow, an optimistic
 *     conflict) with a fresh transaction that shows nothing of the earlier
 *     attempt: callers keep no state outside txn between attempts. A write
 *     transaction reads its own writes. Writes of one process's threads are
 *     serialized (or batched: group commit), never interleaved in one txn.
 *   - Spaces: STORE_SPACE_COUNT public ones plus STORE_SPACE_FEED (the
 *     change log, store_int.h) when the backend keeps the log.
 *   - store.c has checked arguments (key lengths, read/write txn kind)
 *     before calling get/put/del/del_prefix/scan_open.
 *
 * The table has no version number. SQLite's VFS carries one (iVersion)
 * because its tables come from code built against other sqlite3.h
 * releases; every backend here is compiled into kvfs with this very
 * header, and store_ops_for picks from a fixed list (nothing is loaded at
 * run time), so a table of another shape never meets store.c and the
 * compiler checks each table against this struct. A version would be a
 * check that cannot fail. Should a backend ever be loaded at run time
 * (dlopen), give the table a version then and have store_ops_for refuse
 * one built for another.
 */

/* Every backend: all members set. */
struct store_core_ops {
	/*
	 * st is zeroed with its shared part filled except format/created_ns,
	 * which open sets. On failure: -errno, a one-line reason in why, and
	 * whatever this call created is removed again; store.c then frees st
	 * without calling close.
	 */
	int (*open)(struct store *st, const char *name, unsigned flags, char *why, size_t why_len);
	/* Releases the backend's part (store.c frees st). discard: also remove
	 * what this handle's open created (store_close_discard). */
	void (*close)(struct store *st, bool discard);
	int (*info)(struct store *st, struct store_info *out);
	/* The position of now (store_position): cheap, any thread, no txn open. */
	uint64_t (*position)(struct store *st);
	/* Whether another process committed since the last call (store_changed_elsewhere). */
	bool (*changed_elsewhere)(struct store *st);

	/* txn's shared part is filled (format read before); begin the snapshot. */
	int (*read_begin)(struct store *st, struct store_txn *txn);
	/* Ends a read transaction (store.c frees txn and its hidden sets). */
	void (*read_end)(struct store_txn *txn);
	/* Grows with every commit by anyone (LMDB txn id, etcd revision). */
	uint64_t (*txn_id)(const struct store_txn *txn);
	/*
	 * store_txn_snapshot for a read transaction (store.c answers false for
	 * a write); NULL: the backend cannot name what a read sees.
	 */
	bool (*txn_snapshot)(const struct store_txn *txn, uint64_t *id);
	int (*write)(struct store *st, store_write_fn fn, void *arg);

	/* 0 or -ENOENT (also for a space absent in this store). */
	int (*get)(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
		   struct store_val *out);
	int (*put)(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
		   const void *val, size_t val_len);
	/* *out: the value's place, for the caller to fill; valid until the next write. */
	int (*put_reserve)(struct store_txn *txn, enum store_space space, const void *key,
			   size_t key_len, size_t val_len, void **out);
	/* 0 or -ENOENT. */
	int (*del)(struct store_txn *txn, enum store_space space, const void *key, size_t key_len);
	/* *deleted is never NULL here. */
	int (*del_prefix)(struct store_txn *txn, enum store_space space, const void *prefix,
			  size_t prefix_len, uint64_t *deleted);

	/* scan's shared part (txn, space, prefix) is filled. -ENOENT: absent space. */
	int (*scan_open)(struct store_scan *scan);
	/* 1 with key/val (borrowed, as get), 0 past the prefix's last key. */
	int (*scan_next)(struct store_scan *scan, struct store_val *key, struct store_val *val);
	/*
	 * The next key returned is the first >= key. store.c passes key >= the
	 * prefix, and key_len may be STORE_KEY_MAX + 1: a subtree's end (its
	 * key + 0xff), which sorts after every key under it.
	 */
	int (*scan_seek)(struct store_scan *scan, const void *key, size_t key_len);
	/* Releases the backend's part (store.c frees scan). */
	void (*scan_close)(struct store_scan *scan);
};

/* What some stores can do: NULL where the backend cannot. */
struct store_ability_ops {
	int (*sync)(struct store *st);	/* STORE_CAN_SYNC; NULL unless the bit is set */
	/*
	 * STORE_CAN_FEED. NULL with the bit set: the backend keeps the change
	 * log in STORE_SPACE_FEED itself (feed_txn_commit in its commits) and
	 * store.c reads it (feed.c); set: the backend's own feed (etcd: watch),
	 * same contract as store_feed_read.
	 */
	int (*feed_read)(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
			 uint64_t *upto);
	/*
	 * As store_note_removed, for a backend with its own feed_read whose
	 * write transactions gather their feed entry themselves (etcd: the
	 * entry its watch reads back); NULL: store.c notes it in txn->feed.
	 */
	void (*note_removed)(struct store_txn *txn, enum store_space space, const void *key,
			     size_t len);
	/*
	 * STORE_CAN_EXPIRE: as store_txn_expire_puts (txn is a write
	 * transaction). etcd: a lease per deadline second, docs/ETCD.md
	 * section 9.
	 */
	int (*expire_puts)(struct store_txn *txn, store_expiry_fn fn, void *arg);
	/*
	 * Queued commits (store_queue_start), and the version of what this
	 * handle reads (store_version; NULL: the position). A backend without
	 * queue_start gives -ENOTSUP to kvfs mount -o commit.
	 */
	int (*queue_start)(struct store *st, unsigned ms, enum store_queue_mode mode);
	int (*write_later)(struct store *st, store_write_fn fn, void *arg);	/* NULL: write */
	uint64_t (*read_version)(struct store *st);
	/* As store_end_calls; NULL: no call waits on a server (a local store). */
	void (*end_calls)(struct store *st, unsigned ms);
	/* As store_deadline; NULL: no call waits on a server. */
	void (*deadline)(struct store *st, unsigned ms);
	/* As store_stale (out zeroed); NULL: reads are never stale (a local store). */
	int (*stale)(struct store *st, struct store_stale *out);
};

/* The same answers, cheaper: NULL, store.c does without (each line says how). */
struct store_hint_ops {
	/* NULL: store.c opens a scan and looks for one key. */
	bool (*space_is_empty)(struct store_txn *txn, enum store_space space);
	/* NULL: store.c's next + seek. As store_scan_next_distinct. */
	int (*scan_next_distinct)(struct store_scan *scan, int depth, struct store_val *key,
				  struct store_val *val, size_t *child_end);
	/* NULL: nothing to prepare. As store_scan_expect_children (etcd: docs/ETCD.md section 7). */
	void (*scan_expect_children)(struct store_scan *scan);
	/*
	 * NULL: never known (0), the caller reads the child. As
	 * store_scan_child_subdirs (etcd: its children space, docs/ETCD.md
	 * section 7).
	 */
	int (*scan_child_subdirs)(struct store_scan *scan, const void *child, size_t len,
				  uint32_t *count);
	/* NULL: reads are local, nothing to fetch. As store_txn_prefetch. */
	int (*prefetch)(struct store_txn *txn, enum store_space space, const void *prefix,
			size_t prefix_len);
	/* NULL: reads are local. As store_txn_expect_reads (read txns). */
	void (*expect_reads)(struct store_txn *txn, enum store_space space, const void *prefix,
			     size_t prefix_len);
	/* NULL: nothing to give back. As store_txn_trim. */
	void (*trim)(struct store_txn *txn);
	/* NULL: room is found as the write goes. As store_reserve. */
	int (*reserve)(struct store *st, uint64_t bytes);
};

/* Upkeep and inspection: NULL where the backend has none. */
struct store_admin_ops {
	int (*copy)(struct store *st, const char *dir);		/* STORE_CAN_HOT_COPY */
	int (*usage)(struct store *st, struct store_usage *out);	/* STORE_CAN_USAGE */
	int (*readers_check)(struct store *st, unsigned *cleared);	/* STORE_CAN_USAGE */
	/* NULL: the store is in local files (-ENOTSUP). As store_room; out is zeroed. */
	int (*room)(struct store *st, struct store_room *out);
	/*
	 * NULL: nothing of its own to check. As store_txn_check (read txns).
	 * LMDB: each space's B-tree in order (lmdb_check.c); etcd: the
	 * children space against the spaces (docs/ETCD.md section 7).
	 */
	int (*check)(struct store_txn *txn, store_check_fn fn, void *arg);
	/* NULL: nothing of its own to rebuild. As store_txn_repair (write txns). */
	int (*repair)(struct store_txn *txn);
	/*
	 * NULL: the backend maps no store file. Whether the calling thread is
	 * inside this backend's reading of a memory-mapped store file now
	 * (LMDB: every call that walks its pages). No handle, as a SIGSEGV
	 * handler has none: store_in_engine asks every backend built in.
	 * Async-signal-safe.
	 */
	bool (*in_engine)(void);
};

struct store_ops {
	const char *name;	/* "lmdb", "etcd": store_backend() */
	unsigned abilities;	/* STORE_CAN_* (store.h) this backend honours */
	size_t store_size;	/* sizeof the backend's handle (>= sizeof(struct store)) */
	size_t txn_size;	/* sizeof its read transaction (>= sizeof(struct store_txn)) */
	size_t scan_size;	/* sizeof its scan (>= sizeof(struct store_scan)) */
	struct store_core_ops core;
	struct store_ability_ops ability;
	struct store_hint_ops hint;
	struct store_admin_ops admin;
};

/* The backends (store.c chooses; the etcd one exists when built with KVFS_ETCD). */
extern const struct store_ops store_lmdb_ops;
#ifdef KVFS_ETCD
extern const struct store_ops store_etcd_ops;
#endif

/*
 * The backend for a store name: a name "etcd://..." is etcd, any other
 * "scheme://" is refused, anything else is a directory (LMDB). NULL with a
 * one-line reason in why when no backend built into this kvfs takes it.
 */
const struct store_ops *store_ops_for(const char *name, char *why, size_t why_len);

/*
 * Fills a write transaction's shared part (ops->core.write's own transactions):
 * call it before the backend's transaction begins (it reads the format the
 * snapshot may assume). feed: the set put/del notes go to, or NULL when
 * the backend keeps no change log.
 */
void store_txn_init_write(struct store_txn *txn, struct store *st, struct feed_set *feed);

/* A one-line reason into why (may be NULL), printf-style. */
void store_say(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
