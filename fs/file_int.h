/*
 * fs/file_int.h - open files (struct fs_file): file.c's buffers and
 * commits, file_open.c's opens, spill.c's spilled buffers, defer.c's
 * changes kept on an open writer. A part of fs/fs_int.h, which includes it.
 */
#ifndef KVFS_FS_FILE_INT_H
#define KVFS_FS_FILE_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/file_int.h is a part of fs/fs_int.h: include that"
#endif

/* What fi->fh points to: told apart by the first field (setattr gets either). */
enum fs_handle_type {
	FS_HANDLE_FILE = 0x6b764601,
	FS_HANDLE_DIR = 0x6b764402,
};

/*
 * What an open file is, and so where its reads and commits go. Fixed at
 * open, except that FS_FILE_READER_LAZY becomes FS_FILE_READER (under
 * f->lock) at the first read that reaches the daemon.
 */
enum fs_file_kind {
	FS_FILE_READER,		/* a leaf: buf holds its version open_mtime/open_size (cache.c) */
	FS_FILE_READER_LAZY,	/* a leaf whose pages the kernel holds: no text yet (cache.c) */
	FS_FILE_READER_BIG,	/* a leaf above FS_SNAPSHOT_MAX: read per call, nothing kept */
	FS_FILE_WRITER,		/* a leaf's one write buffer (node->wfile), shared by its writers */
	FS_FILE_VIEW_READER,	/* NAME.json read: the rendering at open */
	FS_FILE_VIEW_WRITER,	/* NAME.json written: the whole new document */
	FS_FILE_VIEW_APPEND,	/* NAME.json with O_APPEND: buf holds only the appended values */
	FS_FILE_TMP,		/* a pending file in an array (pending.c): its content */
};

/*
 * One open file (fi->fh), owned by file.c (file_open.c opens it). Every
 * writable open of a leaf shares one fs_file (node->wfile): writes by any
 * handle land in one buffer, O_APPEND appends at its end, and each flush
 * commits it when dirty, as one page cache would on a local filesystem.
 * Readers, views and pending files get one each.
 */
