/*
 * model/tree/tree.c - resolving a mount path to a tuple key (names themselves:
 * model/tree/name.c), and the small node primitives every operation shares:
 * errors, running a write transaction, lookup, attach to a parent, delete a
 * subtree, keep an emptied parent, iterate children and check their names
 * against the ones a caller knows of.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

int tree_fail(struct model_error *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->reason = MODEL_REASON_NONE;
	}
	return ret;
}

int tree_fail_reason(struct model_error *err, int ret, enum model_reason reason,
		     const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
		err->reason = reason;
	}
	return ret;
}

void tree_clear(struct model_error *err)
{
	if (err) {
		err->msg[0] = '\0';
		err->reason = MODEL_REASON_NONE;
	}
}

struct tree_write_op {
	store_write_fn fn;
	void *arg;
	struct model_error *err;
	bool shape_only;	/* tree_write_dry: tables judge rows' shape only */
};

/* Every model write: the operation, then its tables kept exact (table_commit.c). */
static int tree_write_txn(struct store_txn *txn, void *arg)
{
	struct tree_write_op *op = arg;
	struct table_txn *tt;
	int ret = table_txn_new(op->err, &tt);

	if (ret < 0)
		return ret;
	tt->shape_only = op->shape_only;
	store_txn_set_owner(txn, tt);
	ret = op->fn(txn, op->arg);
	if (ret == 0)
		ret = table_txn_commit(txn, tt);
	if (ret == 0)
		ret = ttl_lease_txn(txn, tt);	/* last: every key is put by now */
	store_txn_set_owner(txn, NULL);
	table_txn_free(tt);
	return ret;
}

static int write_when(struct model *m, const char *what, store_write_fn fn, void *arg,
		      bool later, struct model_error *err)
{
	struct tree_write_op op = { fn, arg, err, false };
	int ret;

	tree_clear(err);
	if (m->readonly)
		return tree_fail(err, -EROFS, "%s: the store is read-only", what);
	ret = later ? store_write_later(m->st, tree_write_txn, &op) :
	      store_write(m->st, tree_write_txn, &op);
	if (ret < 0 && err && !err->msg[0])
		tree_fail(err, ret, "%s: %s", what, strerror(-ret));
	return ret;
}

int tree_write_plain(struct model *m, const char *what, store_write_fn fn, void *arg,
		     struct model_error *err)
{
	return write_when(m, what, fn, arg, false, err);
}

static int write_reaped(struct model *m, const char *what, store_write_fn fn, void *arg,
			bool later, struct model_error *err)
{
	/* Due nodes go first, so that the write sees the tree reads show. */
	if (!m->readonly)
		ttl_reap_due(m);
	return write_when(m, what, fn, arg, later, err);
}

int tree_write(struct model *m, const char *what, store_write_fn fn, void *arg,
	       struct model_error *err)
{
	return write_reaped(m, what, fn, arg, false, err);
}

int tree_write_later(struct model *m, const char *what, store_write_fn fn, void *arg,
		     struct model_error *err)
{
	return write_reaped(m, what, fn, arg, true, err);
}

/* A dry run: everything a commit would check, then an abort (TREE_DRY_OK). */
#define TREE_DRY_OK 1
static int tree_dry_txn(struct store_txn *txn, void *arg)
{
	int ret = tree_write_txn(txn, arg);

	return ret == 0 ? TREE_DRY_OK : ret;
}

int tree_write_dry(struct model *m, const char *what, store_write_fn fn, void *arg,
		   bool shape_only, struct model_error *err)
{
	struct tree_write_op op = { fn, arg, err, shape_only };
	int ret;

	tree_clear(err);
	if (m->readonly)
		return tree_fail(err, -EROFS, "%s: the store is read-only", what);
	ret = store_write(m->st, tree_dry_txn, &op);
	if (ret == TREE_DRY_OK)
		return 0;
	if (ret < 0 && err && !err->msg[0])
		tree_fail(err, ret, "%s: %s", what, strerror(-ret));
	return ret;
}

