/*
 * model/tree/rename.c - operations that re-key a subtree in one transaction:
 * rename (POSIX replacement rules, type-keeping leaf replacement, saving
 * a leaf over a NAME.json view) and type conversion of leaves and of
 * containers (array <-> object).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

struct rename_op {
	const char *from;
	const char *to;
	unsigned flags;
	const char *type;	/* NULL: back to the type a new node would get */
	const struct model_cred *who;	/* onto a view: the document's writer (NULL: unchecked) */
	struct model_moved moved;	/* what the last run of rename_txn did */
	struct model_error *err;
};

/* ---- rename ---- */

/* Copies every key under src[0..src_len] to dst + the rest of the key. */
static int copy_subtree(struct store_txn *txn, const struct tree_path *src,
			const struct tree_path *dst, struct model_error *err)
{
	uint8_t key[STORE_KEY_MAX];
	struct store_scan *scan;
	struct store_val k, v;
	struct strbuf val;
	size_t rest;
	unsigned format = store_txn_format(txn);
	int ret = store_scan_open(txn, STORE_SPACE_DATA, src->key, src->len, &scan);

	if (ret < 0)
		return ret;
	strbuf_init(&val);
	memcpy(key, dst->key, dst->len);
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		rest = k.len - src->len;
		if (rest && ((const uint8_t *)k.data)[src->len] == 0xFF)
			break;
		if (dst->len + rest > STORE_KEY_MAX) {
			ret = tree_fail(err, -ENAMETOOLONG, "path too long for a key: %s/...",
					dst->text);
			break;
		}
		memcpy(key + dst->len, (const uint8_t *)k.data + src->len, rest);
		/* Re-sealed for its new key, into val: the put may move the page under v. */
		strbuf_reset(&val);
		ret = leaf_record_rekey(format, k.data, k.len, key, dst->len + rest, v.data, v.len,
					&val);
		if (ret < 0) {
			if (ret != -ENOMEM)
				ret = tree_fail(err, -EIO, "%s: corrupt record in the store (bad "
						"checksum or layout; run kvfs check)", src->text);
			break;
		}
		ret = table_touch(txn, key, dst->len + rest, false);
		if (ret == 0)
			ret = store_put(txn, STORE_SPACE_DATA, key, dst->len + rest, val.buf,
					val.len);
		if (ret < 0)
			break;
	}
	strbuf_release(&val);
	store_scan_close(scan);
	return ret;
}

/*
 * A string leaf moved to dst takes the type its text parses as: first the
 * column's at dst (types, count: table_field_types), then the replaced
 * leaf's (old, may be NULL), else it stays text.
 */
static int put_typed_leaf(struct store_txn *txn, const struct tree_path *dst,
			  const struct leaf *src, const struct leaf *old,
			  const enum model_type *types, int count)
{
	uint64_t size = leaf_text_size(src);
	struct leaf leaf;
	char *text;
	int ret = -EINVAL;

	text = malloc(size + 1);
	if (!text)
		return -ENOMEM;
	leaf_text_read(src, text, size, 0);
	for (int i = 0; i < count && ret < 0; i++)
		ret = leaf_from_text(text, size, true, old, types[i], src->mtime_ns, &leaf);
	if (ret < 0)
		ret = leaf_from_text(text, size, true, old, 0, src->mtime_ns, &leaf);
	if (ret == 0)
		ret = tree_put_leaf(txn, dst->key, dst->len, &leaf);
	free(text);
	return ret;
}

/*
 * A string leaf onto a typed leaf, or into a table's column of another
 * type (types, count: table_field_types): retyped by put_typed_leaf.
 */
static bool retypes(const struct tree_node *s, const struct tree_node *d,
		    const enum model_type *types, int count)
{
	if (s->kind != MODEL_KIND_LEAF || s->leaf.tag != LEAF_STRING)
		return false;
	if (d->exists && d->kind != MODEL_KIND_LEAF)
		return false;	/* refused by replace_check */
	if (count > 0)
		return types[0] != MODEL_TYPE_STRING;
	return d->exists && d->leaf.tag != LEAF_STRING && d->leaf.tag != LEAF_BYTES;
}

