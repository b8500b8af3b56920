/*
 * model/table/table_order.c - the order of a table's rows where a key level
 * is an integer key column: the key index (named TABLE_KEY_INDEX, over the
 * key fields, kept like any index) walked as a range scan, one distinct
 * value of the listed level at a time, gives the children of that level in
 * numeric order (docs/TABLES.md, "Order of rows"). Listings (node_read.c)
 * and renderings (doc_render.c) use it; keys stay string elements. A key
 * level above the rows with no row under it yet (mkdir of a level) has no
 * entry: those follow, in key order (the tail).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"

struct table_order {
	struct table_schema s;
	const struct table_index *x;
	size_t dir_len;		/* the listed directory's key length */
	int level;		/* 0-based key level of its children */
	struct strbuf pre;	/* (id, values of the levels above) */
	struct strbuf seek;
	struct store_scan *scan;
	bool tail;		/* the index is done: children without entries */
	struct store_scan *data;	/* the tail's children, under dir */
	uint8_t last[STORE_KEY_MAX];	/* the tail's last child handed out */
	size_t last_len;
	bool from;		/* the tail starts at last, not after it */
};

const struct table_index *table_key_index(const struct table_schema *s)
{
	for (int i = 0; i < s->nidx; i++)
		if (strcmp(s->idx[i].name, TABLE_KEY_INDEX) == 0)
			return &s->idx[i];
	return NULL;
}

bool table_key_ordered(const struct table_schema *s)
{
	for (int i = 0; i < s->nkey_fields; i++)
		if (table_level_is_int(s, i))
			return true;
	return false;
}

int table_key_index_sync(struct table_schema *s, int64_t next_id, int64_t *dropped)
{
	const struct table_index *have = table_key_index(s);
	struct table_index *x;

	*dropped = 0;
	if (!have == !table_key_ordered(s))
		return 0;
	if (have) {
		*dropped = have->id;
		s->idx[have - s->idx] = s->idx[--s->nidx];
		return 0;
	}
	if (next_id < 0)
		return (int)next_id;
	if (s->nidx >= TABLE_INDEXES_MAX)
		return -ENOSPC;
	for (int i = 0; i < s->nidx; i++)	/* s may hold ids not stored yet */
		if (s->idx[i].id >= next_id)
			next_id = s->idx[i].id + 1;
	x = &s->idx[s->nidx++];
	memset(x, 0, sizeof(*x));
	strcpy(x->name, TABLE_KEY_INDEX);
	x->id = next_id;
	x->nfields = s->nkey_fields;
	memcpy(x->fields, s->key_fields, sizeof(x->fields[0]) * (size_t)s->nkey_fields);
	return 0;
}

/*
 * The table whose key level the directory dir[0..len] holds, into s: one
 * scan of the schemas under dir's first element (tables do not nest).
 * 1 with *level when found, 0 when dir is no such level.
 */
static int order_table(struct store_txn *txn, const uint8_t *dir, size_t len,
		       struct table_schema *s, int *level)
{
	struct tuple_reader r;
	struct tuple_elem e;
	struct store_scan *scan;
	struct store_val k, v;
	size_t end;
	int n, ret;

	tuple_reader_init(&r, dir, len);
	if (tuple_next(&r, &e) != 1)
		return 0;	/* the root is no table level */
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, dir, r.pos, &scan);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (k.len > len || memcmp(k.data, dir, k.len) != 0 ||
		    (k.len < len && dir[k.len] == 0xff))
			continue;
		n = table_key_count(dir, k.len, len, TABLE_KEY_DEPTH_MAX + 1, &end);
		ret = table_schema_decode(k.data, k.len, v.data, v.len, s);
		if (ret < 0 || n >= s->key_depth) {
			ret = 0;	/* a corrupt schema lists in key order; check reports it */
			break;
		}
		*level = n;
		ret = 1;
		break;
	}
	store_scan_close(scan);
	return ret < 0 ? ret : ret == 1;
}