int64_t tree_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- paths ---- */

struct component {
	const char *name;
	size_t len;
	bool last;
};

/* Finds the component after *pos; false at the end of the path. */
static bool next_component(const char *path, size_t *pos, struct component *c)
{
	size_t i = *pos;

	while (path[i] == '/')
		i++;
	if (!path[i])
		return false;
	c->name = path + i;
	while (path[i] && path[i] != '/')
		i++;
	c->len = (size_t)(path + i - c->name);
	*pos = i;
	while (path[i] == '/')
		i++;
	c->last = !path[i];
	return true;
}

/* Decides between an array index and a string for a decimal name. */
static int decimal_is_index(struct store_txn *txn, struct tree_path *p, bool *is_index)
{
	struct tree_node parent;
	int ret = tree_lookup(txn, p->key, p->len, &parent);

	if (ret < 0)
		return ret;
	if (parent.exists && parent.kind == MODEL_KIND_LEAF)
		return -ENOTDIR;
	*is_index = parent.exists && parent.kind == MODEL_KIND_ARRAY;
	return 0;
}

static int append_name(struct store_txn *txn, struct tree_path *p, struct tuple_writer *w,
		       const char *name, size_t len, unsigned flags)
{
	char raw[STORE_KEY_MAX + 1];
	int64_t index;
	bool is_index = false;
	ssize_t n;
	int ret;

	if (tree_name_index(name, len, &index)) {
		ret = decimal_is_index(txn, p, &is_index);
		if (ret < 0)
			return ret;
	}
	if (is_index) {
		tuple_put_int(w, index);
		return 0;
	}
	n = tree_name_unescape(name, len, raw, sizeof(raw));
	if (n < 0)
		return len > STORE_KEY_MAX ? -ENAMETOOLONG
			: (flags & TREE_FOR_CREATE) ? -EINVAL : -ENOENT;
	if ((flags & TREE_FOR_CREATE) && !utf8_is_valid(raw, (size_t)n))
		return -EINVAL;
	tuple_put_string(w, raw, (size_t)n);
	return 0;
}

/* The message for a name of path that append_name refused with -EINVAL. */
static int invalid_name(const char *path, const struct component *c, struct model_error *err)
{
	char why[TREE_NAME_MAX + 160];

	if (!err)
		return -EINVAL;
	tree_name_problem(c->name, c->len, why, sizeof(why));
	return tree_fail_reason(err, -EINVAL, MODEL_REASON_BAD_NAME, "%s: invalid name '%.*s': %s",
				path, (int)(c->len > 200 ? 200 : c->len), c->name, why);
}

static int resolve_fail(const char *path, int ret, struct model_error *err)
{
	switch (ret) {
	case -ENAMETOOLONG:
		return tree_fail(err, ret, "path too long for a key: %s", path);
	case -ENOTDIR:
		return tree_fail(err, ret, "%s: a leaf is not a directory", path);
	case -EINVAL:
		return tree_fail(err, ret, "%s: invalid name", path);
	case -ENOENT:
		return tree_fail(err, ret, "%s: no such file or directory", path);
	default:
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	}
}

int tree_resolve(struct store_txn *txn, const char *path, unsigned flags,
		 struct tree_path *out, struct model_error *err)
{
	struct tuple_writer w;
	struct component c;
	size_t pos = 0;
	int ret;

