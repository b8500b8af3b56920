/*
 * fs/fs_int.h - private interfaces shared by the files of fs/: the daemon's
 * one context, the table of nodes the kernel knows, open files, the lock
 * order, and what each file of fs/ offers the others (fs/ops.c has a map).
 * Nothing outside fs/ includes it.
 *
 * kvfs uses the libfuse LOW-LEVEL API: the kernel names files by node ids
 * that we hand out, so we can tell the kernel precisely which cached names to
 * forget (fuse_lowlevel_notify_inval_entry) when a write changes a subtree
 * behind its back (a NAME.json commit, a rename onto a view, a type change).
 *
 * Node ids: the root is FUSE_ROOT_ID; any other node id is the address of its
 * struct fs_node. A node lives while the kernel holds lookups on it
 * (nlookup), a child node refers to it, or an open file or directory refers
 * to it (refs). Every node knows its parent and its name, so a rename moves
 * a whole subtree by relinking one node, and a path is rebuilt on demand.
 *
 * Lock order. A thread holding a lock may take only locks further down this
 * list, never one further up, and no two locks of the same rank at once:
 *
 *   0. ctx->schema_try_lock  one attempt to declare the schemas that wait
 *                       (table.c): taken with no other lock held; model
 *                       calls and the write section under it.
 *      ctx->push_lock   one push of a leaf's text into the kernel's pages
 *                       (cache.c, in the worker) against a leaf's first
 *                       writer being published (file.c): taken with no
 *                       other lock held.
 *   1. f->lock          one open file (struct fs_file): its buffer and state.
 *                       Held across model calls (a commit, a snapshot).
 *   2. ctx->gen_lock    the write section, fs_write_begin .. fs_write_end:
 *                       held across one model call that may commit; shared
 *                       by calls that keep every name where it is (so their
 *                       commits can share one sync: the store's group
 *                       commit), exclusive for renames and unlinks.
 *   3. ctx->lock        the node table and every node's fields, ctx->files
 *                       and each file's list links, refs and pend fields.
 *                       No model call is made while holding it (the model
 *                       takes store locks, and the list callback takes
 *                       ctx->lock inside a read transaction).
 *   4. ctx->inval_lock  the worker's queue; ctx->watch_lock, the watcher's
 *                       stop flag. Nothing else is taken under them. (The
 *                       fs_inval_* calls take ctx->lock themselves: never
 *                       call them holding it.)
 *   5. ctx->err_lock    the kept refusals (fs_log_model): taken last and
 *                       alone, nothing else is locked or called under it.
 *      ctx->schema_lock the schemas that wait (table.c): taken alone, no
 *                       model call under it.
 *      ctx->ahead_lock  the attributes read ahead (ahead.c): taken alone,
 *                       no model call and no other lock under it.
 *
 * The store's own locks (LMDB's writer lock, reader slots, and with
 * -o commit the batch lock that the store's committer thread and this
 * process's reads of the queued batch take) rank between 2 and 3: model
 * calls are made under 1 and 2, never under 3. A writer waits under 1 and
 * 2 for the committer's verdict; the committer takes no lock of fs/. Each struct
 * below names, per field, the lock that guards it; "fixed" fields are set
 * before the struct is published to other threads and never change.
 */
#ifndef KVFS_FS_INT_H
#define KVFS_FS_INT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include "fs/fs.h"
#include "model/model.h"

/*
 * A pending file: a name created in an array that is no index (rsync's
 * ".0.XXXXXX", sed -i's "sedXXXXXX"). An array can only hold indices, so it
 * lives only here: its content as last flushed, the type set with
 * user.kvfs.type and the mtime set with utimens. Renaming it onto an index
 * commits it (model_write_at: one transaction); unlinking it drops it. It is
 * never listed and never stored. Its node holds one ref on itself while it
 * is pending, so that it outlives the kernel's lookups. Owned by pending.c;
 * every field is guarded by ctx->lock.
 */
struct fs_tmpfile {
	char *buf;
	size_t len;
	int64_t mtime_ns;
	enum model_type type;	/* 0 until set: keep the type of the leaf it replaces */
};

/*
 * Pushing the text of a directory's small leaves into the kernel's page
 * cache (cache.c): a readdirplus makes the kernel know them (LISTED); the
 * first open of one of them that misses the page cache queues the push of
 * all of them (QUEUED), so that `cat *` sends one read, not one per leaf,
 * while `find` and `ls -l`, which open nothing, cost no push.
 */
enum fs_push_state {
	FS_PUSH_NONE,
	FS_PUSH_LISTED,
	FS_PUSH_QUEUED,
};

/*
 * A node the kernel knows (inode.c owns the table). Every field is guarded by
 * ctx->lock; the root's parent and name are fixed.
 */
struct fs_node {
	struct fs_node *parent;	/* holds one ref; NULL for the root; a rename changes it */
	char *name;		/* the name as shown (escaped); "" for the root */
	struct fs_node *hnext;	/* chain in the table, by (parent, name) */
	struct fs_node *prev, *next;	/* ctx->nodes: every live node but the root */
	struct fs_node *children;	/* the nodes whose parent this is */
	struct fs_node *sib_prev, *sib_next;	/* in parent->children */
	bool kind_known;	/* is_dir recorded by a stat or a listing */
	bool is_dir;
	/*
	 * A leaf's type as last read (a stat, a listing, its user.kvfs.type),
	 * 0 when unknown: what getxattr answers once its name is gone (a
	 * rename over it, as sed -i and rsync make) for a path resolved before
	 * that, as ext4 answers from the replaced inode.
	 */
	enum model_type seen_type;
	uint64_t nlookup;	/* lookups the kernel holds; a forget of more is a bug */
	uint64_t refs;		/* child nodes, open files and directories, pins */
	bool hashed;		/* reachable by (parent, name); false once removed */
	/* inode.c: the st_ino shown (fs_node_st_ino_locked) */
	uint64_t st_ino;	/* 0 until first shown */
	uint64_t model_ino;	/* the model's number st_ino was taken from */
	bool ino_fixed;		/* st_ino no longer follows the model's (a rename kept it) */
	struct fs_node *ino_next;	/* chain in ctx->fixed while ino_fixed */
	/* cache.c: the page cache */
	bool cache_known;	/* cache_* recorded at an earlier open */
	int64_t cache_mtime;	/* leaf mtime and size at the last open or commit */
	uint64_t cache_size;
	enum fs_push_state push_state;	/* directories: pushing their leaves' text (cache.c) */
	/* attr.c and dir.c: what the kernel was told */
	uint64_t dir_gen;	/* store generation when last listed (+1; 0 never) */
	int64_t dir_until;	/* that listing's earliest child deadline (fs/ttl.c; 0: none) */
	uint64_t nlink_gen;	/* containers: store generation of nlink (+1; 0 never) */
	uint32_t nlink;		/* containers: st_nlink as last counted */
	/* file.c, defer.c, pending.c, xattr.c */
	unsigned npend;		/* open files whose unsaved content getattr shows (f->pend) */
	struct fs_tmpfile *tmp;	/* a pending file (pending.c) */
	struct fs_file *wfile;	/* a leaf's one write buffer, shared by its writers */
	enum model_type want_type;	/* set on an empty leaf whose text did not parse yet
					 * (tar --xattrs types a file before writing it):
					 * applied at the next commit; holds one ref (xattr.c,
					 * defer.c) */
	/* inode.c: a leaf thread fresh_pid wrote and closed (fs_node_fresh) */
	pid_t fresh_pid;
	int64_t fresh_until;	/* CLOCK_MONOTONIC ns */
};

