/*
 * fs/fs_int.h - the private header of fs/, the one every file of fs/
 * includes: the daemon's one context (struct fs_ctx), the lock order,
 * logging and small helpers. What each concern's files offer the others is
 * in a header of its own, included here (fs/ops.c has a map of the files):
 *
 *   cache_int.h          the page-cache and reader rules (cache.c)
 *   inode_int.h          the table of nodes the kernel knows (inode.c)
 *   pending_int.h        pending files in arrays (pending.c)
 *   file_int.h           open files (file.c, file_open.c, spill.c, defer.c)
 *   attr_int.h           attributes, and attributes read ahead (attr.c, ahead.c)
 *   inval_int.h          the invalidation worker, the watcher (invalidate.c, watcher.c)
 *   write_section_int.h  the write section and its shape marks (write_section.c)
 *   ops_int.h            the operations table, the request counters, the handlers
 *
 * Those are parts of this header, not headers of their own (each refuses
 * to be included alone): each relies on what comes before it here (a node
 * holds cache_int.h's push state), and struct fs_ctx below, which every
 * file uses, holds state of every concern, so every file needs them all
 * anyway. Nothing outside fs/ includes any of them.
 *
 * kvfs uses the libfuse LOW-LEVEL API: the kernel names files by node ids
 * that we hand out, so we can tell the kernel precisely which cached names to
 * forget (fuse_lowlevel_notify_inval_entry) when a write changes a subtree
 * behind its back (a NAME.json commit, a rename onto a view, a type change).
 *
 * Lock order. A thread holding a lock may take only locks further down this
 * list, never one further up, and no two locks of the same rank at once:
 *
 *   0. ctx->schema.try_lock  one attempt to declare the schemas that wait
 *                       (table.c): taken with no other lock held; model
 *                       calls and the write section under it.
 *      ctx->push_lock   one push of a leaf's text into the kernel's pages
 *                       (cache.c, in the worker) against a leaf's first
 *                       writer being published (file.c): taken with no
 *                       other lock held.
 *   1. f->lock          one open file (struct fs_file): its buffer and state.
 *                       Held across model calls (a commit, a snapshot).
 *   2. ctx->section.gen_lock  the write section, fs_write_begin ..
 *                       fs_write_end: held across one model call that may
 *                       commit; shared by calls that keep every name where
 *                       it is (so their commits can share one sync: the
 *                       store's group commit), exclusive for renames and
 *                       unlinks.
 *   3. ctx->lock        the node table and every node's fields, ctx->files
 *                       and each file's list links, refs and pend fields.
 *                       No model call is made while holding it (the model
 *                       takes store locks, and the list callback takes
 *                       ctx->lock inside a read transaction).
 *   4. ctx->inval.lock  the worker's queue; ctx->watch.lock, the watcher's
 *                       stop flag. Nothing else is taken under them. (The
 *                       fs_inval_* calls take ctx->lock themselves: never
 *                       call them holding it.)
 *   5. ctx->err.lock    the kept refusals (fs_log_model): taken last and
 *                       alone, nothing else is locked or called under it.
 *      ctx->schema.lock the schemas that wait (table.c): taken alone, no
 *                       model call under it.
 *      ctx->ahead.lock  the attributes read ahead (ahead.c): taken alone,
 *                       no model call and no other lock under it.
 *
 * The store's own locks (LMDB's writer lock, reader slots, and with
 * -o commit the batch lock that the store's committer thread and this
 * process's reads of the queued batch take) rank between 2 and 3: model
 * calls are made under 1 and 2, never under 3. A writer waits under 1 and
 * 2 for the committer's verdict; the committer takes no lock of fs/. Each struct
 * here and in the headers above names, per field, the lock that guards it;
 * "fixed" fields are set before the struct is published to other threads
 * and never change.
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

/* Declared here for the headers below, which name them before their definition. */
struct fs_ctx;
struct fs_node;
struct fs_file;

#include "fs/cache_int.h"
#include "fs/inode_int.h"
#include "fs/pending_int.h"
#include "fs/file_int.h"
#include "fs/attr_int.h"
#include "fs/inval_int.h"
#include "fs/write_section_int.h"
#include "fs/ops_int.h"

/*
 * The last refusals (a path and the message the model gave), so that a user
 * without syslog can read why `cp` saw only "Invalid argument": the xattr
 * user.kvfs.error (xattr.c). A ring of FS_ERRORS_MAX, oldest overwritten,
 * guarded by ctx->err.lock (log.c).
 */
#define FS_ERRORS_MAX 64
struct fs_error {
	char *path;		/* heap; NULL for an unused slot */
	uid_t uid;		/* whose request was refused; (uid_t)-1: nobody's */
	char msg[512];
};
struct fs_errors {
	pthread_mutex_t lock;	/* ring, next (log.c) */
	struct fs_error ring[FS_ERRORS_MAX];
	unsigned next;		/* the slot the next refusal takes */
	/* when a refusal last said the store's servers did not answer (CLOCK_MONOTONIC ns); no lock */
	_Atomic int64_t silent_ns;
};

/*
 * What one request asks of a store's servers fails once they have answered
 * none of it for this long (model_deadline; docs/ETCD.md section 12).
 */
#define FS_OP_MS 10000

/*
 * The INIT exchange as transport.c's read and writev see it (atomics, no
 * lock: every worker thread reads /dev/fuse), and the io_uring rings.
 */