	out->text = path;
	out->len = out->parent_len = 0;
	out->depth = 0;
	out->is_view = false;
	tuple_writer_init(&w, out->key, sizeof(out->key));
	while (next_component(path, &pos, &c)) {
		if (c.last && model_name_is_view(c.name, c.len)) {
			out->is_view = true;
			c.len = model_name_view_base(c.name, c.len);
			if (c.len == 0)
				break;
		}
		if (c.name[0] == '@') {
			/* directly inside a table, '@' names are the table's own views */
			ret = table_is_at(txn, out->key, w.len);
			if (ret < 0)
				return resolve_fail(path, ret, err);
			if (ret)
				return tree_fail(err, -EROFS, "%s: inside a table, names beginning "
						 "with @ are the table's read-only views", path);
		}
		out->parent_len = w.len;
		ret = append_name(txn, out, &w, c.name, c.len, flags);
		if (ret == 0 && w.overflow)
			ret = -ENAMETOOLONG;
		if (ret == -EINVAL)
			return invalid_name(path, &c, err);
		if (ret < 0)
			return resolve_fail(path, ret, err);
		out->len = w.len;
		out->depth++;
	}
	return 0;
}

/* ---- nodes ---- */

/* A checksum mismatch is -EIO like any corrupt record; tree_get names the path. */
static int node_from_record(unsigned format, const struct store_val *key,
			    const struct store_val *val, struct tree_node *out)
{
	if (leaf_record_decode(format, key->data, key->len, val->data, val->len, &out->leaf) < 0)
		return -EIO;
	out->exists = true;
	out->marker = leaf_is_marker(&out->leaf);
	out->empty = out->marker;
	if (!out->marker)
		out->kind = MODEL_KIND_LEAF;
	else
		out->kind = out->leaf.tag == LEAF_EMPTY_ARRAY ? MODEL_KIND_ARRAY : MODEL_KIND_OBJECT;
	return 0;
}

/* The kind of the container whose first descendant is key, from key[len]. */
static int kind_at(const uint8_t *key, size_t key_len, size_t len, enum model_kind *kind)
{
	struct tuple_reader r;
	struct tuple_elem e;

	tuple_reader_init(&r, key + len, key_len - len);
	if (tuple_next(&r, &e) != 1)
		return -EIO;
	if (e.type == TUPLE_TYPE_INT)
		*kind = MODEL_KIND_ARRAY;
	else
		*kind = MODEL_KIND_OBJECT;
	return 0;
}

static int lookup_first(struct store_scan *scan, size_t len, struct tree_node *out)
{
	struct store_val k, v;
	int ret = store_scan_next(scan, &k, &v);

	if (ret <= 0)
		return ret;
	if (k.len == len)
		return node_from_record(store_txn_format(store_scan_txn(scan)), &k, &v, out);
	/* 0xFF after the prefix: an escaped NUL of a sibling string, not a child. */
	if (((const uint8_t *)k.data)[len] == 0xFF)
		return 0;
	out->exists = true;
	out->marker = out->empty = false;
	return kind_at(k.data, k.len, len, &out->kind);
}

/*
 * The first hidden (expired) key strictly under key[0..len] at or after
 * from[0..from_len]: 1 with *out, 0 when none. A container whose every key
 * is hidden reads as an empty one, as a removal would leave it.
 */
static int hidden_under(struct store_txn *txn, const uint8_t *key, size_t len,
			const uint8_t *from, size_t from_len, struct store_val *out)
{
	const uint8_t *h;

	if (store_txn_hidden_from(txn, STORE_SPACE_DATA, from, from_len, out) != 1)
		return 0;
	h = out->data;
	return out->len > len && memcmp(h, key, len) == 0 && h[len] != 0xFF;
}

int tree_lookup(struct store_txn *txn, const uint8_t *key, size_t len, struct tree_node *out)
{
	struct store_scan *scan;
	struct store_val h;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);
	if (ret < 0)
		return ret;
	ret = lookup_first(scan, len, out);
	store_scan_close(scan);
	if (ret < 0)
		return ret;
	if (!out->exists && len > 0 && hidden_under(txn, key, len, key, len, &h)) {
		out->exists = out->empty = true;	/* every child expired */
		ret = kind_at(h.data, h.len, len, &out->kind);
		if (ret < 0)
			return ret;
	}
	if (len == 0) {		/* the root: always an object */
		out->empty = !out->exists;
		out->exists = true;
		out->kind = MODEL_KIND_OBJECT;
		out->marker = false;
	}
	return 0;
}

