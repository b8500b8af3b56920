/*
 * fs/fs_int.h - private interfaces shared by the files of fs/: the daemon's
 * one context, the table of nodes the kernel knows, open files, logging and
 * the invalidation worker. Nothing outside fs/ includes it.
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
 * Locking: ctx->lock protects the node table, every node's fields and the
 * list of open writers. No model call is made while holding it (the model
 * takes store locks; the list callback takes ctx->lock inside a read
 * transaction). Each open file has its own lock for its buffer.
 * ctx->err_lock (the kept refusals) is taken last and alone: nothing else
 * is locked or called while it is held.
 */
#ifndef KVFS_FS_INT_H
#define KVFS_FS_INT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "fs/fs.h"
#include "model/model.h"

/*
 * A pending file: a name created in an array that is no index (rsync's
 * ".0.XXXXXX", sed -i's "sedXXXXXX"). An array can only hold indices, so it
 * lives only here: its content as last flushed, the type set with
 * user.kvfs.type and the mtime set with utimens. Renaming it onto an index
 * commits it (model_write_at: one transaction); unlinking it drops it. It is
 * never listed and never stored. Its node holds one ref on itself while it
 * is pending, so that it outlives the kernel's lookups.
 */
struct fs_tmpfile {
	char *buf;
	size_t len;
	int64_t mtime_ns;
	enum model_type type;	/* 0 until set: keep the type of the leaf it replaces */
};

struct fs_node {
	struct fs_node *parent;	/* holds one ref; NULL for the root */
	char *name;		/* the name as shown (escaped); "" for the root */
	struct fs_node *hnext;	/* chain in the table, by (parent, name) */
	struct fs_node *prev, *next;	/* ctx->nodes: every live node but the root */
	struct fs_node *children;	/* the nodes whose parent this is */
	struct fs_node *sib_prev, *sib_next;	/* in parent->children */
	bool kind_known;	/* is_dir recorded by a stat or a listing */
	bool is_dir;
	uint64_t nlookup;	/* lookups the kernel holds */
	uint64_t refs;		/* child nodes, open files and directories */
	bool hashed;		/* reachable by (parent, name); false once removed */
	bool cache_known;	/* cache_* recorded at an earlier open */
	int64_t cache_mtime;	/* leaf mtime and size at the last open or commit */
	uint64_t cache_size;
	uint64_t dir_gen;	/* store generation when last listed (+1; 0 never) */
	uint64_t nlink_gen;	/* containers: store generation of nlink (+1; 0 never) */
	uint32_t nlink;		/* containers: st_nlink as last counted */
	unsigned npend;		/* open files whose unsaved content getattr shows */
	struct fs_tmpfile *tmp;	/* a pending file (ctx->lock) */
	struct fs_file *wfile;	/* a leaf's one write buffer, shared by its writers (ctx->lock) */
	unsigned nreaders;	/* open readers filling the page cache from one version: */
	int64_t rd_mtime;	/* its mtime and size (ctx->lock) */
	uint64_t rd_size;
	enum model_type want_type;	/* set on an empty leaf whose text did not parse yet
					 * (tar --xattrs types a file before writing it):
					 * applied at the next commit (ctx->lock) */
};

/* What fi->fh points to: told apart by the first field (setattr gets either). */
enum fs_handle_type {
	FS_HANDLE_FILE = 0x6b764601,
	FS_HANDLE_DIR = 0x6b764402,
};

/*
 * One open file (fi->fh). Every writable open of a leaf shares one fs_file
 * (node->wfile): writes by any handle land in one buffer, O_APPEND appends
 * at its end, and each flush commits it when dirty, as one page cache would
 * on a local filesystem. Readers, views and pending files get one each.
 */
struct fs_file {
	enum fs_handle_type type;
	struct fs_node *node;	/* holds one ref */
	struct fs_file *prev, *next;	/* ctx->files (ctx->lock) */
	unsigned refs;		/* the kernel's handles + committers at work (ctx->lock) */
	bool pend;		/* getattr answers pend_len/pend_mtime (ctx->lock) */
	uint64_t pend_len;
	int64_t pend_mtime;
	pthread_mutex_t lock;	/* buf, len, cap, flags below */
	char *buf;		/* writers: the new content; readers: the text at open */
	size_t len, cap;
	bool buffered;		/* reads are served from buf */
	bool writable;
	bool view;		/* NAME.json */
	bool append;		/* views, pending files: opened with O_APPEND (leaves: per write) */
	bool append_json;	/* O_APPEND on a view: buf holds only the appended bytes */
	bool big;		/* leaf reader above FS_SNAPSHOT_MAX: read per call, checked */
	bool lazy;		/* leaf reader of cached pages: snapshot at its first read */
	bool cached_reader;	/* counted in node->nreaders: reads through the page cache */
	int64_t open_mtime;	/* big: the leaf's mtime and size at open */
	uint64_t open_size;
	bool dirty;		/* written since the last commit: commit at flush */
	bool trunc;		/* opened with O_TRUNC, not written: commit at release */
	bool pending;		/* created view, not yet in the store */
	int64_t wmtime_ns;	/* time of the last change to buf */
};

/* One open directory (fi->fh): a streamed listing. */
struct fs_dir {
	enum fs_handle_type type;
	struct fs_node *node;	/* holds one ref */
	struct model_list *list;
	off_t pos;		/* offset of the next entry: 0 ".", 1 "..", 2 + i child i */
};

