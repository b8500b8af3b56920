/*
 * model/tree/node.c - the model handle (open/close, info, sync, backup), type
 * names, and the per-node writes: leaf writes, create, mkdir, remove, times,
 * modes and owners. Each operation is one store transaction; the reads are
 * model/tree/node_read.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* ---- handle ---- */

int model_open(const char *dir, unsigned flags, struct model **out, struct model_error *err)
{
	struct model *m;
	char why[sizeof(err->msg)] = "";	/* a reason may name the directory twice */
	unsigned sflags = 0;
	int ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return tree_fail(err, -ENOMEM, "%s: out of memory", dir);
	pthread_mutex_init(&m->reap_lock, NULL);
	m->views = view_sizes_new();
	if (!m->views) {
		ret = tree_fail(err, -ENOMEM, "%s: out of memory", dir);
		goto out_free;
	}
	sflags |= (flags & MODEL_OPEN_CREATE) ? STORE_OPEN_CREATE : 0;
	sflags |= (flags & MODEL_OPEN_READONLY) ? STORE_OPEN_READONLY : 0;
	sflags |= (flags & MODEL_OPEN_NOSYNC) ? STORE_OPEN_NOSYNC : 0;
	sflags |= (flags & MODEL_OPEN_SYNC_ONCE) ? STORE_OPEN_SYNC_ONCE : 0;
	sflags |= (flags & MODEL_OPEN_ONESHOT) ? STORE_OPEN_ONESHOT : 0;
	ret = store_open(dir, sflags, &m->st, why, sizeof(why));
	if (ret < 0) {
		/* The store's reasons mostly name the directory already. */
		if (strncmp(why, dir, strlen(dir)) == 0)
			tree_fail(err, ret, "%s", why);
		else
			tree_fail(err, ret, "%s: %s", dir, why[0] ? why : strerror(-ret));
		goto out_free;
	}
	m->created_ns = store_created_ns(m->st);	/* store_info would count every key (etcd) */
	store_set_container_test(m->st, leaf_record_is_marker);	/* before any write */
	m->readonly = flags & MODEL_OPEN_READONLY;
	ret = tree_upgrade(m, dir, err);
	if (ret < 0)
		goto out_close;
	*out = m;
	return 0;

out_close:
	store_close(m->st);
out_free:
	pthread_mutex_destroy(&m->reap_lock);
	view_sizes_free(m->views);
	free(m);
	return ret;
}

void model_close(struct model *m)
{
	if (!m)
		return;
	store_close(m->st);
	pthread_mutex_destroy(&m->reap_lock);
	view_sizes_free(m->views);
	free(m);
}

_Static_assert(MODEL_READER_PIDS == STORE_READER_PIDS, "reader pid lists differ");

void model_close_discard(struct model *m)
{
	if (!m)
		return;
	store_close_discard(m->st);
	pthread_mutex_destroy(&m->reap_lock);
	view_sizes_free(m->views);
	free(m);
}

int model_readers_check(struct model *m, unsigned *cleared)
{
	return store_readers_check(m->st, cleared);
}

bool model_name_is_url(const char *name)
{
	return store_name_is_url(name);
}

bool model_in_store_engine(void)
{
	return store_in_engine();
}

void model_set_interrupt(struct model *m, const volatile sig_atomic_t *flag)
{
	store_set_interrupt(m->st, flag);
}

char *model_name_shown(const char *name)
{
	return store_name_shown(name);
}

int model_room(struct model *m, struct model_room *out)
{
	struct store_room sp;
	int ret = store_room(m->st, &sp);

	memset(out, 0, sizeof(*out));
	if (ret < 0)
		return ret;
	out->total_bytes = sp.total_bytes;
	out->free_bytes = sp.free_bytes;
	out->entries = sp.entries;
	out->total_assumed = sp.total_assumed;
	return 0;
}