/* What fi->fh points to: told apart by the first field (setattr gets either). */
enum fs_handle_type {
	FS_HANDLE_FILE = 0x6b764601,
	FS_HANDLE_DIR = 0x6b764402,
};

/*
 * What an open file is, and so where its reads and commits go. Fixed at
 * open, except that FS_FILE_READER_LAZY becomes FS_FILE_READER (under
 * f->lock) at the first read that reaches the daemon.
 */
enum fs_file_kind {
	FS_FILE_READER,		/* a leaf: buf holds its version open_mtime/open_size (cache.c) */
	FS_FILE_READER_LAZY,	/* a leaf whose pages the kernel holds: no text yet (cache.c) */
	FS_FILE_READER_BIG,	/* a leaf above FS_SNAPSHOT_MAX: read per call, nothing kept */
	FS_FILE_WRITER,		/* a leaf's one write buffer (node->wfile), shared by its writers */
	FS_FILE_VIEW_READER,	/* NAME.json read: the rendering at open */
	FS_FILE_VIEW_WRITER,	/* NAME.json written: the whole new document */
	FS_FILE_VIEW_APPEND,	/* NAME.json with O_APPEND: buf holds only the appended values */
	FS_FILE_TMP,		/* a pending file in an array (pending.c): its content */
};

/*
 * One open file (fi->fh), owned by file.c (file_open.c opens it). Every
 * writable open of a leaf shares one fs_file (node->wfile): writes by any
 * handle land in one buffer, O_APPEND appends at its end, and each flush
 * commits it when dirty, as one page cache would on a local filesystem.
 * Readers, views and pending files get one each.
 */
struct fs_file {
	enum fs_handle_type type;	/* fixed */
	struct fs_node *node;	/* fixed; holds one ref */
	bool writable;		/* fixed: opened for writing (a pending file may be read-only) */
	uint64_t ino;		/* set at open (f->lock): st_ino, for fstat once the name is gone */
	pid_t writer_pid;	/* f->lock: the thread of the last write (fs_node_fresh) */
	struct fs_file *prev, *next;	/* ctx->files (ctx->lock) */
	unsigned refs;		/* the kernel's handles + committers at work (ctx->lock) */
	bool pend;		/* getattr answers pend_len/pend_mtime (ctx->lock) */
	uint64_t pend_len;	/* (ctx->lock) */
	int64_t pend_mtime;	/* (ctx->lock) */
	bool pend_view;		/* a created view this writer has not committed yet:
				 * the copy of writable && view && pending that
				 * view_is_pending reads (ctx->lock; fs_file_publish) */
	bool pend_leaf;		/* a created leaf not in the store yet: getattr shows
				 * it as a leaf (ctx->lock; fs_file_publish) */
	uint64_t pend_ino;	/* its st_ino (ctx->lock) */
	struct model_attr pend_attr;	/* mode, uid, gid getattr shows for the
					 * deferred ones (ctx->lock; have: which) */
	pthread_mutex_t lock;	/* guards every field below */
	enum fs_file_kind kind;
	char *buf;		/* writers: the new content; readers: the text */
	size_t len, cap;
	int64_t open_mtime;	/* readers: the mtime and size of the version last seen */
	uint64_t open_size;
	bool dirty;		/* written since the last commit: commit at flush */
	bool trunc;		/* opened with O_TRUNC, not written: commit at release */
	bool pending;		/* created view, not yet in the store (others see it
				 * as pend_view, after fs_file_publish) */
	int64_t wmtime_ns;	/* time of the last change to buf, or the mtime set */
	/*
	 * Leaf writers: what the tool set on the descriptor before closing it
	 * (utimens, chmod, chown), kept for the commit at close, so that
	 * content, type, mode and mtime of one file land in one commit. A
	 * created leaf (pending) is not in the store until that commit either.
	 */
	bool want_mtime;	/* wmtime_ns was set by utimens: stored as is */
	int64_t want_deadline_ns;	/* user.kvfs.expires: with the content; 0 none */
	struct model_attr want_set;	/* chmod/chown: fields stored */
	unsigned want_unset;	/* chmod/chown: fields back to the default */
	struct model_attr new_attr;	/* pending leaf: what create gives it */
	bool new_trunc;		/* pending leaf created with O_TRUNC (the shell's >):
				 * like any O_TRUNC, committed at release when not
				 * written; else (touch) at the first flush */
	bool refused;		/* the model refused buf as it is: not parsed again */
	/*
	 * A view writer's opener (set at open, before the kernel has the
	 * handle): its starting text is rendered only if they may read it
	 * (model_read_to_as), its commits are checked on their behalf
	 * (model_write_as), and its refusals are theirs. who.groups is
	 * who_groups (heap).
	 */
	bool who_set;
	struct model_cred who;
	gid_t *who_groups;
	/*
	 * A leaf made by mknod (tar -x makes each file so, then opens it): held
	 * as a pending writer with no handle, one ref being the hold, so that
	 * the open that follows joins it and its close makes the one commit
	 * (defer.c). Guarded by ctx->lock.
	 */
	bool held;
	int64_t held_ns;	/* when mknod made it: committed FS_HOLD_MS later at the latest */
	/*
	 * held by fs_file_hold_empty, not mknod: a created leaf whose empty
	 * value was refused, kept for the open that follows (`: > f; echo 41
	 * >> f`). Guarded by ctx->lock.
	 */
	bool held_empty;
	/* spill.c: buf is a shared mapping of an unlinked file once big */
	const char *spill_dir;	/* fixed: where that file goes (the store's directory) */
	bool spilled;
	bool heap_only;		/* the disk had no room for a spill file: buf stays on the heap */
	int spill_fd;
	size_t spill_end;	/* bytes of the file ever written: after it, zeros */
};

/* f->lock held, or the kind is one that never changes. */
static inline bool fs_file_is_view(const struct fs_file *f)
{
	return f->kind == FS_FILE_VIEW_READER || f->kind == FS_FILE_VIEW_WRITER ||
	       f->kind == FS_FILE_VIEW_APPEND;
}

enum fs_inval_kind {
	FS_INVAL_ENTRY,		/* the name in the parent (and, for a directory, its subtree) */
	FS_INVAL_ATTR,		/* the attributes of a node */
	FS_INVAL_DATA,		/* the attributes and cached pages of a node */
	FS_INVAL_SUBTREE,	/* a node and everything known below it (the item holds a ref) */
	FS_INVAL_PATH,		/* the node at a path another process changed (name = path) */
	FS_INVAL_PATH_TREE,	/* the same, with everything known below it */
	FS_INVAL_STORE,		/* push a directory's small leaves into their pages (holds a ref) */
};

