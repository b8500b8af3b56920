/*
 * fs/cache_int.h - the page-cache and reader rules (cache.c): which pages
 * and snapshots readers get, and pushing listed leaves' text into the
 * kernel's pages. A part of fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_CACHE_INT_H
#define KVFS_FS_CACHE_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/cache_int.h is a part of fs/fs_int.h: include that"
#endif

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

/* ---- the page-cache and reader rules (cache.c) ---- */

/* A leaf changed this recently is read past the page cache on etcd (fs_cache_reader_direct). */
#define FS_DIRECT_HOT_NS (5 * 1000000000LL)
/*
 * A direct reader's reads past offset 0 this soon after its last read at 0
 * continue that pass: served the version it was served, to its end (then
 * EOF). Later ones (tail -f at the end) are served the newest version.
 */
#define FS_PASS_NS (500 * 1000000LL)

/*
 * A commit of another process changed leaf node's text (the watcher saw
 * it): recorded for fs_cache_reader_direct. fs_cache_forget records its own.
 */
void fs_cache_changed(struct fs_ctx *ctx, struct fs_node *node);

/*
 * After a commit of a leaf: the kernel's pages (filled by readers of the old
 * text) are dropped, and the next reader does not keep them.
 */
void fs_cache_forget(struct fs_ctx *ctx, struct fs_node *node);

/*
 * After the commit of a leaf's writer: fs_cache_forget, unless the leaf was
 * created by this writer (created: pending until this commit) and no open
 * but its writers' recorded pages since (cache_known false; opens of a
 * created leaf join its writer, and the commit that made it forgot them).
 * Then the kernel's pages hold only what was written through them, which is
 * what was committed (a create gives the inode size 0, which drops any
 * older pages), so nothing needs dropping, and the invalidation worker is
 * not woken for it: one wake-up and two thread switches less per file in
 * `cp -a`, `tar -x` or `echo > new`.
 */
void fs_cache_committed(struct fs_ctx *ctx, struct fs_node *node, bool created);

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

/*
 * Whether a reader of node that took its text at open (FS_FILE_READER)
 * bypasses the kernel's page cache (direct_io), and so reads exactly the
 * text it is served: on a store whose reads are round trips (etcd), of a
 * leaf whose text changed in the last FS_DIRECT_HOT_NS, or is found at n,
 * another version than the last open recorded (see cache.c's head). The kernel drops node's pages at such an open: they are no longer
 * known to hold a version.
 */
bool fs_cache_reader_direct(struct fs_ctx *ctx, struct fs_node *node,
			    const struct model_node *n);

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

#endif
