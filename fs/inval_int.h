/*
 * fs/inval_int.h - telling the kernel what changed behind its caches: the
 * invalidation worker (invalidate.c) and the watcher of other processes'
 * commits (watcher.c). A part of fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_INVAL_INT_H
#define KVFS_FS_INVAL_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/inval_int.h is a part of fs/fs_int.h: include that"
#endif

enum fs_inval_kind {
	FS_INVAL_ENTRY,		/* the name in the parent (and, for a directory, its subtree) */
	FS_INVAL_ATTR,		/* the attributes of a node */
	FS_INVAL_DATA,		/* the attributes and cached pages of a node */
	FS_INVAL_SUBTREE,	/* a node and everything known below it (the item holds a ref) */
	FS_INVAL_PATH,		/* the node at a path another process changed (name = path) */
	FS_INVAL_PATH_TREE,	/* the same, with everything known below it */
	FS_INVAL_STORE,		/* push a directory's small leaves into their pages (holds a ref) */
};

/* ---- invalidation worker (invalidate.c) ---- */

/* One notification waiting for the worker (ctx->inval.head; ctx->inval.lock). */
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
void fs_inval_queue(struct fs_ctx *ctx, struct fs_inval *iv);

/* invalidate.c's worker (ctx->inval): notifications must not run inside an operation */
struct fs_inval_worker {
	pthread_mutex_t lock;	/* the fields below */
	pthread_cond_t cond;
	struct fs_inval *head, *tail;
	bool foreign;		/* coalesced: the store changed elsewhere, revalidate all */
	bool stop, started;
	/*
	 * FS_INVAL_STORE items wait apart, behind every other item: a push
	 * only saves a read later, and must not delay an invalidation.
	 */
	struct fs_inval *push_head, *push_tail;
	unsigned npush;		/* items on that list (at most FS_PUSH_QUEUE_MAX) */
	pthread_t thread;	/* written before the thread runs, joined after stop */
	uint64_t queued, sent;	/* items ever queued / handled, for fs_inval_wait */
	pthread_cond_t sent_cond;	/* broadcast when sent moves or the worker stops */
};
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
 * stays hashed. Pending files whose array is gone, or was removed by
 * another process since they were made (fs_parent_gone), are dropped.
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

/* ---- invalidation after commits (invalidate.c) ---- */

/*
 * The subtree a view NAME.json in dir stands for changed behind the kernel:
 * revalidated by the worker (fs_inval_subtree), so that only names gone or
 * changed between file and directory lose their dentries.
 */
void fs_inval_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name);

/* After node was committed: its attributes, or for a view the subtree it stands for. */
void fs_inval_after_change(struct fs_ctx *ctx, struct fs_node *node, bool view);

/* ---- the watcher (watcher.c) ---- */
#define FS_WATCH_MS 150
#define FS_FEED_PATHS_MAX 4096	/* changed paths in one poll beyond which all are re-checked */
#define FS_READERS_CHECK_TICKS 20	/* clear dead readers every 20 polls: 3 s */

/*
 * Noticing commits by other processes (the offline CLI; ctx->watch): the
 * store accounts for our own commits as it makes them and tells whether
 * anyone else committed (model_changed_elsewhere). The watcher thread
 * polls every FS_WATCH_MS and then invalidates what the kernel caches of
 * the nodes those commits touched (the change feed below), so that long
 * entry and attribute timeouts stay honest.
 */
struct fs_watcher {
	/*
	 * The change feed (model_changes_read): the watcher reads what other
	 * commits touched from feed_pos on, and has the worker revalidate only
	 * those nodes; when the store cannot tell, every node. Under lock
	 * (the watcher and the reaper on the chores thread; fs_watch_start
	 * sets them before either runs).
	 */
	uint64_t feed_pos;	/* generation the feed was read up to */
	uint64_t feed_want;	/* a foreign commit was seen at this generation: read to it */
	uint64_t reap_lo, reap_hi;	/* the reaper's last commits: ours, read as another's */
	/*
	 * feed_pos once the poll that reached it queued its invalidations:
	 * every commit up to it is in what the mount serves (the kernel's
	 * caches once the worker sent them). Any thread: user.kvfs.stats.
	 */
	atomic_uint_fast64_t position;
	pthread_mutex_t lock;	/* the feed's fields above, stop, started */
	pthread_cond_t cond;
	bool stop, started;
	pthread_t thread;	/* the watcher: the feed */
	pthread_t chores;	/* the reaper, held leaves and removals, waiting schemas */
};
/* reap_hi while a reap runs: every commit of ours from reap_lo on is read as another's */
#define FS_REAP_OPEN UINT64_MAX
uint64_t fs_watch_reap_begin(struct fs_ctx *ctx, uint64_t before);
void fs_watch_reap_end(struct fs_ctx *ctx, uint64_t after, uint64_t hi);
int fs_watch_start(struct fs_ctx *ctx);
void fs_watch_stop(struct fs_ctx *ctx);

#endif