struct fs_uring;
struct fs_transport {
	_Atomic uint64_t offered;	/* the kernel's INIT flags (flags2 above bit 31) */
	_Atomic uint64_t init_unique;	/* the INIT request's id; 0 until it is read */
	atomic_bool init_done;	/* its reply has been amended and sent */
	bool want_uring;	/* rings if INIT offers them; fixed before the session runs */
	bool need_uring;	/* -o io_uring: a kernel that does not offer them is logged */
	struct fs_uring *_Atomic uring;	/* uring.c's, set once after INIT; NULL: none */
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
	char *log_path;		/* -o log=FILE, or without syslog a file of the mount's own
				 * (mount.c, default_log): absolute; else NULL */
	unsigned commit_ms;	/* -o commit=MS: writes are checked and queued in the
				 * store's batch, committed at most MS later (docs/COMMITS.md,
				 * "The commit model"); 0: committed before close returns */
	bool later;		/* the default mode's queue of finishing touches runs
				 * (fs_node_fresh; fixed once serving) */
	bool reads_locally;	/* model_reads_locally: fixed once serving */
	unsigned release_lag_us;	/* the test hook KVFS_TEST_RELEASE_LAG_MS (file.c); 0: none */
	unsigned release_late_us;	/* the test hook KVFS_TEST_RELEASE_LATE_MS (file.c); 0: none */
	int log_fd;		/* lines go here when >= 0 (-o log=, or no syslog): else syslog */

	struct fs_errors err;	/* the kept refusals (log.c) */

	pthread_mutex_t lock;	/* the fields below, every struct fs_node, fs_file links */
	struct fs_inodes inodes;	/* inode.c's table */
	struct fs_file *files;	/* every open file (file.c) */
	/* the root's attributes as last read from the store, once root_known (attr.c) */
	struct stat root_st;
	bool root_known;

	struct fs_inval_worker inval;	/* invalidate.c's worker */
	pthread_mutex_t push_lock;	/* a push against a first writer (lock order, 0) */
	struct fs_write_section section;	/* write_section.c's */
	struct fs_watcher watch;	/* watcher.c's */

	_Atomic uint64_t stats[FS_STAT_MAX];	/* stats.c: requests by opcode; no lock */

	struct fs_transport transport;	/* transport.c's */
	struct fs_ahead ahead;	/* ahead.c's */
	struct fs_schemas schema;	/* table.c's */
	struct fs_rmholds rmhold;	/* rmhold.c's */
};

#define FS_TIMEOUT_DEFAULT 86400.0	/* entry and attr timeouts: the watcher keeps them honest */

/* ---- logging (log.c; where to, mount.c) ---- */
/*
 * The -o log= file when given; else stderr in the foreground; else syslog
 * when /dev/log exists, and when not the stderr the mount command had if a
 * file, else a file named for the mountpoint (mount.c, default_log).
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
/* Whether a refusal kept within the last FS_OP_MS said the store's servers did not answer. */
bool fs_servers_silent(struct fs_ctx *ctx);
/*
 * The newest kept refusal for path that who may see: of path itself (or
 * path.json) when !below, of path or anything below it when below; who
 * sees the refusals of their own requests and of paths they may read
 * (model_may_read). Copies the message to buf; false when none is kept.
 */
bool fs_error_find(struct fs_ctx *ctx, const struct model_cred *who, const char *path,
		   bool below, char *buf, size_t cap);

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

/*
 * An errno a store's transport gave (an etcd cluster that refused the
 * connection, reset it, or cancelled the request) is no answer a file
 * operation has: applications get EIO, and the reason goes to the log and
 * user.kvfs.error (fs_log_model). ETIMEDOUT stays: it says what happened.
 */
static inline bool fs_errno_is_transport(int ret)
{
	ret = ret < 0 ? -ret : ret;
	return ret == ECANCELED || ret == ECONNREFUSED || ret == ECONNRESET ||
	       ret == ECONNABORTED || ret == EPIPE || ret == EPROTO || ret == ENOTCONN ||
	       ret == EHOSTUNREACH || ret == ENETUNREACH || ret == ENETDOWN || ret == EHOSTDOWN;
}

/* No answer from the store's servers: timed out, no leader, or the transport's errno. */
static inline bool fs_errno_is_unanswered(int ret)
{
	ret = ret < 0 ? -ret : ret;
	return ret == ETIMEDOUT || ret == EAGAIN || fs_errno_is_transport(ret);
}

static inline void fs_reply_err(fuse_req_t req, int ret)
{
	if (fs_errno_is_transport(ret))
		ret = EIO;
	fuse_reply_err(req, ret < 0 ? -ret : ret);
}

/*
 * A name the kernel holds whose node another process removed, found so by
 * an operation on the inode alone (getattr without a descriptor, open):
 * ESTALE makes the kernel walk the path again with LOOKUP_REVAL, which
 * asks us to look the name up (ENOENT now) and drops the entry, so stat
 * says ENOENT and `echo > NAME` creates it, before the watcher has told
 * the kernel. ENOENT would leave the entry: an O_CREAT open of it fails.
 */
static inline int fs_gone_name(int ret)
{
	return ret == -ENOENT ? -ESTALE : ret;
}

static inline bool fs_kind_is_dir(enum model_kind kind)
{
	return kind == MODEL_KIND_OBJECT || kind == MODEL_KIND_ARRAY;
}

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