/*
 * The last refusals (a path and the message the model gave), so that a user
 * without syslog can read why `cp` saw only "Invalid argument": the xattr
 * user.kvfs.error (xattr.c). A ring of FS_ERRORS_MAX, oldest overwritten,
 * guarded by ctx->err_lock (mount.c).
 */
#define FS_ERRORS_MAX 64
struct fs_error {
	char *path;		/* heap; NULL for an unused slot */
	uid_t uid;		/* whose request was refused; (uid_t)-1: nobody's */
	char msg[512];
};

/* A renamed name whose node was freed: its next node keeps the number (inode.c). */
#define FS_MOVED_MAX 64
struct fs_moved {
	const struct fs_node *parent;	/* compared, never followed: may be stale */
	char *name;		/* heap; NULL for an unused slot */
	uint64_t st_ino;
};
#define FS_FIXED_BUCKETS 4096	/* ctx->fixed: nodes whose st_ino a rename fixed, by st_ino */

/* What stats.c counts: the requests by opcode, and the pages pushed (dir.c). */
enum fs_stat {
	FS_STAT_LOOKUP, FS_STAT_FORGET, FS_STAT_GETATTR, FS_STAT_SETATTR, FS_STAT_READLINK,
	FS_STAT_MKNOD, FS_STAT_MKDIR, FS_STAT_UNLINK, FS_STAT_RMDIR, FS_STAT_SYMLINK,
	FS_STAT_RENAME, FS_STAT_LINK, FS_STAT_OPEN, FS_STAT_READ, FS_STAT_WRITE,
	FS_STAT_FLUSH, FS_STAT_RELEASE, FS_STAT_FSYNC, FS_STAT_OPENDIR, FS_STAT_READDIR,
	FS_STAT_READDIRPLUS, FS_STAT_RELEASEDIR, FS_STAT_FSYNCDIR, FS_STAT_STATFS,
	FS_STAT_SETXATTR, FS_STAT_GETXATTR, FS_STAT_LISTXATTR, FS_STAT_REMOVEXATTR,
	FS_STAT_CREATE,
	FS_STAT_STORE,		/* fuse_lowlevel_notify_store calls that succeeded */
	FS_STAT_STORE_BYTES,	/* and the bytes they pushed */
	FS_STAT_STORE_DIRS,	/* directories whose leaves the worker went through */
	FS_STAT_AHEAD_READS,	/* listings read ahead for stats (ahead.c) */
	FS_STAT_AHEAD_HITS,	/* stats they served */
	FS_STAT_MAX
};

/* A run of one directory's children, listed for the stats that follow (ahead.c). */
struct fs_ahead_batch {
	char **names;		/* heap, each heap: escaped, as listed */
	struct model_node *nodes;	/* heap, one per name */
	size_t n, cap;
	size_t next;		/* where the next stat's name is looked for first */
	size_t hits;		/* stats it served */
};

/* ahead.c's state: every field guarded by ctx->ahead_lock. */
struct fs_ahead {
	struct fs_node *dir;	/* the batch's directory: holds one ref; NULL none */
	uint64_t gen;		/* model_version the batch was read at (+1; 0 none) */
	int64_t read_ns;	/* when it was read (CLOCK_MONOTONIC) */
	int64_t age_ns;		/* how long a batch serves: fixed once serving */
	struct fs_ahead_batch batch;
	size_t cap, next_cap;	/* the batch's size; the one being read */
	bool reading;		/* a batch is being read: the others ask the model */
	/* the last stat that missed, and a directory read ahead in vain: compared, never dereferenced */
	const struct fs_node *miss_dir, *miss_node, *dead_dir;
	uint64_t miss_gen, dead_gen;
	int64_t miss_ns;	/* when the last stat missed (CLOCK_MONOTONIC) */
};

/*
 * All the daemon's state: fuse_req_userdata() of every request (mount.c
 * makes it). The settings at the top are fixed once the session runs.
 */
struct fs_ctx {
	struct model *model;	/* fixed; thread-safe itself */
	struct fuse_session *se;
	char *store_name;	/* the store as named: its absolute directory, or a URL */
	char *store_dir;	/* absolute; a store named by URL: $TMPDIR (spill files) */
	char *mountpoint;	/* absolute */
	bool foreground, read_only, debug;
	uid_t uid;
	gid_t gid;
	double entry_timeout;	/* seconds the kernel may trust a name */
	double attr_timeout;	/* seconds the kernel may trust attributes */
	char *log_path;		/* -o log=FILE (absolute), or NULL */
	unsigned commit_ms;	/* -o commit=MS: writes are checked and queued in the
				 * store's batch, committed at most MS later (docs/COMMITS.md,
				 * "The commit model"); 0: committed before close returns */
	bool later;		/* the default mode's queue of finishing touches runs
				 * (fs_node_fresh; fixed once serving) */
	bool reads_locally;	/* model_reads_locally: fixed once serving */
	int log_fd;		/* lines go here when >= 0 (-o log=, or no syslog): else syslog */

	pthread_mutex_t err_lock;	/* errors, err_next (mount.c) */
	struct fs_error errors[FS_ERRORS_MAX];
	unsigned err_next;	/* the slot the next refusal takes */

	pthread_mutex_t lock;	/* the fields below, every struct fs_node, fs_file links */
	struct fs_node root;
	struct fs_node **buckets;	/* inode.c's table */
	size_t nbuckets, nnodes;
	struct fs_node *nodes;
	struct fs_file *files;	/* every open file (file.c) */
	struct fs_moved moved[FS_MOVED_MAX];	/* a ring, oldest overwritten (inode.c) */
	unsigned moved_next;	/* the slot the next freed renamed node takes */
	uint64_t move_seq;	/* the last number mixed into a number of its own */
	struct fs_node **fixed;	/* FS_FIXED_BUCKETS chains (node->ino_next); NULL until needed */

	/* invalidate.c's worker: notifications must not run inside an operation */
	pthread_mutex_t inval_lock;	/* the fields below up to gen_lock */
	pthread_cond_t inval_cond;
	struct fs_inval *inval_head, *inval_tail;
	bool inval_foreign;	/* coalesced: the store changed elsewhere, revalidate all */
	bool inval_stop, inval_started;
	/*
	 * FS_INVAL_STORE items wait apart, behind every other item: a push
	 * only saves a read later, and must not delay an invalidation.
	 */
	struct fs_inval *push_head, *push_tail;
	unsigned inval_npush;	/* items on that list (at most FS_PUSH_QUEUE_MAX) */
	pthread_t inval_thread;	/* written before the thread runs, joined after stop */
	uint64_t inval_queued, inval_sent;	/* items ever queued / handled, for fs_inval_wait */
	pthread_cond_t inval_sent_cond;	/* broadcast when inval_sent moves or the worker stops */

