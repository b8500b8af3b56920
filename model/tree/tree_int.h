/*
 * model/tree/tree_int.h - private interfaces of the tree half of model/: the
 * model handle, names <-> key elements, path resolution, node lookup,
 * child iteration, and the document flattener/renderer shared by the
 * node, document, rename, dump and check files. Nothing outside model/
 * includes it.
 */
#ifndef KVFS_MODEL_TREE_INT_H
#define KVFS_MODEL_TREE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/model_int.h"
#include "store/store.h"

struct model {
	struct store *st;
	int64_t created_ns;
	bool readonly;
	/*
	 * The TTL reaper's last look at the expiry space (model/ttl/ttl_space.c,
	 * reap_is_due): while the store's version is the one it was taken at,
	 * nothing is due before the earliest deadline it saw, so the watcher's
	 * tick needs no read (on etcd, a round trip every tick).
	 */
	pthread_mutex_t reap_lock;
	uint64_t reap_version;	/* store_version at that look; 0: none yet */
	int64_t reap_next_ns;	/* the earliest deadline then; 0: none */
	/* reaps that remove nodes (model_reaps): running now, begun ever */
	atomic_uint reaps_running;
	atomic_uint_fast64_t reaps_begun;
	struct view_sizes *views;	/* view_size.c: views' sizes by state; its own lock */
};

/* Longest escaped name a key element can produce, with its NUL. */
#define TREE_NAME_MAX (1 + 3 * STORE_KEY_MAX + 1)

