/*
 * model/model.h - the public face of the document model: paths as shown in
 * the mount <-> tuple keys, typed leaves and their text form, JSON documents
 * flattened into keys and rendered back, dump/load/check. No FUSE here and
 * no LMDB: every operation is one store transaction (store/store.h).
 *
 * Paths are '/'-separated names as the mount shows them ("/users/42/name";
 * "" and "/" are the root). Names are escaped keys (docs/FORMAT.md, "Names");
 * in an array, names are decimal indices. A last name ending in ".json" that
 * names no real node is the JSON view of the node before the suffix.
 *
 * Every operation returns 0 or -errno and, when `err` is not NULL, writes a
 * one-line message naming the path to err->msg on failure.
 */
#ifndef KVFS_MODEL_H
#define KVFS_MODEL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Deepest JSON nesting accepted: above the 511-byte key limit (every level
 * takes at least one key byte), so the key limit is what a document meets. */
#define MODEL_DEPTH_MAX 512
/*
 * Largest leaf content: a leaf is one value in the store, and LMDB writes a
 * value's pages with one pwrite, which Linux cuts at 2 GiB - 4 KiB (LMDB
 * then fails the commit with EIO). 2 GiB - 1 MiB leaves room for the record.
 */
#define MODEL_LEAF_MAX ((size_t)0x7ff00000)

struct model;
struct model_list;

/*
 * Why model/ refused, for the callers that act on it (fs/ maps a reason
 * to what it does next instead of guessing from the errno). Set where the
 * model refuses for that reason; MODEL_REASON_NONE for every other error.
 */
enum model_reason {
	MODEL_REASON_NONE = 0,
	MODEL_REASON_NOT_AN_INDEX,	/* a name that is no index (0, 1, ...) in an array */
	MODEL_REASON_INDEX_IN_OBJECT,	/* an index element under an object */
	MODEL_REASON_TYPE_MISMATCH,	/* the text does not parse as the type asked or kept */
	MODEL_REASON_BAD_NAME,	/* a name no key is written as (escapes, UTF-8, length) */
	MODEL_REASON_BAD_JSON,	/* a view's text is no JSON document (or sequence) */
	MODEL_REASON_TABLE_RULE,	/* a table's rule refused a row (type, length, unique...) */
	MODEL_REASON_ROW_PINNED,	/* a name in a row another row references: the row goes
					 * only whole (MODEL_REMOVE_ROW_WHOLE) */
};

struct model_error {
	char msg[512];
	enum model_reason reason;	/* of the refusal msg describes */
};

enum model_open_flags {
	MODEL_OPEN_CREATE = 1 << 0,
	MODEL_OPEN_READONLY = 1 << 1,
	MODEL_OPEN_NOSYNC = 1 << 2,
	MODEL_OPEN_SYNC_ONCE = 1 << 3,	/* one sync per commit: STORE_OPEN_SYNC_ONCE */
	MODEL_OPEN_ONESHOT = 1 << 4,	/* a one-shot verb, not a mount: STORE_OPEN_ONESHOT */
};

enum model_kind {
	MODEL_KIND_LEAF = 1,
	MODEL_KIND_OBJECT,
	MODEL_KIND_ARRAY,
	MODEL_KIND_VIEW,	/* NAME.json: the JSON rendering of NAME */
	MODEL_KIND_LINK,	/* a symlink: an index's entry, pointing at its row */
};

enum model_type {
	MODEL_TYPE_STRING = 1,
	MODEL_TYPE_INTEGER,
	MODEL_TYPE_DOUBLE,
	MODEL_TYPE_BOOLEAN,
	MODEL_TYPE_NULL,
	MODEL_TYPE_BYTES,
};

/*
 * A node's attributes where they differ from the defaults (model/tree/attr_space.c):
 * only the fields flagged in `have` are stored; the mount supplies the
 * defaults (files 0644, directories 0755, owner the mounting user, times
 * from the data).
 */
enum model_attr_fields {
	MODEL_ATTR_MODE = 1 << 0,	/* permission bits (07777) */
	MODEL_ATTR_UID = 1 << 1,
	MODEL_ATTR_GID = 1 << 2,
	MODEL_ATTR_MTIME = 1 << 3,	/* containers: last entry change or utimens */
	MODEL_ATTR_CTIME = 1 << 4,	/* last chmod/chown/utimens/rename/entry change */
	MODEL_ATTR_ATIME = 1 << 5,	/* set by utimens apart from the mtime (else atime = mtime) */
};

struct model_attr {
	unsigned have;		/* MODEL_ATTR_* */
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	int64_t mtime_ns;
	int64_t ctime_ns;
	int64_t atime_ns;
};

