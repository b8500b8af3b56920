/*
 * store/store.h - the public face of the storage layer: an ordered key-value
 * store with transactions and prefix range scans. Backend-neutral: which
 * backend sits behind a handle is known to store/'s own files only, and
 * what each backend makes of a call is said there (store/store_ops.h, the
 * seam, and each backend's folder), not here. Keys are tuple-encoded by
 * callers (store/tuple.h); the store itself treats keys and values as
 * bytes.
 */
#ifndef KVFS_STORE_H
#define KVFS_STORE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/tuple.h"

#define STORE_KEY_MAX 511	/* longest key the backend accepts, in bytes */
#define STORE_FORMAT_VERSION 4	/* written on creation, checked on open; model/admin/upgrade.c brings 1 to 3 up to it */

/* Key spaces: ordered key ranges of their own, kept apart by the backend. */
enum store_space {
	STORE_SPACE_META,	/* format version, creation time, ... */
	STORE_SPACE_DATA,	/* document keys -> leaf values */
	STORE_SPACE_SCHEMA,	/* table path -> sealed table schema (format 3) */
	STORE_SPACE_INDEX,	/* (index id, values..., primary key...) -> "" (format 3) */
	STORE_SPACE_ATTR,	/* node keys -> mode/owner/time records (model/tree/attr_space.c; format 3) */
	STORE_SPACE_EXPIRY,	/* (deadline 8 bytes big-endian, node key) -> "" (model/ttl/ttl_space.c; format 4) */
	STORE_SPACE_TTL,	/* node key -> deadline 8 bytes big-endian (format 4) */
	STORE_SPACE_COUNT,
};

enum store_open_flags {
	STORE_OPEN_CREATE = 1 << 0,	/* create the store if missing (the directory must be empty) */
	STORE_OPEN_READONLY = 1 << 1,
	STORE_OPEN_NOSYNC = 1 << 2,	/* commits not fsynced; store_sync() makes them durable */
	/*
	 * One sync per commit: a commit's data is synced before the small
	 * write that makes it current, and that write is made durable by the
	 * next commit or store_sync(). Integrity is kept; a crash of the
	 * machine (not of the process) may lose the last commit. A backend
	 * whose every commit is durable (no STORE_CAN_SYNC) ignores it.
	 */
	STORE_OPEN_SYNC_ONCE = 1 << 3,
	/*
	 * A short-lived process (the offline CLI) that follows no other
	 * writer's commits: a backend whose reads are round trips may let its
	 * read transactions share answers for a bounded time, each of its own
	 * commits ending that, instead of asking again (docs/ETCD.md 8a).
	 */
	STORE_OPEN_ONESHOT = 1 << 4,
};

struct store;
struct store_txn;
struct store_scan;

/*
 * Backends. store_open chooses one by the name it is given: a directory is
 * the embedded default backend's; a URL ("scheme://...") goes to the
 * backend of its scheme when that is built in (else store_open refuses it
 * with a message naming the forms it takes). Callers above store/ pass a
 * name through unchanged (no realpath/mkdir/stat of a URL:
 * store_name_is_url tells them apart).
 *
 * Abilities are declared by the backend, not assumed by callers: test them
 * with store_can before relying on one.
 */
enum store_ability {
	STORE_CAN_SYNC = 1 << 0,	/* commits may be deferred (NOSYNC); store_sync makes them
					 * durable. Without it every commit is durable already and
					 * store_sync is a successful no-op. */
	STORE_CAN_HOT_COPY = 1 << 1,	/* store_copy: a compacted copy of the live store into a
					 * local directory (else -ENOTSUP) */
	STORE_CAN_USAGE = 1 << 2,	/* store_usage (file space, reader slots) and
					 * store_readers_check (else -ENOTSUP / nothing to clear) */
	STORE_CAN_FEED = 1 << 3,	/* store_feed_read can tell what other writers changed
					 * (else it always gives -ESTALE: re-check everything) */
	STORE_CAN_EXPIRE = 1 << 4,	/* store_txn_expire_puts: the store itself deletes keys
					 * after their deadline, without any kvfs process
					 * running. Without it nothing expires by itself */
	STORE_CAN_READ_LOCALLY = 1 << 5,	/* reads are memory accesses (a mapped file): a scan
						 * costs no round trip, so a caller may read ahead
						 * where a remote backend would answer "not known" */
};