int tree_get(struct store_txn *txn, const struct tree_path *p, struct tree_node *out,
	     struct model_error *err)
{
	int ret = tree_lookup(txn, p->key, p->len, out);

	if (ret == -EIO)
		return tree_fail(err, ret, "%s: corrupt record in the store (bad checksum or "
				 "layout; run kvfs check)", p->text);
	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", p->text, strerror(-ret));
	if (!out->exists)
		return tree_missing(txn, p, err);
	return 0;
}

int tree_fail_corrupt(struct store_txn *txn, const uint8_t *key, size_t len, const char *what,
		      struct model_error *err)
{
	unsigned format = store_txn_format(txn);
	struct store_scan *scan;
	struct store_val k, v;
	struct leaf leaf;
	struct strbuf at;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);

	strbuf_init(&at);
	while (ret == 0 && store_scan_next(scan, &k, &v) == 1) {
		if (leaf_record_decode(format, k.data, k.len, v.data, v.len, &leaf) < 0) {
			tree_key_to_path(k.data, k.len, &at);
			break;
		}
	}
	if (ret == 0)
		store_scan_close(scan);
	if (at.len && !at.failed)
		tree_fail(err, -EIO, "%s: corrupt record in the store at %s (bad checksum or "
			  "layout; run kvfs check)", what, at.buf);
	else
		tree_fail(err, -EIO, "%s: cannot render: %s", what, strerror(EIO));
	strbuf_release(&at);
	return -EIO;
}

int tree_find(struct store_txn *txn, const char *path, struct tree_path *p,
	      struct tree_node *out, struct model_error *err)
{
	int ret = tree_resolve(txn, path, 0, p, err);

	if (ret < 0)
		return ret;
	return tree_get(txn, p, out, err);
}

int tree_find_own(struct store_txn *txn, const char *path, const char *what,
		  struct tree_path *p, struct tree_node *n, struct model_error *err)
{
	int ret;

	tree_clear(err);
	ret = tree_find(txn, path, p, n, err);
	if (ret < 0)
		return ret;
	if (p->is_view)
		return tree_fail(err, -EPERM, "%s: a view has no %s of its own", path, what);
	return ret;
}

int tree_missing(struct store_txn *txn, const struct tree_path *p, struct model_error *err)
{
	struct tuple_reader r;
	struct tuple_elem e;
	struct store_val v;
	struct leaf leaf;

	tuple_reader_init(&r, p->key, p->len);
	while (tuple_next(&r, &e) == 1 && r.pos < p->len) {
		if (store_get(txn, STORE_SPACE_DATA, p->key, r.pos, &v) == 0 &&
		    leaf_record_decode(store_txn_format(txn), p->key, r.pos, v.data, v.len,
				       &leaf) == 0 && !leaf_is_marker(&leaf))
			return tree_fail(err, -ENOTDIR, "%s: a leaf is not a directory", p->text);
	}
	return tree_fail(err, -ENOENT, "%s: no such file or directory", p->text);
}

static bool last_is_int(const struct tree_path *p)
{
	return p->parent_len < p->len && p->key[p->parent_len] != 0x02;
}

int tree_parent_check(struct store_txn *txn, const struct tree_path *p, struct tree_node *out,
		      struct model_error *err)
{
	struct tree_path parent = *p;
	struct tree_node n;
	int ret;