/* o->pre, then the values key levels from..upto of key[0..len] give. */
static int child_prefix(struct table_order *o, const uint8_t *child, size_t len, int from,
			int upto, struct strbuf *out)
{
	struct tuple_elem e;

	strbuf_reset(out);
	strbuf_add(out, o->pre.buf, o->pre.len);
	for (int i = from; i <= upto; i++)
		if (table_key_elem(&o->s, child, len, i, &e) < 0 ||
		    table_key_value(&o->s, i, &e, out) != 0)
			return -EINVAL;
	return out->failed ? -ENOMEM : 0;
}

/* Whether a key level from `level` (to `deep` ? the last : itself) is an integer's. */
static bool order_needed(const struct table_schema *s, int level, bool deep)
{
	for (int i = level; i < (deep ? s->key_depth : level + 1); i++)
		if (table_level_is_int(s, i))
			return true;
	return false;
}

int table_order_open(struct store_txn *txn, const uint8_t *dir, size_t len, bool deep,
		     struct table_order **out)
{
	struct table_order *o = calloc(1, sizeof(*o));
	uint8_t id[16];
	struct tuple_writer w;
	int ret;

	if (!o)
		return -ENOMEM;
	strbuf_init(&o->pre);
	strbuf_init(&o->seek);
	ret = order_table(txn, dir, len, &o->s, &o->level);
	if (ret != 1 || !order_needed(&o->s, o->level, deep) || !(o->x = table_key_index(&o->s)))
		goto out_free;
	o->dir_len = len;
	memcpy(o->last, dir, len);	/* the tail's prefix */
	o->last_len = len;
	tuple_writer_init(&w, id, sizeof(id));
	tuple_put_int(&w, o->x->id);
	strbuf_add(&o->pre, id, w.len);
	ret = child_prefix(o, dir, len, 0, o->level - 1, &o->seek);
	if (ret < 0)
		goto out_free;
	strbuf_reset(&o->pre);
	strbuf_add(&o->pre, o->seek.buf, o->seek.len);
	ret = store_scan_open(txn, STORE_SPACE_INDEX, o->pre.buf, o->pre.len, &o->scan);
	if (ret == -ENOENT)
		ret = 0;	/* no index space (a read-only older store): key order */
	if (!o->scan)
		goto out_free;
	*out = o;
	return 1;

out_free:
	table_order_close(o);
	return ret < 0 ? ret : 0;
}

/* 1 when an index entry starts with o->seek (the index scan is moved), 0 when none. */
static int has_entry(struct table_order *o)
{
	struct store_val k, v;
	int ret = store_scan_seek(o->scan, o->seek.buf, o->seek.len);

	if (ret == 0)
		ret = store_scan_next(o->scan, &k, &v);
	return ret != 1 ? ret : k.len >= o->seek.len && !memcmp(k.data, o->seek.buf, o->seek.len);
}

int table_order_seek(struct table_order *o, const uint8_t *child, size_t len, bool after)
{
	int ret = child_prefix(o, child, len, o->level, o->level, &o->seek);

	if (ret < 0)
		return ret == -EINVAL ? 0 : ret;	/* no such child: from the start */
	if (o->level + 1 < o->s.key_depth) {	/* a level above the rows: the tail's? */
		ret = has_entry(o);
		if (ret < 0)
			return ret;
		if (ret == 0 && len <= sizeof(o->last)) {
			o->tail = true;
			memcpy(o->last, child, len);
			o->last_len = len;
			o->from = !after;
			return 0;
		}
	}
	if (after)
		strbuf_addc(&o->seek, (char)0xff);
	return o->seek.failed ? -ENOMEM : store_scan_seek(o->scan, o->seek.buf, o->seek.len);
}

