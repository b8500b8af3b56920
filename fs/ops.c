/*
 * fs/ops.c - the table of FUSE operations, lookup and forget. Each
 * operation maps its node to a path, calls the model and replies 0 or
 * -errno; the handlers live with the state they use:
 *
 *   attr.c           attributes, entry replies, getattr/setattr
 *   ahead.c          attributes read ahead for runs of stats, where reads are round trips
 *   file.c           open files (struct fs_file): open/read/write/flush/release, commit
 *   file_open.c      what an open makes: a reader, the leaf's shared writer, a view writer
 *   defer.c          chmod/chown/utimens/type kept on an open writer; settling created leaves
 *   cache.c          the page-cache and reader rules (versions, keep_cache, fstat of unlinked)
 *   pending.c        pending files in arrays (struct fs_tmpfile)
 *   spill.c          a big file's buffer moved to an unlinked file in the store's directory
 *   dir.c            directory reading (struct fs_dir)
 *   names.c          create, mkdir, mknod, unlink, rmdir, rename
 *   xattr.c          xattrs, the refusal of other names, statfs
 *   invalidate.c     the invalidation worker: what the kernel is told changed
 *   write_section.c  the write section around commits, nlink kept across them
 *   watcher.c        the watcher thread: other processes' commits, the change feed
 *   inode.c          the node table (struct fs_node), revalidation
 *   mount.c          options, where the log goes, the daemon's lifetime
 *   log.c            the log's lines, the refusals kept for user.kvfs.error
 *   table.c          a table index's row links (readlink), user.kvfs.schema
 *   rmhold.c         removals held in table rows until the row goes whole (rm -r)
 *   stats.c          the request counters: the table the session runs wraps this one
 *   transport.c      the daemon's reads and writes of /dev/fuse: INIT flags libfuse drops
 *   uring.c          FUSE over io_uring (-o io_uring): ring entries and their threads
 *   ttl.c            user.kvfs.ttl (time to live) and the reaper the watcher runs
 *
 * Every file includes fs/fs_int.h alone: the context, the lock order, and
 * one private header per concern (inode_int.h, file_int.h, cache_int.h,
 * pending_int.h, attr_int.h, inval_int.h, write_section_int.h, ops_int.h),
 * each declaring what its files offer the others; transport.c and uring.c
 * also share uring_int.h, the kernel's io_uring structures.
 *
 * File contents written through the mount are buffered in one buffer per
 * leaf, shared by all its writable opens (per open for views and pending
 * files), and committed in one model_write at flush (close), fsync or
 * release, so readers see old or new, never half. A commit takes its path
 * inside the write section (fs_write_path), and renames and unlinks move
 * the node table before theirs ends.
 *
 * Caching: names and attributes are trusted for entry_timeout/attr_timeout
 * (a day by default: the watcher in watcher.c has the worker revalidate
 * what the kernel knows of the nodes a commit by another process touched,
 * named by the store's change feed, within FS_WATCH_MS);
 * views (NAME.json) and nodes that may expire (fs/ttl.c) never; views are
 * read with direct I/O from a snapshot rendered at open. Read-only opens skip the flush at close
 * (noflush). Every open of a leaf goes through the kernel's one page cache
 * (shared writable mmap; readers see later writes); its pages are kept
 * across opens while mtime and size are unchanged, and a commit drops
 * them (cache.c). The first open that misses the pages in a listed
 * directory has the worker push the text of its other small leaves into
 * the page cache (notify_store, cache.c). Directory listings are cached by the kernel while the
 * store's generation is unchanged. Whatever a commit changes behind the
 * kernel's back (a subtree replaced through NAME.json, a rename onto a
 * view, a type change) is revalidated by the worker.
 */
#include <errno.h>
#include <stdlib.h>

#include "fs/fs_int.h"

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *dir = fs_node_from_ino(ctx, parent);
	char *path;
	int ret = fs_name_check(name);	/* ENAMETOOLONG, not the ENOENT the model would give */

	if (ret == 0)
		ret = fs_node_path(ctx, dir, name, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "lookup %s", path);
	if (fs_rmhold_hidden(ctx, dir, name))
		fs_reply_err(req, -ENOENT);	/* removed, held until its row goes (rmhold.c) */
	else
		fs_reply_entry_for(req, ctx, dir, name, path);
	free(path);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_node_forget(fs_req_ctx(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs_ctx *ctx = fs_req_ctx(req);

	for (size_t i = 0; i < count; i++)
		fs_node_forget(ctx, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs_ctx *ctx = userdata;
	unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_AUTO_INVAL_DATA;

	conn->want |= want & conn->capable;
	/* Writes must reach the per-open buffer at once: no kernel write-back. */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = 1U << 20;
	conn->time_gran = 1;
	fs_trace(ctx, "init: capable 0x%x want 0x%x", conn->capable, conn->want);
}

static void op_destroy(void *userdata)
{
	fs_files_commit_all(userdata);
	fs_rmhold_settle(userdata, true);	/* removals held in rows: tried, or logged */
	fs_table_settle(userdata, FS_SETTLE_LAST);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = fs_op_getattr,
	.readlink = fs_op_readlink,
	.setattr = fs_op_setattr,
	.mknod = fs_op_mknod,
	.mkdir = fs_op_mkdir,
	.unlink = fs_op_unlink,
	.rmdir = fs_op_rmdir,
	.symlink = fs_op_symlink,
	.link = fs_op_link,
	.rename = fs_op_rename,
	.open = fs_op_open,
	.create = fs_op_create,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.fsync = fs_op_fsync,
	.release = fs_op_release,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.fsyncdir = fs_op_fsyncdir,
	.statfs = fs_op_statfs,
	.setxattr = fs_op_setxattr,
	.getxattr = fs_op_getxattr,
	.listxattr = fs_op_listxattr,
	.removexattr = fs_op_removexattr,
};
