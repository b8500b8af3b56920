/*
 * fs/stats.c - counting what the kernel asks: the operations table the
 * session runs wraps ops.c's, adding one relaxed atomic increment per
 * request by opcode, and the counts read back as the mount root's xattr
 * user.kvfs.stats ("opcode count" lines), so that a benchmark can tell
 * where a workload's round trips go (with the pages pushed, notify_store,
 * and the invalidation worker's notifications, notify_inval); then the transport serving them
 * (transport.c's "transport" line); store_keys_read, what the store's
 * reads handed out (model_keys_read), so that a test can tell what an
 * operation costs the store; view_size_renders and view_size_kept, the
 * views' stats that rendered a view for its size and those answered by a
 * size kept for the same state (model_view_sizes); and position, the generation (etcd: the
 * revision) up to which the mount has taken in every commit (watcher.c),
 * to compare with `kvfs info`'s; last, log, where the daemon's messages go
 * (a file's path, stderr or syslog), so that a user can find them.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "fs/fs_int.h"

static const char *const stat_names[FS_STAT_MAX] = {
	[FS_STAT_LOOKUP] = "lookup", [FS_STAT_FORGET] = "forget",
	[FS_STAT_GETATTR] = "getattr", [FS_STAT_SETATTR] = "setattr",
	[FS_STAT_READLINK] = "readlink", [FS_STAT_MKNOD] = "mknod",
	[FS_STAT_MKDIR] = "mkdir", [FS_STAT_UNLINK] = "unlink",
	[FS_STAT_RMDIR] = "rmdir", [FS_STAT_SYMLINK] = "symlink",
	[FS_STAT_RENAME] = "rename", [FS_STAT_LINK] = "link",
	[FS_STAT_OPEN] = "open", [FS_STAT_READ] = "read", [FS_STAT_WRITE] = "write",
	[FS_STAT_FLUSH] = "flush", [FS_STAT_RELEASE] = "release",
	[FS_STAT_FSYNC] = "fsync", [FS_STAT_OPENDIR] = "opendir",
	[FS_STAT_READDIR] = "readdir", [FS_STAT_READDIRPLUS] = "readdirplus",
	[FS_STAT_RELEASEDIR] = "releasedir", [FS_STAT_FSYNCDIR] = "fsyncdir",
	[FS_STAT_STATFS] = "statfs", [FS_STAT_SETXATTR] = "setxattr",
	[FS_STAT_GETXATTR] = "getxattr", [FS_STAT_LISTXATTR] = "listxattr",
	[FS_STAT_REMOVEXATTR] = "removexattr", [FS_STAT_CREATE] = "create",
	[FS_STAT_STORE] = "notify_store", [FS_STAT_STORE_BYTES] = "notify_store_bytes",
	[FS_STAT_STORE_DIRS] = "notify_store_dirs", [FS_STAT_INVAL] = "notify_inval",
	[FS_STAT_AHEAD_READS] = "ahead_reads", [FS_STAT_AHEAD_HITS] = "ahead_hits",
};

void fs_stat_add(struct fs_ctx *ctx, enum fs_stat which, uint64_t n)
{
	atomic_fetch_add_explicit(&ctx->stats[which], n, memory_order_relaxed);
}

size_t fs_stats_format(struct fs_ctx *ctx, char *buf, size_t cap)
{
	uint64_t rendered, kept;
	size_t used = 0;
	int n;

	for (int i = 0; i < FS_STAT_MAX; i++) {
		uint64_t v = atomic_load_explicit(&ctx->stats[i], memory_order_relaxed);

		n = snprintf(buf + used, cap - used, "%s %llu\n", stat_names[i],
				 (unsigned long long)v);

		if (n < 0 || (size_t)n >= cap - used)
			return used;
		used += (size_t)n;
	}
	used += fs_transport_format(ctx, buf + used, cap - used);
	model_view_sizes(ctx->model, &rendered, &kept);
	n = snprintf(buf + used, cap - used, "store_keys_read %llu\nview_size_renders %llu\n"
		     "view_size_kept %llu\nposition %llu\n",
		     (unsigned long long)model_keys_read(ctx->model),
		     (unsigned long long)rendered, (unsigned long long)kept,
		     (unsigned long long)atomic_load(&ctx->watch.position));
	if (n > 0 && (size_t)n < cap - used)
		used += (size_t)n;
	/* last: the rest of the line is a path, which may hold spaces */
	n = snprintf(buf + used, cap - used, "log %s\n", ctx->log_path ? ctx->log_path :
		     ctx->foreground || ctx->log_fd >= 0 ? "stderr" : "syslog");
	if (n > 0 && (size_t)n < cap - used)
		used += (size_t)n;
	return used;
}

/*
 * Counts the request; its caller owns the refusals this thread keeps now
 * (log.c), and what it asks of a store's servers fails within FS_OP_MS
 * of their last answer, however many calls, members and tries it makes.
 */
