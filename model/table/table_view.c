/*
 * model/table/table_view.c - the reserved '@' names inside a table, as the mount
 * shows them: PATH/@schema.json (the schema, writable), PATH/@NAME/ (an
 * index's distinct values, then one directory per key level down to a
 * symlink per row) and PATH/@NAME/@range/FROM/TO/ (one range scan).
 * Everything here is derived from the index space at the moment it is read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

#define TVIEW_COMPS_MAX (2 + TABLE_INDEX_FIELDS_MAX + TABLE_KEY_DEPTH_MAX + 2)

enum tview_kind {
	TVIEW_SCHEMA = 1,	/* @schema.json */
	TVIEW_LEVEL,		/* a directory of distinct next elements under prefix */
	TVIEW_RANGE_PART,	/* @range or @range/FROM: directories, listed empty */
	TVIEW_RANGE,		/* @range/FROM/TO */
	TVIEW_LINK,		/* a row's symlink */
};

struct tview {
	enum tview_kind kind;
	struct table_schema *s;	/* heap */
	const struct table_index *x;
	int nvalues;		/* value elements fixed in prefix */
	int nkeys;		/* key elements fixed in prefix */
	struct strbuf prefix;	/* (id, values..., keys...) of this directory or link */
	struct strbuf lo, hi;	/* a range: (id, FROM) and (id, TO) + 0xff */
	struct strbuf last;	/* where the next fill resumes (empty: the start) */
	char *table_path;	/* heap: the table's path */
	char *path;		/* heap: this view's path, for inode numbers */
	char (*keys)[TREE_NAME_MAX];	/* a range: the key levels named after TO (heap) */
	uint64_t *seen;		/* a range's directory: names handed out (hash set, heap) */
	size_t nseen, cap_seen;
};

void tview_free(struct tview *v)
{
	if (!v)
		return;
	free(v->s);
	free(v->table_path);
	free(v->path);
	free(v->keys);
	free(v->seen);
	strbuf_release(&v->prefix);
	strbuf_release(&v->lo);
	strbuf_release(&v->hi);
	strbuf_release(&v->last);
	free(v);
}

/* The offset of the next component beginning with '@' from `from`, or -1. */
static ssize_t next_at(const char *path, size_t from)
{
	for (size_t i = from; path[i]; i++)
		if (path[i] == '@' && (i == 0 || path[i - 1] == '/'))
			return (ssize_t)i;
	return -1;
}

int tview_find(struct store_txn *txn, const char *path, size_t *at)
{
	ssize_t i;

	for (i = next_at(path, 0); i >= 0; i = next_at(path, (size_t)i + 1)) {
		struct model_error quiet;
		struct tree_path p;
		char *parent;
		int ret;

		if (i == 0)
			continue;	/* the root is never a table */
		parent = strndup(path, (size_t)i);
		if (!parent)
			return -ENOMEM;
		/* a parent that does not resolve holds no table: the caller says why */
		ret = tree_resolve(txn, parent, 0, &p, &quiet);
		free(parent);
		if (ret < 0 || p.is_view)
			return 0;
		ret = table_is_at(txn, p.key, p.len);
		if (ret != 0) {
			*at = (size_t)i;
			return ret;
		}
	}
	return 0;
}

int tview_is_schema(struct store_txn *txn, const char *path)
{
	const char *slash = strrchr(path, '/');
	struct model_error quiet;
	struct tree_path p;
	struct tree_node n;
	size_t at;
	int ret = tview_find(txn, path, &at);

	if (ret != 0)
		return ret < 0 ? ret : strcmp(path + at, "@schema.json") == 0;
	/* DIR/@schema.json declares DIR a table (docs/TABLES.md), unless it is the
	 * JSON view of an existing key "@schema" of a plain tree */
	if (strcmp(slash ? slash + 1 : path, "@schema.json") != 0)
		return 0;
	if (tree_resolve(txn, path, 0, &p, &quiet) < 0)
		return 0;
	ret = tree_lookup(txn, p.key, p.len, &n);
	return ret < 0 ? ret : !n.exists;
}