	/*
	 * Noticing commits by other processes (the offline CLI; watcher.c):
	 * the store accounts for our own commits as it makes them and tells
	 * whether anyone else committed (model_changed_elsewhere). The watcher
	 * thread polls every FS_WATCH_MS and then invalidates what the kernel
	 * caches of the nodes those commits touched (the change feed below),
	 * so that long entry and attribute timeouts stay honest.
	 */
	pthread_mutex_t push_lock;	/* a push against a first writer (lock order, 0) */
	pthread_rwlock_t gen_lock;	/* the write section (rank 2 above; write_section.c) */
	/*
	 * Write sections that may change which nodes are directories (all
	 * but a leaf's content commit): how many are open, how many began.
	 * A leaf's commit that saw none of them and was the store's only
	 * commit keeps its directory's nlink count (fs_shape_carry).
	 */
	atomic_uint shape_writers;
	atomic_uint_fast64_t shape_seq;
	/*
	 * The change feed (model_changes_read): the watcher reads what other
	 * commits touched from feed_pos on, and has the worker revalidate only
	 * those nodes; when the store cannot tell, every node. Only the
	 * watcher thread touches these (fs_watch_start sets them before).
	 */
	uint64_t feed_pos;	/* generation the feed was read up to */
	uint64_t feed_want;	/* a foreign commit was seen at this generation: read to it */
	uint64_t reap_lo, reap_hi;	/* the reaper's last commits: ours, read as another's */
	pthread_mutex_t watch_lock;	/* watch_stop, watch_started */
	pthread_cond_t watch_cond;
	bool watch_stop, watch_started;
	pthread_t watch_thread;

	_Atomic uint64_t stats[FS_STAT_MAX];	/* stats.c: requests by opcode; no lock */

	pthread_mutex_t ahead_lock;	/* ahead */
	struct fs_ahead ahead;

	/* table.c: schemas set by user.kvfs.schema that wait for their rows */
	pthread_mutex_t schema_try_lock;	/* one attempt at a time (lock order, 0) */
	pthread_mutex_t schema_lock;	/* the fields below (lock order, 5) */
	struct fs_schema_wait *schema_waits;
	uint64_t schema_gen;	/* model_generation at the last attempt */
	uint64_t schema_idle_gen;	/* at the watcher's previous tick */
};

#define FS_WATCH_MS 150
#define FS_FEED_PATHS_MAX 4096	/* changed paths in one poll beyond which all are re-checked */
#define FS_READERS_CHECK_TICKS 20	/* clear dead readers every 20 polls: 3 s */
#define FS_TIMEOUT_DEFAULT 86400.0	/* entry and attr timeouts: the watcher keeps them honest */

/* ---- logging (mount.c) ---- */
/*
 * The -o log= file when given; else stderr in the foreground; else syslog
 * when /dev/log exists, and the stderr the mount command had when not.
 */
void fs_log(struct fs_ctx *ctx, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define fs_trace(ctx, ...) do { if ((ctx)->debug) fs_log((ctx), LOG_DEBUG, __VA_ARGS__); } while (0)
/*
 * Logs a failed model call: its message, else "<what>: strerror". what is
 * the path; a refusal (not ENOENT or EEXIST, which lookups and mkdir -p see
 * all the time) is also kept for user.kvfs.error.
 */
void fs_log_model(struct fs_ctx *ctx, int ret, const struct model_error *err, const char *what);
/* fs_log_model of a refusal that is uid's (a view's commit: its opener's). */
void fs_log_model_as(struct fs_ctx *ctx, uid_t uid, int ret, const struct model_error *err,
		     const char *what);
/*
 * Every request handler calls it first (stats.c): the refusals this thread
 * keeps until the next request are its caller's. Other threads' are
 * nobody's ((uid_t)-1).
 */
void fs_caller_set(fuse_req_t req);
/*
 * The newest kept refusal for path that who may see: of path itself (or
 * path.json) when !below, of path or anything below it when below; who
 * sees the refusals of their own requests and of paths they may read
 * (model_may_read). Copies the message to buf; false when none is kept.
 */
bool fs_error_find(struct fs_ctx *ctx, const struct model_cred *who, const char *path,
		   bool below, char *buf, size_t cap);

/* ---- invalidation worker (invalidate.c) ---- */

/* One notification waiting for the worker (ctx->inval_head; inval_lock). */
struct fs_inval {
	struct fs_inval *next;
	enum fs_inval_kind kind;
	fuse_ino_t ino;		/* the node, or the parent for FS_INVAL_ENTRY */
	char name[];		/* FS_INVAL_ENTRY */
};
/*
 * Queues iv (heap) for the worker, which frees it; dropped (inval_free) when
 * the worker does not run or FS_PUSH_QUEUE_MAX pushes wait. The watcher
 * (watcher.c) queues the change feed's paths through it.
 */
void inval_push(struct fs_ctx *ctx, struct fs_inval *iv);
void fs_inval_entry(struct fs_ctx *ctx, fuse_ino_t parent, const char *name, size_t len);
void fs_inval_node(struct fs_ctx *ctx, fuse_ino_t ino, enum fs_inval_kind kind);
/*
 * Invalidates ino's attributes in the kernel at once, from inside an
 * operation: attributes only (no page is locked, unlike a data
 * invalidation, which goes through the worker), so that the stat after a
 * close or fsync asks the daemon again.
 */
void fs_inval_attr_now(struct fs_ctx *ctx, fuse_ino_t ino);
/*
 * Revalidates node and every node known below it, in the worker: names that
 * are gone or changed between file and directory are forgotten (the kernel
 * drops their dentries), the others only lose their cached attributes and,
 * for leaves that changed, their pages, so a directory in use as a cwd
 * stays hashed. Pending files whose array is gone are dropped.
 */
void fs_inval_subtree(struct fs_ctx *ctx, struct fs_node *node);
/*
 * Queues the push of directory dir's small leaves (fs_cache_push_dir).
 * Takes over the caller's ref on dir. Skipped (the ref dropped) while
 * FS_PUSH_QUEUE_MAX pushes wait: the worker must not fall behind on
 * invalidations.
 */
void fs_inval_push(struct fs_ctx *ctx, struct fs_node *dir);
/* Whether an invalidation waits for the worker: a push in progress yields to it. */
bool fs_inval_waiting(struct fs_ctx *ctx);
/* The store changed elsewhere: one coalesced revalidation of every known node. */
void fs_inval_foreign(struct fs_ctx *ctx);
int fs_inval_start(struct fs_ctx *ctx);
void fs_inval_stop(struct fs_ctx *ctx);
/*
 * Waits until the worker has handled every item queued before the call, so
 * that a view's close returns with the kernel's names already following the
 * new subtree. Only from operations during which the kernel holds no
 * directory lock (flush, fsync): the worker's entry notifications take them.
 * Gives up after a second.
 */
void fs_inval_wait(struct fs_ctx *ctx);

/* ---- the write section (write_section.c) ---- */
/*
 * Around every model call that may commit. Shared: calls that keep every
 * name where it is run together (their commits share a sync); _excl: a
 * rename or unlink, which moves the node table before it ends.
 */
void fs_write_begin(struct fs_ctx *ctx);
void fs_write_begin_excl(struct fs_ctx *ctx);
void fs_write_end(struct fs_ctx *ctx, int ret);
/*
 * fs_write_begin, then fs_node_path: a path taken inside the write section
 * stays right until fs_write_end, because renames and unlinks move the node
 * table before they end theirs. On failure the section is ended already.
 */
int fs_write_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out);
int fs_write_path_excl(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out);
/*
 * The write section of a leaf's content commit, which never makes or
 * removes a directory (fs_write_end_leaf ends it): mark it once inside,
 * and after the commit fs_shape_carry keeps the parent's nlink when
 * nothing else committed meanwhile, so the getattr the kernel sends for
 * the parent after each create does not count its children again.
 */