static int replace_check(const struct rename_op *op, const struct tree_node *s,
			 const struct tree_node *d)
{
	if (!d->exists)
		return 0;
	if (op->flags & MODEL_RENAME_NOREPLACE)
		return tree_fail(op->err, -EEXIST, "%s: already exists", op->to);
	if (s->kind == MODEL_KIND_LEAF && d->kind != MODEL_KIND_LEAF)
		return tree_fail(op->err, -EISDIR, "%s: is a directory", op->to);
	if (s->kind != MODEL_KIND_LEAF && d->kind == MODEL_KIND_LEAF)
		return tree_fail(op->err, -ENOTDIR, "%s: not a directory", op->to);
	if (s->kind != MODEL_KIND_LEAF && !d->empty)
		return tree_fail(op->err, -ENOTEMPTY, "%s: directory not empty", op->to);
	return 0;
}

/* Saving a leaf as NAME.json: its text is the new document of NAME. */
static int rename_onto_view(struct store_txn *txn, const struct rename_op *op,
			    const struct tree_path *src, const struct tree_node *s,
			    const struct tree_path *dst)
{
	struct tree_node d;
	uint64_t size;
	char *text;
	int ret;

	if (s->kind != MODEL_KIND_LEAF)
		return tree_fail(op->err, -EISDIR, "%s: a directory cannot replace a view",
				 op->from);
	if (op->flags & MODEL_RENAME_NOREPLACE) {
		ret = tree_lookup(txn, dst->key, dst->len, &d);
		if (ret < 0)
			return ret;
		if (d.exists)
			return tree_fail(op->err, -EEXIST, "%s: already exists", op->to);
	}
	size = leaf_text_size(&s->leaf);
	text = malloc(size + 1);
	if (!text)
		return tree_fail(op->err, -ENOMEM, "%s: out of memory", op->from);
	leaf_text_read(&s->leaf, text, size, 0);
	/* The source goes first: it may sit inside the subtree being replaced. */
	ret = tree_remove(txn, src->key, src->len);
	if (ret == 0)
		ret = tree_keep_parent(txn, src->key, src->parent_len);
	if (ret == 0)
		ret = attr_delete_subtree(txn, src->key, src->len);
	if (ret == 0)
		ret = attr_touch_dir(txn, src->key, src->parent_len, tree_now_ns());
	if (ret == 0)
		ret = doc_write(txn, dst, text, size, 0, op->who, NULL, NULL, op->err);
	if (ret == 0)
		ret = attr_prune(txn, dst->key, dst->len);
	free(text);
	return ret;
}

static bool is_inside(const struct tree_path *outer, const struct tree_path *inner)
{
	return inner->len > outer->len && memcmp(inner->key, outer->key, outer->len) == 0 &&
	       inner->key[outer->len] != 0xFF;
}

/*
 * The attribute records follow the data: the target's are dropped, the
 * source's move, the moved node's ctime and both directories' mtimes
 * become now (ext4 does the same).
 */
static int rename_attrs(struct store_txn *txn, const struct tree_path *src,
			const struct tree_path *dst)
{
	int64_t now = tree_now_ns();
	struct model_attr c = { .have = MODEL_ATTR_CTIME, .ctime_ns = now };
	int ret = attr_delete_subtree(txn, dst->key, dst->len);

	if (ret == 0)
		ret = attr_move_subtree(txn, src->key, src->len, dst->key, dst->len);
	if (ret == 0)
		ret = attr_merge(txn, dst->key, dst->len, &c);
	if (ret == 0)
		ret = attr_touch_dir(txn, src->key, src->parent_len, now);
	if (ret == 0 && (dst->parent_len != src->parent_len ||
			 memcmp(dst->key, src->key, src->parent_len) != 0))
		ret = attr_touch_dir(txn, dst->key, dst->parent_len, now);
	return ret;
}

