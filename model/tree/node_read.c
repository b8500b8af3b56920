/*
 * model/tree/node_read.c - the per-node reads of model.h: stat (views and
 * tables' @ names included), readlink, read, the type name, and directory
 * listing. Each is one read transaction; node.c has the handle and writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* ---- reading ---- */

/*
 * The containers among the children of key[0..len), into *out: 1 when
 * counted; 0 when the children outnumber *budget (NULL: no bound), which
 * they use up, and the count is given up; <0 on error.
 */
static int count_subdirs(struct store_txn *txn, const uint8_t *key, size_t len, uint32_t *budget,
			 uint32_t *out)
{
	struct store_scan *scan;
	struct tree_child c;
	int ret;

	*out = 0;
	ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);
	if (ret < 0)
		return ret;
	store_scan_expect_children(scan);	/* each child's kind is all it reads */
	for (ret = tree_child_first(scan, key, len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, len, &c)) {
		if (budget && (*budget)-- == 0) {
			*budget = 0;
			*out = 0;
			break;
		}
		if (tree_child_is_container(&c))
			(*out)++;
	}
	store_scan_close(scan);
	return ret < 0 ? ret : ret == 0;
}

/*
 * A view's stat. Its size is that of the text who may read: a subtree they
 * may not read wholly is not rendered for them, and shows size 0, as the
 * text a read would give them (none).
 */
static int view_stat(struct model *m, struct store_txn *txn, const struct tree_path *p,
		     const struct model_cred *who, struct model_node *out,
		     struct model_error *err)
{
	struct tree_node n;
	uint64_t size = 0;
	int ret = tree_get(txn, p, &n, err);

	if (ret < 0)
		return ret;
	ret = perm_may_read_tree(txn, who, p->key, p->len, p->text, err);
	if (ret == -EACCES)
		tree_clear(err);	/* not theirs to read: a stat is no refusal */
	else if (ret < 0)
		return ret;
	else
		ret = view_size(m, txn, p->key, p->len, &size);
	if (ret == -EIO)
		return tree_fail_corrupt(txn, p->key, p->len, p->text, err);
	if (ret < 0 && ret != -EACCES)
		return tree_fail(err, ret, "%s: cannot render: %s", p->text, strerror(-ret));
	memset(out, 0, sizeof(*out));
	out->kind = MODEL_KIND_VIEW;
	out->ino = tree_ino(p->key, p->len, true);
	out->size = size;
	out->mtime_ns = n.kind == MODEL_KIND_LEAF ? n.leaf.mtime_ns : m->created_ns;
	out->ctime_ns = out->mtime_ns;
	/* the view of a node shows (and is guarded by) its node's mode and
	 * owner, without execute or special bits: it is a file */
	ret = attr_get(txn, p->key, p->len, &out->attr);
	if (ret < 0)
		return tree_fail(err, ret, "%s: corrupt attribute record (run kvfs check)", p->text);
	out->attr.have &= MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID;
	out->attr.mode &= 0666;
	ret = ttl_effective(txn, p->key, p->len, &out->expires_ns);
	return ret < 0 ? tree_fail(err, ret, "%s: corrupt ttl record (run kvfs check)", p->text) : 0;
}

static int stat_in(struct model *m, struct store_txn *txn, const char *path, unsigned flags,
		   const struct model_cred *who, struct model_node *out, struct model_error *err)
{
	struct tree_path p;
	struct tree_node n;
	struct model_attr a;
	int ret = tree_resolve(txn, path, 0, &p, err);

	if (ret < 0)
		return ret;
	if (p.is_view)
		return view_stat(m, txn, &p, who, out, err);
	ret = tree_get(txn, &p, &n, err);
	if (ret < 0)
		return ret;
	tree_node_fill(m, p.key, p.len, &n, out);
	ret = attr_get(txn, p.key, p.len, &a);
	if (ret < 0)
		return tree_fail(err, ret, "%s: corrupt attribute record (run kvfs check)", path);
	attr_apply(&a, out);
	ret = ttl_effective(txn, p.key, p.len, &out->expires_ns);
	if (ret < 0)
		return tree_fail(err, ret, "%s: corrupt ttl record (run kvfs check)", path);
	if ((flags & MODEL_STAT_SUBDIRS) && n.kind != MODEL_KIND_LEAF && !n.empty) {
		ret = count_subdirs(txn, p.key, p.len, NULL, &out->subdirs);
		if (ret == -EIO)	/* its scan found keys out of order, or a corrupt record */
			return tree_fail(err, ret, "%s: cannot list: the store is damaged here; run "
					 "kvfs check", path);
		if (ret < 0)
			return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	}
	return 0;
}