struct model_node {
	enum model_kind kind;
	enum model_type type;	/* leaves only */
	uint64_t ino;		/* stable per path: a hash of the key */
	uint64_t size;		/* leaves and views: exact bytes that reading returns */
	int64_t mtime_ns;	/* leaves: stored time; containers: attr mtime, else store
				 * creation time; views: the node's */
	int64_t ctime_ns;	/* the later of mtime and the attr ctime */
	struct model_attr attr;	/* stored attributes (views: none) */
	bool empty;		/* containers: no children */
	uint32_t subdirs;	/* containers, with MODEL_STAT_SUBDIRS: child containers */
	bool subdirs_known;	/* a listing's containers: subdirs is exact without that flag */
	bool derived;		/* a table's @ view: computed from its rows, never cache it */
	int64_t expires_ns;	/* when it (or an ancestor) expires (CLOCK_REALTIME); 0: never */
};

#define MODEL_READER_PIDS 16

struct model_info {
	uint64_t used_bytes;	/* really in use: the high-water mark minus free pages */
	uint64_t high_water_bytes;	/* the most the store ever took; the file keeps it */
	uint64_t free_bytes;	/* free pages below the high-water mark, reused by writes */
	uint64_t file_bytes;	/* size of the data file */
	uint64_t map_size;
	uint64_t entries;
	uint64_t generation;	/* changes whenever anyone commits */
	unsigned readers;	/* read transactions open right now, by any process */
	unsigned reader_pids_len;
	int reader_pids[MODEL_READER_PIDS];	/* the first reader_pids_len of their pids */
	unsigned stale_readers_cleared;	/* dead processes' reader slots cleared at open */
	const char *backend;	/* "lmdb", "etcd" (static) */
	bool has_usage;	/* the file and reader fields above are known (a local store) */
};

/*
 * dir names the store: a directory, or a URL (etcd://HOST:PORT/PREFIX)
 * that callers pass through unchanged. *out is heap; close it with
 * model_close.
 */
int model_open(const char *dir, unsigned flags, struct model **out, struct model_error *err);
/* True when a store name is a URL, not a directory (no stat/mkdir/realpath of it). */
bool model_name_is_url(const char *name);
/*
 * True while this thread is inside the storage engine reading the store's
 * pages (store_in_engine): a SIGSEGV then means a damaged store, not a bug.
 * Async-signal-safe.
 */
bool model_in_store_engine(void);
/*
 * A flag this handle's loops watch (a CLI's signal flag): once *flag is
 * nonzero, every scan gives -EINTR at its next step and a write aborts
 * instead of committing (store_set_interrupt). NULL: none. The flag must
 * outlive m.
 */
void model_set_interrupt(struct model *m, const volatile sig_atomic_t *flag);
/* store_name_shown: a URL without its options (a password); heap, caller frees. */
char *model_name_shown(const char *name);
void model_close(struct model *m);
/* model_close; a store this handle's model_open created is removed again. */
void model_close_discard(struct model *m);
/*
 * Clears reader slots left by processes that died while reading; the
 * daemon calls it every few seconds. *cleared (may be NULL) counts them.
 */
int model_readers_check(struct model *m, unsigned *cleared);
int model_info(struct model *m, struct model_info *out);

/* The room of a store kept on servers (store_room): what statfs shows. */
struct model_room {
	uint64_t total_bytes;	/* the most the servers let it take (etcd: the quota) */
	uint64_t free_bytes;	/* what writes may still take */
	uint64_t entries;	/* keys of the data space */
	bool total_assumed;	/* the servers did not say: the backend's default */
};

/*
 * store_room: asked of the servers at most once a second. -ENOTSUP for
 * a store in local files (the caller asks its file system).
 */
int model_room(struct model *m, struct model_room *out);

/* Since when what this handle reads may miss commits (store_stale). */
struct model_stale {
	uint64_t generation;	/* reads are served from what was committed up to it */
	int64_t since_ns;	/* CLOCK_REALTIME: commits made after this may be missed */
	char why[200];		/* one line */
};

/*
 * 0 when reads know of every commit made up to a moment ago (always for a
 * store in local files); 1 when they may be stale, *out saying since when
 * and why. Asks no server.
 */
int model_stale(struct model *m, struct model_stale *out);
/*
 * Cheap (no transaction): changes whenever any process commits to the
 * store; the position model_changes_read counts in.
 */
uint64_t model_generation(struct model *m);
/*
 * Cheap: changes whenever what this handle reads changes, queued writes
 * (model_queue_start) included. For this process's caches.
 */
uint64_t model_version(struct model *m);
/*
 * Cheap: the keys this handle's reads have handed out so far (point reads
 * and keys scans returned: store_keys_read), for user.kvfs.stats.
 */
uint64_t model_keys_read(struct model *m);
/*
 * Cheap: how many times a view's stat rendered it for its size
 * (*rendered), and how many times the size rendered for the same state
 * before served instead (*kept), for user.kvfs.stats.
 */