/* Whether the store's backend has every ability in `abilities` (STORE_CAN_*). */
bool store_can(const struct store *st, unsigned abilities);
/* store_can for the store a transaction belongs to. */
bool store_txn_can(const struct store_txn *txn, unsigned abilities);
/*
 * True while the calling thread is inside a backend's reading of a
 * memory-mapped store file (every call that walks its pages), in any store
 * of any backend built in: no handle, for a signal handler has none. A
 * mapped file whose pages carry no checksums can, damaged (a flipped bit
 * in an offset), send the engine to read outside a page: a SIGSEGV
 * handler asks this to tell a damaged store from a bug of kvfs. False
 * always where no backend maps its store. Async-signal-safe.
 */
bool store_in_engine(void);
/* The backend's name, as its table gives it (static): for messages and kvfs info. */
const char *store_backend(const struct store *st);
/* The name store_open was given (borrowed, valid until store_close). */
const char *store_name(const struct store *st);
/* True when name is a URL ("scheme://..."), not a directory path. */
bool store_name_is_url(const char *name);
/*
 * name as it may be shown to others (the mount table, logs): a URL without
 * its "?options", which may hold a password; a directory unchanged. Heap
 * string, the caller frees it; NULL when out of memory.
 */
char *store_name_shown(const char *name);

/* A borrowed byte span: valid until its transaction ends or the next write in it. */
struct store_val {
	const void *data;
	size_t len;
};

struct store_info {
	uint64_t map_size;	/* bytes currently mapped */
	uint64_t used_bytes;	/* pages in use * page size */
	uint64_t page_size;
	uint64_t entries;	/* keys in the data space */
	uint64_t last_txn_id;	/* grows with every commit, by any process */
	int64_t created_ns;	/* when the store was created */
};

#define STORE_READER_PIDS 16	/* reader pids store_usage lists at most */

/* Where the file's space goes, and who reads it (store_usage walks the free list). */
struct store_usage {
	uint64_t file_bytes;	/* size of the store's data file */
	uint64_t high_water_bytes;	/* pages ever used: the file never shrinks below this */
	uint64_t free_bytes;	/* pages below the high-water mark on the file's free list */
	uint64_t in_use_bytes;	/* high water minus free: what the data really takes */
	unsigned readers;	/* live read transactions of any process */
	unsigned reader_pids_len;	/* how many of reader_pids are filled */
	int reader_pids[STORE_READER_PIDS];
	unsigned stale_cleared;	/* stale reader slots cleared when this handle opened */
};

/* The room a store on servers has (store_room): what `df` of a mount shows. */
struct store_room {
	uint64_t total_bytes;	/* the most the servers let the store take (etcd: its quota) */
	uint64_t used_bytes;	/* taken now (etcd: the database in use, every prefix's keys) */
	uint64_t free_bytes;	/* what writes may still take: total - used, or 0 */
	uint64_t entries;	/* keys in the data space */
	bool total_assumed;	/* the servers did not say: total is the backend's default */
};

/* Since when this handle's reads may miss commits (store_stale). */
struct store_stale {
	uint64_t position;	/* the position its reads are served from */
	int64_t since_ns;	/* CLOCK_REALTIME: it may miss commits made after this */
	char why[200];		/* one line, why it cannot tell */
};

/*
 * Opens (or with STORE_OPEN_CREATE creates) the store named `name`: a
 * directory (created mode 0700, its files 0600) or a URL of a backend
 * built in (see "Backends" above; an unknown one gives -EPROTONOSUPPORT
 * and a reason). On failure returns -errno and writes a one-line reason to
 * `why` (e.g. "store format 3 is newer than this kvfs (1)"), and removes
 * whatever this call created. Of a directory it refuses one owned by
 * another user or writable by others unless KVFS_SAFE_DIRECTORY names it
 * or is "*" (-EPERM), store files that are symbolic links, not regular
 * files or have more than one hard link (-ELOOP, -EINVAL, -EMLINK), a
 * database of the directory backend's kind that is not a kvfs store
 * (-EINVAL, untouched), and a data file shorter than the pages it claims
 * or a store whose data space is gone (-EIO). Clears the reader slots of
 * dead processes. *out is heap; the caller closes it with
 * store_close.
 */