static int tview_stat_path(struct model *m, struct store_txn *txn, const char *path,
			   size_t at, struct model_node *out, struct model_error *err)
{
	struct tview *v;
	int ret = tview_open(txn, path, at, &v, err);

	if (ret < 0)
		return ret;
	ret = tview_stat(m, txn, v, out, err);
	tview_free(v);
	return ret;
}

/* The text of a table's @schema.json or of an index's link. */
static int tview_text_in(struct store_txn *txn, const char *path, size_t at, struct strbuf *sb,
			 struct model_error *err)
{
	struct tview *v;
	int ret = tview_open(txn, path, at, &v, err);

	if (ret < 0)
		return ret;
	ret = tview_text(txn, v, sb, err);
	tview_free(v);
	return ret;
}

int model_readlink(struct model *m, const char *path, char **out, struct model_error *err)
{
	struct store_txn *txn;
	struct strbuf sb;
	size_t at;
	int ret;

	ret = tree_read_begin(m, &txn);
	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	strbuf_init(&sb);
	/* only a table's index links are symbolic links */
	ret = tview_find(txn, path, &at);
	if (ret < 0)
		tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	else if (ret == 0 || strcmp(path + at, "@schema.json") == 0)
		ret = tree_fail(err, -EINVAL, "%s: not a symbolic link", path);
	else
		ret = tview_text_in(txn, path, at, &sb, err);
	store_txn_end(txn);
	if (ret == 0 && sb.failed)
		ret = tree_fail(err, -ENOMEM, "%s: out of memory", path);
	if (ret < 0) {
		strbuf_release(&sb);
		return ret;
	}
	*out = strbuf_detach(&sb, NULL);
	return 0;
}

int model_stat(struct model *m, const char *path, unsigned flags,
	       struct model_node *out, struct model_error *err)
{
	return model_stat_as(m, path, flags, out, NULL, err);
}

int model_stat_as(struct model *m, const char *path, unsigned flags, struct model_node *out,
		  const struct model_cred *who, struct model_error *err)
{
	struct store_txn *txn;
	size_t at;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	ret = tview_find(txn, path, &at);
	if (ret < 0)
		tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	else
		ret = ret ? tview_stat_path(m, txn, path, at, out, err) :
		      stat_in(m, txn, path, flags, who, out, err);
	store_txn_end(txn);
	return ret;
}

/*
 * Hands the text of a leaf or view at path to fn: a leaf as its borrowed
 * record, a view rendered into a buffer.
 */
typedef int (*text_fn)(void *arg, const struct leaf *leaf, const struct strbuf *view);

/*
 * The text at path handed to fn. With stream set, a view (not a table's)
 * is rendered straight into it instead, and fn is not called for it. A
 * view is rendered only when who may read its whole subtree (checked in
 * the same transaction: a chmod commits before both or after both).
 */
static int text_in(struct store_txn *txn, const char *path, text_fn fn, void *arg,
		   FILE *stream, const struct model_cred *who, struct model_error *err)
{
	struct tree_path p;
	struct tree_node n;
	struct strbuf sb;
	size_t at;
	int ret = tview_find(txn, path, &at);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	if (ret) {
		strbuf_init(&sb);
		ret = strcmp(path + at, "@schema.json") == 0 ?
		      tview_text_in(txn, path, at, &sb, err) :
		      tree_fail(err, -EINVAL, "%s: a table's index is read through its links",
				path);
		if (ret == 0)
			ret = fn(arg, NULL, &sb);
		strbuf_release(&sb);
		return ret;
	}
	ret = tree_find(txn, path, &p, &n, err);
	if (ret < 0)
		return ret;
	if (!p.is_view) {
		if (n.kind != MODEL_KIND_LEAF)
			return tree_fail(err, -EISDIR, "%s: is a directory", path);
		return fn(arg, &n.leaf, NULL);
	}
	ret = perm_may_read_tree(txn, who, p.key, p.len, path, err);
	if (ret < 0)
		return ret;
	strbuf_init(&sb);
	ret = doc_render_buf(txn, p.key, p.len, 0, &sb, stream);
	if (ret == -EIO && !(stream && ferror(stream)))
		tree_fail_corrupt(txn, p.key, p.len, path, err);
	else if (ret < 0)
		tree_fail(err, ret, "%s: cannot render: %s", path, strerror(-ret));
	else if (!stream)
		ret = fn(arg, NULL, &sb);
	strbuf_release(&sb);
	return ret;
}