void model_view_sizes(struct model *m, uint64_t *rendered, uint64_t *kept);
/*
 * The TTL reaps of this handle (which remove nodes, directories among
 * them, in commits of their own that a group commit may share with
 * others): *running whether one runs now, *begun how many ever began. A
 * caller that saw none running and the same count before and after a
 * commit knows that no reap landed with it.
 */
void model_reaps(struct model *m, uint64_t *begun, bool *running);
/* Whether another process committed since the last call or the open (store_changed_elsewhere). */
bool model_changed_elsewhere(struct model *m);

/* One node a commit touched (model/tree/changes.c). */
enum model_change_flags {
	MODEL_CHANGE_SUBTREE = 1 << 0,	/* the node and everything below it */
	MODEL_CHANGE_GONE = 1 << 1,	/* with SUBTREE: removed (and maybe made again) */
};
struct model_change {
	uint64_t generation;	/* of the commit */
	bool mine;		/* committed through this model handle */
	const char *path;	/* the node's mount path ("/" the root); borrowed, callback only */
	unsigned flags;
};
/* 0, or -errno to stop the read with it. */
typedef int (*model_change_fn)(void *arg, const struct model_change *c);
/*
 * Calls fn for each node touched by the commits after generation `after`,
 * in commit order; *upto gets the generation read up to (also on failure).
 * -ESTALE when the store cannot tell (its change log was trimmed past
 * `after`, a commit wrote no entry, or the store has no log): assume that
 * anything changed.
 */
int model_changes_read(struct model *m, uint64_t after, model_change_fn fn, void *arg,
		       uint64_t *upto);
/*
 * Whether another process removed the directory that holds path, or one
 * of its ancestors (rm -r, rmdir, a move away or over it, a document
 * that makes it a leaf; a document written over it changes it, removing
 * only what it does not keep), in a commit after generation `after`, so that what a mount staged
 * there since then (a created leaf not committed yet, a pending file in
 * an array) belongs to a directory that is gone, even if one was made
 * again at its path: 1 yes, 0 no (or the feed cannot tell: a change log
 * trimmed past `after`), -errno when the feed could not be read. Reads
 * nothing while nobody committed since `after`.
 */
int model_parent_gone(struct model *m, const char *path, uint64_t after);
int model_sync(struct model *m);
/* store_end_calls: from ms from now on, nothing waits on the store's servers (a daemon's exit). */
void model_end_calls(struct model *m, unsigned ms);
/* store_deadline: what this thread asks of the store from now on fails within ms of its servers' last answer. */
void model_deadline(struct model *m, unsigned ms);
/*
 * Queued commits (store_queue_start). MODEL_QUEUE_ALL (mount -o
 * commit=MS): writes return once checked and applied to a batch this
 * handle reads at once, which is committed at most ms later, at
 * model_sync and at model_close. MODEL_QUEUE_LATER (the mount's default
 * mode): only the *_later calls and MODEL_RENAME_LATER are queued so; every
 * other write returns after its commit, which takes the batch with it.
 * -ENOTSUP for a store that cannot hold a batch open (etcd).
 */
enum model_queue_mode {
	MODEL_QUEUE_ALL,
	MODEL_QUEUE_LATER,
};
int model_queue_start(struct model *m, unsigned ms, enum model_queue_mode mode);
/*
 * Compacting hot copy of the whole store into the empty directory dir;
 * -ENOTSUP with a message for a store that has none (etcd: use export).
 */
int model_backup(struct model *m, const char *dir, struct model_error *err);

/*
 * Names: whether name (len bytes, no '/') is a view, NAME.json, of the
 * node NAME; model_name_view_base gives the length of NAME (len itself
 * for a name that is no view). ".json" alone is the view of its directory.
 */
bool model_name_is_view(const char *name, size_t len);
size_t model_name_view_base(const char *name, size_t len);
/* Whether name is an array index as a file name writes it: "0", "1", ... no leading 0. */
bool model_name_is_index(const char *name, size_t len);

const char *model_type_name(enum model_type type);	/* "string", "integer", ... */
int model_type_parse(const char *name, enum model_type *out);
const char *model_kind_name(enum model_kind kind);	/* "leaf", "object", "array", "view" */

/* ---- reading ---- */
struct model_cred;	/* who a read or write is for: below, with model_may_read */
enum model_stat_flags {
	MODEL_STAT_SUBDIRS = 1 << 0,	/* also count child containers (one seek each) */
};
int model_stat(struct model *m, const char *path, unsigned flags,
	       struct model_node *out, struct model_error *err);
/*
 * model_stat for who (NULL: as model_stat): a view whose subtree who may
 * not read wholly (model_read_to_as) is not rendered to count its size,
 * which shows 0, the length of what a read gives them.
 */
