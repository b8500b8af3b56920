/*
 * fs/ops_int.h - the operations: the table (ops.c), the request counters
 * (stats.c), and the handlers by file, with what xattr.c, table.c and
 * ttl.c offer the other files. A part of fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_OPS_INT_H
#define KVFS_FS_OPS_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/ops_int.h is a part of fs/fs_int.h: include that"
#endif

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
	FS_STAT_INVAL,		/* entries, attributes and pages the worker invalidated */
	FS_STAT_AHEAD_READS,	/* listings read ahead for stats (ahead.c) */
	FS_STAT_AHEAD_HITS,	/* stats they served */
	FS_STAT_MAX
};

/* ---- the operations table (ops.c) ---- */
extern const struct fuse_lowlevel_ops fs_ops;

/* ---- the /dev/fuse transport (transport.c) ---- */
/*
 * Once mounted: the daemon reads and writes /dev/fuse itself, to add the
 * INIT flags libfuse 3.14 drops (parallel lookups, set-ID clearing left to
 * the daemon). 0, or -errno when libfuse's own transport stays.
 */
int fs_transport_start(struct fs_ctx *ctx);
/*
 * -o io_uring, before mounting: 0 when this kernel can serve FUSE over
 * io_uring, or -1 after saying on stderr why not (the parameter named).
 */
int fs_transport_check_uring(void);
/* Without either option: whether the fuse module serves FUSE over io_uring now. */
bool fs_transport_uring_on(void);
/* Ends the io_uring rings, if any, once the session loop has returned. */
void fs_transport_stop(struct fs_ctx *ctx);
/*
 * The transport's line of user.kvfs.stats ("transport io_uring" or
 * "transport dev_fuse") into buf; the bytes used. No count of its own: the
 * tools that read the stats sum every line but notify_store's as requests
 * (the requests through the rings are logged at unmount instead).
 */
size_t fs_transport_format(struct fs_ctx *ctx, char *buf, size_t cap);
/*
 * Whether the request this thread serves, a write or an open of ino, asks
 * the daemon to clear set-ID bits (FUSE_WRITE_KILL_SUIDGID,
 * FUSE_OPEN_KILL_SUIDGID: the caller lacks CAP_FSETID).
 */
bool fs_req_kills_suidgid(fuse_ino_t ino);

/* ---- request counters (stats.c) ---- */
/* ops.c's table, each request counted first: the one the session runs. */
extern const struct fuse_lowlevel_ops fs_ops_counted;
void fs_stat_add(struct fs_ctx *ctx, enum fs_stat which, uint64_t n);
/*
 * "opcode count" lines, then "log WHERE" (mount.c), into buf (cap bytes, not
 * NUL-terminated); the length used.
 */
size_t fs_stats_format(struct fs_ctx *ctx, char *buf, size_t cap);

/* ---- xattrs and statfs (xattr.c) ---- */

/* Ends a type kept for the next commit, and the ref on node it held. */
void fs_want_type_clear(struct fs_ctx *ctx, struct fs_node *node);
/*
 * Refuses a value the attribute name does not take: EINVAL, and "PATH: NAME
 * takes TAKES" kept for user.kvfs.error and logged (setfattr shows only
 * "Invalid argument").
 */
void fs_xattr_refuse(fuse_req_t req, fuse_ino_t ino, const char *name, const char *takes);

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
/*
 * Removals held in table rows (rmhold.c). rm -r unlinks a row's names one
 * by one, then removes the row; a table refuses some of those unlinks on
 * their own (a required field) though it accepts the row's removal, and
 * the row's removal may be refused (another row references it), which
 * must find the row whole. So an unlink or rmdir inside a row that the
 * model refuses for the row's rules, or any inside a row another row
 * references (MODEL_REMOVE_ROW_WHOLE), is held: it succeeds, the name is
 * hidden from lookups and listings, and stays stored. An rmdir of a
 * directory whose stored names are all held removes it whole, in one
 * model call that finds no other name there; when that is refused the
 * held names come back. A create or a rename onto a held name, or a
 * document written over it, ends its hold once stored (a refused one
 * leaves the name removed); mkdir and mknod try it first. The holds no rmdir took are tried
 * for real once the mount made no removal for FS_RMHOLD_MS (the watcher),
 * at an fsync or fsyncdir above them, and at unmount: a refused one is
 * logged (user.kvfs.error) and its name comes back; one that failed for a
 * reason that may pass (EIO, ENOSPC, a store unreachable) stays held.
 */