enum fs_inval_kind {
	FS_INVAL_ENTRY,		/* the name in the parent (and, for a directory, its subtree) */
	FS_INVAL_ATTR,		/* the attributes of a node */
	FS_INVAL_DATA,		/* the attributes and cached pages of a node */
	FS_INVAL_SUBTREE,	/* a node and everything known below it (the item holds a ref) */
};

struct fs_inval {
	struct fs_inval *next;
	enum fs_inval_kind kind;
	fuse_ino_t ino;		/* the node, or the parent for FS_INVAL_ENTRY */
	char name[];		/* FS_INVAL_ENTRY */
};

/*
 * The last refusals (a path and the message the model gave), so that a user
 * without syslog can read why `cp` saw only "Invalid argument": the xattr
 * user.kvfs.error (ops.c). A ring of FS_ERRORS_MAX, oldest overwritten.
 */
#define FS_ERRORS_MAX 64
struct fs_error {
	char *path;		/* heap; NULL for an unused slot */
	char msg[512];
};

/* All the daemon's state: fuse_req_userdata() of every request. */
struct fs_ctx {
	struct model *model;
	struct fuse_session *se;
	char *store_dir;	/* absolute */
	char *mountpoint;	/* absolute */
	bool foreground, read_only, debug;
	uid_t uid;
	gid_t gid;
	double entry_timeout;	/* seconds the kernel may trust a name */
	double attr_timeout;	/* seconds the kernel may trust attributes */
	char *log_path;		/* -o log=FILE (absolute), or NULL */
	int log_fd;		/* lines go here when >= 0 (-o log=, or no syslog): else syslog */

	pthread_mutex_t err_lock;	/* errors, err_next */
	struct fs_error errors[FS_ERRORS_MAX];
	unsigned err_next;	/* the slot the next refusal takes */

	pthread_mutex_t lock;	/* see the file comment */
	struct fs_node root;
	struct fs_node **buckets;
	size_t nbuckets, nnodes;
	struct fs_node *nodes;
	struct fs_file *files;	/* every open file */

	/* invalidation worker: notifications must not run inside an operation */
	pthread_mutex_t inval_lock;
	pthread_cond_t inval_cond;
	struct fs_inval *inval_head, *inval_tail;
	bool inval_foreign;	/* coalesced: the store changed elsewhere, revalidate all */
	bool inval_stop, inval_started;
	pthread_t inval_thread;

	/*
	 * Noticing commits by other processes (the offline CLI). The store's
	 * generation is its last transaction id. Our own writes run between
	 * fs_write_begin and fs_write_end, one at a time (the store serializes
	 * writers anyway): a generation that moves by more than our one commit,
	 * or moves while we are not writing, was moved by someone else. The
	 * watcher thread polls every FS_WATCH_MS and then invalidates what the
	 * kernel caches, so that long entry and attribute timeouts stay honest.
	 */
	pthread_mutex_t gen_lock;
	uint64_t gen_known;	/* the generation accounted for */
	bool gen_foreign;	/* someone else committed since the last poll */
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_cond;
	bool watch_stop, watch_started;
	pthread_t watch_thread;
};

#define FS_WATCH_MS 150
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
/*
 * The newest kept refusal for path: of path itself (or path.json) when
 * !below, of path or anything below it when below. Copies the message to
 * buf; false when none is kept.
 */
bool fs_error_find(struct fs_ctx *ctx, const char *path, bool below, char *buf, size_t cap);

/* ---- invalidation worker (mount.c) ---- */
void fs_inval_entry(struct fs_ctx *ctx, fuse_ino_t parent, const char *name, size_t len);
void fs_inval_node(struct fs_ctx *ctx, fuse_ino_t ino, enum fs_inval_kind kind);
/*
 * Revalidates node and every node known below it, in the worker: names that
 * are gone or changed between file and directory are forgotten (the kernel
 * drops their dentries), the others only lose their cached attributes and,
 * for leaves that changed, their pages, so a directory in use as a cwd
 * stays hashed. Pending files whose array is gone are dropped.
 */
void fs_inval_subtree(struct fs_ctx *ctx, struct fs_node *node);
/* The store changed elsewhere: one coalesced revalidation of every known node. */
void fs_inval_foreign(struct fs_ctx *ctx);
int fs_inval_start(struct fs_ctx *ctx);
void fs_inval_stop(struct fs_ctx *ctx);

/* ---- noticing other processes' commits (mount.c) ---- */
/* Around every model call that may commit: serializes our writes and accounts for them. */
void fs_write_begin(struct fs_ctx *ctx);
void fs_write_end(struct fs_ctx *ctx, int ret);
/*
 * fs_write_begin, then fs_node_path: a path taken inside the write section
 * stays right until fs_write_end, because renames and unlinks move the node
 * table before they end theirs. On failure the section is ended already.
 */
int fs_write_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out);
int fs_watch_start(struct fs_ctx *ctx);
void fs_watch_stop(struct fs_ctx *ctx);

/* ---- the node table (node.c) ---- */
int fs_nodes_init(struct fs_ctx *ctx);
void fs_nodes_release(struct fs_ctx *ctx);
struct fs_node *fs_node_from_ino(struct fs_ctx *ctx, fuse_ino_t ino);
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

/* ---- operations (ops.c) ---- */
extern const struct fuse_lowlevel_ops fs_ops;
/* At the end: commits every dirty open file (logging failures) and frees them. */
void fs_files_commit_all(struct fs_ctx *ctx);

/* ---- helpers ---- */
static inline bool fs_name_is_view(const char *name, size_t len)
{
	return len >= 5 && name[len - 5] == '.' && name[len - 4] == 'j' &&
	       name[len - 3] == 's' && name[len - 2] == 'o' && name[len - 1] == 'n';
}

#endif