int model_stale(struct model *m, struct model_stale *out)
{
	struct store_stale s;
	int ret = store_stale(m->st, &s);

	memset(out, 0, sizeof(*out));
	if (ret <= 0)
		return ret;
	out->generation = s.position;
	out->since_ns = s.since_ns;
	snprintf(out->why, sizeof(out->why), "%s", s.why);
	return 1;
}

int model_info(struct model *m, struct model_info *out)
{
	struct store_usage usage = { 0 };
	bool has_usage = store_can(m->st, STORE_CAN_USAGE);
	struct store_info info;
	int ret = store_info(m->st, &info);

	if (ret == 0 && has_usage)
		ret = store_usage(m->st, &usage);
	if (ret < 0)
		return ret;
	memset(out, 0, sizeof(*out));
	out->used_bytes = usage.in_use_bytes;
	out->high_water_bytes = usage.high_water_bytes;
	out->free_bytes = usage.free_bytes;
	out->file_bytes = usage.file_bytes;
	out->map_size = info.map_size;
	out->entries = info.entries;
	out->generation = info.last_txn_id;
	out->readers = usage.readers;
	out->reader_pids_len = usage.reader_pids_len;
	memcpy(out->reader_pids, usage.reader_pids, sizeof(out->reader_pids));
	out->stale_readers_cleared = usage.stale_cleared;
	out->backend = store_backend(m->st);
	out->has_usage = has_usage;
	return 0;
}

uint64_t model_generation(struct model *m)
{
	return store_position(m->st);
}

bool model_reads_locally(struct model *m)
{
	return store_can(m->st, STORE_CAN_READ_LOCALLY);
}

bool model_changed_elsewhere(struct model *m)
{
	return store_changed_elsewhere(m->st);
}

int model_sync(struct model *m)
{
	return store_sync(m->st);
}

void model_end_calls(struct model *m, unsigned ms)
{
	store_end_calls(m->st, ms);
}

void model_deadline(struct model *m, unsigned ms)
{
	store_deadline(m->st, ms);
}

int model_queue_start(struct model *m, unsigned ms, enum model_queue_mode mode)
{
	if (m->readonly)
		return -EROFS;
	return store_queue_start(m->st, ms, mode == MODEL_QUEUE_LATER ? STORE_QUEUE_LATER :
				 STORE_QUEUE_ALL);
}

uint64_t model_version(struct model *m)
{
	return store_version(m->st);
}

uint64_t model_keys_read(struct model *m)
{
	return store_keys_read(m->st);
}

int model_backup(struct model *m, const char *dir, struct model_error *err)
{
	int ret;

	if (!store_can(m->st, STORE_CAN_HOT_COPY))
		return tree_fail(err, -ENOTSUP, "%s: an %s store has no hot copy into a directory; "
				 "copy it with `kvfs export` instead", store_name(m->st),
				 store_backend(m->st));
	ret = store_copy(m->st, dir);

	if (ret < 0)
		return tree_fail(err, ret, "%s: backup failed: %s", dir, strerror(-ret));
	return 0;
}

/* ---- writing ---- */

/* The arguments of one write operation, for its store_write callback. */
struct node_op {
	struct model *m;
	const char *path;
	const void *data;
	size_t len;
	enum model_type type;
	unsigned flags;
	enum model_kind kind;
	int64_t mtime_ns;
	int64_t ttl_deadline_ns;	/* write: the written node's deadline; 0: none */
	const struct model_attr *attr;	/* create, mkdir: the new node's; set_attr */
	const struct model_file_commit *fc;	/* model_write_file */
	uint64_t ino;		/* model_create_check's answer */
	bool unconfirmed;	/* model_create_check_unconfirmed: the answer stands as read */
	uint64_t *as_of;	/* model_create_check's (may be NULL) */
	bool mtime_set;		/* model_set_times: mtime_ns applies */
	const struct model_cred *who;	/* a view's write: on whose behalf (NULL: unchecked) */
	const char *const *known;	/* model_remove_known: the names it may take */
	size_t nknown;
	struct model_error *err;
};

