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
	FS_STAT_AHEAD_READS,	/* listings read ahead for stats (ahead.c) */
	FS_STAT_AHEAD_HITS,	/* stats they served */
	FS_STAT_MAX
};

/* ---- the operations table (ops.c) ---- */
extern const struct fuse_lowlevel_ops fs_ops;

/* ---- request counters (stats.c) ---- */
/* ops.c's table, each request counted first: the one the session runs. */
extern const struct fuse_lowlevel_ops fs_ops_counted;
void fs_stat_add(struct fs_ctx *ctx, enum fs_stat which, uint64_t n);
/* "opcode count" lines into buf (cap bytes, not NUL-terminated); the length used. */
size_t fs_stats_format(struct fs_ctx *ctx, char *buf, size_t cap);

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
