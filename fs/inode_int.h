/*
 * fs/inode_int.h - the table of nodes the kernel knows (inode.c): struct
 * fs_node, the numbers renamed nodes keep, and what inode.c offers the
 * other files. A part of fs/fs_int.h, which includes it.
 *
 * Node ids: the root is FUSE_ROOT_ID; any other node id is the address of its
 * struct fs_node. A node lives while the kernel holds lookups on it
 * (nlookup), a child node refers to it, or an open file or directory refers
 * to it (refs). Every node knows its parent and its name, so a rename moves
 * a whole subtree by relinking one node, and a path is rebuilt on demand.
 */
#ifndef KVFS_FS_INODE_INT_H
#define KVFS_FS_INODE_INT_H
#ifndef KVFS_FS_INT_H
#error "fs/inode_int.h is a part of fs/fs_int.h: include that"
#endif

/*
 * A node the kernel knows (inode.c owns the table). Every field is guarded by
 * ctx->lock; the root's parent and name are fixed.
 */
struct fs_node {
	struct fs_node *parent;	/* holds one ref; NULL for the root; a rename changes it */
	char *name;		/* the name as shown (escaped); "" for the root */
	struct fs_node *hnext;	/* chain in the table, by (parent, name) */
	struct fs_node *prev, *next;	/* ctx->inodes.nodes: every live node but the root */
	struct fs_node *children;	/* the nodes whose parent this is */
	struct fs_node *sib_prev, *sib_next;	/* in parent->children */
	bool kind_known;	/* is_dir recorded by a stat or a listing */
	bool is_dir;
	/*
	 * A leaf's type as last read (a stat, a listing, its user.kvfs.type),
	 * 0 when unknown: what getxattr answers once its name is gone (a
	 * rename over it, as sed -i and rsync make) for a path resolved before
	 * that, as ext4 answers from the replaced inode.
	 */
	enum model_type seen_type;
	uint64_t nlookup;	/* lookups the kernel holds; a forget of more is a bug */
	uint64_t refs;		/* child nodes, open files and directories, pins */
	bool hashed;		/* reachable by (parent, name); false once removed */
	/* inode.c: the st_ino shown (fs_node_st_ino_locked) */
	uint64_t st_ino;	/* 0 until first shown */
	uint64_t model_ino;	/* the model's number st_ino was taken from */
	bool ino_fixed;		/* st_ino no longer follows the model's (a rename kept it) */
	struct fs_node *ino_next;	/* chain in ctx->inodes.fixed while ino_fixed */
	/* cache.c: the page cache */
	bool cache_known;	/* cache_* recorded at an earlier open */
	int64_t cache_mtime;	/* leaf mtime and size at the last open or commit */
	uint64_t cache_size;
	int64_t changed_ns;	/* leaves: when a commit, this mount's or another's,
				 * was last seen to change the text (CLOCK_MONOTONIC
				 * ns; 0: never) */
	int64_t committed_ns;	/* leaves: when one through this mount last did */
	enum fs_push_state push_state;	/* directories: pushing their leaves' text (cache.c) */
	/* attr.c and dir.c: what the kernel was told */
	uint64_t dir_gen;	/* store generation when last listed (+1; 0 never) */
	int64_t dir_until;	/* that listing's earliest child deadline (fs/ttl.c; 0: none) */
	uint64_t nlink_gen;	/* containers: store generation of nlink (+1; 0 never) */
	uint32_t nlink;		/* containers: st_nlink as last counted */
	/* file.c, defer.c, pending.c, xattr.c */
	unsigned npend;		/* open files whose unsaved content getattr shows (f->pend) */
	struct fs_tmpfile *tmp;	/* a pending file (pending.c) */
	char *tmp_gone;		/* heap: the path of the pending file dropped as
				 * another process removed its array, whose writers'
				 * flushes say ESTALE (fs_tmp_gone_locked); or NULL */
	struct fs_file *wfile;	/* a leaf's one write buffer, shared by its writers */
	enum model_type want_type;	/* set on an empty leaf whose text did not parse yet
					 * (tar --xattrs types a file before writing it):
					 * applied at the next commit; holds one ref (xattr.c,
					 * defer.c) */
	/* inode.c: a leaf thread fresh_pid wrote and closed (fs_node_fresh) */
	pid_t fresh_pid;
	int64_t fresh_until;	/* CLOCK_MONOTONIC ns */
	/*
	 * rmhold.c: the removal of this name is held (hidden from lookups
	 * and listings, still stored) until its row goes whole; the hold
	 * keeps one ref and links the node into ctx->rmhold.
	 */
	bool rm_held;
	bool rm_held_dir;	/* held by rmdir: tried again as rm -r */
	bool rm_held_failed;	/* tried for real, failed for a reason that may pass: logged */
	unsigned nheld;		/* children with rm_held */
	struct fs_node *held_prev, *held_next;	/* ctx->rmhold.head while rm_held */
};

/* A renamed name whose node was freed: its next node keeps the number (inode.c). */
#define FS_MOVED_MAX 64
struct fs_moved {
	const struct fs_node *parent;	/* compared, never followed: may be stale */
	char *name;		/* heap; NULL for an unused slot */
	uint64_t st_ino;
};
/* ctx->inodes.fixed: nodes whose st_ino a rename fixed, by st_ino */
#define FS_FIXED_BUCKETS 4096