static int text_run(struct model *m, const char *path, text_fn fn, void *arg, FILE *stream,
		    const struct model_cred *who, struct model_error *err)
{
	struct store_txn *txn;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	ret = text_in(txn, path, fn, arg, stream, who, err);
	store_txn_end(txn);
	return ret;
}

struct read_window {
	void *dst;
	size_t size;
	uint64_t offset;
	size_t done;
};

static int read_window_fn(void *arg, const struct leaf *leaf, const struct strbuf *view)
{
	struct read_window *rw = arg;

	if (leaf) {
		rw->done = leaf_text_read(leaf, rw->dst, rw->size, rw->offset);
		return 0;
	}
	if (rw->offset >= view->len)
		return 0;
	rw->done = view->len - rw->offset < rw->size ? view->len - rw->offset : rw->size;
	memcpy(rw->dst, view->buf + rw->offset, rw->done);
	return 0;
}

ssize_t model_read(struct model *m, const char *path, void *dst, size_t size,
		   uint64_t offset, struct model_error *err)
{
	struct read_window rw = { dst, size, offset, 0 };
	int ret = text_run(m, path, read_window_fn, &rw, NULL, NULL, err);

	return ret < 0 ? ret : (ssize_t)rw.done;
}

struct read_whole {
	char *buf;
	size_t len;
};

static int read_whole_fn(void *arg, const struct leaf *leaf, const struct strbuf *view)
{
	struct read_whole *rw = arg;
	size_t len = leaf ? leaf_text_size(leaf) : view->len;

	rw->buf = malloc(len + 1);
	if (!rw->buf)
		return -ENOMEM;
	if (leaf)
		rw->len = leaf_text_read(leaf, rw->buf, len, 0);
	else
		memcpy(rw->buf, view->buf, rw->len = len);
	rw->buf[rw->len] = '\0';
	return 0;
}

int model_read_all(struct model *m, const char *path, char **out, size_t *len,
		   struct model_error *err)
{
	return model_read_all_as(m, path, out, len, NULL, err);
}

int model_read_all_as(struct model *m, const char *path, char **out, size_t *len,
		      const struct model_cred *who, struct model_error *err)
{
	struct read_whole rw = { NULL, 0 };
	int ret = text_run(m, path, read_whole_fn, &rw, NULL, who, err);

	if (ret == -ENOMEM)
		tree_fail(err, ret, "%s: out of memory", path);
	if (ret < 0)
		return ret;
	*out = rw.buf;
	if (len)
		*len = rw.len;
	return 0;
}

/* model_read_to's fn: a leaf's text, or a table view's, written whole. */
static int write_text_fn(void *arg, const struct leaf *leaf, const struct strbuf *view)
{
	FILE *out = arg;
	char chunk[65536];
	uint64_t size = leaf ? leaf_text_size(leaf) : view->len;

	for (uint64_t off = 0; off < size;) {
		size_t n = leaf ? leaf_text_read(leaf, chunk, sizeof(chunk), off) :
			   (size - off < sizeof(chunk) ? (size_t)(size - off) : sizeof(chunk));

		if (!leaf)
			memcpy(chunk, view->buf + off, n);
		if (fwrite(chunk, 1, n, out) != n)
			return -EIO;
		off += n;
	}
	return 0;
}

int model_read_to(struct model *m, const char *path, FILE *out, struct model_error *err)
{
	return model_read_to_as(m, path, out, NULL, err);
}

int model_read_to_as(struct model *m, const char *path, FILE *out, const struct model_cred *who,
		     struct model_error *err)
{
	int ret = text_run(m, path, write_text_fn, out, out, who, err);

	if (ret == 0 && fflush(out) != 0)
		ret = -EIO;
	if (ret == -EIO && ferror(out))
		tree_fail(err, ret, "%s: cannot write the text out: %s", path, strerror(errno));
	return ret;
}

/* ---- listing ---- */