static int rename_move(struct store_txn *txn, struct rename_op *op,
		       const struct tree_path *src, const struct tree_node *s,
		       const struct tree_path *dst)
{
	enum model_type types[2];
	struct tree_node d;
	bool retype;
	int count, ret = tree_lookup(txn, dst->key, dst->len, &d);

	if (ret < 0)
		return ret;
	ret = replace_check(op, s, &d);
	if (ret < 0)
		return ret;
	count = s->kind == MODEL_KIND_LEAF ? table_field_types(txn, dst->key, dst->len, types) : 0;
	if (count < 0)
		return count;
	retype = retypes(s, &d, types, count);
	if (d.exists && !(retype && d.kind == MODEL_KIND_LEAF))
		ret = tree_remove(txn, dst->key, dst->len);
	else if (!d.exists)
		ret = tree_attach(txn, dst, op->err);
	if (ret == 0 && retype)
		ret = put_typed_leaf(txn, dst, &s->leaf, d.exists ? &d.leaf : NULL, types, count);
	else if (ret == 0)
		ret = copy_subtree(txn, src, dst, op->err);
	if (ret == 0)
		ret = tree_remove(txn, src->key, src->len);
	if (ret == 0)
		ret = tree_keep_parent(txn, src->key, src->parent_len);
	if (ret == 0)
		ret = rename_attrs(txn, src, dst);
	/* a container leaves its directory; it joins the other unless it replaced one */
	if (ret == 0 && s->kind != MODEL_KIND_LEAF) {
		op->moved.from_dirs = -1;
		op->moved.to_dirs = d.exists ? 0 : 1;
	}
	return ret;
}

static int rename_txn(struct store_txn *txn, void *arg)
{
	struct rename_op *op = arg;
	struct tree_path *src, *dst;
	struct tree_node s;
	int ret = -ENOMEM;

	tree_clear(op->err);
	op->moved = (struct model_moved){ .known = true };	/* a run may be retried */
	src = malloc(sizeof(*src));
	dst = malloc(sizeof(*dst));
	if (!src || !dst)
		goto out_free;
	ret = tree_resolve(txn, op->from, 0, src, op->err);
	if (ret == 0)
		ret = tree_resolve(txn, op->to, TREE_FOR_CREATE, dst, op->err);
	if (ret == 0)
		ret = tree_get(txn, src, &s, op->err);
	if (ret < 0)
		goto out_free;
	if (src->is_view) {
		/*
		 * Not EINVAL: mv reads that as "a subdirectory of itself". A view
		 * is a rendering of its node, which moves by its own name.
		 */
		ret = tree_fail(op->err, -EPERM, "%s: a view cannot be moved; move the document "
				"by its name without .json", op->from);
		goto out_free;
	}
	if (src->len == 0 || dst->len == 0) {
		ret = tree_fail(op->err, -EINVAL, "%s: cannot move the root", op->from);
		goto out_free;
	}
	if (is_inside(src, dst)) {
		ret = tree_fail(op->err, -EINVAL, "%s: cannot move into itself", op->to);
		goto out_free;
	}
	ret = table_check_move(txn, src->key, src->len, op->from, op->err);
	if (ret < 0)
		goto out_free;
	if (dst->is_view) {
		op->moved.known = false;
		ret = rename_onto_view(txn, op, src, &s, dst);
	}
	else if (dst->len != src->len || memcmp(dst->key, src->key, src->len) != 0)
		ret = rename_move(txn, op, src, &s, dst);
out_free:
	free(dst);
	free(src);
	return ret;
}

int model_rename(struct model *m, const char *from, const char *to, unsigned flags,
		 struct model_error *err)
{
	return model_rename_as(m, from, to, flags, NULL, NULL, err);
}

