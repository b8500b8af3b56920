/*
 * fs/pending_int.h - pending files in arrays (pending.c): struct
 * fs_tmpfile and what pending.c offers the other files. A part of
 * fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_PENDING_INT_H
#define KVFS_FS_PENDING_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/pending_int.h is a part of fs/fs_int.h: include that"
#endif

/*
 * A pending file: a name created in an array that is no index (rsync's
 * ".0.XXXXXX", sed -i's "sedXXXXXX"). An array can only hold indices, so it
 * lives only here: its content as last flushed, the type set with
 * user.kvfs.type and the mtime set with utimens. Renaming it onto an index
 * commits it (model_write_at: one transaction); unlinking it drops it, and
 * so does another process's removal of its array (fs_parent_gone). It is
 * never listed and never stored. Its node holds one ref on itself while it
 * is pending, so that it outlives the kernel's lookups. Owned by pending.c;
 * every field is guarded by ctx->lock.
 */
struct fs_tmpfile {
	char *buf;
	size_t len;
	int64_t mtime_ns;
	enum model_type type;	/* 0 until set: keep the type of the leaf it replaces */
	uint64_t stage_gen;	/* the store's generation when it was made */
	/* chmod, chown (rsync's on its temporary file, sed -i's): for the commit */
	struct model_attr set;	/* the fields given (set.have) */
	unsigned unset;		/* the fields set back to the default */
	int64_t deadline_ns;	/* user.kvfs.expires, for the commit; 0 none */
};

/* ---- pending files in arrays (pending.c) ---- */

/*
 * Whether another process removed the directory of path (a node's, as the
 * model takes it) or an ancestor since generation gen (model_parent_gone):
 * what this mount staged there since (a created leaf, a pending file)
 * went with it, as a file open in a directory removed on ext4 does, even
 * when a directory was made again at its path. A feed that cannot be
 * read says no (the commit then judges the path as it is), logged.
 */
bool fs_parent_gone(struct fs_ctx *ctx, const char *path, uint64_t gen);
/* fs_parent_gone for node's path (node pinned; no lock held); no memory: no. */
bool fs_node_parent_gone(struct fs_ctx *ctx, struct fs_node *node, uint64_t gen);
/*
 * Why a file was dropped as fs_parent_gone said (path: its own): err's
 * message, for user.kvfs.error; -ESTALE, what its close (and fsync) then
 * say, as NFS does for a file whose directory another client removed.
 */
int fs_parent_gone_error(const char *path, struct model_error *err);
/*
 * ctx->lock held. Drops node's pending file as its array went (another
 * process removed it or made it something else), keeping path (heap,
 * taken; may be NULL) so that its open writers' flushes say ESTALE.
 */
void fs_tmp_gone_locked(struct fs_ctx *ctx, struct fs_node *node, char *path);

/*
 * f->lock held. When f's node is a pending file, its content becomes f's
 * (the flush of a pending file): 1. 0 when the node is no pending file;
 * -ESTALE (logged) when f writes a pending file that another process's
 * removal of its array dropped, now or before (fs_tmp_gone_locked).
 */
int fs_tmp_flush_locked(struct fs_ctx *ctx, struct fs_file *f);

/* Opens a pending file: the content as last flushed (none with O_TRUNC). */
int fs_tmp_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		struct fs_file **out);

/*
 * create of a name that is no index in an array (model/ refused it with
 * MODEL_REASON_NOT_AN_INDEX; as_of: that check's, the new pending file's
 * stage_gen): makes or opens the pending file, fills e and counts a lookup.
 */
int fs_tmp_create(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		  struct fuse_file_info *fi, uint64_t as_of, struct fuse_entry_param *e,
		  struct fs_file **out);

/* The pending files beneath a directory a rename moves (fs_tmp_move_begin). */
struct fs_tmp_moving {
	struct fs_node **v;	/* pinned */
	size_t n;
};

/*
 * Before a rename of the directory called name in dir: pins the pending
 * files beneath it into mv, dropping now (fs_tmp_gone_locked) each one
 * whose array another process removed since it was made, while its path
 * still says so.
 */
void fs_tmp_move_begin(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		       struct fs_tmp_moving *mv);
/*
 * After it (moved: it succeeded): the rest are staged as of the store's
 * position now, past the rename, for a removal made before it of a
 * directory on their new path was not theirs. Unpins them.
 */
void fs_tmp_move_end(struct fs_ctx *ctx, struct fs_tmp_moving *mv, bool moved);

/* unlink of a pending file: true when name in dir was one (and is gone now). */
bool fs_tmp_unlink(struct fs_ctx *ctx, struct fs_node *dir, const char *name);

/*
 * rename of a pending file: onto an index (or any name outside an array, or
 * a view) it is committed there; onto another name that is no index in an
 * array it stays pending under the new name. 1 when name in dir is no
 * pending file (the caller renames in the store), else 0 or -errno. Onto
 * a view, the document is written on behalf of who.
 */
int fs_tmp_rename(struct fs_ctx *ctx, const struct model_cred *who, struct fs_node *dir,
		  const char *name, struct fs_node *newdir, const char *newname, unsigned flags);

/* truncate(2) of a pending file without an open file. */
int fs_tmp_truncate(struct fs_ctx *ctx, struct fs_node *node, off_t size);

/* Sets the type a pending file will have; false when node is no pending file. */
bool fs_tmp_set_type(struct fs_ctx *ctx, struct fs_node *node, const char *name, int *ret);
/*
 * chmod/chown (set, unset as model_set_attr's) and user.kvfs.expires
 * (deadline_ns; 0 drops it) of a pending file, kept for its commit: false
 * when node is no pending file.
 */
bool fs_tmp_set_attr(struct fs_ctx *ctx, struct fs_node *node, const struct model_attr *set,
		     unsigned unset);
bool fs_tmp_set_deadline(struct fs_ctx *ctx, struct fs_node *node, int64_t deadline_ns);

#endif
