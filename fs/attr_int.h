/*
 * fs/attr_int.h - attributes (attr.c): stat replies, entries, who a request
 * is; and attributes read ahead for runs of stats (ahead.c). A part of
 * fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_ATTR_INT_H
#define KVFS_FS_ATTR_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/attr_int.h is a part of fs/fs_int.h: include that"
#endif

/* A run of one directory's children, listed for the stats that follow (ahead.c). */
struct fs_ahead_batch {
	char **names;		/* heap, each heap: escaped, as listed */
	struct model_node *nodes;	/* heap, one per name */
	size_t n, cap;
	size_t next;		/* where the next stat's name is looked for first */
	size_t hits;		/* stats it served */
};

/* ahead.c's state (ctx->ahead): every field guarded by ctx->ahead.lock. */
struct fs_ahead {
	pthread_mutex_t lock;	/* the fields below */
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

/* ---- attributes read ahead (ahead.c) ---- */
/*
 * Where reads are round trips: node's attributes (path its path) as
 * model_stat with MODEL_STAT_SUBDIRS gives them at model_version gen, from
 * a listing of its directory read for a run of such stats: 1 with *out
 * filled, 0 when the caller asks the model. Takes ctx->lock and
 * ctx->ahead.lock itself: call it holding neither.
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

/*
 * A write or an O_TRUNC open of node by a caller without CAP_FSETID
 * (fs_req_kills_suidgid): clears set-user-ID, and set-group-ID where the
 * group may execute, as a chmod would (kept on an open writer for its
 * commit), and has the kernel drop the mode it caches. 0 when there was
 * nothing to clear, or -errno.
 */
int fs_attr_kill_suidgid(struct fs_ctx *ctx, struct fs_node *node);

/* Replies with a fresh entry for name in dir (mkdir, mknod). */
void fs_reply_entry_for(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir,
			const char *name, const char *path);

#endif