int store_open(const char *name, unsigned flags, struct store **out, char *why, size_t why_len);
void store_close(struct store *st);
/*
 * Closes; when this handle's store_open created the store, removes it again
 * (its files, and the directory when that was created too), so that a
 * failed first command leaves nothing behind.
 */
void store_close_discard(struct store *st);
int store_info(struct store *st, struct store_info *out);
/*
 * Which data values stand for a container of their own (model/'s empty
 * object and array records): a backend that keeps an index of each
 * container's children gives such a key an entry there too, which
 * store_scan_child_subdirs relies on. Set it right after store_open,
 * before the first write transaction; every writer of a store must set
 * the same test.
 */
typedef bool (*store_container_test_fn)(const void *val, size_t len);
void store_set_container_test(struct store *st, store_container_test_fn fn);
/* When the store was created (read by store_open): no round trip, unlike store_info's counts. */
int64_t store_created_ns(const struct store *st);
/*
 * Space and readers; walks the file's free list, so not for hot paths.
 * -ENOTSUP without STORE_CAN_USAGE.
 */
int store_usage(struct store *st, struct store_usage *out);
/*
 * The room of a store kept on servers, asked of them at most once a
 * second however often it is called (a `df` loop must not load them).
 * -ENOTSUP for a store in local files: the file system's statvfs says.
 */
int store_room(struct store *st, struct store_room *out);
/*
 * 0 when this handle's reads may be served from what it learnt of the
 * store earlier (etcd: a snapshot and the watch, docs/ETCD.md section 8a)
 * but it knows of every commit made up to a moment ago (etcd: its watch's
 * member confirmed within the last 5 s that it was current), and always
 * for a store in local files; 1 when it cannot tell, *out saying since
 * when and why. Cheap (no call to a server), any thread.
 */
int store_stale(struct store *st, struct store_stale *out);
/*
 * Clears reader slots left by processes that died inside a read transaction
 * (they pin old pages, so the file grows, and then jam the reader table).
 * *cleared (may be NULL) counts them. 0 (none) without STORE_CAN_USAGE.
 */
int store_readers_check(struct store *st, unsigned *cleared);
/* Flushes committed writes to disk (fsync); 0 at once without STORE_CAN_SYNC.
 * The queued batch (store_queue_start) is committed first. */
int store_sync(struct store *st);
/*
 * The handle is about to close whatever its servers do: from ms from now
 * on no call waits on a server (one under way ends then with -ETIMEDOUT,
 * later ones at once), so that a daemon whose cluster stopped answering
 * still exits. Any thread. Nothing for a store that waits on no server.
 */
void store_end_calls(struct store *st, unsigned ms);
/*
 * One deadline for what the calling thread asks of st's servers from now
 * on, until its next call (ms 0: none): each call ends with -ETIMEDOUT
 * once ms pass without an answer to any of them, later ones at once, so
 * that one operation made of many calls fails within ms of the servers'
 * last answer (a daemon's FUSE request: docs/ETCD.md section 12).
 * Nothing for a store that waits on no server.
 */
void store_deadline(struct store *st, unsigned ms);
/*
 * Queued commits (kvfs mount -o commit=MS), for a writable handle: from
 * now on store_write returns once fn has run in a nested transaction of
 * one open batch (its result is fn's, as ever: a refusal is reported at
 * once), and the batch is committed as one transaction at most ms later,
 * at store_sync and at store_close. Reads of this handle see the batch at
 * once (one at a time while it is open); other processes at its commit.
 * A commit that fails when nobody waits for it is reported by the next
 * store_sync. 0 or -errno; -ENOTSUP for a backend without it.
 */
enum store_queue_mode {
	STORE_QUEUE_ALL,	/* every store_write is queued (mount -o commit=MS) */
	/*
	 * Only store_write_later is queued; a store_write still returns
	 * after its commit, which commits the queued batch with it (one
	 * transaction, one sync): the mount's default mode, where a tool's
	 * finishing touches to a file it just wrote join its next commit.
	 */
	STORE_QUEUE_LATER,
};
int store_queue_start(struct store *st, unsigned ms, enum store_queue_mode mode);
/*
 * Writes a compacted copy of the live store into the empty directory `dir`
 * (STORE_CAN_HOT_COPY, else -ENOTSUP).
 */