/* op->flags: model_write_at's mtime_ns applies (beyond enum model_write_flags). */
#define NODE_WRITE_AT (1u << 31)

/*
 * The leaf op's text makes at p: of the type asked; else, in a table's
 * column, of the column's type when the text parses as it (`echo 41 >`
 * into an integer column stores 41); else as text is typed anywhere.
 */
static int leaf_for_write(struct store_txn *txn, const struct node_op *op,
			  const struct tree_path *p, const struct tree_node *n, struct leaf *out)
{
	int64_t mtime_ns = (op->flags & NODE_WRITE_AT) ? op->mtime_ns : tree_now_ns();
	bool text = op->flags & MODEL_WRITE_TEXT;
	const struct leaf *old = n->exists ? &n->leaf : NULL;
	enum model_type types[2];
	int count = op->type ? 0 : table_field_types(txn, p->key, p->len, types);

	if (count < 0)
		return count;
	for (int i = 0; i < count; i++)
		if (leaf_from_text(op->data, op->len, text, old, types[i], mtime_ns, out) == 0)
			return 0;
	return leaf_from_text(op->data, op->len, text, old, op->type, mtime_ns, out);
}

static int write_leaf(struct store_txn *txn, struct node_op *op, struct tree_path *p)
{
	struct stream_drop src;
	struct tree_node n;
	struct leaf leaf;
	int ret = tree_lookup(txn, p->key, p->len, &n);

	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	if (n.exists && n.kind != MODEL_KIND_LEAF)
		return tree_fail(op->err, -EISDIR, "%s: is a directory", op->path);
	if (!n.exists && (op->flags & MODEL_WRITE_NO_CREATE))
		return tree_missing(txn, p, op->err);
	stream_drop_init(&src, op->data, op->flags & MODEL_WRITE_MAPPED);
	ret = leaf_for_write(txn, op, p, &n, &leaf);
	stream_drop_upto(&src, op->len);	/* read through once: the copy reads it again */
	stream_drop_init(&src, op->data, op->flags & MODEL_WRITE_MAPPED);
	if (ret < 0)
		return tree_fail_reason(op->err, ret, ret == -EINVAL ? MODEL_REASON_TYPE_MISMATCH :
					MODEL_REASON_NONE, "%s: not a valid %s", op->path,
					model_type_name(op->type));
	if (!n.exists) {
		ret = tree_attach(txn, p, op->err);
		if (ret < 0)
			return ret;	/* with tree_attach's message */
		ret = attr_touch_dir(txn, p->key, p->parent_len, tree_now_ns());
		if (ret < 0)
			return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	}
	/* an overwrite clears the time to live, unless this write gives one */
	ret = ttl_clear(txn, p->key, p->len);
	if (ret == 0)
		ret = tree_put_leaf_from(txn, p->key, p->len, &leaf, &src);
	if (ret == 0 && op->ttl_deadline_ns)
		ret = ttl_set(txn, p->key, p->len, op->ttl_deadline_ns);
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	return 0;
}

static int write_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	unsigned rflags = (op->flags & MODEL_WRITE_NO_CREATE) ? 0 : TREE_FOR_CREATE;
	int ret;

	tree_clear(op->err);
	ret = tview_is_schema(txn, op->path);
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	if (ret)
		return table_schema_write(txn, op->path, op->data, op->len, op->err);
	ret = tree_resolve(txn, op->path, rflags, &p, op->err);
	if (ret < 0)
		return ret;
	if (p.is_view) {
		struct tree_node before;

		ret = tree_lookup(txn, p.key, p.len, &before);
		if (ret == 0 && !before.exists && p.len > 0)	/* a new entry in its directory */
			ret = attr_touch_dir(txn, p.key, p.parent_len, tree_now_ns());
		if (ret < 0)
			return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
		/* a document written over the node clears the TTLs in it; an append does not */
		if (!(op->flags & MODEL_WRITE_APPEND_JSON) && p.len > 0)
			ret = ttl_delete_subtree(txn, p.key, p.len);
		if (ret == 0)
			ret = doc_write(txn, &p, op->data, op->len,
					((op->flags & MODEL_WRITE_APPEND_JSON) ? DOC_APPEND : 0) |
					((op->flags & MODEL_WRITE_MAPPED) ? DOC_MAPPED : 0),
					op->who, NULL, NULL, op->err);
		if (ret == 0 && op->ttl_deadline_ns && p.len > 0)
			ret = ttl_set(txn, p.key, p.len, op->ttl_deadline_ns);
		/* nodes the new document keeps keep their attributes */
		return ret < 0 ? ret : attr_prune(txn, p.key, p.len);
	}
	if (p.len == 0)
		return tree_fail(op->err, -EISDIR, "%s: is a directory", op->path);
	return write_leaf(txn, op, &p);
}