struct model_list {
	struct model *m;
	uint8_t key[STORE_KEY_MAX];
	size_t len;
	uint8_t last[STORE_KEY_MAX];	/* the last child handed out */
	size_t last_len;
	uint8_t from[STORE_KEY_MAX];	/* model_list_start_at: the first child's key, until one is handed out */
	size_t from_len;
	enum model_kind kind;	/* OBJECT or ARRAY */
	struct tview *tv;	/* a table's @ directory: listed by table_view.c */
	bool subdirs;	/* model_list_want_subdirs */
	uint32_t count_budget;	/* children list_child_subdirs may still visit in this fill */
	const char *damage;	/* static: why the last fill gave -EIO (model_list_damage) */
};

static int list_open_in(struct store_txn *txn, const char *path, struct model_list *l,
			struct model_error *err)
{
	struct tree_path p;
	struct tree_node n;
	int ret = tree_find(txn, path, &p, &n, err);

	if (ret < 0)
		return ret;
	if (p.is_view || n.kind == MODEL_KIND_LEAF)
		return tree_fail(err, -ENOTDIR, "%s: not a directory", path);
	memcpy(l->key, p.key, p.len);
	l->len = p.len;
	l->kind = n.kind;
	return 0;
}

int model_list_open(struct model *m, const char *path, struct model_list **out,
		    struct model_error *err)
{
	struct store_txn *txn;
	struct model_list *l;
	size_t at;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	l->m = m;
	ret = tree_read_begin(m, &txn);
	if (ret < 0) {
		tree_fail(err, ret, "%s: %s", path, strerror(-ret));
		goto out_free;
	}
	ret = tview_find(txn, path, &at);
	if (ret < 0) {
		tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	} else if (ret) {
		ret = tview_open(txn, path, at, &l->tv, err);
		if (ret == 0 && strcmp(path + at, "@schema.json") == 0) {
			tview_free(l->tv);
			l->tv = NULL;
			ret = tree_fail(err, -ENOTDIR, "%s: not a directory", path);
		}
	} else {
		ret = list_open_in(txn, path, l, err);
	}
	store_txn_end(txn);
	if (ret < 0)
		goto out_free;
	*out = l;
	return 0;

out_free:
	free(l);
	return ret;
}

/*
 * Where reads are local a listing counts its directories' children itself
 * for their nlink, at most this many for one directory and for one fill
 * (a readdir's worth): past that the count is left to the stat, so that a
 * plain `ls` of directories of big subtrees costs about what it did.
 */
#define LIST_COUNT_ONE 1024
#define LIST_COUNT_FILL 8192

/* Whether the transaction hides keys under key[0..len) (past their TTL): 1, 0, or <0. */
static int hides_under(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct store_val h;
	int ret = store_txn_hidden_from(txn, STORE_SPACE_DATA, key, len, &h);

	if (ret != 1)
		return ret;
	return h.len > len && memcmp(h.data, key, len) == 0;
}

/*
 * The containers a listed child holds, counted here where reads are local,
 * out of the fill's budget: 1 counted, 0 left to its stat (over the budget;
 * keys hidden under it, as stat may find it empty while a listing shows
 * it), <0 error.
 */
static int list_count_local(struct model_list *l, struct store_txn *txn,
			    const struct tree_child *c, uint32_t *subdirs)
{
	uint32_t budget = l->count_budget < LIST_COUNT_ONE ? l->count_budget : LIST_COUNT_ONE;
	uint32_t left = budget;
	int ret;

	if (!budget || !store_txn_can(txn, STORE_CAN_READ_LOCALLY))
		return 0;
	ret = hides_under(txn, c->key, c->end);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	ret = count_subdirs(txn, c->key, c->end, &left, subdirs);
	l->count_budget -= budget - left;
	return ret;
}

/*
 * How many containers a container child holds (its nlink is 2 more): none
 * when it is empty; else when the store can tell without reading it
 * (etcd), or by counting them where reads are local (LMDB), which spares
 * `ls -l` a getattr round trip per directory.
 */
static int list_child_subdirs(struct model_list *l, struct store_scan *scan,
			      const struct tree_child *c, const struct tree_node *n,
			      struct model_node *node)
{
	int ret = 0;