int model_rename_as(struct model *m, const char *from, const char *to, unsigned flags,
		    const struct model_cred *who, struct model_moved *moved,
		    struct model_error *err)
{
	struct rename_op op = { .from = from, .to = to, .flags = flags, .who = who, .err = err };
	int ret;

	if (flags & MODEL_RENAME_EXCHANGE)
		return tree_fail(err, -EINVAL, "%s: exchanging names is not supported", from);
	if (flags & MODEL_RENAME_LATER)
		ret = tree_write_later(m, from, rename_txn, &op, err);
	else
		ret = tree_write(m, from, rename_txn, &op, err);
	if (ret == 0 && moved)
		*moved = op.moved;
	return ret;
}

/* ---- types ---- */

/*
 * The key k (child element e of p ending at elem_end) re-keyed for the
 * other kind into key (room for STORE_KEY_MAX + 1 bytes): its length, or
 * -ENAMETOOLONG.
 */
static int rekey_key(const struct tree_path *p, const uint8_t *k, size_t k_len,
		     const struct tuple_elem *e, size_t elem_end, bool to_array, uint8_t *key)
{
	char raw[STORE_KEY_MAX], num[NUMBER_TEXT_MAX];
	size_t rest = k_len - elem_end;
	struct tuple_writer w;
	int64_t index = 0;

	tuple_writer_init(&w, key, STORE_KEY_MAX + 1);
	memcpy(key, p->key, p->len);
	w.len = p->len;
	if (to_array) {
		tuple_elem_copy(e, raw);
		tree_name_index(raw, e->len, &index);
		tuple_put_int(&w, index);
	} else {
		tuple_put_string(&w, num, number_format_integer(e->integer, num));
	}
	if (w.overflow || w.len + rest > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	memcpy(key + w.len, k + elem_end, rest);
	return (int)(w.len + rest);
}

/* Writes the key k (child element e ending at elem_end) re-keyed for the other kind. */
static int rekey_one(struct store_txn *txn, const struct tree_path *p, const struct store_val *k,
		     const struct store_val *v, const struct tuple_elem *e, size_t elem_end,
		     bool to_array, struct strbuf *val)
{
	uint8_t key[STORE_KEY_MAX + 1];
	int len = rekey_key(p, k->data, k->len, e, elem_end, to_array, key);
	int ret;

	if (len < 0)
		return len;
	/* Re-sealed for its new key, into val: the put may move the page under v. */
	strbuf_reset(val);
	ret = leaf_record_rekey(store_txn_format(txn), k->data, k->len, key, (size_t)len,
				v->data, v->len, val);
	if (ret < 0)
		return ret == -ENOMEM ? ret : -EIO;
	ret = table_touch(txn, key, (size_t)len, false);
	return ret < 0 ? ret : store_put(txn, STORE_SPACE_DATA, key, (size_t)len, val->buf,
					 val->len);
}

struct rekey_attr_arg {
	const struct tree_path *p;
	bool to_array;
};

/*
 * An attr_rekey_fn: the new key of a node under p whose child element is
 * of the old kind (a name for an array, an index for an object).
 */
static int rekey_attr_key(void *arg, const uint8_t *key, size_t len, uint8_t *out,
			  size_t *out_len)
{
	const struct rekey_attr_arg *a = arg;
	uint8_t buf[STORE_KEY_MAX + 1];
	struct tuple_reader r;
	struct tuple_elem e;
	int new_len;

	if (len <= a->p->len)
		return 0;
	tuple_reader_init(&r, key + a->p->len, len - a->p->len);
	if (tuple_next(&r, &e) != 1)
		return 0;	/* not a node's key: kvfs check reports it */
	if ((e.type == TUPLE_TYPE_INT) == a->to_array ||
	    (e.type != TUPLE_TYPE_INT && e.type != TUPLE_TYPE_STRING))
		return 0;	/* already of the new kind */
	if (a->to_array) {
		char raw[STORE_KEY_MAX];
		int64_t index;

		tuple_elem_copy(&e, raw);
		if (!tree_name_index(raw, e.len, &index))
			return 0;	/* no node: check_indices refused any other name */
	}
	new_len = rekey_key(a->p, key, len, &e, a->p->len + r.pos, a->to_array, buf);
	if (new_len < 0)
		return 0;	/* no node: the data re-key refused such a key first */
	memcpy(out, buf, (size_t)new_len);
	*out_len = (size_t)new_len;
	return 1;
}

/*
 * Re-keys every key under p: index i <-> name "i". The new keys of an
 * array sort after every string key, and those of an object before every
 * index, so one forward scan meets each old key once.
 */
static int rekey_children(struct store_txn *txn, const struct tree_path *p, bool to_array)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct tuple_reader r;
	struct tuple_elem e;
	struct strbuf val;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, p->key, p->len, &scan);

	if (ret < 0)
		return ret;
	strbuf_init(&val);
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (k.len <= p->len || ((const uint8_t *)k.data)[p->len] == 0xFF)
			break;
		tuple_reader_init(&r, (const uint8_t *)k.data + p->len, k.len - p->len);
		if (tuple_next(&r, &e) != 1) {
			ret = -EIO;
			break;
		}
		if ((e.type == TUPLE_TYPE_INT) == to_array) {
			if (to_array) {
				ret = 0;
				break;	/* the keys this pass wrote */
			}
			continue;
		}
		ret = rekey_one(txn, p, &k, &v, &e, p->len + r.pos, to_array, &val);
		if (ret < 0)
			break;
	}
	strbuf_release(&val);
	store_scan_close(scan);
	return ret;
}