/* Splits the components after the '@' one (inclusive) into comps. */
static int split(const char *rest, char comps[][TREE_NAME_MAX], int max)
{
	int n = 0;

	while (*rest) {
		const char *slash = strchr(rest, '/');
		size_t len = slash ? (size_t)(slash - rest) : strlen(rest);

		if (len) {
			if (n == max || len >= TREE_NAME_MAX)
				return -ENOENT;
			memcpy(comps[n], rest, len);
			comps[n++][len] = '\0';
		}
		rest += len + (slash ? 1 : 0);
	}
	return n;
}

static int has_entries(struct store_txn *txn, const struct strbuf *prefix)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, prefix->buf, prefix->len, &scan);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	/* 0xff after the prefix: a longer string sharing the prefix, not under it */
	while ((ret = store_scan_next(scan, &k, &v)) == 1)
		if (k.len == prefix->len || ((const uint8_t *)k.data)[prefix->len] != 0xff)
			break;
	store_scan_close(scan);
	return ret;
}

/*
 * Appends the element a name stands for: a value of field (the type the
 * column declares; an undeclared one tries the name's natural reading, then
 * a string) or a key element. 0 found, -ENOENT when no row has it.
 */
static int add_value(struct store_txn *txn, struct tview *v, const char *field, const char *name)
{
	char raw[STORE_KEY_MAX + 1];
	ssize_t n = tree_name_unescape(name, strlen(name), raw, sizeof(raw) - 1);
	size_t base = v->prefix.len;
	int ret;

	if (n < 0)
		return -ENOENT;
	if (table_value_arg(v->s, field, raw, (size_t)n, &v->prefix) == 0) {
		ret = has_entries(txn, &v->prefix);
		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
	v->prefix.len = base;
	ikey_put_string(&v->prefix, IKEY_STRING, raw, (size_t)n);
	ret = has_entries(txn, &v->prefix);
	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

static int add_key(struct store_txn *txn, struct tview *v, const char *name)
{
	char raw[STORE_KEY_MAX + 1];
	uint8_t buf[STORE_KEY_MAX];
	struct tuple_writer w;
	ssize_t n = tree_name_unescape(name, strlen(name), raw, sizeof(raw) - 1);
	int64_t idx;
	int ret;

	if (n < 0)
		return -ENOENT;
	tuple_writer_init(&w, buf, sizeof(buf));
	/* an array table's rows are integers in the key; try that reading first */
	if (tree_name_index(name, strlen(name), &idx)) {
		tuple_put_int(&w, idx);
		strbuf_add(&v->prefix, buf, w.len);
		ret = has_entries(txn, &v->prefix);
		if (ret != 0)
			return ret < 0 ? ret : 0;
		v->prefix.len -= w.len;
		tuple_writer_init(&w, buf, sizeof(buf));
	}
	tuple_put_string(&w, raw, (size_t)n);
	if (w.overflow)
		return -ENOENT;
	strbuf_add(&v->prefix, buf, w.len);
	ret = has_entries(txn, &v->prefix);
	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

static int range_open(struct tview *v, char comps[][TREE_NAME_MAX], int n);

/* The table at the path before the '@' component. */
static int open_table(struct store_txn *txn, const char *path, size_t at, struct tview *v,
		      struct model_error *err)
{
	struct tree_path p;
	struct model_error quiet;
	int ret;

	v->table_path = strndup(path, at);
	v->s = malloc(sizeof(*v->s));
	if (!v->table_path || !v->s)
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	ret = table_schema_get(txn, v->table_path, &p, v->s, &quiet);
	if (ret == -EIO)
		return tree_fail(err, ret, "%s", quiet.msg);
	if (ret < 0)
		return tree_fail(err, -ENOENT, "%s: no such file or directory (names beginning "
				 "with @ are a table's views)", path);
	return 0;
}

int tview_open(struct store_txn *txn, const char *path, size_t at, struct tview **out,
	       struct model_error *err)
{
	char (*comps)[TREE_NAME_MAX];
	struct tview *v = calloc(1, sizeof(*v));
	uint8_t id[16];
	struct tuple_writer w;
	int n, i, ret;

	comps = malloc(TVIEW_COMPS_MAX * sizeof(*comps));
	if (!v || !comps) {
		free(comps);
		free(v);
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	strbuf_init(&v->prefix);
	strbuf_init(&v->lo);
	strbuf_init(&v->hi);
	strbuf_init(&v->last);
	ret = open_table(txn, path, at, v, err);
	if (ret < 0)
		goto out_free;
	ret = n = split(path + at, comps, TVIEW_COMPS_MAX);
	if (n < 0)
		goto out_missing;
	if (strcmp(comps[0], "@schema.json") == 0 && n == 1) {
		v->kind = TVIEW_SCHEMA;
		goto out_ok;
	}
	for (i = 0; i < v->s->nidx; i++)
		if (strcmp(comps[0] + 1, v->s->idx[i].name) == 0)
			v->x = &v->s->idx[i];
	if (!v->x)
		goto out_missing;
	tuple_writer_init(&w, id, sizeof(id));
	tuple_put_int(&w, v->x->id);
	strbuf_add(&v->prefix, id, w.len);
	v->kind = TVIEW_LEVEL;
	i = 1;
	if (n > 1 && strcmp(comps[1], "@range") == 0) {
		ret = range_open(v, comps, n);
		if (ret < 0)
			goto out_missing_ret;
		goto out_ok;
	}
	for (; i < n && v->nvalues < v->x->nfields; i++, v->nvalues++) {
		ret = add_value(txn, v, v->x->fields[v->nvalues], comps[i]);
		if (ret < 0)
			goto out_missing_ret;
	}
	for (; i < n && v->nkeys < v->s->key_depth; i++, v->nkeys++) {
		ret = add_key(txn, v, comps[i]);
		if (ret < 0)
			goto out_missing_ret;
	}
	if (i < n)
		goto out_missing;
	if (v->nkeys == v->s->key_depth)
		v->kind = TVIEW_LINK;
out_ok:
	free(comps);
	v->path = strdup(path);
	if (!v->path) {
		tview_free(v);
		return tree_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	*out = v;
	return 0;

out_missing_ret:
	if (ret != -ENOENT) {
		tree_fail(err, ret, "%s: %s", path, strerror(-ret));
		goto out_free;
	}
out_missing:
	ret = tree_fail(err, -ENOENT, "%s: no such file or directory", path);
out_free:
	free(comps);
	tview_free(v);
	return ret;
}

/* Stable per path, apart from every real node's (those hash keys). */
static uint64_t tview_ino(const struct tview *v, const char *dir, const char *name)
{
	uint64_t h = tree_ino(v->s->key, v->s->key_len, true);
	const char *parts[3] = { dir, name ? "/" : "", name ? name : "" };

	for (int p = 0; p < 3; p++)
		for (size_t i = 0; parts[p][i]; i++) {
			h ^= (uint8_t)parts[p][i];
			h *= 0x100000001b3ULL;
		}
	return h <= 1 ? h + 2 : h;
}

/* The symlink's target: `ups` times "../" back to the table, then the key path. */
static int link_target(int ups, const uint8_t *key, size_t len, size_t pos, struct strbuf *out)
{
	struct tuple_reader r;
	struct tuple_elem e;
	char raw[STORE_KEY_MAX], name[TREE_NAME_MAX];

	for (int i = 0; i < ups; i++)
		strbuf_add(out, "../", 3);
	tuple_reader_init(&r, key + pos, len - pos);
	for (int i = 0; tuple_next(&r, &e) == 1; i++) {
		if (i)
			strbuf_addc(out, '/');
		if (e.type == TUPLE_TYPE_INT) {
			snprintf(name, sizeof(name), "%lld", (long long)e.integer);
			strbuf_add(out, name, strlen(name));
		} else if (e.type == TUPLE_TYPE_STRING && e.len <= sizeof(raw)) {
			tuple_elem_copy(&e, raw);
			strbuf_add(out, name, tree_name_escape(raw, e.len, name));
		} else {
			return -EINVAL;
		}
	}
	return out->failed ? -ENOMEM : 0;
}

/* Links in value directories: one level per field, per key level but the last, and @NAME. */
static int value_ups(const struct tview *v)
{
	return 1 + v->x->nfields + v->s->key_depth - 1;
}

/* Links in a range: @NAME, @range, FROM, TO, then the key levels named. */
static int range_ups(const struct tview *v)
{
	return 4 + v->s->key_depth - 1;
}

/* Where the row's key starts in an index entry. */
static int key_start(const struct tview *v, const uint8_t *k, size_t len, size_t *pos)
{
	struct tuple_reader r;
	struct tuple_elem id;

	tuple_reader_init(&r, k, len);
	if (tuple_next(&r, &id) != 1)
		return -EINVAL;
	*pos = r.pos;
	for (int f = 0; f < v->x->nfields; f++)
		if (ikey_skip(k, len, pos) < 0)
			return -EINVAL;
	return 0;
}

/* ---- names of index elements ---- */

/* The name of the element at pos (a value, or a key element), and its end. */
static int elem_name(const uint8_t *k, size_t len, size_t pos, bool value, char *name,
		     size_t *end)
{
	char raw[STORE_KEY_MAX];
	struct tuple_reader r;
	struct tuple_elem e;
	size_t n = 0;

	if (value) {
		struct strbuf sb;

		*end = pos;
		if (ikey_skip(k, len, end) < 0)
			return -EINVAL;
		if (k[pos] == IKEY_STRING || k[pos] == IKEY_BYTES) {
			/* the raw bytes, 0x00 0xff unescaped to 0x00, before the final 0x00 */
			for (size_t i = pos + 1; i + 1 < *end && n < sizeof(raw); i++) {
				raw[n++] = (char)k[i];
				if (k[i] == 0)
					i++;
			}
			tree_name_escape(raw, n, name);
			return 0;
		}
		strbuf_init(&sb);
		if (ikey_to_text(k, len, &pos, &sb) < 0 || sb.len >= STORE_KEY_MAX) {
			strbuf_release(&sb);
			return -EINVAL;
		}
		tree_name_escape(sb.buf, sb.len, name);
		strbuf_release(&sb);
		return 0;
	}
	tuple_reader_init(&r, k + pos, len - pos);
	if (tuple_next(&r, &e) != 1)
		return -EINVAL;
	*end = pos + r.pos;
	if (e.type == TUPLE_TYPE_INT) {
		snprintf(name, TREE_NAME_MAX, "%lld", (long long)e.integer);
		return 0;
	}
	if (e.type != TUPLE_TYPE_STRING || e.len > sizeof(raw))
		return -EINVAL;
	tuple_elem_copy(&e, raw);
	tree_name_escape(raw, e.len, name);
	return 0;
}

/* ---- ranges ---- */

/* @range/FROM/TO/K1...: the bounds and the key levels named. */
static int range_open(struct tview *v, char comps[][TREE_NAME_MAX], int n)
{
	char raw[STORE_KEY_MAX + 1];
	ssize_t len;

	v->kind = n < 4 ? TVIEW_RANGE_PART : TVIEW_RANGE;
	if (n < 4)
		return n == 2 || n == 3 ? 0 : -ENOENT;
	if (n - 4 > v->s->key_depth)
		return -ENOENT;
	/* the bounds need not be values of any row: encoded as given */
	strbuf_add(&v->lo, v->prefix.buf, v->prefix.len);
	strbuf_add(&v->hi, v->prefix.buf, v->prefix.len);
	len = tree_name_unescape(comps[2], strlen(comps[2]), raw, sizeof(raw) - 1);
	if (len < 0 || table_value_arg(v->s, v->x->fields[0], raw, (size_t)len, &v->lo) < 0)
		return -ENOENT;
	len = tree_name_unescape(comps[3], strlen(comps[3]), raw, sizeof(raw) - 1);
	if (len < 0 || table_value_arg(v->s, v->x->fields[0], raw, (size_t)len, &v->hi) < 0)
		return -ENOENT;
	strbuf_addc(&v->hi, (char)0xff);	/* past every entry starting with TO */
	if (v->lo.failed || v->hi.failed)
		return -ENOMEM;
	v->nkeys = n - 4;
	if (v->nkeys) {
		v->keys = malloc((size_t)v->nkeys * sizeof(*v->keys));
		if (!v->keys)
			return -ENOMEM;
		for (int i = 0; i < v->nkeys; i++)
			memcpy(v->keys[i], comps[4 + i], TREE_NAME_MAX);
	}
	if (v->nkeys == v->s->key_depth)
		v->kind = TVIEW_LINK;
	return 0;
}

/* Adds h to the range's set of names handed out; false when it was there. */
static int seen_add(struct tview *v, uint64_t h)
{
	size_t mask;

	if (2 * (v->nseen + 1) > v->cap_seen) {
		size_t cap = v->cap_seen ? 2 * v->cap_seen : 64;
		uint64_t *grown = calloc(cap, sizeof(*grown)), *old = v->seen;
		size_t old_cap = v->cap_seen;

		if (!grown)
			return -ENOMEM;
		v->seen = grown;
		v->cap_seen = cap;
		v->nseen = 0;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i])
				seen_add(v, old[i]);
		free(old);
	}
	h |= 1;		/* 0 marks an empty slot */
	mask = v->cap_seen - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (v->seen[i] == h)
			return 0;
		if (!v->seen[i]) {
			v->seen[i] = h;
			v->nseen++;
			return 1;
		}
	}
}

/*
 * One scan of [FROM, TO]: rows whose key starts with the key levels named
 * after TO. Lists the next level (links at the last, each name once), or,
 * with fn NULL, sets *found when some row matches (a stat).
 */
static int range_scan(struct model *m, struct store_txn *txn, struct tview *v,
		      model_list_fn fn, void *arg, bool *found)
{
	struct store_scan *scan;
	struct store_val k, val;
	char name[TREE_NAME_MAX];
	struct model_node node;
	struct strbuf t;
	size_t pos, end;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, v->prefix.buf, v->prefix.len, &scan);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	strbuf_init(&t);
	ret = v->last.len && fn ? store_scan_seek(scan, v->last.buf, v->last.len) :
	      store_scan_seek(scan, v->lo.buf, v->lo.len);
	while (ret == 0 && (ret = store_scan_next(scan, &k, &val)) == 1) {
		size_t n = k.len < v->hi.len ? k.len : v->hi.len;
		int c = memcmp(k.data, v->hi.buf, n), i;
		bool is_link;

		ret = 0;
		if (c > 0 || (c == 0 && k.len > v->hi.len))
			break;
		if (key_start(v, k.data, k.len, &pos) < 0)
			continue;
		for (i = 0, end = pos; i < v->nkeys; i++, pos = end)
			if (elem_name(k.data, k.len, pos, false, name, &end) < 0 ||
			    strcmp(name, v->keys[i]) != 0)
				break;
		if (i < v->nkeys)
			continue;
		if (!fn) {
			*found = true;
			break;
		}
		if (elem_name(k.data, k.len, pos, false, name, &end) < 0)
			continue;
		is_link = v->nkeys + 1 == v->s->key_depth;
		if (!is_link) {
			ret = seen_add(v, tree_ino((const uint8_t *)name, strlen(name), false));
			if (ret <= 0)
				continue;	/* handed out already (or no memory: ret < 0) */
			ret = 0;
		}
		memset(&node, 0, sizeof(node));
		node.kind = is_link ? MODEL_KIND_LINK : MODEL_KIND_OBJECT;
		node.derived = true;
		node.mtime_ns = m->created_ns;
		node.ino = tview_ino(v, v->path, name);
		if (is_link) {
			size_t kpos;

			t.len = 0;
			if (key_start(v, k.data, k.len, &kpos) == 0)
				link_target(range_ups(v), k.data, k.len, kpos, &t);
			node.size = t.len;
		}
		if (fn(arg, name, &node)) {
			ret = 1;
			break;
		}
		v->last.len = 0;
		strbuf_add(&v->last, k.data, k.len);
		strbuf_addc(&v->last, 0);	/* just past this entry */
	}
	strbuf_release(&t);
	store_scan_close(scan);
	return ret;
}

/* A range's link: the row in the range with its key (one scan of the range). */
static int range_link(struct store_txn *txn, struct tview *v, struct strbuf *target)
{
	struct store_scan *scan;
	struct store_val k, val;
	char name[TREE_NAME_MAX];
	size_t pos, kpos, end;
	bool found = false;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, v->prefix.buf, v->prefix.len, &scan);

	if (ret < 0)
		return ret;
	ret = store_scan_seek(scan, v->lo.buf, v->lo.len);
	while (!found && ret == 0 && (ret = store_scan_next(scan, &k, &val)) == 1) {
		size_t n = k.len < v->hi.len ? k.len : v->hi.len;
		int c = memcmp(k.data, v->hi.buf, n), i;

		ret = 0;
		if (c > 0 || (c == 0 && k.len > v->hi.len))
			break;
		if (key_start(v, k.data, k.len, &kpos) < 0)
			continue;
		for (i = 0, pos = kpos; i < v->nkeys; i++, pos = end)
			if (elem_name(k.data, k.len, pos, false, name, &end) < 0 ||
			    strcmp(name, v->keys[i]) != 0)
				break;
		found = i == v->nkeys;
		if (found)
			ret = link_target(range_ups(v), k.data, k.len, kpos, target);
	}
	store_scan_close(scan);
	if (ret < 0)
		return ret;
	return found ? 0 : -ENOENT;
}