int store_copy(struct store *st, const char *dir);

/*
 * Read transactions: a consistent snapshot; never block writers or other
 * readers. *out is heap; end it with store_txn_end on every path.
 */
int store_read_begin(struct store *st, struct store_txn **out);
void store_txn_end(struct store_txn *txn);
uint64_t store_txn_id(const struct store_txn *txn);
/*
 * Whether every read of txn comes from one committed state that an id
 * names exactly: true with *id when two read transactions of this handle
 * given the same id read the same bytes, the keys each hides
 * (store_txn_hide) aside. LMDB: its txn id, except for a read of the
 * queued batch (its id stays while writes join it); etcd: the revision it
 * pinned (a first read pins it: a round trip when it has read nothing
 * yet). False for a write transaction (it reads its own puts), and where
 * the backend cannot tell. For a cache of what a state holds
 * (model/tree/view_size.c): a wrong true would serve another state's
 * answer.
 */
bool store_txn_snapshot(const struct store_txn *txn, uint64_t *id);
/*
 * A pointer the caller attaches to a transaction (model/ keeps the rows a
 * write touched there); NULL until set. Borrowed: the store never frees it.
 */
void store_txn_set_owner(struct store_txn *txn, void *owner);
void *store_txn_owner(const struct store_txn *txn);
/*
 * In a write's fn: when fn ends with a positive code (a dry run that
 * commits nothing), its outcome is taken as read, not confirmed at the
 * newest revision. A backend that reads a write from shared answers
 * (etcd: docs/ETCD.md section 8a) confirms such an outcome with a round
 * trip of its own; this is for a check whose later commit makes the
 * outcome right anyway (a create with O_TRUNC, whose commit writes over a
 * name made meanwhile: model_create_check_unconfirmed).
 */
void store_txn_unconfirmed(struct store_txn *txn);
/*
 * In a write's fn: asks for a position no older than the cluster's
 * newest when the write began (every commit of any process that had
 * landed by then is at or before it), raised into *as_of when the write
 * returns (a commit, a refusal or a dry run alike). For a backend whose
 * position may lag other processes' commits (etcd: a mount's watch):
 * the revision of an answer the write had from the cluster (its first
 * read at the newest revision, the confirmation of its outcome, its
 * commit), or, when it had none (a dry run served by shared answers and
 * taken as read), one round trip's. A backend whose position is exact
 * (LMDB) leaves *as_of: the caller takes store_position after the write.
 * For the open of a file whose commit asks what another process removed
 * since (model_parent_gone).
 */
void store_txn_as_of(struct store_txn *txn, uint64_t *as_of);
/*
 * Hides key[0..len] of the data or index space and everything under it
 * (its tuple subtree, not siblings that merely continue its bytes) from
 * this read transaction: store_get gives -ENOENT and scans step over it
 * with one seek, as if it were deleted (model/ttl/ttl_space.c hides expired nodes
 * and their index entries so). The key is copied. 0, -ENOMEM, or -EINVAL
 * (a write transaction, another space, an empty key).
 */
int store_txn_hide(struct store_txn *txn, enum store_space space, const void *key, size_t len);
/*
 * The first key hidden in the space at or after key[0..len] (byte order):
 * 1 with *out filled (borrowed until the transaction ends), 0 when none.
 * model/ shows a directory whose keys are all hidden as an empty one.
 */
int store_txn_hidden_from(struct store_txn *txn, enum store_space space, const void *key,
			  size_t len, struct store_val *out);

/*
 * The meta `format` of the store (docs/FORMAT.md). store_format: as found
 * when it was opened (a store newer than STORE_FORMAT_VERSION never opens).
 * store_txn_format: as this transaction's snapshot holds it, 0 when
 * unreadable; costs one meta lookup per transaction only while the store
 * was older than STORE_FORMAT_VERSION. store_set_format writes it inside a
 * write transaction (model/'s upgrade), -EROFS in a read transaction.
 */
unsigned store_format(struct store *st);
unsigned store_txn_format(struct store_txn *txn);
int store_set_format(struct store_txn *txn, unsigned version);