struct fs_shape_mark {
	uint64_t version;	/* the store's before the commit */
	uint64_t seq;		/* ctx->shape_seq then */
	uint64_t reaps;		/* TTL reaps begun then (model_reaps) */
	bool quiet;		/* no other section that may change shapes, nor a reap, was running */
	/* fs_shape_mark_dirs: the directories an exclusive section changes */
	struct fs_node *dir[2];	/* the source's and the target's (NULL: none; may be one) */
	uint32_t nlink[2];	/* each one's count, taken at version */
	bool counted[2];	/* dir[i]'s count was taken at version */
};
int fs_write_path_leaf(struct fs_ctx *ctx, struct fs_node *node, char **out);
void fs_write_end_leaf(struct fs_ctx *ctx);
void fs_shape_mark(struct fs_ctx *ctx, struct fs_shape_mark *mark);
void fs_shape_carry(struct fs_ctx *ctx, struct fs_node *node, const struct fs_shape_mark *mark);
/*
 * An unlink, rmdir or rename keeps the nlink of the directories it
 * changes in the same way. Inside its exclusive section (so no other
 * section runs), before the model call: fs_shape_mark_dirs notes the
 * store's version and the counts of from and to (to may be NULL or from)
 * taken at that version. After a commit that succeeded, fs_shape_adjust
 * adds to each what the commit did to its child containers (an unlink of
 * a leaf: 0; an rmdir: -1; a rename: model_moved), when no TTL reap ran,
 * the store moved by exactly that commit, and no getattr replaced the
 * count meanwhile (one that raced the commit may have counted the new
 * state under the old version). Otherwise the next getattr counts.
 * The caller keeps from and to alive until then (the kernel's lookups
 * on them during the operation do).
 */
void fs_shape_mark_dirs(struct fs_ctx *ctx, struct fs_shape_mark *mark, struct fs_node *from,
			struct fs_node *to);
void fs_shape_adjust(struct fs_ctx *ctx, const struct fs_shape_mark *mark, int from_dirs,
		     int to_dirs);

/* ---- the watcher (watcher.c) ---- */
int fs_watch_start(struct fs_ctx *ctx);
void fs_watch_stop(struct fs_ctx *ctx);

/* ---- the node table (inode.c) ---- */
/*
 * ctx->lock held. The st_ino shown for node, whose model ino (a hash of the
 * path) is ino. A node keeps the number it showed across renames (its own
 * and its ancestors'), as on ext4, for as long as the daemon knows it and,
 * once the kernel forgot it, for the last FS_MOVED_MAX renamed names; a
 * fresh mount shows the model's. A number a renamed node keeps is never
 * shown by another node: a new node at the old name gets one of its own.
 * So `sed -i` replacing a file shows a new number (`tail -F` follows it).
 */
uint64_t fs_node_st_ino_locked(struct fs_ctx *ctx, struct fs_node *node, uint64_t ino);

int fs_nodes_init(struct fs_ctx *ctx);
void fs_nodes_release(struct fs_ctx *ctx);
struct fs_node *fs_node_from_ino(struct fs_ctx *ctx, fuse_ino_t ino);
/*
 * Finishing touches (docs/COMMITS.md, "The commit model"): a leaf whose content
 * thread pid wrote has just been committed at its close is fresh for
 * FS_FRESH_MS; that thread's later changes to it (times, mode, owner,
 * type, its rename into place: rsync's order) may then join the default
 * mode's queued batch and be committed with its next file, not each alone,
 * or at most FS_LATER_MS later (another process that opens the store
 * meanwhile waits for that commit: store/lmdb/lmdb_queue.c).
 * fs_node_fresh takes ctx->lock; false without the queue (ctx->later).
 */
#define FS_FRESH_MS 1000
#define FS_LATER_MS 100		/* the queue's bound: a last touch waits at most this */
void fs_node_fresh_set(struct fs_ctx *ctx, struct fs_node *node, pid_t pid);
bool fs_node_fresh(struct fs_ctx *ctx, struct fs_node *node, pid_t pid);
bool fs_node_fresh_child(struct fs_ctx *ctx, struct fs_node *dir, const char *name, pid_t pid);
fuse_ino_t fs_node_ino(struct fs_ctx *ctx, const struct fs_node *node);
/*
 * The path of node (plus "/name" when name is not NULL) as the model takes
 * it. *out is heap (free()). -ENOENT when the node or an ancestor was
 * removed.
 */
int fs_node_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out);
/* ctx->lock held. The child of parent called name, made when missing; NULL: no memory. */
struct fs_node *fs_node_child_locked(struct fs_ctx *ctx, struct fs_node *parent,
				     const char *name, bool make);
void fs_node_ref_locked(struct fs_node *node);
/* ctx->lock held. Drops a ref; frees the node (and maybe its parents) when unused. */
void fs_node_unref_locked(struct fs_ctx *ctx, struct fs_node *node);
/* ctx->lock held. Frees a node nobody uses (a child made but not handed out). */
void fs_node_drop_unused_locked(struct fs_ctx *ctx, struct fs_node *node);
void fs_node_forget(struct fs_ctx *ctx, fuse_ino_t ino, uint64_t nlookup);
/* The name was removed: later paths through its node fail with ENOENT. */
void fs_node_detach(struct fs_ctx *ctx, struct fs_node *parent, const char *name);
/* Mirrors a successful rename in the table. */
void fs_node_move(struct fs_ctx *ctx, struct fs_node *parent, const char *name,
		  struct fs_node *newparent, const char *newname, bool exchange);
/* ctx->lock held. Ends a pending file and drops the ref it held (the caller holds another). */
void fs_node_tmp_drop_locked(struct fs_ctx *ctx, struct fs_node *node);
/* The pending files below a removed directory node are dropped. */
void fs_node_drop_pending_below(struct fs_ctx *ctx, struct fs_node *node);
/* Worker side of fs_inval_subtree and fs_inval_foreign (node: the ref the item held). */
void fs_node_revalidate_subtree(struct fs_ctx *ctx, struct fs_node *node);
void fs_node_revalidate_all(struct fs_ctx *ctx);
/* Worker side of a change feed item: the node at path (and below it, subtree). */
void fs_node_revalidate_path(struct fs_ctx *ctx, const char *path, bool subtree);

/* ---- the operations table (ops.c) ---- */
extern const struct fuse_lowlevel_ops fs_ops;