/* ---- stat, text ---- */

/* A value directory's link: the index entry under its prefix. */
static int value_link(struct store_txn *txn, struct tview *v, struct strbuf *target)
{
	struct store_scan *scan;
	struct store_val k, val;
	size_t pos;
	int ret = store_scan_open(txn, STORE_SPACE_INDEX, v->prefix.buf, v->prefix.len, &scan);

	if (ret < 0)
		return ret;
	ret = store_scan_next(scan, &k, &val);
	if (ret == 1)
		ret = key_start(v, k.data, k.len, &pos) ?:
		      link_target(value_ups(v), k.data, k.len, pos, target);
	else if (ret == 0)
		ret = -ENOENT;
	store_scan_close(scan);
	return ret < 0 ? ret : 0;
}

int tview_text(struct store_txn *txn, struct tview *v, struct strbuf *out,
	       struct model_error *err)
{
	struct json_writer w;
	int ret;

	if (v->kind == TVIEW_SCHEMA) {
		json_writer_init(&w, out, NULL, true);
		table_show_json(v->s, &w);
		ret = json_writer_finish(&w);
		return ret < 0 ? tree_fail(err, ret, "%s: %s", v->path, strerror(-ret)) : 0;
	}
	if (v->kind != TVIEW_LINK)
		return tree_fail(err, -EISDIR, "%s: is a directory", v->path);
	ret = v->lo.len ? range_link(txn, v, out) : value_link(txn, v, out);
	if (ret == -ENOENT)
		return tree_fail(err, ret, "%s: no such file or directory", v->path);
	return ret < 0 ? tree_fail(err, ret, "%s: %s", v->path, strerror(-ret)) : 0;
}