int model_stat_as(struct model *m, const char *path, unsigned flags, struct model_node *out,
		  const struct model_cred *who, struct model_error *err);
/*
 * Copies up to `size` bytes of the text form of a leaf or view, starting at
 * `offset`, into dst. Returns the number of bytes copied (0 at the end).
 */
ssize_t model_read(struct model *m, const char *path, void *dst, size_t size,
		   uint64_t offset, struct model_error *err);
/* A link's target (a table index's entry, "../../ann"); *out is heap (free()). */
int model_readlink(struct model *m, const char *path, char **out, struct model_error *err);
/*
 * The whole text form written to out (then flushed): a view is rendered
 * straight into it, never held whole in memory. -EIO when out fails.
 */
int model_read_to(struct model *m, const char *path, FILE *out, struct model_error *err);
/*
 * model_read_to on behalf of who (NULL: unchecked, as model_read_to): a
 * view is rendered only when who may read every node of its subtree as a
 * read through the tree would need (read permission on each node, search
 * on each directory with children; uid 0 may anything), checked in the
 * rendering's own transaction. Else -EACCES, nothing written to out, and
 * err names the first node refused, never a value.
 */
int model_read_to_as(struct model *m, const char *path, FILE *out, const struct model_cred *who,
		     struct model_error *err);
/* The whole text form; *out is heap (free()), NUL-terminated for convenience. */
int model_read_all(struct model *m, const char *path, char **out, size_t *len,
		   struct model_error *err);
/* model_read_all on behalf of who, as model_read_to_as. */
int model_read_all_as(struct model *m, const char *path, char **out, size_t *len,
		      const struct model_cred *who, struct model_error *err);

/*
 * Directory listing, streamed: each model_list_fill call runs one read
 * transaction, resumes after the last child handed out, and calls fn per
 * child (escaped name, node) until fn returns nonzero (that child is handed
 * out again next time) or the children end. Returns 1 when stopped by fn,
 * 0 at the end, <0 on error. The list is heap; close with model_list_close.
 */
typedef int (*model_list_fn)(void *arg, const char *name, const struct model_node *node);
int model_list_open(struct model *m, const char *path, struct model_list **out,
		    struct model_error *err);
int model_list_fill(struct model_list *list, model_list_fn fn, void *arg);
/*
 * After a fill gave -EIO: what it found damaged (static: keys out of order
 * as the store's scan saw them, or a corrupt record), for a message that
 * names the directory. NULL before any such failure.
 */
const char *model_list_damage(const struct model_list *list);
/*
 * Whether the fills after it count each directory's subdirectories
 * (node.subdirs_known) where the store can without reading the directory,
 * or where reads are local, within a budget per fill: for a listing that
 * hands out attributes (readdirplus). An empty directory is known in any
 * listing.
 */
void model_list_want_subdirs(struct model_list *list, bool want);
/*
 * The next fill starts at the child named name (escaped, as listings hand
 * it out), or at the first one after where it would be. -ENOENT: no child
 * can have that name; -ENOTSUP: a table's @ directory.
 */
int model_list_start_at(struct model_list *list, const char *name);
/* Whether the store's reads are memory accesses (LMDB), not round trips (etcd). */
bool model_reads_locally(struct model *m);
void model_list_rewind(struct model_list *list);
void model_list_close(struct model_list *list);

/*
 * Who a write acts for (model/tree/perm.c): a view's document creates, changes
 * and removes nodes only where `uid` could by the single operations (write
 * permission on a changed leaf; write and search permission on the
 * directory of a node created or removed; a sticky directory's rule), and
 * the nodes it creates are theirs. uid 0 may anything. Nodes with no mode
 * or owner stored show the mount's defaults: files 0644, directories 0755,
 * owned by owner_uid:owner_gid (the mounting user).
 */
struct model_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;	/* supplementary groups; borrowed */
	size_t ngroups;
	/*
	 * May be set with groups NULL: reads the supplementary groups the
	 * first time a check needs them (a stored mode whose group is not
	 * gid), so that most checks never read them; returns them (borrowed
	 * from arg; NULL when none) and *n their count.
	 */
	const gid_t *(*groups_fn)(void *arg, size_t *n);
	void *groups_arg;
	uid_t owner_uid;
	gid_t owner_gid;
};
/*
 * Whether who may read what path names: search permission on each
 * directory above it and read permission on the node (for a path that
 * names nothing, on the last directory that exists); for a view, on every
 * node below too, as model_read_to_as. 0 or -EACCES; -errno when the
 * store cannot tell.
 */
int model_may_read(struct model *m, const char *path, const struct model_cred *who);