int model_write(struct model *m, const char *path, const void *data, size_t len,
		enum model_type type, unsigned flags, struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .data = data, .len = len,
			      .type = type, .flags = flags, .err = err };

	return tree_write(m, path, write_txn, &op, err);
}

int model_write_as(struct model *m, const char *path, const void *data, size_t len,
		   enum model_type type, unsigned flags, const struct model_cred *who,
		   struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .data = data, .len = len,
			      .type = type, .flags = flags, .who = who, .err = err };

	return tree_write(m, path, write_txn, &op, err);
}

int model_write_ttl(struct model *m, const char *path, const void *data, size_t len,
		    enum model_type type, unsigned flags, int64_t ttl_seconds,
		    struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .data = data, .len = len,
			      .type = type, .flags = flags, .err = err };

	if (ttl_seconds && model_ttl_deadline(ttl_seconds, tree_now_ns(), &op.ttl_deadline_ns) < 0)
		return tree_fail(err, -EINVAL, "%s: a time to live is 1 to %lld seconds", path,
				 (long long)TTL_SECONDS_MAX);
	return tree_write(m, path, write_txn, &op, err);
}

int model_write_at(struct model *m, const char *path, const void *data, size_t len,
		   enum model_type type, unsigned flags, int64_t mtime_ns,
		   struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .data = data, .len = len, .type = type,
			      .flags = flags | NODE_WRITE_AT, .mtime_ns = mtime_ns, .err = err };

	return tree_write(m, path, write_txn, &op, err);
}

/* A node was added at p: its attributes (a stale record under its key is
 * replaced) and its directory's mtime. */
static int new_node_attrs(struct store_txn *txn, const struct node_op *op,
			  const struct tree_path *p, int64_t now_ns)
{
	struct model_attr a = { 0 }, parent;
	int ret;

	if (op->attr)
		a = *op->attr;
	a.have &= MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID;
	/* a set-group-ID directory hands down its group (and, to directories,
	 * the bit itself), as on ext4 */
	ret = attr_get(txn, p->key, p->parent_len, &parent);
	if (ret == 0 && (parent.have & MODEL_ATTR_MODE) && (parent.mode & 02000)) {
		a.have &= ~(unsigned)MODEL_ATTR_GID;
		a.have |= parent.have & MODEL_ATTR_GID;
		a.gid = parent.gid;
		if (op->kind != 0 && (a.have & MODEL_ATTR_MODE)) {
			a.mode |= 02000;
		} else if (op->kind != 0) {
			a.have |= MODEL_ATTR_MODE;
			a.mode = 0755 | 02000;
		}
	}
	if (op->kind != 0) {
		/* a new directory's times are now (else it would show the store's creation) */
		a.have |= MODEL_ATTR_MTIME;
		a.mtime_ns = now_ns;
	}
	ret = attr_delete_subtree(txn, p->key, p->len);
	if (ret == 0)
		ret = attr_put(txn, p->key, p->len, &a);
	if (ret == 0)
		ret = attr_touch_dir(txn, p->key, p->parent_len, now_ns);
	return ret;
}