/* Deletes the children of p named by strings (ints false) or by indices. */
static int delete_children(struct store_txn *txn, const struct tree_path *p, bool ints)
{
	uint8_t buf[STORE_KEY_MAX + 1];
	int ret = table_touch(txn, p->key, p->len, true);

	memcpy(buf, p->key, p->len);
	for (int code = ints ? 0x14 : 0x02; code <= (ints ? 0x1c : 0x02) && ret >= 0; code++) {
		buf[p->len] = (uint8_t)code;
		ret = store_del_prefix(txn, STORE_SPACE_DATA, buf, p->len + 1, NULL);
		if (ret == -ENOENT)
			ret = 0;
	}
	return ret;
}

/*
 * An object becomes an array only when every name is a canonical index;
 * gaps are kept (a sparse array, as `rm a/1` leaves one), so that a copy
 * of one restored by cp -a or tar, which set the kind after the children,
 * gets it back exactly.
 */
static int check_indices(struct store_txn *txn, const struct tree_path *p, struct model_error *err)
{
	char raw[STORE_KEY_MAX];
	struct store_scan *scan;
	struct tree_child c;
	int64_t index;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, p->key, p->len, &scan);

	if (ret < 0)
		return ret;
	for (ret = tree_child_first(scan, p->key, p->len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, p->len, &c)) {
		if (c.elem.type == TUPLE_TYPE_STRING)
			tuple_elem_copy(&c.elem, raw);
		if (c.elem.type != TUPLE_TYPE_STRING || !tree_name_index(raw, c.elem.len, &index)) {
			ret = -EINVAL;
			break;
		}
	}
	store_scan_close(scan);
	if (ret == -EINVAL)
		return tree_fail(err, ret, "%s: a name is not an array index (0, 1, 2...)",
				 p->text);
	return ret;
}