/* ---- writing leaves and views ---- */
enum model_write_flags {
	/*
	 * `data` is the bytes written to a file: they are exactly the bytes read
	 * back. Without it, `data` is a value (CLI put): it reads back with
	 * one trailing newline.
	 */
	MODEL_WRITE_TEXT = 1 << 0,
	MODEL_WRITE_APPEND_JSON = 1 << 1,	/* views: append each JSON value to the array */
	MODEL_WRITE_NO_CREATE = 1 << 2,		/* fail with -ENOENT if the leaf is missing */
	/*
	 * `data` is a file mapping (never heap memory), unchanged during the
	 * call: the model drops its pages (MADV_DONTNEED) once it has read
	 * past them, so a big document or leaf is never resident whole.
	 */
	MODEL_WRITE_MAPPED = 1 << 3,
};
/*
 * Commits new content for a leaf or a view in one transaction.
 * Leaf: the type rules of docs/FORMAT.md (`type` 0 = keep the existing type
 * when the text parses as it, else string, or bytes when not UTF-8).
 * View: replaces the subtree with the parsed JSON (-EINVAL on invalid JSON,
 * nothing changed), or appends with MODEL_WRITE_APPEND_JSON.
 */
int model_write(struct model *m, const char *path, const void *data, size_t len,
		enum model_type type, unsigned flags, struct model_error *err);
/*
 * model_write, with a leaf's mtime set to mtime_ns instead of now, in the same
 * transaction (a restore: a file written elsewhere, then renamed into place).
 * Views ignore mtime_ns.
 */
int model_write_at(struct model *m, const char *path, const void *data, size_t len,
		   enum model_type type, unsigned flags, int64_t mtime_ns,
		   struct model_error *err);
/*
 * model_write on behalf of who (NULL: unchecked, as model_write): a view's
 * document is refused whole (-EACCES or -EPERM, nothing changed, the
 * message naming the node) where who may not make one of its changes.
 */
int model_write_as(struct model *m, const char *path, const void *data, size_t len,
		   enum model_type type, unsigned flags, const struct model_cred *who,
		   struct model_error *err);
/* Creates an empty string leaf (views: checks the name only). -EEXIST if present. */
int model_create(struct model *m, const char *path, struct model_error *err);
/*
 * The commit of one file written through the mount (fs/file.c): its content,
 * and in the same transaction what the tool set on its open descriptor
 * before closing it. A leaf only (-EISDIR on a view's path).
 */
struct model_file_commit {
	enum model_type type;	/* 0: keep or infer (model_write's rule) */
	bool create;		/* the leaf may be new: then it gets new_attr */
	bool excl;		/* with create: it must be new (-EEXIST when the name is
				 * there: an O_EXCL create's check left to the commit) */
	struct model_attr new_attr;	/* as model_create_as's attr */
	bool mtime_set;		/* mtime_ns instead of now (utimens) */
	int64_t mtime_ns;
	struct model_attr set;	/* as model_set_attr (chmod, chown): set.have, */
	unsigned unset;		/* and the fields dropped back to the default */
	unsigned flags;		/* more model_write flags: MODEL_WRITE_MAPPED */
	int64_t deadline_ns;	/* > 0: the leaf's deadline (user.kvfs.expires set
				 * before the content came); 0: a write drops it */
};
int model_write_file(struct model *m, const char *path, const void *data, size_t len,
		     const struct model_file_commit *c, struct model_error *err);
/* Whether model_write_file would succeed now, writing nothing: 0 or its -errno and message. */
int model_write_file_check(struct model *m, const char *path, const void *data, size_t len,
			   const struct model_file_commit *c, struct model_error *err);
/*
 * Whether model_create_as(path, attr) would succeed now, without writing
 * anything: 0, or its -errno and message. *ino (may be NULL) gets the
 * st_ino the leaf will have. *as_of (may be NULL) gets, whatever the
 * outcome, a generation no older than the store's newest when the check
 * began, by any process (store_txn_as_of: an etcd mount's own generation
 * follows its watch, which may lag): what a file opened on its answer
 * gives model_parent_gone, so that a removal before the open is not
 * taken for one after it.
 */
int model_create_check(struct model *m, const char *path, const struct model_attr *attr,
		       uint64_t *ino, uint64_t *as_of, struct model_error *err);
/*
 * model_create_check for a leaf whose commit follows (model_write_file
 * with c->create): a success is what the check read, which an etcd store
 * does not confirm at the newest revision (a round trip fewer); the
 * commit writes the leaf over a name made meanwhile. For creates with
 * O_TRUNC and without O_EXCL (docs/COMMITS.md, "O_EXCL at close"): an
 * O_EXCL open's EEXIST is a promise model_create_check keeps, and an
 * append must not replace what another host has just made.
 */
int model_create_check_unconfirmed(struct model *m, const char *path,
				   const struct model_attr *attr, uint64_t *ino,
				   uint64_t *as_of, struct model_error *err);