	if (n->kind == MODEL_KIND_LEAF)
		return 0;
	node->subdirs = 0;
	if (!n->empty && l->subdirs) {
		ret = store_scan_child_subdirs(scan, c->key, c->end, &node->subdirs);
		if (ret == 0)
			ret = list_count_local(l, store_scan_txn(scan), c, &node->subdirs);
	}
	if (ret == -ENOMEM || ret == -ESTALE)
		return ret;
	/* only a shortcut: a read that failed (or hidden keys) leaves the count to the child's stat */
	node->subdirs_known = n->empty || ret == 1;
	if (!node->subdirs_known)
		node->subdirs = 0;
	return 0;
}

/* Calls fn for one child; 1 when fn asks to stop. */
static int list_hand_out(struct model_list *l, struct store_scan *scan,
			 const struct tree_child *c, model_list_fn fn, void *arg)
{
	struct store_txn *txn = store_scan_txn(scan);
	char name[TREE_NAME_MAX];
	struct model_node node;
	struct model_attr a;
	struct tree_node n;
	int ret = tree_child_node(c, &n);

	if (ret < 0)
		return ret;
	tree_child_name(c, name);
	tree_node_fill(l->m, c->key, c->end, &n, &node);
	ret = list_child_subdirs(l, scan, c, &n, &node);
	if (ret < 0)
		return ret;
	ret = attr_get(txn, c->key, c->end, &a);
	if (ret < 0)
		return ret;
	attr_apply(&a, &node);
	ret = ttl_effective(txn, c->key, c->end, &node.expires_ns);
	if (ret < 0)
		return ret;
	if (fn(arg, name, &node))
		return 1;
	memcpy(l->last, c->key, c->end);
	l->last_len = c->end;
	return 0;
}

/*
 * The children in the order of a table's key index (model/table/table_order.c):
 * each one found in the data scan by its key, so that it is handed out as
 * in key order; one the index names but the data no longer holds is skipped.
 */
static int list_fill_ordered(struct model_list *l, struct store_scan *scan,
			     struct table_order *o, model_list_fn fn, void *arg)
{
	uint8_t child[STORE_KEY_MAX];
	struct tree_child c;
	size_t len;
	int ret;

	if (!l->last_len && l->from_len)
		ret = table_order_seek(o, l->from, l->from_len, false);
	else
		ret = l->last_len ? table_order_seek(o, l->last, l->last_len, true) : 0;
	while (ret == 0 && (ret = table_order_next(o, child, &len)) == 1) {
		ret = tree_child_at(scan, l->len, child, len, &c);
		if (ret == 1 && c.end == len && memcmp(c.key, child, len) == 0)
			ret = list_hand_out(l, scan, &c, fn, arg);
		else if (ret >= 0)
			ret = 0;
	}
	return ret;
}

static int list_fill_in(struct model_list *l, struct store_txn *txn, model_list_fn fn, void *arg)
{
	struct store_scan *scan;
	struct table_order *o = NULL;
	struct tree_child c;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, l->key, l->len, &scan);

	if (ret < 0)
		return ret;
	store_scan_expect_children(scan);	/* `ls`: no subtree is read; a child's kind is all it reads */
	/* each child's attributes and TTL, in key order: read ahead, not one by one */
	store_txn_expect_reads(txn, STORE_SPACE_ATTR, l->key, l->len);
	store_txn_expect_reads(txn, STORE_SPACE_TTL, NULL, 0);
	ret = l->kind == MODEL_KIND_OBJECT ? table_order_open(txn, l->key, l->len, false, &o) : 0;
	if (ret == 1) {
		ret = list_fill_ordered(l, scan, o, fn, arg);
		table_order_close(o);
	} else if (ret == 0 && !l->last_len && l->from_len) {
		ret = tree_child_at(scan, l->len, l->from, l->from_len, &c);
	} else if (ret == 0) {
		ret = tree_child_first(scan, l->key, l->len, l->last_len ? l->last : NULL,
				       l->last_len, &c);
	}
	while (!o && ret == 1) {
		ret = list_hand_out(l, scan, &c, fn, arg);
		if (ret != 0)
			break;
		ret = tree_child_next(scan, l->len, &c);
	}
	if (ret == -EIO)
		l->damage = store_scan_damage(scan) ? store_scan_damage(scan) :
			    "a corrupt record (bad checksum or layout)";
	store_scan_close(scan);
	return ret;
}

const char *model_list_damage(const struct model_list *list)
{
	return list->damage;
}