/* ---- request counters (stats.c) ---- */
/* ops.c's table, each request counted first: the one the session runs. */
extern const struct fuse_lowlevel_ops fs_ops_counted;
void fs_stat_add(struct fs_ctx *ctx, enum fs_stat which, uint64_t n);
/* "opcode count" lines into buf (cap bytes, not NUL-terminated); the length used. */
size_t fs_stats_format(struct fs_ctx *ctx, char *buf, size_t cap);

/* ---- small helpers shared by the operations ---- */

static inline struct fs_ctx *fs_req_ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline int64_t fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline struct timespec fs_ns_to_ts(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	if (ts.tv_nsec < 0) {
		ts.tv_nsec += 1000000000;
		ts.tv_sec--;
	}
	return ts;
}

static inline void fs_reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : ret);
}

static inline bool fs_kind_is_dir(enum model_kind kind)
{
	return kind == MODEL_KIND_OBJECT || kind == MODEL_KIND_ARRAY;
}

/*
 * Largest content of one file: what a leaf can hold (a write past it fails
 * with EFBIG, before anything is buffered); beyond FS_SPILL_MIN the buffer
 * is on disk (spill.c).
 */
#define FS_FILE_MAX MODEL_LEAF_MAX
#define FS_SPILL_MIN ((size_t)8 << 20)

/*
 * Readers of leaves up to this size keep the version they last read in a
 * buffer (kept after an unlink or a rename over it, never half of a later
 * commit). Above it they read per call, each call from one version.
 */
#define FS_SNAPSHOT_MAX ((uint64_t)64 << 20)

/*
 * Pushing listed leaves into the page cache (cache.c): leaves up to one
 * page, at most FS_PUSH_ENTRIES_MAX per directory, while at most
 * FS_PUSH_QUEUE_MAX directories wait for the worker.
 */
#define FS_PUSH_SIZE_MAX 4096
#define FS_PUSH_ENTRIES_MAX 4096
#define FS_PUSH_QUEUE_MAX 64

/* ---- attributes read ahead (ahead.c) ---- */
/*
 * Where reads are round trips: node's attributes (path its path) as
 * model_stat with MODEL_STAT_SUBDIRS gives them at model_version gen, from
 * a listing of its directory read for a run of such stats: 1 with *out
 * filled, 0 when the caller asks the model. Takes ctx->lock and
 * ctx->ahead_lock itself: call it holding neither.
 */
int fs_ahead_stat(struct fs_ctx *ctx, struct fs_node *node, const char *path, uint64_t gen,
		  struct model_node *out);
/* Before the session serves: whether reads are local, the batches' age. */
void fs_ahead_start(struct fs_ctx *ctx);
/* Frees the batch (at unmount, once no request runs). */
void fs_ahead_release(struct fs_ctx *ctx);

/* ---- attributes (attr.c) ---- */

void fs_stat_fill(const struct fs_ctx *ctx, const struct model_node *n, struct stat *st);
/*
 * The stored attributes of a node the request's process creates with mode
 * (umask applied by the kernel): only what differs from the defaults.
 */
void fs_attr_for_new(fuse_req_t req, struct fs_ctx *ctx, mode_t mode, bool dir,
		     struct model_attr *out);
/*
 * Who made req, for the checks the model makes of a view's write on their
 * behalf, with the mount's default owner. *groups gets out->groups, heap
 * (the caller frees it; NULL for uid 0 or when the process's groups cannot
 * be read: then its primary group only).
 */
void fs_cred_from_req(fuse_req_t req, const struct fs_ctx *ctx, struct model_cred *out,
		      gid_t **groups);
/*
 * A request's supplementary groups, read from its process (/proc) only
 * when a check needs them: for checks made before req is replied to.
 */
struct fs_groups {
	fuse_req_t req;
	bool read;
	gid_t *list;	/* heap: fs_groups_release */
	size_t n;
};
/* As fs_cred_from_req, with out's groups read only if a check asks (into g). */
void fs_cred_lazy(fuse_req_t req, const struct fs_ctx *ctx, struct model_cred *out,
		  struct fs_groups *g);
void fs_groups_release(struct fs_groups *g);
/*
 * fs_cred_lazy into out when path names a view (NAME.json: its text is
 * rendered for req's caller) and req is not NULL; then returns out, else
 * NULL. Either way the caller releases g.
 */
const struct model_cred *fs_cred_for_view(fuse_req_t req, const struct fs_ctx *ctx,
					 const char *path, struct model_cred *out,
					 struct fs_groups *g);

/* ctx->lock held. The attributes of a pending file as last flushed. */
void fs_tmp_stat_locked(const struct fs_ctx *ctx, const struct fs_node *node,
			struct stat *st);

/*
 * ctx->lock held. Overrides st with a pending file's content (and a
 * created leaf's or deferred mode and owner); false when none. *kind (may
 * be NULL) gets what a node absent from the store shows as.
 */
bool fs_stat_pending_locked(struct fs_ctx *ctx, const struct fs_node *node, bool exists,
			    struct stat *st, enum model_kind *kind);

double fs_attr_timeout_for(const struct fs_ctx *ctx, bool volatile_);

/*
 * Fills e for the child name of dir (at path) and counts one kernel lookup
 * on its node; a view's size is the one req's caller may read. 0 or -errno.
 */
int fs_entry_make(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		  const char *path, struct fuse_entry_param *e);

/* Replies with a fresh entry for name in dir (mkdir, mknod). */
void fs_reply_entry_for(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir,
			const char *name, const char *path);

/* ---- invalidation after commits (invalidate.c) ---- */

/*
 * The subtree a view NAME.json in dir stands for changed behind the kernel:
 * revalidated by the worker (fs_inval_subtree), so that only names gone or
 * changed between file and directory lose their dentries.
 */
void fs_inval_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name);

/* After node was committed: its attributes, or for a view the subtree it stands for. */
void fs_inval_after_change(struct fs_ctx *ctx, struct fs_node *node, bool view);

/* ---- open files (file.c) ---- */

/* At the end: commits every dirty open file (logging failures) and frees them. */
void fs_files_commit_all(struct fs_ctx *ctx);

struct fs_file *fs_file_new(struct fs_ctx *ctx, struct fs_node *node);

void fs_file_put(struct fs_ctx *ctx, struct fs_file *f);

/* f->lock held. Shows getattr what f holds now. */
void fs_file_publish(struct fs_ctx *ctx, struct fs_file *f);

/* f->lock held. Makes buf hold len bytes, zero-filling a gap. */
int fs_file_resize(struct fs_file *f, size_t len);
/* f->lock held. Adds size bytes at f->len (past FS_SPILL_MIN in a spill file), no size cap. */
int fs_file_append(struct fs_file *f, const void *data, size_t size);

/*
 * ---- spilled write buffers (spill.c) ---- all with f->lock held.
 * grow: buf (in a spill file already or about to be moved there) gets cap
 * bytes; zero_gap: the bytes after f->len read as zeros; write: the
 * bytes at off (within cap) are set with pwrite, not through the mapping;
 * release: unmaps and closes (f->buf is NULL then). 0 or -errno.
 */