/* Whether text (file text, as written) parses as the type named name: 0 or -EINVAL. */
int model_type_check(const char *name, const void *text, size_t len);
/* Imports a JSON document at path (one transaction); progress(arg, done, total) may be NULL. */
typedef void (*model_progress_fn)(void *arg, uint64_t done, uint64_t total);
int model_import(struct model *m, const char *path, const char *json, size_t len,
		 model_progress_fn progress, void *arg, struct model_error *err);
/* model_import of json that is a read-only file mapping (see MODEL_WRITE_MAPPED). */
int model_import_mapped(struct model *m, const char *path, const char *json, size_t len,
			model_progress_fn progress, void *arg, struct model_error *err);

/*
 * kvfs import --lines: each non-blank line of data (JSON Lines) becomes a
 * row of the table at path (named by its key fields, or, without key fields,
 * by the next integer after the highest integer key), or, when path is no
 * table, the next element of the array at path (created when missing). One
 * transaction for all of data; each row is checked at once (indexes,
 * columns, references: a reference must name a row already written).
 * On failure nothing of data is committed, fail_line names the line
 * (first_line is data's first) and err says why. Start with a zeroed state
 * and pass it to every call of one import.
 */
typedef void (*model_lines_fn)(void *arg, uint64_t bytes, uint64_t rows);
struct model_lines {
	model_lines_fn progress;	/* may be NULL: bytes and rows of this call so far */
	void *arg;
	uint64_t rows;		/* rows committed by the calls so far */
	uint64_t fail_line;
	int64_t next_key;	/* enumerable keys: the next one, 0 until known */
};
int model_import_lines(struct model *m, const char *path, const char *data, size_t len,
		       uint64_t first_line, struct model_lines *state, struct model_error *err);

/* ---- tree operations ---- */
/* Creates an empty object (or array with kind MODEL_KIND_ARRAY). */
int model_mkdir(struct model *m, const char *path, enum model_kind kind, struct model_error *err);
enum model_remove_flags {
	MODEL_REMOVE_LEAF = 1 << 0,	/* unlink: -EISDIR on a container */
	MODEL_REMOVE_DIR = 1 << 1,	/* rmdir: -ENOTDIR on a leaf, -ENOTEMPTY */
	MODEL_REMOVE_RECURSIVE = 1 << 2,	/* rm -r: any node, whole subtree */
	/*
	 * A name inside a table row that a row of another table references is
	 * not removed (-EBUSY, MODEL_REASON_ROW_PINNED): such a row may go
	 * only whole, and its removal may be refused, which must find it whole
	 * (the mount holds the names rm -r removes one by one: fs/rmhold.c).
	 */
	MODEL_REMOVE_ROW_WHOLE = 1 << 3,
};
int model_remove(struct model *m, const char *path, unsigned flags, struct model_error *err);
/*
 * The rmdir that ends an rm -r whose unlinks the caller kept stored (the
 * mount's held removals, fs/rmhold.c): removes the directory at path
 * whole, as MODEL_REMOVE_RECURSIVE | MODEL_REMOVE_ROW_WHOLE, in the one
 * transaction that finds every name directly in it among names[0..n)
 * (sorted by strcmp, as model_list_fill shows them; borrowed for the
 * call). A name that is not, one another writer added since the caller
 * saw the directory, refuses it: -ENOTEMPTY naming it, nothing changed.
 */
int model_remove_known(struct model *m, const char *path, const char *const *names, size_t n,
		       struct model_error *err);
enum model_rename_flags {
	MODEL_RENAME_NOREPLACE = 1 << 0,
	MODEL_RENAME_EXCHANGE = 1 << 1,
	MODEL_RENAME_LATER = 1 << 2,	/* may join the queued batch (MODEL_QUEUE_LATER) */
};
/* Moves a leaf or subtree atomically; onto NAME.json: parses the source as JSON. */
int model_rename(struct model *m, const char *from, const char *to, unsigned flags,
		 struct model_error *err);
/*
 * What a rename that succeeded did to the containers among the children
 * of its two directories (each one's nlink is 2 more than that), for a
 * caller that keeps those counts instead of counting them again.
 */
struct model_moved {
	bool known;	/* false: a document was written onto a view (any shape): count again */
	int from_dirs;	/* change of the source directory's child containers: 0 or -1 */
	int to_dirs;	/* of the target directory's: 0 or +1 (a directory replaced: 0) */
};
/*
 * model_rename; onto NAME.json, the document is written on behalf of who
 * (model_write_as). *moved (may be NULL) is filled when it succeeds.
 */
int model_rename_as(struct model *m, const char *from, const char *to, unsigned flags,
		    const struct model_cred *who, struct model_moved *moved,
		    struct model_error *err);