	parent.len = p->parent_len;
	ret = tree_get(txn, &parent, &n, err);
	if (ret == -ENOENT)
		return tree_fail(err, ret, "%s: the parent directory does not exist", p->text);
	if (ret < 0)
		return ret;
	if (n.kind == MODEL_KIND_LEAF)
		return tree_fail(err, -ENOTDIR, "%s: the parent is a leaf, not a directory", p->text);
	if (n.kind == MODEL_KIND_ARRAY && !last_is_int(p))
		return tree_fail_reason(err, -EINVAL, MODEL_REASON_NOT_AN_INDEX,
					"%s: names in an array are indices (0, 1, ...)", p->text);
	if (n.kind == MODEL_KIND_OBJECT && last_is_int(p))
		return tree_fail_reason(err, -EINVAL, MODEL_REASON_INDEX_IN_OBJECT,
					"%s: an index in an object", p->text);
	*out = n;
	return 0;
}

int tree_attach(struct store_txn *txn, const struct tree_path *p, struct model_error *err)
{
	struct tree_node n;
	int ret;

	if (p->len == 0)
		return 0;
	if (tree_name_too_long(p->key, p->parent_len, p->len))
		return tree_fail(err, -ENAMETOOLONG, "%s: name longer than %d bytes as a file name",
				 p->text, TREE_FILE_NAME_MAX);
	ret = tree_parent_check(txn, p, &n, err);
	if (ret < 0)
		return ret;
	if (!n.marker)
		return 0;
	ret = table_touch(txn, p->key, p->parent_len, false);
	return ret < 0 ? ret : store_del(txn, STORE_SPACE_DATA, p->key, p->parent_len);
}

bool tree_subtree_empty(struct store_txn *txn, enum store_space space, const uint8_t *key,
			size_t len)
{
	uint8_t first[STORE_KEY_MAX + 1];
	struct store_scan *scan;
	struct store_val k, v;
	bool empty;
	int ret;

	if (len == 0)
		return false;	/* the root's children are the whole space */
	if (len >= STORE_KEY_MAX)
		return true;	/* no key is longer */
	memcpy(first, key, len);
	first[len] = 0x02;	/* the first child element's code */
	if (store_scan_open(txn, space, key, len, &scan) < 0)
		return false;
	ret = store_scan_seek(scan, first, len + 1);
	if (ret >= 0)
		ret = store_scan_next(scan, &k, &v);
	/* children (0x02, 0x14..0x1c) sort before a sibling continuing the name (0x00 0xFF) */
	empty = ret == 0 || (ret == 1 && ((const uint8_t *)k.data)[len] > 0x1c);
	store_scan_close(scan);
	return empty;
}

int tree_delete(struct store_txn *txn, const uint8_t *key, size_t len)
{
	/* Children start with a string (0x02) or an index (0x14..0x1c) element;
	 * a plain prefix delete would also take siblings whose name continues
	 * with an escaped NUL (0x00 0xFF). */
	uint8_t buf[STORE_KEY_MAX + 1];
	int ret = table_touch(txn, key, len, true);

	if (ret < 0)
		return ret;
	if (len > 0) {
		ret = store_del(txn, STORE_SPACE_DATA, key, len);
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	if (tree_subtree_empty(txn, STORE_SPACE_DATA, key, len))
		return 0;	/* a new node's key, mostly: one read, not ten prefix deletes */
	memcpy(buf, key, len);
	for (int code = 0x00; code < 0xFF; code++) {
		if (code != 0x02 && (code < 0x14 || code > 0x1c))
			continue;
		buf[len] = (uint8_t)code;
		ret = store_del_prefix(txn, STORE_SPACE_DATA, buf, len + 1, NULL);
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	return 0;
}

int tree_remove(struct store_txn *txn, const uint8_t *key, size_t len)
{
	int ret = tree_delete(txn, key, len);

	if (ret == 0 && len > 0)
		store_note_removed(txn, STORE_SPACE_DATA, key, len);
	return ret;
}

int tree_put_marker(struct store_txn *txn, const uint8_t *key, size_t len, enum model_kind kind)
{
	struct leaf leaf;

	memset(&leaf, 0, sizeof(leaf));
	leaf.tag = kind == MODEL_KIND_ARRAY ? LEAF_EMPTY_ARRAY : LEAF_EMPTY_OBJECT;
	leaf.mtime_ns = tree_now_ns();
	return tree_put_leaf(txn, key, len, &leaf);
}

int tree_keep_parent(struct store_txn *txn, const uint8_t *key, size_t parent_len)
{
	enum model_kind kind = key[parent_len] == 0x02 ? MODEL_KIND_OBJECT : MODEL_KIND_ARRAY;
	struct tree_node n;
	int ret;

	if (parent_len == 0)
		return 0;
	ret = tree_lookup(txn, key, parent_len, &n);
	if (ret < 0 || n.exists)
		return ret;
	return tree_put_marker(txn, key, parent_len, kind);
}

uint64_t tree_ino(const uint8_t *key, size_t len, bool view)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= key[i];
		h *= 0x100000001b3ULL;
	}
	if (view) {
		h ^= 0xFF;	/* never a key byte after a whole key: views differ */
		h *= 0x100000001b3ULL;
	} else if (len == 0) {
		return 1;
	}
	return h <= 1 ? h + 2 : h;
}