/* The node table (ctx->inodes): every field guarded by ctx->lock. */
struct fs_inodes {
	struct fs_node root;
	struct fs_node **buckets;	/* inode.c's table */
	size_t nbuckets, nnodes;
	struct fs_node *nodes;
	struct fs_moved moved[FS_MOVED_MAX];	/* a ring, oldest overwritten (inode.c) */
	unsigned moved_next;	/* the slot the next freed renamed node takes */
	uint64_t move_seq;	/* the last number mixed into a number of its own */
	struct fs_node **fixed;	/* FS_FIXED_BUCKETS chains (node->ino_next); NULL until needed */
};

/* ---- the node table (inode.c) ---- */
/*
 * ctx->lock held. The st_ino shown for node, whose model ino (a hash of the
 * path) is ino. A node keeps the number it showed across renames (its own
 * and its ancestors'), as on ext4, for as long as the daemon knows it and,
 * once the kernel forgot it, for the last FS_MOVED_MAX renamed names; a
 * fresh mount shows the model's. A number a renamed node keeps is never
 * shown by another node: a new node at the old name gets one of its own.
 * So `sed -i` replacing a file shows a new number (`tail -F` follows it).
 */
uint64_t fs_node_st_ino_locked(struct fs_ctx *ctx, struct fs_node *node, uint64_t ino);

int fs_nodes_init(struct fs_ctx *ctx);
void fs_nodes_release(struct fs_ctx *ctx);
struct fs_node *fs_node_from_ino(struct fs_ctx *ctx, fuse_ino_t ino);
/*
 * Finishing touches (docs/COMMITS.md, "The commit model"): a leaf whose content
 * thread pid wrote has just been committed at its close is fresh for
 * FS_FRESH_MS; that thread's later changes to it (times, mode, owner,
 * type, its rename into place: rsync's order) may then join the default
 * mode's queued batch and be committed with its next file, not each alone,
 * or at most FS_LATER_MS later (another process that opens the store
 * meanwhile waits for that commit: store/lmdb/lmdb_queue.c).
 * fs_node_fresh takes ctx->lock; false without the queue (ctx->later).
 */
#define FS_FRESH_MS 1000
#define FS_LATER_MS 100		/* the queue's bound: a last touch waits at most this */
void fs_node_fresh_set(struct fs_ctx *ctx, struct fs_node *node, pid_t pid);
bool fs_node_fresh(struct fs_ctx *ctx, struct fs_node *node, pid_t pid);
bool fs_node_fresh_child(struct fs_ctx *ctx, struct fs_node *dir, const char *name, pid_t pid);
fuse_ino_t fs_node_ino(struct fs_ctx *ctx, const struct fs_node *node);
/*
 * The path of node (plus "/name" when name is not NULL) as the model takes
 * it. *out is heap (free()). -ENOENT when the node or an ancestor was
 * removed.
 */
int fs_node_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out);
/* ctx->lock held. The child of parent called name, made when missing; NULL: no memory. */
struct fs_node *fs_node_child_locked(struct fs_ctx *ctx, struct fs_node *parent,
				     const char *name, bool make);
void fs_node_ref_locked(struct fs_node *node);
/* ctx->lock held. Drops a ref; frees the node (and maybe its parents) when unused. */
void fs_node_unref_locked(struct fs_ctx *ctx, struct fs_node *node);
/* ctx->lock held. Frees a node nobody uses (a child made but not handed out). */
void fs_node_drop_unused_locked(struct fs_ctx *ctx, struct fs_node *node);
void fs_node_forget(struct fs_ctx *ctx, fuse_ino_t ino, uint64_t nlookup);
/* The name was removed: later paths through its node fail with ENOENT. */
void fs_node_detach(struct fs_ctx *ctx, struct fs_node *parent, const char *name);
/*
 * ctx->lock held. node is no longer found by its name (its number stays):
 * the next lookup of the name makes a new node, as for a name removed.
 */
void fs_node_unhash_locked(struct fs_ctx *ctx, struct fs_node *node);
/* Mirrors a successful rename in the table. */
void fs_node_move(struct fs_ctx *ctx, struct fs_node *parent, const char *name,
		  struct fs_node *newparent, const char *newname, bool exchange);
/* ctx->lock held. Ends a pending file and drops the ref it held (the caller holds another). */
void fs_node_tmp_drop_locked(struct fs_ctx *ctx, struct fs_node *node);
/* The pending files below a removed directory node are dropped. */
void fs_node_drop_pending_below(struct fs_ctx *ctx, struct fs_node *node);
/* Worker side of fs_inval_subtree and fs_inval_foreign (node: the ref the item held). */
void fs_node_revalidate_subtree(struct fs_ctx *ctx, struct fs_node *node);
void fs_node_revalidate_all(struct fs_ctx *ctx);
/* Worker side of a change feed item: the node at path (and below it, subtree). */
void fs_node_revalidate_path(struct fs_ctx *ctx, const char *path, bool subtree);

#endif