/* Leaves: the stored mtime; containers: the attr mtime. Sets ctime to now. */
int model_set_mtime(struct model *m, const char *path, int64_t mtime_ns, struct model_error *err);
/*
 * Sets the fields of set->have (mode, uid, gid, atime) on the node at path, drops
 * the fields of `unset` (back to the default), and sets its ctime to now,
 * in one transaction; -EPERM on a view (it has no node).
 */
int model_set_attr(struct model *m, const char *path, const struct model_attr *set,
		   unsigned unset, struct model_error *err);
/*
 * utimens in one transaction: the mtime when mtime_ns is not NULL (as
 * model_set_mtime), the atime field of set/unset (MODEL_ATTR_ATIME) as
 * model_set_attr, ctime now. A view accepts it and keeps nothing.
 */
int model_set_times(struct model *m, const char *path, const int64_t *mtime_ns,
		    const struct model_attr *set, unsigned unset, struct model_error *err);
/*
 * Finishing touches: model_set_attr, model_set_times and model_set_type,
 * except that with a MODEL_QUEUE_LATER queue they return once checked and
 * applied to its batch, committed with the handle's next write, at most
 * the queue's ms later, at model_sync or at model_close (the mount's
 * default mode, for a tool's touches to a file it has just written).
 */
int model_set_attr_later(struct model *m, const char *path, const struct model_attr *set,
			 unsigned unset, struct model_error *err);
int model_set_times_later(struct model *m, const char *path, const int64_t *mtime_ns,
			  const struct model_attr *set, unsigned unset, struct model_error *err);
int model_set_type_later(struct model *m, const char *path, const char *name,
			 struct model_error *err);
/*
 * model_create / model_mkdir with the new node's attributes (attr->have may
 * be 0: all default), in the same transaction. attr may be NULL.
 */
int model_create_as(struct model *m, const char *path, const struct model_attr *attr,
		    struct model_error *err);
int model_mkdir_as(struct model *m, const char *path, enum model_kind kind,
		   const struct model_attr *attr, struct model_error *err);
/* Type names: leaves as model_type_name, containers "object"/"array". */
int model_get_type(struct model *m, const char *path, char *buf, size_t cap, struct model_error *err);
/*
 * model_get_type, and whether the type is the one a new node with the same
 * content gets (*inferred: an object; a string without NUL; bytes that are
 * not UTF-8 text), so that model_reset_type would change nothing. A leaf
 * over 16 MiB is not read for it: *inferred false.
 */
int model_get_type_inferred(struct model *m, const char *path, char *buf, size_t cap,
			    bool *inferred, struct model_error *err);
/* *out: a leaf (not an empty container) lies at or under path. */
int model_has_leaf(struct model *m, const char *path, bool *out, struct model_error *err);
/* Converts a leaf's type (the text must parse) or a container's kind (array <-> object). */
int model_set_type(struct model *m, const char *path, const char *name, struct model_error *err);
/*
 * Gives a node back the type a new one would get: a directory becomes an
 * object (an array converts: its names 0..n-1 stay), a leaf's text is
 * inferred as a new file's (string, or bytes when it is not UTF-8).
 */
int model_reset_type(struct model *m, const char *path, struct model_error *err);

/* ---- JSON, dump, load, check ---- */
enum model_json_flags {
	MODEL_JSON_COMPACT = 1 << 0,	/* default is pretty, two-space indent, final newline */
};
/* Renders the subtree or leaf at path as JSON; *out is heap (free()). */
int model_export(struct model *m, const char *path, unsigned flags, char **out, size_t *len,
		 struct model_error *err);
int model_export_file(struct model *m, const char *path, unsigned flags, FILE *out,
		      struct model_error *err);
/* Lossless, versioned, line-oriented backup of the whole store. */
int model_dump(struct model *m, FILE *out, struct model_error *err);
/* Loads a dump into an empty store (-EEXIST when not empty). */
int model_load(struct model *m, FILE *in, struct model_error *err);
/* Verifies every key and value; prints one line per problem; *problems counts them. */
int model_check(struct model *m, FILE *report, uint64_t *problems, struct model_error *err);
/*
 * True when err is a unique index's refusal: an EEXIST that, unlike the
 * one mkdir -p sees, a user should be told about.
 */
bool model_error_is_unique_clash(const struct model_error *err);
/* Rebuilds every index from the rows (refused like a write when a row breaks a rule). */
int model_check_repair(struct model *m, struct model_error *err);

/* ---- time to live (model/ttl/ttl_space.c; docs/FORMAT.md, "TTL") ---- */
/*
 * A node (leaf or subtree) with a time to live disappears from every read
 * once it passes and is removed by the reaper (model_ttl_reap, and before
 * every write). Seconds are 1 .. 100 years; -EINVAL otherwise.
 */