static int set_kind(struct store_txn *txn, const struct rename_op *op, const struct tree_path *p,
		    const struct tree_node *n, bool to_array)
{
	int ret;

	if ((n->kind == MODEL_KIND_ARRAY) == to_array)
		return 0;
	if (n->kind == MODEL_KIND_LEAF)
		return tree_fail(op->err, -EINVAL, "%s: a leaf cannot become %s", op->from,
				 op->type);
	if (p->len == 0)
		return tree_fail(op->err, -EINVAL, "%s: the root is always an object", op->from);
	/* a table's declaration stays at its key: it would name nothing, or an array */
	ret = table_check_kind(txn, p->key, p->len, op->from, op->err);
	if (ret < 0)
		return ret;
	if (n->marker)
		return tree_put_marker(txn, p->key, p->len,
				       to_array ? MODEL_KIND_ARRAY : MODEL_KIND_OBJECT);
	if (to_array) {
		ret = check_indices(txn, p, op->err);
		if (ret < 0)
			return ret;
	}
	ret = rekey_children(txn, p, to_array);
	if (ret == 0)
		ret = delete_children(txn, p, !to_array);
	if (ret == 0)
		ret = attr_rekey_subtree(txn, p->key, p->len, rekey_attr_key,
					 &(struct rekey_attr_arg){ .p = p, .to_array = to_array });
	return ret;
}

static int set_leaf_type(struct store_txn *txn, const struct rename_op *op,
			 const struct tree_path *p, const struct tree_node *n, enum model_type type)
{
	uint64_t size;
	struct leaf leaf;
	char *text;
	int ret;

	if (n->kind != MODEL_KIND_LEAF)
		return tree_fail(op->err, -EISDIR, "%s: a directory cannot become %s", op->from,
				 op->type);
	size = leaf_text_size(&n->leaf);
	text = malloc(size + 1);
	if (!text)
		return -ENOMEM;
	leaf_text_read(&n->leaf, text, size, 0);
	/* type 0 and no old leaf: inferred as for a new file (string, or bytes) */
	ret = leaf_from_text(text, size, true, NULL, type, n->leaf.mtime_ns, &leaf);
	if (ret < 0)
		tree_fail_reason(op->err, ret, ret == -EINVAL ? MODEL_REASON_TYPE_MISMATCH :
				 MODEL_REASON_NONE, "%s: the value is not a valid %s", op->from,
				 op->type ? op->type : model_type_name(type));
	else
		ret = tree_put_leaf(txn, p->key, p->len, &leaf);
	free(text);
	return ret;
}

static int set_type_txn(struct store_txn *txn, void *arg)
{
	struct rename_op *op = arg;
	enum model_type type;
	struct tree_path p;
	struct tree_node n;
	int ret;

	tree_clear(op->err);
	ret = tree_find(txn, op->from, &p, &n, op->err);
	if (ret < 0)
		return ret;
	if (p.is_view)
		return tree_fail(op->err, -EINVAL, "%s: a view has no type to set", op->from);
	if (!op->type)	/* reset: a directory becomes an object, a leaf is inferred */
	{
		if (n.kind == MODEL_KIND_LEAF)
			return set_leaf_type(txn, op, &p, &n, 0);
		return set_kind(txn, op, &p, &n, false);
	}
	/* children re-keyed ("0" <-> 0) take their attribute records and deadlines */
	if (strcmp(op->type, "object") == 0 || strcmp(op->type, "array") == 0)
		return set_kind(txn, op, &p, &n, strcmp(op->type, "array") == 0);
	if (model_type_parse(op->type, &type) < 0)
		return tree_fail(op->err, -EINVAL, "%s: unknown type %s", op->from, op->type);
	return set_leaf_type(txn, op, &p, &n, type);
}

int model_set_type(struct model *m, const char *path, const char *name, struct model_error *err)
{
	struct rename_op op = { .from = path, .type = name, .err = err };

	return tree_write(m, path, set_type_txn, &op, err);
}

int model_set_type_later(struct model *m, const char *path, const char *name,
			 struct model_error *err)
{
	struct rename_op op = { .from = path, .type = name, .err = err };

	return tree_write_later(m, path, set_type_txn, &op, err);
}

int model_reset_type(struct model *m, const char *path, struct model_error *err)
{
	struct rename_op op = { .from = path, .type = NULL, .err = err };

	return tree_write(m, path, set_type_txn, &op, err);
}