struct fs_file {
	enum fs_handle_type type;	/* fixed */
	struct fs_node *node;	/* fixed; holds one ref */
	bool writable;		/* fixed: opened for writing (a pending file may be read-only) */
	uint64_t ino;		/* set at open (f->lock): st_ino, for fstat once the name is gone */
	pid_t writer_pid;	/* f->lock: the thread of the last write (fs_node_fresh) */
	struct fs_file *prev, *next;	/* ctx->files (ctx->lock) */
	unsigned refs;		/* the kernel's handles + committers at work (ctx->lock) */
	unsigned handles;	/* of refs, the kernel's handles (ctx->lock): a release
				 * that leaves others open leaves the writer to them */
	bool pend;		/* getattr answers pend_len/pend_mtime (ctx->lock) */
	uint64_t pend_len;	/* (ctx->lock) */
	int64_t pend_mtime;	/* (ctx->lock) */
	bool pend_view;		/* a created view this writer has not committed yet:
				 * the copy of writable && view && pending that
				 * view_is_pending reads (ctx->lock; fs_file_publish) */
	bool pend_leaf;		/* a created leaf not in the store yet: getattr shows
				 * it as a leaf (ctx->lock; fs_file_publish) */
	uint64_t pend_ino;	/* its st_ino (ctx->lock) */
	struct model_attr pend_attr;	/* mode, uid, gid getattr shows for the
					 * deferred ones (ctx->lock; have: which) */
	pthread_mutex_t lock;	/* guards every field below */
	enum fs_file_kind kind;
	char *buf;		/* writers: the new content; readers: the text */
	size_t len, cap;
	int64_t open_mtime;	/* readers: the mtime and size of the version last seen */
	uint64_t open_size;
	bool direct;		/* a reader whose reads bypass the page cache
				 * (fixed at open: fs_cache_reader_direct) */
	int64_t pass_ns;	/* a direct reader: when its last read at offset 0
				 * came (CLOCK_MONOTONIC; cache.c) */
	bool dirty;		/* written since the last commit: commit at flush */
	bool trunc;		/* opened with O_TRUNC, not written: commit at release */
	bool pending;		/* created view, not yet in the store (others see it
				 * as pend_view, after fs_file_publish) */
	bool excl;		/* a pending leaf created with O_EXCL: its commit
				 * refuses a name made meanwhile (docs/COMMITS.md) */
	int64_t wmtime_ns;	/* time of the last change to buf, or the mtime set */
	/*
	 * Leaf writers: what the tool set on the descriptor before closing it
	 * (utimens, chmod, chown), kept for the commit at close, so that
	 * content, type, mode and mtime of one file land in one commit. A
	 * created leaf (pending) is not in the store until that commit either.
	 */
	bool want_mtime;	/* wmtime_ns was set by utimens: stored as is */
	int64_t want_deadline_ns;	/* user.kvfs.expires: with the content; 0 none */
	struct model_attr want_set;	/* chmod/chown: fields stored */
	unsigned want_unset;	/* chmod/chown: fields back to the default */
	struct model_attr new_attr;	/* pending leaf: what create gives it */
	bool new_trunc;		/* pending leaf created with O_TRUNC (the shell's >):
				 * like any O_TRUNC, committed at release when not
				 * written; else (touch) at the first flush */
	int refused;		/* 0, or the -errno with which buf as it is was
				 * refused (text that is no JSON, or a close):
				 * not tried again until it changes (file.c) */
	bool empty_told;	/* a view emptied and not written whose close said
				 * EINVAL: shown as stored until a write (its
				 * release makes the refusal) */
	uint64_t stage_gen;	/* fixed: the store's generation at the open; a
				 * leaf this writer creates is dropped when another
				 * process removed its directory since (file.c) */
	bool stage_gone;	/* found so once: for good, though a rename of its
				 * directory after gives it a path that was not */
	bool gone_told;		/* dropped with its directory (stage_gone, a pending
				 * file's tmp_gone) and said so once, in the log and
				 * user.kvfs.error: each later close of the file says
				 * ESTALE alone (a script's children closing inherited
				 * copies logged it 107 times once) */
	bool loaded;		/* a leaf writer's buf starts from the stored text (an
				 * open without O_TRUNC), not emptied since: a commit
				 * that finds the leaf removed elsewhere drops it, as
				 * on unlink; one holding only what it was given
				 * puts it back (file.c) */
	bool onto_held;		/* created onto a name whose removal was held
				 * (rmhold.c): its first commit's outcome says
				 * whether that removal stands */
	/*
	 * A view writer's opener (set at open, before the kernel has the
	 * handle): its starting text is rendered only if they may read it
	 * (model_read_to_as), its commits are checked on their behalf
	 * (model_write_as), and its refusals are theirs. who.groups is
	 * who_groups (heap).
	 */
	bool who_set;
	struct model_cred who;
	gid_t *who_groups;
	/*
	 * A leaf made by mknod (tar -x makes each file so, then opens it): held
	 * as a pending writer with no handle, one ref being the hold, so that
	 * the open that follows joins it and its close makes the one commit
	 * (defer.c). Guarded by ctx->lock.
	 */
	bool held;
	int64_t held_ns;	/* when mknod made it: committed FS_HOLD_MS later at the latest */
	/*
	 * held by fs_file_hold_empty, not mknod: a created leaf whose empty
	 * value was refused, kept for the open that follows (`: > f; echo 41
	 * >> f`). Guarded by ctx->lock.
	 */
	bool held_empty;
	/* spill.c: buf is a shared mapping of an unlinked file once big */
	const char *spill_dir;	/* fixed: where that file goes (the store's directory) */
	bool spilled;
	bool heap_only;		/* the disk had no room for a spill file: buf stays on the heap */
	int spill_fd;
	size_t spill_end;	/* bytes of the file ever written: after it, zeros */
};

/* f->lock held, or the kind is one that never changes. */
static inline bool fs_file_is_view(const struct fs_file *f)
{
	return f->kind == FS_FILE_VIEW_READER || f->kind == FS_FILE_VIEW_WRITER ||
	       f->kind == FS_FILE_VIEW_APPEND;
}