int model_ttl_set(struct model *m, const char *path, int64_t seconds, struct model_error *err);
int model_ttl_clear(struct model *m, const char *path, struct model_error *err);
/* Seconds left, rounded up; -ENODATA when the node has no TTL of its own. */
int model_ttl_get(struct model *m, const char *path, int64_t *seconds, struct model_error *err);
/*
 * The node's own deadline as an absolute time (CLOCK_REALTIME nanoseconds),
 * as user.kvfs.expires carries it through file tools: set (any time after
 * the epoch; one already past expires the node at once) and read
 * (-ENODATA when it has none).
 */
int model_ttl_set_at(struct model *m, const char *path, int64_t deadline_ns,
		     struct model_error *err);
int model_ttl_get_at(struct model *m, const char *path, int64_t *deadline_ns,
		     struct model_error *err);
/* now_ns + seconds, or -EINVAL when seconds is out of range. */
int model_ttl_deadline(int64_t seconds, int64_t now_ns, int64_t *deadline_ns);
/*
 * Removes expired nodes, up to `batches` transactions of a bounded number
 * each, through the rm -r path (indexes stay exact); *reaped (may be NULL)
 * counts them. The daemon calls it in the background.
 */
int model_ttl_reap(struct model *m, unsigned batches, uint64_t *reaped, struct model_error *err);
/*
 * model_write that also gives the written node a time to live (seconds > 0)
 * in the same transaction; model_write (and any overwrite) clears it.
 */
int model_write_ttl(struct model *m, const char *path, const void *data, size_t len,
		    enum model_type type, unsigned flags, int64_t ttl_seconds,
		    struct model_error *err);
/*
 * model_import with a time to live for the imported node (0: none);
 * flags: 0, or MODEL_WRITE_MAPPED for json that is a read-only file mapping.
 */
int model_import_ttl(struct model *m, const char *path, const char *json, size_t len,
		     int64_t ttl_seconds, unsigned flags, model_progress_fn progress, void *arg,
		     struct model_error *err);

/* ---- tables and indexes (docs/FORMAT.md, "Tables and indexes") ---- */
/* Declares the directory at path a table; key_fields "F1,F2" or NULL. */
int model_table_create(struct model *m, const char *path, int key_depth, const char *key_fields,
		       struct model_error *err);
/* Declares or redeclares a column; max_length 0 and references NULL: none. */
int model_table_column(struct model *m, const char *path, const char *field, const char *type,
		       bool required, int64_t max_length, const char *references,
		       struct model_error *err);
/*
 * Declares the reference of the table at path over fields "F1,F2..." (in
 * order, the key levels of a row of the table at `table`, whose key depth
 * is their number), or, table NULL, forgets it. A row that leaves one of
 * the fields out (or holds null) references nothing.
 */
int model_table_reference(struct model *m, const char *path, const char *fields,
			  const char *table, struct model_error *err);
/* model_table_create whose new rows expire after ttl_seconds (0: never; docs/FORMAT.md, "TTL"). */
int model_table_create_ttl(struct model *m, const char *path, int key_depth,
			   const char *key_fields, int64_t ttl_seconds, struct model_error *err);
/* The schema as pretty JSON; *out is heap (free()). */
int model_table_show(struct model *m, const char *path, char **out, size_t *len,
		     struct model_error *err);
/*
 * Declares or alters the tables at paths[0..n-1] from the JSON of their
 * schemas (jsons[i], lens[i] bytes: what table show prints, as a write of
 * PATH/@schema.json), all in one transaction, so that tables referencing
 * each other are declared together; every row is checked at its commit.
 * A text that is no schema: MODEL_REASON_BAD_JSON; a row that breaks a
 * rule, or a reference to a directory that is not (yet) a table:
 * MODEL_REASON_TABLE_RULE (a restore may bring what is missing later).
 */
int model_table_declare(struct model *m, size_t n, const char *const *paths,
			const char *const *jsons, const size_t *lens, struct model_error *err);
/* Forgets the schema and its indexes; the rows stay as plain documents. */
int model_table_drop(struct model *m, const char *path, struct model_error *err);
int model_index_create(struct model *m, const char *path, const char *name, const char *fields,
		       bool unique, struct model_error *err);
int model_index_drop(struct model *m, const char *path, const char *name,
		     struct model_error *err);
/* One line per index: "NAME FIELD[,FIELD...][ unique]". */
int model_index_list(struct model *m, const char *path, FILE *out, struct model_error *err);
/* A query: rows whose values equal value (NULL: any), within [from, to] (NULL: open). */
struct model_find {
	const char *value;
	const char *from;
	const char *to;
	bool json;		/* print each row as one JSON line, not its key */
};
int model_find(struct model *m, const char *path, const char *name,
	       const struct model_find *q, FILE *out, struct model_error *err);

#endif