void tree_node_fill(struct model *m, const uint8_t *key, size_t len,
		    const struct tree_node *n, struct model_node *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = n->kind;
	out->ino = tree_ino(key, len, false);
	out->mtime_ns = m->created_ns;
	out->empty = n->empty;
	if (n->kind == MODEL_KIND_LEAF) {
		out->type = leaf_model_type(&n->leaf);
		out->size = leaf_text_size(&n->leaf);
		out->mtime_ns = n->leaf.mtime_ns;
	}
}

/* ---- children ---- */

/* Fills c with the child whose first key is k[0..klen]. */
static int child_at(const uint8_t *k, size_t klen, size_t len, struct tree_child *c)
{
	struct tuple_reader r;

	c->key = k;
	c->key_len = klen;
	tuple_reader_init(&r, c->key + len, klen - len);
	if (tuple_next(&r, &c->elem) != 1)
		return -EIO;
	c->end = len + r.pos;
	return 1;
}

/*
 * A child before the next visible key k (NULL: none) whose keys are all
 * hidden (expired, not reaped yet): it is listed as an empty container.
 * Searched from lo[0..lo_len] (the prefix, or past the previous child);
 * a hidden child itself (no key under it) is skipped.
 */
static int child_emptied(struct store_txn *txn, size_t len, const uint8_t *lo, size_t lo_len,
			 const struct store_val *k, struct tree_child *c)
{
	uint8_t from[STORE_KEY_MAX + 1];
	size_t from_len = lo_len;
	struct store_val h;
	int ret;

	memcpy(from, lo, lo_len);
	while (hidden_under(txn, lo, len, from, from_len, &h)) {
		if (k && memcmp(h.data, k->data, h.len < k->len ? h.len : k->len) >= 0)
			return 0;	/* the visible child comes first (or is this one) */
		ret = child_at(h.data, h.len, len, c);
		if (ret < 0 || c->end < h.len) {
			c->val = (struct store_val){ NULL, 0 };
			return ret;
		}
		if (c->end >= STORE_KEY_MAX)
			return 0;
		memcpy(from, h.data, c->end);	/* the child itself is hidden: past it */
		from[c->end] = 0xFF;
		from_len = c->end + 1;
	}
	return 0;
}

static int child_fill(struct store_scan *scan, size_t len, const uint8_t *lo, size_t lo_len,
		      struct tree_child *c)
{
	struct store_val k;
	int ret = store_scan_next(scan, &k, &c->val);

	if (ret < 0)
		return ret;
	if (ret == 1 && (k.len <= len || ((const uint8_t *)k.data)[len] == 0xFF))
		ret = 0;	/* the prefix itself or a NUL-continued sibling: no children */
	if (lo) {
		int e = child_emptied(store_scan_txn(scan), len, lo, lo_len, ret ? &k : NULL, c);

		if (e != 0)
			return e;
	}
	return ret == 1 ? child_at(k.data, k.len, len, c) : 0;
}