#define COUNT(req, which) (fs_caller_set(req), model_deadline(fs_req_ctx(req)->model, FS_OP_MS), \
			   fs_stat_add(fs_req_ctx(req), which, 1))

static void st_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	COUNT(req, FS_STAT_LOOKUP);
	fs_ops.lookup(req, parent, name);
}

static void st_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	COUNT(req, FS_STAT_FORGET);
	fs_ops.forget(req, ino, nlookup);
}

static void st_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	COUNT(req, FS_STAT_FORGET);
	fs_ops.forget_multi(req, count, forgets);
}

static void st_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_GETATTR);
	fs_ops.getattr(req, ino, fi);
}

static void st_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_SETATTR);
	fs_ops.setattr(req, ino, attr, to_set, fi);
}

static void st_readlink(fuse_req_t req, fuse_ino_t ino)
{
	COUNT(req, FS_STAT_READLINK);
	fs_ops.readlink(req, ino);
}

static void st_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	COUNT(req, FS_STAT_MKNOD);
	fs_ops.mknod(req, parent, name, mode, rdev);
}

static void st_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	COUNT(req, FS_STAT_MKDIR);
	fs_ops.mkdir(req, parent, name, mode);
}

static void st_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	COUNT(req, FS_STAT_UNLINK);
	fs_ops.unlink(req, parent, name);
}

static void st_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	COUNT(req, FS_STAT_RMDIR);
	fs_ops.rmdir(req, parent, name);
}

static void st_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	COUNT(req, FS_STAT_SYMLINK);
	fs_ops.symlink(req, link, parent, name);
}

static void st_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	COUNT(req, FS_STAT_RENAME);
	fs_ops.rename(req, parent, name, newparent, newname, flags);
}

static void st_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	COUNT(req, FS_STAT_LINK);
	fs_ops.link(req, ino, newparent, newname);
}

static void st_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_OPEN);
	fs_ops.open(req, ino, fi);
}

static void st_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_READ);
	fs_ops.read(req, ino, size, off, fi);
}

static void st_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_WRITE);
	fs_ops.write(req, ino, buf, size, off, fi);
}

static void st_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_FLUSH);
	fs_ops.flush(req, ino, fi);
}

static void st_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_RELEASE);
	fs_ops.release(req, ino, fi);
}

static void st_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_FSYNC);
	fs_ops.fsync(req, ino, datasync, fi);
}

static void st_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_OPENDIR);
	fs_ops.opendir(req, ino, fi);
}

static void st_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_READDIR);
	fs_ops.readdir(req, ino, size, off, fi);
}

static void st_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_READDIRPLUS);
	fs_ops.readdirplus(req, ino, size, off, fi);
}

static void st_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_RELEASEDIR);
	fs_ops.releasedir(req, ino, fi);
}

static void st_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_FSYNCDIR);
	fs_ops.fsyncdir(req, ino, datasync, fi);
}

static void st_statfs(fuse_req_t req, fuse_ino_t ino)
{
	COUNT(req, FS_STAT_STATFS);
	fs_ops.statfs(req, ino);
}

static void st_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	COUNT(req, FS_STAT_SETXATTR);
	fs_ops.setxattr(req, ino, name, value, size, flags);
}

static void st_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	COUNT(req, FS_STAT_GETXATTR);
	fs_ops.getxattr(req, ino, name, size);
}

static void st_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	COUNT(req, FS_STAT_LISTXATTR);
	fs_ops.listxattr(req, ino, size);
}

static void st_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	COUNT(req, FS_STAT_REMOVEXATTR);
	fs_ops.removexattr(req, ino, name);
}

static void st_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	COUNT(req, FS_STAT_CREATE);
	fs_ops.create(req, parent, name, mode, fi);
}

static void st_init(void *userdata, struct fuse_conn_info *conn)
{
	fs_ops.init(userdata, conn);
}

static void st_destroy(void *userdata)
{
	fs_ops.destroy(userdata);
}

const struct fuse_lowlevel_ops fs_ops_counted = {
	.init = st_init,
	.destroy = st_destroy,
	.lookup = st_lookup,
	.forget = st_forget,
	.forget_multi = st_forget_multi,
	.getattr = st_getattr,
	.readlink = st_readlink,
	.setattr = st_setattr,
	.mknod = st_mknod,
	.mkdir = st_mkdir,
	.unlink = st_unlink,
	.rmdir = st_rmdir,
	.symlink = st_symlink,
	.link = st_link,
	.rename = st_rename,
	.open = st_open,
	.create = st_create,
	.read = st_read,
	.write = st_write,
	.flush = st_flush,
	.fsync = st_fsync,
	.release = st_release,
	.opendir = st_opendir,
	.readdir = st_readdir,
	.readdirplus = st_readdirplus,
	.releasedir = st_releasedir,
	.fsyncdir = st_fsyncdir,
	.statfs = st_statfs,
	.setxattr = st_setxattr,
	.getxattr = st_getxattr,
	.listxattr = st_listxattr,
	.removexattr = st_removexattr,
};