/*
 * Write transactions run `fn` inside one transaction and commit it when fn
 * returns 0; any other return aborts and is passed back. The backend may
 * abort an attempt and run fn again from the start in a fresh transaction
 * (to make room, or after another writer's commit got in the way), so fn
 * must not keep state outside `txn` between attempts. A really full disk
 * gives -ENOSPC. Do not call from inside another transaction of the same
 * thread.
 *
 * Writes from threads of one process are serialized, or grouped (group
 * commit, store_write and store_write_later alike): writes that arrive
 * together may share one transaction, each fn in a nested transaction of
 * its own (so a refusal undoes only its own changes), and so one sync;
 * each caller gets its own fn's result, and store_position and
 * store_version move once for all of them.
 */
typedef int (*store_write_fn)(struct store_txn *txn, void *arg);
int store_write(struct store *st, store_write_fn fn, void *arg);
/*
 * store_write, except that with a STORE_QUEUE_LATER batch open it returns
 * once fn has run in the batch (as a queued write does): committed at the
 * next store_write, at most the queue's ms later, at store_sync or at
 * store_close. Without a queue (or a backend without queued commits) it
 * is store_write.
 */
int store_write_later(struct store *st, store_write_fn fn, void *arg);
/*
 * Whether another process committed since the last call (or the open): our
 * own commits are accounted for as they happen. Takes the write lock
 * briefly: not for hot paths.
 */
bool store_changed_elsewhere(struct store *st);

/*
 * A space an older store does not have yet (SCHEMA, INDEX, ATTR from
 * format 3; EXPIRY, TTL from format 4) is created at a writable open; in
 * a read-only open of such a store it reads as empty: get gives -ENOENT
 * and store_scan_open gives -ENOENT.
 */
/* Point operations. get: 0 or -ENOENT; the value is borrowed (see store_val). */
int store_get(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, struct store_val *out);
/* put: 0, -ENAMETOOLONG (key > STORE_KEY_MAX), -ENOSPC, -EROFS. */
int store_put(struct store_txn *txn, enum store_space space,
	      const void *key, size_t key_len, const void *val, size_t val_len);
/*
 * put of a value of val_len bytes that the caller fills in: *out points at
 * its place in the transaction's own page (so a big value is never copied
 * whole). Valid until the next write in txn; errors as put.
 */
int store_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
		      size_t key_len, size_t val_len, void **out);
/* True when the space holds no key in this snapshot (one O(1) look; an absent space is empty). */
bool store_space_is_empty(struct store_txn *txn, enum store_space space);
/*
 * A hint during a long write (an import): gives back the process's resident
 * copies of store pages that can be read again from the store's file (a
 * mapped file's pages, which a big transaction reads while it spills), so the
 * process's memory follows what the transaction must hold, not what it
 * has looked at. Changes nothing the transaction or any reader sees;
 * backends with nothing to give back ignore it.
 */
void store_txn_trim(struct store_txn *txn);
/*
 * A hint before a big write: make room for about `bytes` more, so that the
 * write is not run again for want of room (a backend with a map of fixed
 * size grows it to what is used plus bytes: address space; the file grows
 * only as pages are written). Call with no transaction of this handle
 * open. 0, or -errno when room could not be made (the write may still
 * find it later).
 */
int store_reserve(struct store *st, uint64_t bytes);
/*
 * Keys that expire by themselves (STORE_CAN_EXPIRE): in a write
 * transaction, calls fn once for every key put so far in the public
 * spaces; fn sets *deadline_ns (CLOCK_REALTIME ns; 0: never) and returns
 * 0 or -errno (which stops the walk and is returned). The store deletes
 * the key by itself at the earliest after that deadline (to the backend's
 * resolution: it may round up to a second). A key put without a deadline is
 * detached from any it had; a key put again after this call loses its
 * deadline, so call it last. Returns 0 without calling fn when the
 * backend lacks the ability; -EROFS in a read transaction.
 */
typedef int (*store_expiry_fn)(struct store_txn *txn, void *arg, enum store_space space,
			       const uint8_t *key, size_t len, int64_t *deadline_ns);
int store_txn_expire_puts(struct store_txn *txn, store_expiry_fn fn, void *arg);
/* del: 0 or -ENOENT. */
int store_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len);
/*
 * Deletes every key that starts with prefix; *deleted (may be NULL) counts
 * them. A prefix longer than STORE_KEY_MAX deletes nothing and gives 0.
 */