static int create_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	struct leaf leaf;
	int ret;

	tree_clear(op->err);
	ret = tview_is_schema(txn, op->path);
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	if (ret)
		return 0;	/* written at close, checked then */
	ret = tree_resolve(txn, op->path, TREE_FOR_CREATE, &p, op->err);
	if (ret < 0)
		return ret;
	ret = tree_lookup(txn, p.key, p.len, &n);
	if (ret < 0)
		return ret;
	if (p.is_view)
		return n.exists || p.len == 0 ? 0 : tree_parent_check(txn, &p, &n, op->err);
	if (n.exists)
		return tree_fail(op->err, -EEXIST, "%s: already exists", op->path);
	ret = tree_attach(txn, &p, op->err);
	if (ret < 0)
		return ret;
	memset(&leaf, 0, sizeof(leaf));
	leaf.tag = LEAF_STRING;
	leaf.mtime_ns = tree_now_ns();
	leaf.payload = (const uint8_t *)"";
	ret = tree_put_leaf(txn, p.key, p.len, &leaf);
	if (ret == 0)
		ret = new_node_attrs(txn, op, &p, leaf.mtime_ns);
	return ret;
}

int model_create(struct model *m, const char *path, struct model_error *err)
{
	return model_create_as(m, path, NULL, err);
}

int model_create_as(struct model *m, const char *path, const struct model_attr *attr,
		    struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .attr = attr, .err = err };

	return tree_write(m, path, create_txn, &op, err);
}

static int mkdir_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	ret = tree_resolve(txn, op->path, TREE_FOR_CREATE, &p, op->err);
	if (ret < 0)
		return ret;
	if (p.is_view)
		return tree_fail(op->err, -EINVAL, "%s: names ending in .json are views", op->path);
	ret = tree_lookup(txn, p.key, p.len, &n);
	if (ret < 0)
		return ret;
	if (n.exists)
		return tree_fail(op->err, -EEXIST, "%s: already exists", op->path);
	ret = tree_attach(txn, &p, op->err);
	if (ret < 0)
		return ret;
	ret = tree_put_marker(txn, p.key, p.len, op->kind);
	if (ret == 0)
		ret = new_node_attrs(txn, op, &p, tree_now_ns());
	return ret;
}

static int create_check_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	int ret = create_txn(txn, op);

	if (ret == 0)
		ret = tree_resolve(txn, op->path, TREE_FOR_CREATE, &p, op->err);
	if (ret == 0)
		op->ino = tree_ino(p.key, p.len, p.is_view);
	if (ret == 0 && op->unconfirmed)
		store_txn_unconfirmed(txn);	/* a refusal is still confirmed: it is final */
	if (op->as_of)
		store_txn_as_of(txn, op->as_of);	/* a refusal's too: a pending file's open */
	return ret;
}

static int create_check(struct model *m, const char *path, const struct model_attr *attr,
			bool unconfirmed, uint64_t *ino, uint64_t *as_of,
			struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .attr = attr, .unconfirmed = unconfirmed,
			      .as_of = as_of, .err = err };
	int ret;

	if (as_of)
		*as_of = 0;
	ret = tree_write_dry(m, path, create_check_txn, &op, true, err);
	if (ret == 0 && ino)
		*ino = op.ino;
	/* where the position is exact (LMDB), it is the cluster's now */
	if (as_of && *as_of < model_generation(m))
		*as_of = model_generation(m);
	return ret;
}

int model_create_check(struct model *m, const char *path, const struct model_attr *attr,
		       uint64_t *ino, uint64_t *as_of, struct model_error *err)
{
	return create_check(m, path, attr, false, ino, as_of, err);
}

int model_create_check_unconfirmed(struct model *m, const char *path,
				   const struct model_attr *attr, uint64_t *ino,
				   uint64_t *as_of, struct model_error *err)
{
	return create_check(m, path, attr, true, ino, as_of, err);
}