/* The tail: the next child under dir without an index entry. */
static int tail_next(struct table_order *o, uint8_t *child, size_t *len)
{
	struct tree_child c;
	int ret = 0;

	if (!o->data)
		ret = store_scan_open(store_scan_txn(o->scan), STORE_SPACE_DATA, o->last, o->dir_len,
				      &o->data);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	if (o->from)
		ret = tree_child_at(o->data, o->dir_len, o->last, o->last_len, &c);
	else
		ret = tree_child_first(o->data, o->last, o->dir_len, o->last_len > o->dir_len ?
				       o->last : NULL, o->last_len, &c);
	o->from = false;
	for (; ret == 1; ret = tree_child_next(o->data, o->dir_len, &c)) {
		memcpy(o->last, c.key, c.end);
		o->last_len = c.end;
		ret = child_prefix(o, c.key, c.end, o->level, o->level, &o->seek);
		if (ret == -EINVAL)
			continue;	/* no level a row can have */
		ret = ret < 0 ? ret : has_entry(o);
		if (ret < 0)
			break;
		if (ret == 1)
			continue;	/* the index walk handed it out */
		memcpy(child, c.key, c.end);
		*len = c.end;
		return 1;
	}
	return ret < 0 ? ret : 0;
}

int table_order_next(struct table_order *o, uint8_t *child, size_t *len)
{
	struct store_val k, v;
	size_t pos, rlen, end;
	int ret;

	if (o->tail)
		return tail_next(o, child, len);
	while ((ret = store_scan_next(o->scan, &k, &v)) == 1) {
		const uint8_t *key = k.data;
		bool bad = false;

		pos = o->pre.len;
		for (int f = o->level; f < o->x->nfields && !bad; f++)
			bad = ikey_skip(key, k.len, &pos) < 0;
		if (bad || table_entry_key(&o->s, key, pos, k.len, child, &rlen) < 0 ||
		    table_key_count(child, o->s.key_len, rlen, o->level + 1, &end) != o->level + 1)
			continue;	/* kvfs check reports it */
		*len = end;
		if (o->level + 1 == o->s.key_depth)
			return 1;	/* a row: each entry is one */
		/* past every entry of this child's value */
		pos = o->pre.len;
		(void)ikey_skip(key, k.len, &pos);
		strbuf_reset(&o->seek);
		strbuf_add(&o->seek, key, pos);
		strbuf_addc(&o->seek, (char)0xff);
		ret = o->seek.failed ? -ENOMEM : store_scan_seek(o->scan, o->seek.buf, o->seek.len);
		return ret < 0 ? ret : 1;
	}
	if (ret < 0 || o->level + 1 == o->s.key_depth)
		return ret;
	o->tail = true;
	o->last_len = o->dir_len;
	return tail_next(o, child, len);
}

int table_order_under(struct store_txn *txn, const uint8_t *key, size_t len,
		      table_order_fn fn, void *arg)
{
	struct table_schema *s = malloc(sizeof(*s));
	struct store_scan *scan;
	struct store_val k, v;
	int ret;

	if (!s)
		return -ENOMEM;
	ret = store_scan_open(txn, STORE_SPACE_SCHEMA, key, len, &scan);
	if (ret < 0) {
		free(s);
		return ret == -ENOENT ? 0 : ret;
	}
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		ret = 0;
		if (k.len <= len || ((const uint8_t *)k.data)[len] == 0xff ||
		    table_schema_decode(k.data, k.len, v.data, v.len, s) < 0 ||
		    !table_key_ordered(s) || !table_key_index(s))
			continue;	/* itself, a sibling, corrupt (check says so) or unordered */
		fn(arg, k.data, k.len);
	}
	store_scan_close(scan);
	free(s);
	return ret;
}

void table_order_close(struct table_order *o)
{
	if (!o)
		return;
	store_scan_close(o->data);
	store_scan_close(o->scan);
	strbuf_release(&o->seek);
	strbuf_release(&o->pre);
	free(o);
}