/*
 * Largest content of one file: what a leaf can hold (a write past it fails
 * with EFBIG, before anything is buffered); beyond FS_SPILL_MIN the buffer
 * is on disk (spill.c).
 */
#define FS_FILE_MAX MODEL_LEAF_MAX
#define FS_SPILL_MIN ((size_t)8 << 20)

/* ---- open files (file.c) ---- */

/* At the end: commits every dirty open file (logging failures) and frees them. */
void fs_files_commit_all(struct fs_ctx *ctx);

struct fs_file *fs_file_new(struct fs_ctx *ctx, struct fs_node *node);

void fs_file_put(struct fs_ctx *ctx, struct fs_file *f);
/*
 * Counts the handle the kernel is about to get for f (the ref it holds):
 * before the reply, as its release may come at once. When the reply
 * fails, fs_file_handle_lost drops it and that ref.
 */
void fs_file_handle_add(struct fs_ctx *ctx, struct fs_file *f);
void fs_file_handle_lost(struct fs_ctx *ctx, struct fs_file *f);

/* f->lock held. Shows getattr what f holds now. */
void fs_file_publish(struct fs_ctx *ctx, struct fs_file *f);

/* f->lock held. Makes buf hold len bytes, zero-filling a gap. */
int fs_file_resize(struct fs_file *f, size_t len);
/* f->lock held. Adds size bytes at f->len (past FS_SPILL_MIN in a spill file), no size cap. */
int fs_file_append(struct fs_file *f, const void *data, size_t size);

/*
 * ---- spilled write buffers (spill.c) ---- all with f->lock held.
 * grow: buf (in a spill file already or about to be moved there) gets cap
 * bytes; zero_gap: the bytes after f->len read as zeros; write: the
 * bytes at off (within cap) are set with pwrite, not through the mapping;
 * release: unmaps and closes (f->buf is NULL then). 0 or -errno.
 */
int fs_spill_grow(struct fs_file *f, size_t cap);
int fs_spill_zero_gap(struct fs_file *f);
int fs_spill_write(struct fs_file *f, const void *buf, size_t size, size_t off);
void fs_spill_release(struct fs_file *f);
/* Replies to a read of [off, off+size) of a spilled buffer from its file (pread). */
void fs_spill_reply(fuse_req_t req, struct fs_file *f, size_t size, off_t off);

/*
 * Commits the unsaved content of every open file of node, so that a change
 * of mtime or type applies to the new content (cp -a sets both on its open
 * descriptor before closing it). A truncation not yet written (O_TRUNC,
 * nothing written: cp -a of an empty file) is committed too. One pass: a
 * commit that fails is reported, not retried.
 */
int fs_node_commit_files(struct fs_ctx *ctx, struct fs_node *node);

struct fs_file *fs_fi_file(const struct fuse_file_info *fi);

/* ---- opening files (file_open.c) ---- */

/* The leaf's shared writer with one more handle, truncated for O_TRUNC; NULL when none. */
struct fs_file *fs_writer_share(struct fs_ctx *ctx, struct fs_node *node, int flags);

/*
 * create of a leaf: the leaf is not committed now but at close, with its
 * content, type, mode and mtime (model_create_check said it may be made;
 * attr: its mode and owner, ino: its st_ino; as_of: the check's, the
 * writer's stage_gen when newer than the mount's position). The writer
 * is the node's shared one; *out holds the handle's ref.
 */
int fs_leaf_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 const struct model_attr *attr, uint64_t ino, uint64_t as_of,
			 struct fs_file **out);

/*
 * A writer of a view whose node is not in the store yet (created, or opened
 * while another created one is pending): its content is committed at close.
 */
int fs_view_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 struct fs_file **out);

/*
 * Opens node (at path) for fi->flags; the reply is sent by the caller. A
 * view is opened on behalf of req's caller: its text only when they may
 * read its whole subtree (-EACCES, kept for user.kvfs.error, else).
 */
int fs_file_open(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node, const char *path,
		 struct fuse_file_info *fi, struct fs_file **out);