int model_type_check(const char *name, const void *text, size_t len)
{
	enum model_type type;
	struct leaf leaf;

	if (model_type_parse(name, &type) < 0)
		return -EINVAL;
	return leaf_from_text(text, len, true, NULL, type, 0, &leaf) < 0 ? -EINVAL : 0;
}

/* chmod, chown and an atime on the node at p: set's fields stored, unset's dropped, ctime now. */
static int attr_chmod_chown(struct store_txn *txn, const struct tree_path *p,
		      const struct model_attr *set, unsigned unset)
{
	struct model_attr a = *set, old;
	int ret = attr_get(txn, p->key, p->len, &old);

	/* a corrupt record (-EIO) is replaced */
	if (ret < 0 && ret != -EIO)
		return ret;
	if (ret < 0)
		old.have = 0;
	old.have &= ~unset;
	ret = attr_put(txn, p->key, p->len, &old);
	if (ret < 0)
		return ret;
	a.have &= MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID | MODEL_ATTR_ATIME;
	a.have |= MODEL_ATTR_CTIME;
	a.ctime_ns = tree_now_ns();
	return attr_merge(txn, p->key, p->len, &a);
}

static int write_file_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	const struct model_file_commit *c = op->fc;
	struct tree_path p;
	struct tree_node before;
	int ret;

	tree_clear(op->err);
	ret = tree_resolve(txn, op->path, c->create ? TREE_FOR_CREATE : 0, &p, op->err);
	if (ret < 0)
		return ret;
	if (p.is_view || p.len == 0)
		return tree_fail(op->err, -EISDIR, "%s: not a leaf", op->path);
	ret = tree_lookup(txn, p.key, p.len, &before);
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	/* an O_EXCL create: another writer may have made the name since its open's check */
	if (c->create && c->excl && before.exists)
		return tree_fail(op->err, -EEXIST, "%s: already exists (made by another writer since "
				 "this file was created)", op->path);
	ret = write_leaf(txn, op, &p);
	if (ret < 0)
		return ret;
	/* a new leaf: the attributes it was created with (as create_txn) */
	if (!before.exists)
		ret = new_node_attrs(txn, op, &p, tree_now_ns());
	/* set after them: a new node's leftover attributes and deadlines go first */
	if (ret == 0 && op->ttl_deadline_ns)
		ret = ttl_set(txn, p.key, p.len, op->ttl_deadline_ns);
	if (ret == 0 && (c->set.have || c->unset))
		ret = attr_chmod_chown(txn, &p, &c->set, c->unset);
	else if (ret == 0 && c->mtime_set) {
		struct model_attr a = { .have = MODEL_ATTR_CTIME, .ctime_ns = tree_now_ns() };

		ret = attr_merge(txn, p.key, p.len, &a);	/* utimens sets ctime */
	}
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	return 0;
}

/* The operation model_write_file and its check run. */
static void write_file_op(struct node_op *op, struct model *m, const char *path, const void *data,
			  size_t len, const struct model_file_commit *c, struct model_error *err)
{
	*op = (struct node_op){ .m = m, .path = path, .data = data, .len = len, .type = c->type,
				.flags = MODEL_WRITE_TEXT | (c->flags & MODEL_WRITE_MAPPED) |
					 (c->create ? 0 : MODEL_WRITE_NO_CREATE) |
					 (c->mtime_set ? NODE_WRITE_AT : 0),
				.mtime_ns = c->mtime_ns, .ttl_deadline_ns = c->deadline_ns,
				.attr = &c->new_attr, .fc = c, .err = err };
}

int model_write_file(struct model *m, const char *path, const void *data, size_t len,
		     const struct model_file_commit *c, struct model_error *err)
{
	struct node_op op;

	write_file_op(&op, m, path, data, len, c, err);
	return tree_write(m, path, write_file_txn, &op, err);
}

int model_write_file_check(struct model *m, const char *path, const void *data, size_t len,
			   const struct model_file_commit *c, struct model_error *err)
{
	struct node_op op;

	write_file_op(&op, m, path, data, len, c, err);
	return tree_write_dry(m, path, write_file_txn, &op, false, err);
}