/* Positions the scan after every key under key[0..end]. */
static int child_skip(struct store_scan *scan, const uint8_t *key, size_t end)
{
	uint8_t buf[STORE_KEY_MAX + 1];

	if (end >= STORE_KEY_MAX)
		return 0;	/* a full-length key has nothing under it */
	memcpy(buf, key, end);
	buf[end] = 0xFF;
	return store_scan_seek(scan, buf, end + 1);
}

int tree_child_first(struct store_scan *scan, const uint8_t *prefix, size_t len,
		     const uint8_t *after, size_t after_len, struct tree_child *c)
{
	int ret;

	if (after) {
		ret = child_skip(scan, after, after_len);
		if (ret < 0)
			return ret;
	}
	c->format = store_txn_format(store_scan_txn(scan));
	if (after && after_len < STORE_KEY_MAX) {
		uint8_t lo[STORE_KEY_MAX + 1];

		memcpy(lo, after, after_len);
		lo[after_len] = 0xFF;
		return child_fill(scan, len, lo, after_len + 1, c);
	}
	return child_fill(scan, len, prefix, len, c);
}

int tree_child_at(struct store_scan *scan, size_t len, const uint8_t *from, size_t from_len,
		  struct tree_child *c)
{
	int ret = store_scan_seek(scan, from, from_len);

	if (ret < 0)
		return ret;
	c->format = store_txn_format(store_scan_txn(scan));
	return child_fill(scan, len, from, from_len, c);
}

int tree_child_next(struct store_scan *scan, size_t len, struct tree_child *c)
{
	uint8_t lo[STORE_KEY_MAX + 1];
	size_t lo_len = c->end + 1;
	int ret = child_skip(scan, c->key, c->end);

	if (ret < 0 || c->end >= STORE_KEY_MAX)
		return ret < 0 ? ret : 0;
	memcpy(lo, c->key, c->end);
	lo[c->end] = 0xFF;
	return child_fill(scan, len, lo, lo_len, c);
}

bool tree_child_is_container(const struct tree_child *c)
{
	return c->key_len != c->end || leaf_record_is_marker(c->val.data, c->val.len);
}

int tree_child_node(const struct tree_child *c, struct tree_node *out)
{
	memset(out, 0, sizeof(*out));
	if (c->key_len == c->end) {
		struct store_val key = { c->key, c->key_len };

		return node_from_record(c->format, &key, &c->val, out);
	}
	out->exists = true;
	return kind_at(c->key, c->key_len, c->end, &out->kind);
}

void tree_child_name(const struct tree_child *c, char *out)
{
	char raw[STORE_KEY_MAX];

	if (c->elem.type != TUPLE_TYPE_STRING) {
		snprintf(out, TREE_NAME_MAX, "%lld", (long long)c->elem.integer);
		return;
	}
	tuple_elem_copy(&c->elem, raw);
	tree_name_escape(raw, c->elem.len, out);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tree_children_among(struct store_txn *txn, const struct tree_path *p, const char *path,
			const char *const *names, size_t n, struct model_error *err)
{
	char name[TREE_NAME_MAX];
	const char *key = name;
	struct store_scan *scan;
	struct tree_child c;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, p->key, p->len, &scan);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	store_scan_expect_children(scan);
	for (ret = tree_child_first(scan, p->key, p->len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, p->len, &c)) {
		tree_child_name(&c, name);
		if (!bsearch(&key, names, n, sizeof(*names), name_cmp))
			break;
	}
	store_scan_close(scan);
	if (ret == 1)
		return tree_fail(err, -ENOTEMPTY, "%s: directory not empty: %s was written in it "
				 "after its other names were removed", path, name);
	return ret < 0 ? tree_fail(err, ret, "%s: %s", path, strerror(-ret)) : 0;
}