/* A view writer f just opened by req: its commits are made on req's caller's behalf. */
void fs_file_set_opener(fuse_req_t req, struct fs_ctx *ctx, struct fs_file *f);
/*
 * f, just created onto name in dir, whose removal was held: the name is
 * shown while f is open; f's first commit, refused, holds it again.
 */
void fs_file_onto_held(struct fs_ctx *ctx, struct fs_file *f, struct fs_node *dir,
		       const char *name);

/* ---- changes kept on an open writer (defer.c) ---- */

/* A change a tool makes on an open leaf before closing it (fs_writer_defer). */
struct fs_defer {
	bool mtime;
	int64_t mtime_ns;
	struct model_attr set;	/* chmod/chown */
	unsigned unset;
	const char *type;	/* user.kvfs.type, or NULL */
	int64_t deadline_ns;	/* user.kvfs.expires, or 0 */
};
/*
 * Keeps d on the node's open writer for its commit at close (cp -a sets
 * times, type and mode on its descriptor before closing it): true when
 * kept, with *ret 0 or a refusal (a type the text does not parse as);
 * false when node has no open writer (the caller commits d itself).
 */
bool fs_writer_defer(struct fs_ctx *ctx, struct fs_node *node, const struct fs_defer *d,
		     int *ret);

/*
 * mknod of a leaf in the default mode (model_create_check said it may be
 * made; attr: its mode and owner, ino: its st_ino, as_of: its as_of): the leaf is held as
 * a pending writer with no handle (f->held) and committed with what the
 * tool does next: the first close of an open of it (content, type, mode
 * and mtime in one commit), an fsync or fsyncdir anywhere in the mount,
 * unmount, a name operation or read-only open that needs it in the store,
 * or the watcher FS_HOLD_MS after the mknod. 0 or -errno (-EEXIST: a
 * writer of that name is pending already).
 */
#define FS_HOLD_MS 1000
int fs_leaf_hold(struct fs_ctx *ctx, struct fs_node *node, const struct model_attr *attr,
		 uint64_t ino, uint64_t as_of);
/*
 * An open for writing of a held leaf joins its writer (fi->fh set, *out
 * holds the handle's ref): true. False when node is no held leaf, or the
 * open is read-only (the caller settles it first).
 */
bool fs_held_join(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		  struct fs_file **out);
/*
 * f->lock held, f a created leaf not written whose empty value the model
 * refuses (`: > f` in an integer column): held as a leaf made by mknod is,
 * so that an open within FS_HOLD_MS joins it and its close commits the
 * content (`echo 41 >> f`); else the watcher's attempt drops it.
 */
void fs_file_hold_empty(struct fs_ctx *ctx, struct fs_file *f);
/*
 * f->lock held, and a ref on f besides the hold. Ends f's hold once f is
 * committed, or once an open has written into a held truncation (its
 * close decides, accepted or refused).
 */
void fs_file_hold_done(struct fs_ctx *ctx, struct fs_file *f);
/*
 * f->lock held. f's held or created leaf is dropped uncommitted (refused):
 * the kernel, which keeps its name like any other (fs_entry_make), forgets
 * it, so that the next open of the name creates it again (`>>` after a
 * refused `: >`).
 */
void fs_file_hold_forget(struct fs_ctx *ctx, struct fs_file *f);
/*
 * Commits the held leaves (fs_leaf_hold): all of them, or those held
 * FS_HOLD_MS or more (the watcher). One attempt: a refused one is logged
 * and dropped, as a refused close is.
 */
void fs_held_commit(struct fs_ctx *ctx, bool all);

/*
 * A created leaf called name in dir that is not in the store yet is
 * committed now (an unlink, rename or open from elsewhere needs it there).
 */
void fs_name_settle(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/*
 * The same for every created leaf beneath the directory called name in
 * dir, before a rename moves it: once moved, a removal by another process
 * of a directory on its new path, made before the rename, would read as
 * its own (the leaf was never in it).
 */
void fs_subtree_settle(struct fs_ctx *ctx, struct fs_node *dir, const char *name);
/* The same for node; true when it was such a leaf. */
bool fs_node_settle(struct fs_ctx *ctx, struct fs_node *node);

#endif