int fs_spill_grow(struct fs_file *f, size_t cap);
int fs_spill_zero_gap(struct fs_file *f);
int fs_spill_write(struct fs_file *f, const void *buf, size_t size, size_t off);
void fs_spill_release(struct fs_file *f);
/* Replies to a read of [off, off+size) of a spilled buffer from its file (pread). */
void fs_spill_reply(fuse_req_t req, struct fs_file *f, size_t size, off_t off);

/*
 * Commits the unsaved content of every open file of node, so that a change
 * of mtime or type applies to the new content (cp -a sets both on its open
 * descriptor before closing it). A truncation not yet written (O_TRUNC,
 * nothing written: cp -a of an empty file) is committed too. One pass: a
 * commit that fails is reported, not retried.
 */
int fs_node_commit_files(struct fs_ctx *ctx, struct fs_node *node);

struct fs_file *fs_fi_file(const struct fuse_file_info *fi);

/* ---- opening files (file_open.c) ---- */

/* The leaf's shared writer with one more handle, truncated for O_TRUNC; NULL when none. */
struct fs_file *fs_writer_share(struct fs_ctx *ctx, struct fs_node *node, int flags);

/*
 * create of a leaf: the leaf is not committed now but at close, with its
 * content, type, mode and mtime (model_create_check said it may be made;
 * attr: its mode and owner, ino: its st_ino). The writer is the node's
 * shared one; *out holds the handle's ref.
 */
int fs_leaf_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 const struct model_attr *attr, uint64_t ino, struct fs_file **out);

/*
 * A writer of a view whose node is not in the store yet (created, or opened
 * while another created one is pending): its content is committed at close.
 */
int fs_view_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 struct fs_file **out);

/*
 * Opens node (at path) for fi->flags; the reply is sent by the caller. A
 * view is opened on behalf of req's caller: its text only when they may
 * read its whole subtree (-EACCES, kept for user.kvfs.error, else).
 */
int fs_file_open(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node, const char *path,
		 struct fuse_file_info *fi, struct fs_file **out);
/* A view writer f just opened by req: its commits are made on req's caller's behalf. */
void fs_file_set_opener(fuse_req_t req, struct fs_ctx *ctx, struct fs_file *f);

/* ---- changes kept on an open writer (defer.c) ---- */

/* A change a tool makes on an open leaf before closing it (fs_writer_defer). */
struct fs_defer {
	bool mtime;
	int64_t mtime_ns;
	struct model_attr set;	/* chmod/chown */
	unsigned unset;
	const char *type;	/* user.kvfs.type, or NULL */
	int64_t deadline_ns;	/* user.kvfs.expires, or 0 */
};
/*
 * Keeps d on the node's open writer for its commit at close (cp -a sets
 * times, type and mode on its descriptor before closing it): true when
 * kept, with *ret 0 or a refusal (a type the text does not parse as);
 * false when node has no open writer (the caller commits d itself).
 */
bool fs_writer_defer(struct fs_ctx *ctx, struct fs_node *node, const struct fs_defer *d,
		     int *ret);

/*
 * mknod of a leaf in the default mode (model_create_check said it may be
 * made; attr: its mode and owner, ino: its st_ino): the leaf is held as
 * a pending writer with no handle (f->held) and committed with what the
 * tool does next: the first close of an open of it (content, type, mode
 * and mtime in one commit), an fsync or fsyncdir anywhere in the mount,
 * unmount, a name operation or read-only open that needs it in the store,
 * or the watcher FS_HOLD_MS after the mknod. 0 or -errno (-EEXIST: a
 * writer of that name is pending already).
 */
#define FS_HOLD_MS 1000
int fs_leaf_hold(struct fs_ctx *ctx, struct fs_node *node, const struct model_attr *attr,
		 uint64_t ino);
/*
 * An open for writing of a held leaf joins its writer (fi->fh set, *out
 * holds the handle's ref): true. False when node is no held leaf, or the
 * open is read-only (the caller settles it first).
 */
bool fs_held_join(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		  struct fs_file **out);
/*
 * f->lock held, f a created leaf not written whose empty value the model
 * refuses (`: > f` in an integer column): held as a leaf made by mknod is,
 * so that an open within FS_HOLD_MS joins it and its close commits the
 * content (`echo 41 >> f`); else the watcher's attempt drops it.
 */
void fs_file_hold_empty(struct fs_ctx *ctx, struct fs_file *f);
/* f->lock held, and a ref on f besides the hold. Ends f's hold once f is committed. */
void fs_file_hold_done(struct fs_ctx *ctx, struct fs_file *f);
/*
 * f->lock held. f's held or created leaf is dropped uncommitted (refused):
 * the kernel, which keeps its name like any other (fs_entry_make), forgets
 * it, so that the next open of the name creates it again (`>>` after a
 * refused `: >`).
 */
void fs_file_hold_forget(struct fs_ctx *ctx, struct fs_file *f);
/*
 * Commits the held leaves (fs_leaf_hold): all of them, or those held
 * FS_HOLD_MS or more (the watcher). One attempt: a refused one is logged
 * and dropped, as a refused close is.
 */
void fs_held_commit(struct fs_ctx *ctx, bool all);

/*
 * A created leaf called name in dir that is not in the store yet is
 * committed now (an unlink, rename or open from elsewhere needs it there).
 */
void fs_name_settle(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/* The same for node; true when it was such a leaf. */
bool fs_node_settle(struct fs_ctx *ctx, struct fs_node *node);

/* ---- the page-cache and reader rules (cache.c) ---- */

/*
 * After a commit of a leaf: the kernel's pages (filled by readers of the old
 * text) are dropped, and the next reader does not keep them.
 */
void fs_cache_forget(struct fs_ctx *ctx, struct fs_node *node);

/*
 * An open of leaf node missed the page cache: when its directory was
 * listed (FS_PUSH_LISTED), queues the push of the directory's leaves.
 */
void fs_cache_push_siblings(struct fs_ctx *ctx, struct fs_node *node);

/*
 * Worker side of fs_inval_push: each small leaf of dir that the kernel
 * knows, with no writer, no pending content and pages never filled, gets
 * its text stored in the kernel's page cache (fuse_lowlevel_notify_store)
 * and recorded as the version the pages hold, so that the next open keeps
 * them. Each push runs in the write section (no commit through the mount,
 * no rename moves the name meanwhile) and under ctx->push_lock (no writer
 * appears). When an invalidation comes to wait meanwhile, the rest of dir
 * is queued again behind it. Drops the ref the item held.
 */
void fs_cache_push_dir(struct fs_ctx *ctx, struct fs_node *dir);

/* A reader of a leaf up to FS_SNAPSHOT_MAX: its text, in memory. */
int fs_file_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path);
/*
 * f->lock not held. The text at path (a view rendered as it goes) into f's
 * empty buffer, past FS_SPILL_MIN on disk (spill.c), so a view of a big
 * subtree or a big leaf opened to be changed is never held in the
 * daemon's memory: a view reader's snapshot, a writer's starting content.
 * A view's is rendered for who (NULL: unchecked): -EACCES where they may
 * not read all of it.
 */
int fs_file_take_text(struct fs_ctx *ctx, struct fs_file *f, const char *path,
		      const struct model_cred *who);