/* ---- errors ---- */
/* Writes "fmt..." into err (may be NULL) and returns ret. */
int tree_fail(struct model_error *err, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* tree_fail that also records why (err->reason); tree_fail records MODEL_REASON_NONE. */
int tree_fail_reason(struct model_error *err, int ret, enum model_reason reason,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int64_t tree_now_ns(void);
/*
 * Empties err (may be NULL). Every store_write callback calls it first: an
 * attempt aborted to grow the map must not leave its message to the next.
 */
void tree_clear(struct model_error *err);
/*
 * Runs fn(txn, arg) in a store write transaction of the operation on
 * `what` (its path, or a verb such as "load", for messages): empties err,
 * refuses a read-only store with -EROFS, and when fn failed without a
 * message writes "what: strerror". fn must call tree_clear first. Not
 * always one commit: when a TTL deadline has passed, the due nodes are
 * reaped first, in commits of their own (ttl_reap_due: a few batches at
 * most; their failure is not the write's), so that the write sees the
 * tree reads show; then fn runs in a transaction of its own, committed
 * when it returns 0. tree_write_plain skips the reap.
 */
int tree_write(struct model *m, const char *what, store_write_fn fn, void *arg,
	       struct model_error *err);
/*
 * tree_write without the reap, then an abort: checks what the commit
 * would refuse, writes nothing. shape_only: table rows are judged by
 * their shape only (an object, no '@' key), not their fields (a create
 * whose content comes later).
 */
int tree_write_dry(struct model *m, const char *what, store_write_fn fn, void *arg,
		   bool shape_only, struct model_error *err);
/* tree_write by store_write_later: may join the queued batch (model_*_later). */
int tree_write_later(struct model *m, const char *what, store_write_fn fn, void *arg,
		     struct model_error *err);
/* tree_write without first removing expired nodes (the reaper itself). */
int tree_write_plain(struct model *m, const char *what, store_write_fn fn, void *arg,
		     struct model_error *err);

/*
 * Upgrades a store older than STORE_FORMAT_VERSION in one transaction when
 * m is writable (upgrade.c); does nothing when it is current or read-only
 * (then records are read in their own format). Messages name dir.
 */
int tree_upgrade(struct model *m, const char *dir, struct model_error *err);

/* ---- names ---- */
/* Longest escaped name a new key may have: one file name (NAME_MAX). */
#define TREE_FILE_NAME_MAX 255

/* Escapes one key string into out (TREE_NAME_MAX bytes); returns its length. */
size_t tree_name_escape(const void *key, size_t len, char *out);
/* The length tree_name_escape would give, without writing it. */
size_t tree_name_escaped_len(const void *key, size_t len);
/* True when the element at key[start..] is a string whose escaped name is too long. */
bool tree_name_too_long(const uint8_t *key, size_t start, size_t len);
/* Unescapes a name into dst (cap bytes): its length, or -1 when invalid. */
ssize_t tree_name_unescape(const char *name, size_t len, char *dst, size_t cap);
/* True when name is a canonical non-negative decimal ("0", "17"). */
bool tree_name_index(const char *name, size_t len, int64_t *out);
/* Why a name refused for a create is invalid, for the message (into buf). */
void tree_name_problem(const char *name, size_t len, char *buf, size_t cap);
/* Appends the mount path of key (every element escaped) to sb. */
void tree_key_to_path(const uint8_t *key, size_t len, struct strbuf *sb);

/* ---- paths ---- */
enum tree_resolve_flags {
	TREE_FOR_CREATE = 1 << 0,	/* bad names give -EINVAL, not -ENOENT */
};

/* A path resolved to a key. */
struct tree_path {
	const char *text;	/* the path as given, for messages */
	uint8_t key[STORE_KEY_MAX];
	size_t len;
	size_t parent_len;	/* key length of the parent (== len at the root) */
	int depth;		/* elements in key */
	bool is_view;		/* NAME.json: key is NAME's */
};

int tree_resolve(struct store_txn *txn, const char *path, unsigned flags,
		 struct tree_path *out, struct model_error *err);

/* ---- nodes ---- */
struct tree_node {
	bool exists;
	enum model_kind kind;	/* LEAF, OBJECT or ARRAY */
	bool marker;		/* an empty container kept as a marker record */
	bool empty;
	struct leaf leaf;	/* kind LEAF or marker: borrowed from txn */
};

/* What is at key[0..len]: one seek. -EIO on a corrupt record. */
int tree_lookup(struct store_txn *txn, const uint8_t *key, size_t len, struct tree_node *out);
/* The node at a resolved path, with -ENOENT/-ENOTDIR and a message when missing. */
int tree_get(struct store_txn *txn, const struct tree_path *p, struct tree_node *out,
	     struct model_error *err);
/*
 * For a render of key[0..len] that failed with -EIO: names the first record
 * under it that does not verify in err ("what: corrupt record in the store
 * at PATH ...") and returns -EIO. Scans the subtree: error paths only.
 */
int tree_fail_corrupt(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		      struct model_error *err);
/* tree_resolve (no flags) then tree_get: the existing node at path, with message. */
int tree_find(struct store_txn *txn, const char *path, struct tree_path *p,
	      struct tree_node *out, struct model_error *err);
/*
 * tree_clear, then tree_find for a change to the node's own attributes (its
 * mode and owner, its TTL): a view has none of its own, so it is refused
 * with -EPERM and "PATH: a view has no WHAT of its own".
 */
int tree_find_own(struct store_txn *txn, const char *path, const char *what,
		  struct tree_path *p, struct tree_node *n, struct model_error *err);
/* -ENOTDIR when an ancestor of p is a leaf, else -ENOENT; with message. */
int tree_missing(struct store_txn *txn, const struct tree_path *p, struct model_error *err);
/*
 * Prepares the parent of p to receive p as a new child: the parent must be
 * a container whose kind matches p's last element; an empty container's
 * marker is deleted. Nothing is written for the root.
 */
/* The checks of tree_attach without writing; *parent is the parent node. */
int tree_parent_check(struct store_txn *txn, const struct tree_path *p, struct tree_node *parent,
		      struct model_error *err);
int tree_attach(struct store_txn *txn, const struct tree_path *p, struct model_error *err);
/* Deletes key[0..len] and its whole subtree. */
int tree_delete(struct store_txn *txn, const uint8_t *key, size_t len);
/*
 * tree_delete of a node that goes away (rm, rmdir, a rename's source and
 * the target it replaces), told to the change feed as removed even when
 * it had no children (store_note_removed): a mount's files pending in it
 * must not land in a node made again at its path (model_parent_gone).
 */
int tree_remove(struct store_txn *txn, const uint8_t *key, size_t len);
/*
 * Whether nothing lies under key[0..len] in space (its node's own key
 * aside), with one seek: a delete of a subtree that is empty (a new node's
 * stale records, mostly) then skips its ten prefix deletes, each a range
 * read on etcd. False for the root, and when the read fails (delete anyway).
 */
bool tree_subtree_empty(struct store_txn *txn, enum store_space space, const uint8_t *key,
			size_t len);
/* After removing a child of the container at key[0..parent_len] that ended
 * with element type `child`, writes a marker when the container is now empty. */
int tree_keep_parent(struct store_txn *txn, const uint8_t *key, size_t parent_len);
int tree_put_marker(struct store_txn *txn, const uint8_t *key, size_t len, enum model_kind kind);
/* stream.c: a big string, bytes or digits payload goes straight into the store's page. */
int tree_put_leaf(struct store_txn *txn, const uint8_t *key, size_t len, const struct leaf *leaf);
uint64_t tree_ino(const uint8_t *key, size_t len, bool view);
void tree_node_fill(struct model *m, const uint8_t *key, size_t len,
		    const struct tree_node *n, struct model_node *out);

/* ---- children ---- */
struct tree_child {
	const uint8_t *key;	/* first key under the child (borrowed) */
	size_t key_len;
	size_t end;		/* key[0..end] is the child's own key */
	struct store_val val;
	struct tuple_elem elem;	/* the child's element */
	unsigned format;	/* record format of the scan's snapshot */
};

/*
 * Children of the container at prefix[0..len], one seek each. Open a scan
 * with prefix, then call tree_child_next: 1 with c filled, 0 at the end.
 * after (may be NULL) resumes after that child key of length after_len.
 */
int tree_child_first(struct store_scan *scan, const uint8_t *prefix, size_t len,
		     const uint8_t *after, size_t after_len, struct tree_child *c);
int tree_child_next(struct store_scan *scan, size_t len, struct tree_child *c);
/* As tree_child_first, from the first child whose keys reach from[0..from_len) (a key under prefix). */
int tree_child_at(struct store_scan *scan, size_t len, const uint8_t *from, size_t from_len,
		  struct tree_child *c);
/* The node a child stands for (from its first key). */
int tree_child_node(const struct tree_child *c, struct tree_node *out);
/* The child's name as a listing shows it, into out (TREE_NAME_MAX bytes). */
void tree_child_name(const struct tree_child *c, char *out);
/*
 * 0 when every child of the container at p has its name (as a listing
 * shows it) among names[0..n), sorted by strcmp; else -ENOTEMPTY, err
 * naming the first other child of path; <0 on a store error.
 */
int tree_children_among(struct store_txn *txn, const struct tree_path *p, const char *path,
			const char *const *names, size_t n, struct model_error *err);
/*
 * Whether the child is a container, from its first key and its record's tag
 * alone, unverified: for counting a directory's subdirectories (its nlink),
 * where the checksum of every leaf would cost more than the count.
 */
bool tree_child_is_container(const struct tree_child *c);

/* ---- node attributes (attr_space.c): key = the node's data key, 0x00 for the root ---- */
/* 0 with out->have 0 when the node has no record; -EIO when it does not verify. */
int attr_get(struct store_txn *txn, const uint8_t *key, size_t len, struct model_attr *out);
/* Verifies and decodes a record: -EBADMSG checksum, -EINVAL layout. */
int attr_decode(const uint8_t *key, size_t key_len, const void *val, size_t len,
		struct model_attr *out);
/* Writes a's fields (no fields: deletes the record). */
int attr_put(struct store_txn *txn, const uint8_t *key, size_t len, const struct model_attr *a);
/* Sets the fields of set->have, keeping the others. */
int attr_merge(struct store_txn *txn, const uint8_t *key, size_t len, const struct model_attr *set);
/* A directory got, lost or renamed an entry: its mtime and ctime become now. */
int attr_touch_dir(struct store_txn *txn, const uint8_t *key, size_t len, int64_t now_ns);
int attr_delete_subtree(struct store_txn *txn, const uint8_t *key, size_t len);
/* Moves the records of the subtree at src to dst (dst's own must be deleted first). */
int attr_move_subtree(struct store_txn *txn, const uint8_t *src, size_t src_len,
		      const uint8_t *dst, size_t dst_len);
/* Deletes the records under key[0..len] whose node no longer exists. */
int attr_prune(struct store_txn *txn, const uint8_t *key, size_t len);
/*
 * Maps a node key of a subtree (the subtree's own included) to the key the
 * node gets: 1 with the new key in out (room for STORE_KEY_MAX bytes) and
 * its length in *out_len, 0 when the node keeps its key, or -errno.
 */
typedef int (*attr_rekey_fn)(void *arg, const uint8_t *key, size_t len, uint8_t *out,
			     size_t *out_len);
/*
 * Moves the records and deadlines (ttl_remap_subtree) of the nodes under
 * key[0..len] to the keys fn gives them, in one scan of each space: a
 * container's kind change ("0" <-> 0). fn's new keys must be keys it
 * leaves, it leaves the node's own, and it answers a key alike each time.
 */
int attr_rekey_subtree(struct store_txn *txn, const uint8_t *key, size_t len, attr_rekey_fn fn,
		       void *arg);
/*
 * Calls fn with each record of the subtree at key[0..len] (the node's own
 * included), in key order: the node's key (the root's is empty; borrowed
 * from the scan, valid until fn returns) and its decoded fields. Stops at
 * fn's first nonzero return and returns it; 0 at the end, -EIO on a record
 * that does not verify.
 */
typedef int (*attr_each_fn)(void *arg, const uint8_t *key, size_t len,
			    const struct model_attr *a);
int attr_each(struct store_txn *txn, const uint8_t *key, size_t len, attr_each_fn fn,
	      void *arg);
/* Puts a into out: container mtime, ctime = max(mtime, attr ctime). */
void attr_apply(const struct model_attr *a, struct model_node *out);

/* ---- permissions (perm.c): the checks a view's document makes per node ---- */
enum perm_want {
	PERM_X = 1,
	PERM_W = 2,
	PERM_R = 4,
};
/* A node's mode and owner as the mount shows them: stored, or the defaults. */
struct perm_node {
	uint32_t mode;		/* 07777 */
	uid_t uid;
	gid_t gid;
};
/* The node at key[0..len] as shown (dir: a container's defaults). -EIO: corrupt record. */
int perm_get(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
	     size_t len, bool dir, struct perm_node *out);
/* Whether who has every permission of want (PERM_*) on n; uid 0 has all. */
bool perm_allows(const struct model_cred *who, const struct perm_node *n, unsigned want);
/*
 * Whether who may remove (or replace) the node at key[0..len] from the
 * directory d: write and search permission on d, its sticky rule (who owns
 * d or the node), and for a container with children the same for each
 * node below it, as rm -r would need. 0, or -EACCES/-EPERM with a message
 * naming the node refused, in the operation on `what`.
 */
int perm_may_remove(struct store_txn *txn, const struct model_cred *who,
		    const struct perm_node *d, const uint8_t *key, size_t len, bool dir,
		    const char *what, struct model_error *err);
/* 0, or -EACCES with a message: who may not create the node at key[0..len] in d. */
int perm_may_create(const struct model_cred *who, const struct perm_node *d,
		    const uint8_t *key, size_t len, const char *what, struct model_error *err);
/* 0, or -EACCES with a message: who may not change the leaf at key[0..len]. */
int perm_may_change(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
		    size_t len, const char *what, struct model_error *err);
/*
 * Whether who (NULL: anyone) may read the whole subtree at key[0..len], as
 * reading each node through the tree would need: read permission on every
 * leaf and container, search permission on every container with children
 * (the directories above it are the kernel's to check). Only a stored mode
 * can refuse, so the attr space is scanned, not the data: one seek where
 * no mode was set, nothing for uid 0. 0, or -EACCES with a message naming
 * the first node refused (never a value), in the operation on `what`.
 */
int perm_may_read_tree(struct store_txn *txn, const struct model_cred *who, const uint8_t *key,
		       size_t len, const char *what, struct model_error *err);
/* The owner fields a node who creates gets (have 0 when they are the defaults). */
void perm_new_owner(const struct model_cred *who, struct model_attr *out);

/* ---- documents (doc.c) ---- */
enum doc_flags {
	DOC_APPEND = 1 << 0,	/* append each value as the next array element */
	DOC_MAPPED = 1 << 1,	/* json is a file mapping: give its pages back as parsed */
};
/*
 * Replaces (or appends to) the node at p with parsed JSON, inside txn.
 * who (may be NULL: unchecked) is whom the changes are made for: each node
 * created, changed or removed passes perm.c's checks, or nothing is written.
 */
int doc_write(struct store_txn *txn, const struct tree_path *p, const char *json, size_t len,
	      unsigned flags, const struct model_cred *who, model_progress_fn progress,
	      void *arg, struct model_error *err);
/* ---- view sizes (view_size.c) ---- */
/* Heap; NULL when out of memory. view_sizes_free takes NULL. */
struct view_sizes *view_sizes_new(void);
void view_sizes_free(struct view_sizes *vs);
/*
 * The size of the view of key[0..len): the length of its rendering in
 * txn, kept for the next transaction that reads the same state
 * (store_txn_snapshot) and hides nothing under it. Not who may read it:
 * the caller checks that.
 */
int view_size(struct model *m, struct store_txn *txn, const uint8_t *key, size_t len,
	      uint64_t *size);
/* Renders the node at key[0..len] into w. -ENOENT when nothing is there. */
int doc_render(struct store_txn *txn, const uint8_t *key, size_t len, struct json_writer *w);
/*
 * Renders into out (MODEL_JSON_* flags), finished. With flush_to set, out
 * is only the writer's buffer: the text goes on to flush_to as it grows,
 * never held whole; -EIO when flush_to refuses a write.
 */
int doc_render_buf(struct store_txn *txn, const uint8_t *key, size_t len, unsigned flags,
		   struct strbuf *out, FILE *flush_to);

/* ---- big inputs (stream.c) ---- */
/*
 * The part of an input already consumed: with `mapped` (the input is a
 * read-only or shared file mapping, never heap memory) its whole pages are
 * dropped from the process (madvise MADV_DONTNEED; the file keeps them).
 */
struct stream_drop {
	const void *base;
	size_t done;		/* bytes from base whose pages are dropped */
	bool mapped;
};
void stream_drop_init(struct stream_drop *d, const void *base, bool mapped);
void stream_drop_upto(struct stream_drop *d, size_t upto);
/* A json_parse progress hook that drops what was parsed, then calls fn (may be NULL). */
struct stream_progress {
	struct stream_drop drop;
	model_progress_fn fn;
	void *arg;
};
void stream_progress(void *arg, uint64_t done, uint64_t total);
/* tree_put_leaf, dropping the payload's pages of src as they are copied. */
int tree_put_leaf_from(struct store_txn *txn, const uint8_t *key, size_t len,
		       const struct leaf *leaf, struct stream_drop *src);

#endif