/*
 * fs/write_section_int.h - the write section around every model call that
 * may commit, and the shape marks that keep directories' nlink counts
 * across commits (write_section.c). A part of fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_WRITE_SECTION_INT_H
#define KVFS_FS_WRITE_SECTION_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/write_section_int.h is a part of fs/fs_int.h: include that"
#endif

/* ---- the write section (write_section.c) ---- */

/* The write section (ctx->section). */
struct fs_write_section {
	pthread_rwlock_t gen_lock;	/* the write section (lock order, 2) */
	/*
	 * Write sections that may change which nodes are directories (all
	 * but a leaf's content commit): how many are open, how many began.
	 * A leaf's commit that saw none of them and was the store's only
	 * commit keeps its directory's nlink count (fs_shape_carry).
	 */
	atomic_uint shape_writers;
	atomic_uint_fast64_t shape_seq;
};

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
	uint64_t seq;		/* ctx->section.shape_seq then */
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

#endif