/*
 * A reader of a leaf takes the text now (kind FS_FILE_READER): it keeps it
 * after an unlink or a rename over the name. *n is brought in line with
 * the text (a commit between the stat and the read).
 */
int fs_cache_leaf_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			   struct model_node *n);

/*
 * Whether the kernel's pages hold n's text: then reads will mostly not
 * come here (cat a second time), and the text waits for the first read
 * that does. Such a reader keeps no text of its own: once the name is gone
 * it reads what the kernel's pages still hold, and ENOENT beyond them.
 */
bool fs_cache_matches(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n);

/* A reader that takes no text at open: a big leaf (read per call) or a lazy one. */
void fs_cache_reader_deferred(struct fs_file *f, const struct model_node *n, bool lazy);

/* keep_cache while the leaf's mtime and size are what the page cache was filled from. */
bool fs_cache_leaf_valid(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n);

/*
 * A read of a leaf reader f (f->lock not held) that missed the kernel's
 * pages: replies from the leaf's newest version (the shared writer's
 * buffer, else the store), or once the name is gone from the version f
 * last held. 0 when replied, else -errno (the caller replies).
 */
int fs_cache_read(struct fs_ctx *ctx, struct fs_file *f, fuse_req_t req, size_t size,
		  off_t off);

/*
 * The attributes of a node whose name is gone (unlinked, renamed over),
 * from its open file fi or any other one still open: fstat and ftruncate
 * keep working. -ENOENT when none is open.
 */
int fs_cache_open_stat(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		       struct stat *st);

/* ---- pending files in arrays (pending.c) ---- */

/*
 * f->lock held. When f's node is a pending file, its content becomes f's
 * (the flush of a pending file): 1. 0 when the node is no pending file.
 */
int fs_tmp_flush_locked(struct fs_ctx *ctx, struct fs_file *f);

/* Opens a pending file: the content as last flushed (none with O_TRUNC). */
int fs_tmp_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		struct fs_file **out);

/*
 * create of a name that is no index in an array (model/ refused it with
 * MODEL_REASON_NOT_AN_INDEX): makes or opens the pending file, fills e
 * and counts a lookup.
 */
int fs_tmp_create(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		  struct fuse_file_info *fi, struct fuse_entry_param *e, struct fs_file **out);

/* unlink of a pending file: true when name in dir was one (and is gone now). */
bool fs_tmp_unlink(struct fs_ctx *ctx, struct fs_node *dir, const char *name);

/*
 * rename of a pending file: onto an index (or any name outside an array, or
 * a view) it is committed there; onto another name that is no index in an
 * array it stays pending under the new name. 1 when name in dir is no
 * pending file (the caller renames in the store), else 0 or -errno. Onto
 * a view, the document is written on behalf of who.
 */
int fs_tmp_rename(struct fs_ctx *ctx, const struct model_cred *who, struct fs_node *dir,
		  const char *name, struct fs_node *newdir, const char *newname, unsigned flags);

/* truncate(2) of a pending file without an open file. */
int fs_tmp_truncate(struct fs_ctx *ctx, struct fs_node *node, off_t size);

/* Sets the type a pending file will have; false when node is no pending file. */
bool fs_tmp_set_type(struct fs_ctx *ctx, struct fs_node *node, const char *name, int *ret);

/* ---- xattrs and statfs (xattr.c) ---- */

/* Ends a type kept for the next commit, and the ref on node it held. */
void fs_want_type_clear(struct fs_ctx *ctx, struct fs_node *node);

/* ---- the operation handlers, by file (the table is in ops.c) ---- */

/* attributes (attr.c) */
void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* table.c: a table index's row links */
void fs_op_readlink(fuse_req_t req, fuse_ino_t ino);
void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi);
/*
 * setxattr system.posix_acl_access (attr.c): an ACL that says no more than a
 * mode (owner, group, others: what cp -a sets when copying a file that has
 * no ACL) is that chmod, as on ext4, which keeps no such ACL; this spares
 * cp -a the fchmod that follows a refused ACL. Any other ACL: ENOTSUP.
 */
void fs_op_setxattr_acl(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size);
/* open files (file.c) */
void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi);
void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* directories (dir.c) */
void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi);
void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
/* names (names.c) */
void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 dev_t rdev);
void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi);
void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags);
void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
/* xattrs and statfs (xattr.c) */
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino);
void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags);
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
/*
 * user.kvfs.schema (table.c): a table's schema as `kvfs table show` prints
 * it, listed on tables; set, it declares the directory a table, at once or
 * once its rows obey it (a restore's order: see table.c); removed, drops it.
 */
#define FS_XATTR_SCHEMA "user.kvfs.schema"
bool fs_table_is_name(const char *name);
/* true when path is a table, or one waits for it: the name is listed */
bool fs_table_listed(struct fs_ctx *ctx, const char *path);
void fs_table_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_table_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size,
		       int flags);
void fs_table_removexattr(fuse_req_t req, fuse_ino_t ino);
enum fs_settle {
	FS_SETTLE_NOW,		/* fsync, fsyncdir: try the waiting schemas */
	FS_SETTLE_IDLE,		/* the watcher: only when no write came for a tick */
	FS_SETTLE_LAST,		/* unmount: try, then log and forget what still waits */
};
void fs_table_settle(struct fs_ctx *ctx, enum fs_settle why);
/* Frees the waiting schemas (ctx_free). */
void fs_table_release(struct fs_ctx *ctx);
/*
 * user.kvfs.expires (ttl.c): the node's own deadline as an absolute time,
 * RFC 3339 UTC with nanoseconds; listed where there is one, so the file
 * tools carry it; set, it is the deadline (on a leaf being written: with
 * its content, at its commit).
 */
#define FS_XATTR_EXPIRES "user.kvfs.expires"
bool fs_expires_is_name(const char *name);
/* true when path has a deadline of its own: the name is listed */
bool fs_expires_listed(struct fs_ctx *ctx, const char *path);
void fs_expires_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_expires_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size,
			 int flags);
/* time to live (ttl.c): user.kvfs.ttl, seconds left; not listed (like user.kvfs.error) */
#define FS_XATTR_TTL "user.kvfs.ttl"
bool fs_ttl_is_name(const char *name);
void fs_ttl_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fs_ttl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size, int flags);
void fs_ttl_removexattr(fuse_req_t req, fuse_ino_t ino);
/* The watcher, each tick: removes expired nodes (bounded), then revalidates. */
void fs_ttl_reap(struct fs_ctx *ctx);
/* True when deadline_ns (CLOCK_REALTIME) is 0 (none) or still ahead. */
bool fs_ttl_before(int64_t deadline_ns);

/* ---- helpers ---- */
/* Permission bits of a node without a stored mode. */
static inline mode_t fs_mode_default(bool dir)
{
	return dir ? 0755 : 0644;
}

/* NAME_MAX as ext4 has it: a longer name is refused before the model is asked. */
#define FS_NAME_MAX 255
static inline int fs_name_check(const char *name)
{
	return strlen(name) > FS_NAME_MAX ? -ENAMETOOLONG : 0;
}

#endif