#define FS_RMHOLD_MS 1000
struct fs_rmholds {
	struct fs_node *head;	/* the held nodes (ctx->lock) */
	_Atomic unsigned n;	/* how many: written under ctx->lock, read without (0: none) */
	int64_t last_ns;	/* CLOCK_MONOTONIC of the last removal while holds exist (ctx->lock) */
};
/* true when name in dir is held: lookups answer ENOENT */
bool fs_rmhold_hidden(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/*
 * Inside the exclusive write section of a removal of name in dir (path)
 * that model_remove with MODEL_REMOVE_ROW_WHOLE answered: holds it when
 * the refusal is one to hold (1; *ret 0 or -ENOMEM), else 0. After
 * -ENOTEMPTY from an rmdir of a directory with held names, removes it
 * whole first when it holds no other name, checked in the removing
 * transaction; *whole then says it did, and the caller ends the holds
 * below it with fs_rmhold_end_below.
 */
int fs_rmhold_removal(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		      const char *path, unsigned flags, int *ret, struct model_error *err,
		      bool *whole);
/*
 * The holds below name in dir end: removed with it (back false), or
 * refused with it (back: the names are shown again).
 */
void fs_rmhold_end_below(struct fs_ctx *ctx, struct fs_node *dir, const char *name, bool back);
/*
 * Before a create or rename onto name in dir: true when it is a held leaf
 * (the name is new to the caller, the new content replaces the stored
 * one); a held directory's removal is tried for real (false). The hold
 * ends only once that write succeeded: a rename's at fs_rmhold_end_name,
 * in its section before the node table moves; a create's at once, the
 * name being shown while its file is open, and fs_rmhold_again holds it
 * again when the file's first commit is refused.
 */
bool fs_rmhold_onto(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
void fs_rmhold_end_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/* In the section of a refused commit of node, created onto its held name: held again. */
void fs_rmhold_again(struct fs_ctx *ctx, struct fs_node *node);
/*
 * Inside the write section of a document written to the view name in dir
 * (or the view node): the holds at and below what it stands for end.
 */
void fs_rmhold_view_written(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
void fs_rmhold_view_node_written(struct fs_ctx *ctx, struct fs_node *view);
/* mkdir and mknod onto a held name: its removal is tried for real first. */
void fs_rmhold_settle_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/* Tries the held removals for real: all, for the last time (unmount), or only when idle (the watcher). */
void fs_rmhold_settle(struct fs_ctx *ctx, bool all);
/*
 * fsync of node (fsyncdir when is_dir): tries the holds below it (below
 * its directory for a file); the first failure that may pass, else 0.
 */
int fs_rmhold_settle_at(struct fs_ctx *ctx, struct fs_node *node, bool is_dir);
/* Inside the section of every unlink and rmdir: the mount is not idle (holds wait). */
void fs_rmhold_touch(struct fs_ctx *ctx);
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
/* table.c: schemas set by user.kvfs.schema that wait for their rows (ctx->schema) */
struct fs_schemas {
	pthread_mutex_t try_lock;	/* one attempt at a time (lock order, 0) */
	pthread_mutex_t lock;	/* the fields below (lock order, 5) */
	struct fs_schema_wait *waits;
	uint64_t gen;		/* model_generation at the last attempt */
	uint64_t idle_gen;	/* at the watcher's previous tick */
};
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

#endif