int tview_stat(struct model *m, struct store_txn *txn, struct tview *v, struct model_node *out,
	       struct model_error *err)
{
	struct strbuf sb;
	bool found = false;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->ino = tview_ino(v, v->path, NULL);
	out->mtime_ns = m->created_ns;
	out->derived = true;
	out->kind = MODEL_KIND_OBJECT;
	strbuf_init(&sb);
	if (v->kind == TVIEW_SCHEMA || v->kind == TVIEW_LINK) {
		ret = tview_text(txn, v, &sb, err);
		out->kind = v->kind == TVIEW_SCHEMA ? MODEL_KIND_VIEW : MODEL_KIND_LINK;
	} else if (v->kind == TVIEW_RANGE && v->nkeys) {
		/* a key level inside a range: some row in the range must have it */
		ret = range_scan(m, txn, v, NULL, NULL, &found);
		if (ret == 0 && !found)
			ret = tree_fail(err, -ENOENT, "%s: no such file or directory", v->path);
	}
	out->size = sb.len;
	strbuf_release(&sb);
	return ret;
}

/* ---- listing ---- */

int tview_fill(struct model *m, struct store_txn *txn, struct tview *v, model_list_fn fn,
	       void *arg)
{
	struct store_scan *scan;
	struct store_val k, val;
	char name[TREE_NAME_MAX];
	struct model_node node;
	struct strbuf t;
	size_t end;
	bool value;
	int ret;

	if (v->kind == TVIEW_RANGE)
		return range_scan(m, txn, v, fn, arg, NULL);
	if (v->kind != TVIEW_LEVEL)
		return 0;	/* @range and @range/FROM are listed empty */
	value = v->nvalues < v->x->nfields;
	ret = store_scan_open(txn, STORE_SPACE_INDEX, v->prefix.buf, v->prefix.len, &scan);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	strbuf_init(&t);
	if (v->last.len)
		ret = store_scan_seek(scan, v->last.buf, v->last.len);
	while (ret == 0 && (ret = store_scan_next(scan, &k, &val)) == 1) {
		const uint8_t *kb = k.data;

		ret = 0;
		if (k.len > v->prefix.len && kb[v->prefix.len] == 0xff)
			continue;	/* a longer string sharing the prefix */
		if (k.len <= v->prefix.len ||
		    elem_name(kb, k.len, v->prefix.len, value, name, &end) < 0)
			continue;
		memset(&node, 0, sizeof(node));
		node.derived = true;
		node.mtime_ns = m->created_ns;
		node.ino = tview_ino(v, v->path, name);
		node.kind = MODEL_KIND_OBJECT;
		if (!value && v->nkeys + 1 == v->s->key_depth) {
			size_t pos;

			node.kind = MODEL_KIND_LINK;
			t.len = 0;
			if (key_start(v, kb, k.len, &pos) == 0)
				link_target(value_ups(v), kb, k.len, pos, &t);
			node.size = t.len;
		}
		if (fn(arg, name, &node)) {
			ret = 1;
			break;
		}
		/* past every entry under this name: one seek per name listed */
		v->last.len = 0;
		strbuf_add(&v->last, kb, end);
		strbuf_addc(&v->last, (char)0xff);
		ret = store_scan_seek(scan, v->last.buf, v->last.len);
	}
	strbuf_release(&t);
	store_scan_close(scan);
	return ret;
}

void tview_rewind(struct tview *v)
{
	v->last.len = 0;
	if (v->seen)
		memset(v->seen, 0, v->cap_seen * sizeof(*v->seen));
	v->nseen = 0;
}