int store_del_prefix(struct store_txn *txn, enum store_space space,
		     const void *prefix, size_t prefix_len, uint64_t *deleted);

/*
 * Range scans over the keys that start with `prefix` (a byte prefix), in key
 * order. Note that the tuple ("a") is a byte prefix of the tuple ("a\0b"):
 * a tuple subtree is the range [P, P + 0xff), which model/ walks itself.
 * The scan is heap; close it before its transaction ends.
 */
int store_scan_open(struct store_txn *txn, enum store_space space,
		    const void *prefix, size_t prefix_len, struct store_scan **out);
/*
 * Next key: 1 with key/val filled (borrowed), 0 past the last key, <0 error.
 * Every scan moves forward or fails: a key that does not sort after the
 * one before it, or lands before where a seek sent the scan, or any other
 * sign the backend sees of keys out of place (a damaged page), gives
 * -EIO, and so does every later step (store_scan_damage says why). It
 * never hands out a key twice, so no caller loops on a damaged store.
 */
int store_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val);
/*
 * Moves so that the next key returned is the first one >= key. A seek may
 * go back; the next key is then checked against key only.
 */
int store_scan_seek(struct store_scan *scan, const void *key, size_t key_len);
/* What a scan that gave -EIO found out of place (static), or NULL when it found nothing. */
const char *store_scan_damage(const struct store_scan *scan);
/*
 * A flag the store's loops watch (a CLI's signal flag): once *flag is
 * nonzero, scans give -EINTR at their next step and store_write aborts
 * instead of committing (-EINTR). NULL: none. The flag must outlive st.
 */
void store_set_interrupt(struct store *st, const volatile sig_atomic_t *flag);
/*
 * Distinct children: returns the first key of the next distinct tuple element
 * at `depth` elements after the scan prefix (depth 1 = the children), with
 * *child_end set to the length of key that names that element; the next call
 * skips that whole subtree with one cursor seek. 1 found, 0 end, <0 error.
 */
int store_scan_next_distinct(struct store_scan *scan, int depth,
			     struct store_val *key, struct store_val *val, size_t *child_end);
/*
 * Says that the scan, before its first step, will walk the prefix's
 * children with store_scan_next_distinct (seek past each child's subtree
 * after its first key), as a listing does, and read of a child that holds
 * keys only which child it is and the element after it (its kind): a
 * backend whose seeks are round trips reads the children's first keys
 * ahead, and where it can trust its index of children, hands such a child
 * out by another key under it than its first, with an empty value. Leaf
 * children and a child's own key (a record) come as without it.
 */
void store_scan_expect_children(struct store_scan *scan);
/*
 * How many containers the child child[0..len) of the scan's prefix (a
 * whole tuple key one element below it, one the scan handed out) holds
 * one element below it: keys of its own with more under them, and keys
 * whose value passes the store's container test. A listing gives its
 * nlink so without reading the child. 1 with *count exact; 0 not known
 * (the backend cannot tell without reading the child; one with
 * STORE_CAN_READ_LOCALLY always says 0, and the caller reads the child
 * itself); <0 error. Costs a remote backend a few requests per window of
 * a listing, not per child.
 */
int store_scan_child_subdirs(struct store_scan *scan, const void *child, size_t len,
			     uint32_t *count);
/*
 * Reads the keys under prefix in space now, so that the point reads and
 * scans this read transaction makes there later are answered from memory:
 * for a backend whose every read is a round trip, a check that looks up
 * one index entry per row. Only a hint: a no-op where reads are local and
 * in write transactions; failing, the reads go out one by one as without
 * it. 0 or -errno.
 */
int store_txn_prefetch(struct store_txn *txn, enum store_space space, const void *prefix,
		       size_t prefix_len);
/*
 * Says that the point reads this read transaction makes in space under
 * prefix will come in key order (a listing reading each child's
 * attributes): a backend whose every read is a round trip answers one
 * that misses there with a page of the keys from it on, which the next
 * ones find. Only a hint: a no-op where reads are local and in write
 * transactions, and every read answers as without it.
 */
void store_txn_expect_reads(struct store_txn *txn, enum store_space space, const void *prefix,
			    size_t prefix_len);