int model_mkdir(struct model *m, const char *path, enum model_kind kind, struct model_error *err)
{
	return model_mkdir_as(m, path, kind, NULL, err);
}

int model_mkdir_as(struct model *m, const char *path, enum model_kind kind,
		   const struct model_attr *attr, struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .err = err, .attr = attr,
			      .kind = kind == MODEL_KIND_ARRAY ? kind : MODEL_KIND_OBJECT };

	return tree_write(m, path, mkdir_txn, &op, err);
}

static int remove_check(const struct node_op *op, const struct tree_path *p,
			const struct tree_node *n)
{
	if (p->len == 0)
		return tree_fail(op->err, -EBUSY, "%s: the root cannot be removed", op->path);
	if (p->is_view) {
		if (op->flags & MODEL_REMOVE_DIR)
			return tree_fail(op->err, -ENOTDIR, "%s: not a directory", op->path);
		return 0;
	}
	if (op->flags & MODEL_REMOVE_RECURSIVE)
		return 0;
	if ((op->flags & MODEL_REMOVE_LEAF) && n->kind != MODEL_KIND_LEAF)
		return tree_fail(op->err, -EISDIR, "%s: is a directory", op->path);
	if ((op->flags & MODEL_REMOVE_DIR) && n->kind == MODEL_KIND_LEAF)
		return tree_fail(op->err, -ENOTDIR, "%s: not a directory", op->path);
	if ((op->flags & MODEL_REMOVE_DIR) && !n->empty)
		return tree_fail(op->err, -ENOTEMPTY, "%s: directory not empty", op->path);
	return 0;
}

static int remove_subtree(struct store_txn *txn, const struct tree_path *p)
{
	int ret = tree_remove(txn, p->key, p->len);

	if (ret == 0)
		ret = tree_keep_parent(txn, p->key, p->parent_len);
	if (ret == 0)
		ret = attr_delete_subtree(txn, p->key, p->len);
	if (ret == 0)
		ret = attr_touch_dir(txn, p->key, p->parent_len, tree_now_ns());
	return ret;
}

/* MODEL_REMOVE_ROW_WHOLE: a name in a row another row references stays. */
static int remove_pinned(const struct node_op *op, struct store_txn *txn,
			 const struct tree_path *p)
{
	int ret = table_row_pinned(txn, p->key, p->len);

	if (ret <= 0)
		return ret;
	/* keeps the message that names the referencing row; the reason is this one */
	if (op->err)
		op->err->reason = MODEL_REASON_ROW_PINNED;
	return -EBUSY;
}

static int remove_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	ret = tree_resolve(txn, op->path, 0, &p, op->err);
	/* checked in the transaction that removes: nothing written meanwhile goes unseen */
	if (ret == 0 && op->known && !p.is_view)
		ret = tree_children_among(txn, &p, op->path, op->known, op->nknown, op->err);
	if (ret < 0)
		return ret;
	ret = tree_get(txn, &p, &n, op->err);
	/* rm -r removes a record that does not verify: the repair that loses only it. */
	if (ret == -EIO && (op->flags & MODEL_REMOVE_RECURSIVE) && p.len > 0 && !p.is_view) {
		tree_clear(op->err);
		return remove_subtree(txn, &p);
	}
	if (ret < 0)
		return ret;
	ret = remove_check(op, &p, &n);
	if (ret == 0 && (op->flags & MODEL_REMOVE_ROW_WHOLE) && !p.is_view)
		ret = remove_pinned(op, txn, &p);
	if (ret < 0)
		return ret;
	return remove_subtree(txn, &p);
}

int model_remove(struct model *m, const char *path, unsigned flags, struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .flags = flags, .err = err };

	return tree_write(m, path, remove_txn, &op, err);
}

int model_remove_known(struct model *m, const char *path, const char *const *names, size_t n,
		       struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .known = names, .nknown = n, .err = err,
			      .flags = MODEL_REMOVE_RECURSIVE | MODEL_REMOVE_ROW_WHOLE };

	return tree_write(m, path, remove_txn, &op, err);
}