int model_list_fill(struct model_list *list, model_list_fn fn, void *arg)
{
	struct store_txn *txn;
	int ret = tree_read_begin(list->m, &txn);

	if (ret < 0)
		return ret;
	list->count_budget = LIST_COUNT_FILL;
	ret = list->tv ? tview_fill(list->m, txn, list->tv, fn, arg) :
	      list_fill_in(list, txn, fn, arg);
	store_txn_end(txn);
	return ret;
}

void model_list_want_subdirs(struct model_list *list, bool want)
{
	list->subdirs = want;
}

int model_list_start_at(struct model_list *list, const char *name)
{
	size_t len = strlen(name);
	char raw[STORE_KEY_MAX + 1];
	struct tuple_writer w;
	int64_t index;
	ssize_t n;

	if (list->tv)
		return -ENOTSUP;	/* a table's @ directory: listed from its rows */
	tuple_writer_init(&w, list->from + list->len, sizeof(list->from) - list->len);
	if (list->kind == MODEL_KIND_ARRAY) {
		if (!tree_name_index(name, len, &index))
			return -ENOENT;	/* an array's children are its indices */
		tuple_put_int(&w, index);
	} else {
		n = tree_name_unescape(name, len, raw, sizeof(raw));
		if (n < 0)
			return -ENOENT;
		tuple_put_string(&w, raw, (size_t)n);
	}
	if (w.overflow)
		return -ENAMETOOLONG;
	memcpy(list->from, list->key, list->len);
	list->from_len = list->len + w.len;
	list->last_len = 0;
	return 0;
}

void model_list_rewind(struct model_list *list)
{
	list->last_len = 0;
	list->from_len = 0;
	if (list->tv)
		tview_rewind(list->tv);
}

void model_list_close(struct model_list *list)
{
	if (list)
		tview_free(list->tv);
	free(list);
}

static int get_type_in(struct store_txn *txn, const char *path, char *buf, size_t cap,
		       bool *inferred, struct model_error *err)
{
	struct tree_path p;
	struct tree_node n;
	const char *name;
	int ret = tree_find(txn, path, &p, &n, err);

	if (ret < 0)
		return ret;
	*inferred = false;
	if (p.is_view) {
		name = model_kind_name(MODEL_KIND_VIEW);
	} else if (n.kind == MODEL_KIND_LEAF) {
		name = model_type_name(leaf_model_type(&n.leaf));
		*inferred = leaf_type_is_inferred(&n.leaf);
	} else {
		name = model_kind_name(n.kind);
		*inferred = n.kind == MODEL_KIND_OBJECT;
	}
	if (strlen(name) >= cap)
		return tree_fail(err, -ERANGE, "%s: buffer too small for the type", path);
	strcpy(buf, name);
	return 0;
}

int model_get_type_inferred(struct model *m, const char *path, char *buf, size_t cap,
			    bool *inferred, struct model_error *err)
{
	struct store_txn *txn;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	ret = get_type_in(txn, path, buf, cap, inferred, err);
	store_txn_end(txn);
	return ret;
}

int model_get_type(struct model *m, const char *path, char *buf, size_t cap, struct model_error *err)
{
	bool inferred;

	return model_get_type_inferred(m, path, buf, cap, &inferred, err);
}

/* Scans p's subtree for the first record that is not an empty container's marker. */
static int has_leaf_in(struct store_txn *txn, const struct tree_path *p, bool *out)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, p->key, p->len, &scan);

	if (ret < 0)
		return ret;
	*out = false;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		uint8_t tag = v.len ? ((const uint8_t *)v.data)[0] : 0;

		/* a sibling whose name continues with a NUL is not under p */
		if (k.len > p->len && ((const uint8_t *)k.data)[p->len] == 0xFF)
			break;
		if (tag != LEAF_EMPTY_OBJECT && tag != LEAF_EMPTY_ARRAY) {
			*out = true;
			break;
		}
	}
	store_scan_close(scan);
	return ret < 0 ? ret : 0;
}

int model_has_leaf(struct model *m, const char *path, bool *out, struct model_error *err)
{
	struct store_txn *txn;
	struct tree_path p;
	struct tree_node n;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	ret = tree_find(txn, path, &p, &n, err);
	if (ret == 0 && p.is_view)
		ret = tree_fail(err, -EINVAL, "%s: a view", path);
	if (ret == 0)
		ret = has_leaf_in(txn, &p, out);
	store_txn_end(txn);
	return ret;
}