/*
 * Checks what the backend keeps for itself beside the spaces (an index of
 * children its listings read) against them, and how it keeps them (each
 * space's keys in order, as a walk and as a seek see them), as far as the
 * backend keeps either, in the read transaction txn:
 * fn(arg, key, len, message) once for each problem, key a data-space key
 * (len 0: none). 0, or -errno when a read failed.
 */
typedef void (*store_check_fn)(void *arg, const uint8_t *key, size_t len, const char *message);
int store_txn_check(struct store_txn *txn, store_check_fn fn, void *arg);
/*
 * Rebuilds, in the write transaction txn, what store_txn_check finds
 * missing of what the backend keeps for itself (an index of children's
 * entries). 0, or -errno. A backend with nothing of its own: 0 at once.
 */
int store_txn_repair(struct store_txn *txn);
/* How many cursor positionings this scan made (tests prove skips with it). */
uint64_t store_scan_steps(const struct store_scan *scan);
/* The transaction the scan runs in (borrowed). */
struct store_txn *store_scan_txn(struct store_scan *scan);
void store_scan_close(struct store_scan *scan);

/*
 * The change feed (store/feed.c): what other processes committed, so that
 * a mount re-checks only the nodes they touched: the keys of the node
 * spaces (DATA, ATTR, SCHEMA: keys that name a node) each commit put or
 * deleted, by its position. A position grows with every commit by any
 * process. How a backend knows is its own (a small bounded log every write
 * transaction writes inside itself, docs/FORMAT.md "changes", or what the
 * server reports); where it cannot tell (entries trimmed, a commit that
 * wrote none: an older kvfs, another program, a read-only open of a store
 * without the log), the reader must assume everything changed.
 */
enum store_change_kind {
	STORE_CHANGE_KEY = 1,	/* the node at key: its record or its attributes */
	STORE_CHANGE_SUBTREE = 2,	/* the node at key (a tuple) and everything below it */
	STORE_CHANGE_ALL = 3,	/* anything (key empty) */
};

struct store_change {
	uint64_t pos;		/* the position of the commit */
	bool mine;		/* committed through this store handle */
	enum store_change_kind kind;
	/*
	 * STORE_CHANGE_SUBTREE: the commit deleted the node at key with its
	 * subtree (rm -r, a move away, a document that makes it a leaf; it
	 * may have written the node again), rather than touching so many keys
	 * below it that they were told as one subtree. Pending files staged
	 * in a directory so removed do not outlive it (model_parent_gone).
	 */
	bool gone;
	const uint8_t *key;	/* borrowed: valid during the callback only */
	size_t len;
};

/* Called once per change, in commit order: 0, or -errno to stop the read with it. */
typedef int (*store_feed_fn)(void *arg, const struct store_change *c);

/*
 * Tells the change feed that this write transaction removed the node at
 * key (a whole tuple) with its subtree: a STORE_CHANGE_SUBTREE item with
 * gone set, as its children's prefix deletes give, also when none was
 * deleted (an empty container's marker, a leaf). Nothing is written.
 */
void store_note_removed(struct store_txn *txn, enum store_space space, const void *key,
			size_t len);

/*
 * The position of now: the last commit of any process. Cheap (no
 * transaction), for polling.
 */
uint64_t store_position(struct store *st);
/*
 * Moves whenever what this handle reads changes: every commit, and every
 * write applied to a queued batch (store_queue_start), which moves no
 * position. For caches of this process; not a position of the feed.
 */
uint64_t store_version(struct store *st);
/*
 * Keys this handle's reads have handed out so far, by every backend alike:
 * one per point read, one per key a scan returned (counted when the scan
 * closes). Cheap; for counting what an operation reads (user.kvfs.stats).
 */
uint64_t store_keys_read(struct store *st);

/*
 * Calls fn for every change committed after position `after`, up to the
 * snapshot the read takes, whose position goes to *upto (also on -ESTALE).
 * -ESTALE when the feed cannot tell what changed in between (a commit
 * without a log entry, entries trimmed, no log at all): the caller must
 * re-check everything. Commits that touched no node key call fn not at all.
 */
int store_feed_read(struct store *st, uint64_t after, store_feed_fn fn, void *arg,
		    uint64_t *upto);

#endif