/* Sets the found node's mtime (a leaf's is in its record) and moves its ctime. */
static int mtime_put(struct store_txn *txn, const struct tree_path *p, const struct tree_node *n,
		     int64_t mtime_ns)
{
	struct model_attr a = { .have = MODEL_ATTR_CTIME, .ctime_ns = tree_now_ns() };
	struct leaf leaf;
	int ret;

	if (n->kind != MODEL_KIND_LEAF) {
		a.have |= MODEL_ATTR_MTIME;
		a.mtime_ns = mtime_ns;
		return attr_merge(txn, p->key, p->len, &a);
	}
	leaf = n->leaf;
	leaf.mtime_ns = mtime_ns;
	ret = tree_put_leaf(txn, p->key, p->len, &leaf);
	if (ret == 0)
		ret = attr_merge(txn, p->key, p->len, &a);
	return ret;
}

static int mtime_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	ret = tree_find(txn, op->path, &p, &n, op->err);
	if (ret < 0 || p.is_view)
		return ret;	/* views show their node's time */
	return mtime_put(txn, &p, &n, op->mtime_ns);
}

int model_set_mtime(struct model *m, const char *path, int64_t mtime_ns, struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .mtime_ns = mtime_ns, .err = err };

	return tree_write(m, path, mtime_txn, &op, err);
}

static int set_attr_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	ret = tree_find_own(txn, op->path, "mode or owner", &p, &n, op->err);
	if (ret < 0)
		return ret;
	return attr_chmod_chown(txn, &p, op->attr, op->flags);
}

static int set_attr(struct model *m, const char *path, const struct model_attr *set,
		    unsigned unset, bool later, struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .attr = set, .flags = unset, .err = err };

	if (later)
		return tree_write_later(m, path, set_attr_txn, &op, err);
	return tree_write(m, path, set_attr_txn, &op, err);
}

int model_set_attr(struct model *m, const char *path, const struct model_attr *set,
		   unsigned unset, struct model_error *err)
{
	return set_attr(m, path, set, unset, false, err);
}

int model_set_attr_later(struct model *m, const char *path, const struct model_attr *set,
			 unsigned unset, struct model_error *err)
{
	return set_attr(m, path, set, unset, true, err);
}

static int set_times_txn(struct store_txn *txn, void *arg)
{
	struct node_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	ret = tree_find(txn, op->path, &p, &n, op->err);
	if (ret < 0 || p.is_view)
		return ret;	/* views show their node's times */
	if (op->mtime_set)
		ret = mtime_put(txn, &p, &n, op->mtime_ns);
	/* the atime, and the ctime utimensat sets even when only the atime changes */
	if (ret == 0 && (op->attr->have || op->flags || !op->mtime_set))
		ret = attr_chmod_chown(txn, &p, op->attr, op->flags);
	return ret;
}

static int set_times(struct model *m, const char *path, const int64_t *mtime_ns,
		     const struct model_attr *set, unsigned unset, bool later,
		     struct model_error *err)
{
	struct node_op op = { .m = m, .path = path, .mtime_set = mtime_ns != NULL,
			      .mtime_ns = mtime_ns ? *mtime_ns : 0, .attr = set,
			      .flags = unset, .err = err };

	if (later)
		return tree_write_later(m, path, set_times_txn, &op, err);
	return tree_write(m, path, set_times_txn, &op, err);
}

int model_set_times(struct model *m, const char *path, const int64_t *mtime_ns,
		    const struct model_attr *set, unsigned unset, struct model_error *err)
{
	return set_times(m, path, mtime_ns, set, unset, false, err);
}

int model_set_times_later(struct model *m, const char *path, const int64_t *mtime_ns,
			  const struct model_attr *set, unsigned unset, struct model_error *err)
{
	return set_times(m, path, mtime_ns, set, unset, true, err);
}
