/*
 * model/doc/doc_render.c - keys -> JSON documents: one prefix scan turned into
 * json_writer calls (an empty container's marker, bytes as $base64), and
 * the public export entry points.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/* Always `{"$base64": "..."}`, so that writing the rendering back gives bytes. */
static void render_bytes(struct json_writer *w, const struct leaf *leaf)
{
	struct strbuf sb;

	strbuf_init(&sb);
	base64_encode(leaf->payload, leaf->payload_len, &sb);
	json_write_object_begin(w);
	json_write_key(w, "$base64", 7);
	json_write_string(w, sb.buf ? sb.buf : "", sb.len);
	json_write_object_end(w);
	strbuf_release(&sb);
}

static int render_value(struct json_writer *w, unsigned format, const void *key,
			size_t key_len, const struct store_val *val)
{
	struct leaf leaf;

	if (leaf_record_decode(format, key, key_len, val->data, val->len, &leaf) < 0)
		return -EIO;	/* a bad checksum too: never render what may be wrong */
	switch (leaf.tag) {
	case LEAF_STRING:
		json_write_string(w, (const char *)leaf.payload, leaf.payload_len);
		break;
	case LEAF_INTEGER:
		json_write_integer(w, leaf.integer);
		break;
	case LEAF_BIG_INTEGER:
		json_write_number_text(w, (const char *)leaf.payload, leaf.payload_len);
		break;
	case LEAF_DOUBLE:
		json_write_double(w, leaf.real);
		break;
	case LEAF_FALSE:
	case LEAF_TRUE:
		json_write_bool(w, leaf.tag == LEAF_TRUE);
		break;
	case LEAF_NULL:
		json_write_null(w);
		break;
	case LEAF_BYTES:
		render_bytes(w, &leaf);
		break;
	case LEAF_EMPTY_OBJECT:
		json_write_object_begin(w);
		json_write_object_end(w);
		break;
	case LEAF_EMPTY_ARRAY:
		json_write_array_begin(w);
		json_write_array_end(w);
		break;
	}
	return 0;
}

#define RENDER_TABLES_MAX 16	/* past that, a table's rows come in key order */

/* The containers open while rendering: their key lengths and kinds. */
struct render {
	struct json_writer *w;
	uint8_t prev[STORE_KEY_MAX];
	size_t prev_len;
	size_t open[STORE_KEY_MAX + 1];
	bool array[STORE_KEY_MAX + 1];
	int nopen;
	unsigned format;	/* record format of the snapshot */
	const uint8_t *root;	/* the rendered node's key (root_len bytes) */
	size_t root_len;
	/* tables under the root whose rows their key index orders, rendered by it */
	int ntables;
	uint8_t tables[RENDER_TABLES_MAX][STORE_KEY_MAX];
	size_t tables_len[RENDER_TABLES_MAX];
};

static void render_close_to(struct render *r, int keep)
{
	while (r->nopen > keep) {
		r->nopen--;
		if (r->array[r->nopen])
			json_write_array_end(r->w);
		else
			json_write_object_end(r->w);
	}
}

static void render_open(struct render *r, size_t end, enum tuple_type next)
{
	bool array = next == TUPLE_TYPE_INT;

	if (array)
		json_write_array_begin(r->w);
	else
		json_write_object_begin(r->w);
	r->open[r->nopen] = end;
	r->array[r->nopen++] = array;
}

/* An object member's name from its key element. */
static void render_name(struct json_writer *w, const struct tuple_elem *e)
{
	char raw[STORE_KEY_MAX + 1];
	char num[NUMBER_TEXT_MAX];
	size_t dollars = 0;

	if (e->type == TUPLE_TYPE_STRING) {
		/* `$base64`, `$$base64`...: one more `$` (see flat_name_unescape). */
		tuple_elem_copy(e, raw + 1);
		while (dollars < e->len && raw[1 + dollars] == '$')
			dollars++;
		if (dollars >= 1 && e->len - dollars == 6 && !memcmp(raw + 1 + dollars, "base64", 6)) {
			raw[0] = '$';
			json_write_key(w, raw, e->len + 1);
		} else {
			json_write_key(w, raw + 1, e->len);
		}
	} else {
		json_write_key(w, num, number_format_integer(e->integer, num));
	}
}

static void render_member(struct render *r, const struct tuple_elem *e)
{
	if (!r->array[r->nopen - 1])
		render_name(r->w, e);
}

/* Renders one key: closes what it leaves, opens what it enters, writes its name. */
static int render_path(struct render *r, const uint8_t *k, size_t klen)
{
	struct tuple_reader tr;
	struct tuple_elem e, next;
	size_t common = 0, pos;

	if (klen > sizeof(r->prev))
		return -EIO;	/* no key is so long: a damaged store (its checks say where) */
	while (common < klen && common < r->prev_len && k[common] == r->prev[common])
		common++;
	/* A container stays open while k starts with its whole key; 0xFF after
	 * it means k names a sibling whose string continues with a NUL. */
	while (r->nopen > 1 && (r->open[r->nopen - 1] > common ||
				(r->open[r->nopen - 1] < klen &&
				 k[r->open[r->nopen - 1]] == 0xFF)))
		render_close_to(r, r->nopen - 1);
	pos = r->open[r->nopen - 1];
	tuple_reader_init(&tr, k + pos, klen - pos);
	while (tuple_next(&tr, &e) == 1) {
		render_member(r, &e);
		if (pos + tr.pos == klen)
			break;
		struct tuple_reader peek = tr;
		if (tuple_next(&peek, &next) != 1 || r->nopen > STORE_KEY_MAX)
			return -EIO;
		render_open(r, pos + tr.pos, next.type);
	}
	if (pos + tr.pos != klen)
		return -EIO;
	memcpy(r->prev, k, klen);
	r->prev_len = klen;
	return 0;
}

static int render_key(struct render *r, const uint8_t *k, size_t klen, const struct store_val *val)
{
	int ret = render_path(r, k, klen);

	return ret < 0 ? ret : render_value(r->w, r->format, k, klen, val);
}

static void render_table_add(void *arg, const uint8_t *table, size_t len)
{
	struct render *r = arg;

	if (r->ntables == RENDER_TABLES_MAX || len > STORE_KEY_MAX)
		return;
	memcpy(r->tables[r->ntables], table, len);
	r->tables_len[r->ntables++] = len;
}

/* The ordered table k lies in (its index in r->tables), or -1. */
static int render_table_of(const struct render *r, const uint8_t *k, size_t klen)
{
	for (int i = 0; i < r->ntables; i++) {
		size_t n = r->tables_len[i];

		if (klen >= n && memcmp(k, r->tables[i], n) == 0 && (klen == n || k[n] != 0xFF))
			return i;
	}
	return -1;
}

/* An ordered table met in the scan: rendered whole by its key index, the scan moved past it. */
static int render_table(struct store_scan *scan, struct render *r, int t)
{
	uint8_t past[STORE_KEY_MAX + 1];
	size_t n = r->tables_len[t];
	int ret = render_path(r, r->tables[t], n);

	if (ret == 0)
		ret = doc_render(store_scan_txn(scan), r->tables[t], n, r->w);
	if (ret < 0)
		return ret;
	memcpy(past, r->tables[t], n);
	past[n] = 0xFF;
	return store_scan_seek(scan, past, n + 1);
}

/* True when key[0..len] is a tuple prefix of k (k itself or under it). */
static bool key_under(const uint8_t *k, size_t klen, const uint8_t *key, size_t len)
{
	return klen >= len && memcmp(k, key, len) == 0 && (klen == len || k[len] != 0xFF);
}

/* Length of the parent's key of k: all elements but the last. */
static size_t parent_len(const uint8_t *k, size_t klen)
{
	struct tuple_reader tr;
	struct tuple_elem e;
	size_t last = 0;

	tuple_reader_init(&tr, k, klen);
	while (tr.pos < klen) {
		last = tr.pos;
		if (tuple_next(&tr, &e) != 1)
			break;
	}
	return last;
}

/* Renders key[0..len] as an empty container of the kind its child h shows. */
static int render_marker(struct render *r, const uint8_t *key, size_t len, const uint8_t *h)
{
	struct leaf leaf;
	struct strbuf sb;
	struct store_val v;
	int ret;

	memset(&leaf, 0, sizeof(leaf));
	leaf.tag = h[len] == 0x02 ? LEAF_EMPTY_OBJECT : LEAF_EMPTY_ARRAY;
	strbuf_init(&sb);
	leaf_record_encode(key, len, &leaf, &sb);
	v = (struct store_val){ sb.buf, sb.len };
	ret = sb.failed ? -ENOMEM : render_key(r, key, len, &v);
	strbuf_release(&sb);
	return ret;
}

/*
 * Before the visible key k (NULL: the end), the directories whose every key
 * expired (model/ttl/ttl_space.c hides them; not reaped yet) render as {} or [], as
 * their removal will leave them: the deepest such directories under the
 * last key rendered, each as a marker.
 */
static int render_emptied_before(struct store_txn *txn, struct render *r,
				 const struct store_val *k)
{
	uint8_t lo[STORE_KEY_MAX + 1], p[STORE_KEY_MAX];
	size_t lo_len = r->prev_len, plen;
	struct store_val h, h2;
	int ret;

	memcpy(lo, r->prev, lo_len);
	while (store_txn_hidden_from(txn, STORE_SPACE_DATA, lo, lo_len, &h) == 1) {
		const uint8_t *hk = h.data;

		if (!key_under(hk, h.len, r->root, r->root_len) || h.len == r->root_len)
			return 0;	/* past the rendered node */
		if (k && memcmp(hk, k->data, h.len < k->len ? h.len : k->len) >= 0)
			return 0;	/* the visible key comes first */
		plen = parent_len(hk, h.len);
		memcpy(p, hk, plen);
		/* past h next time, whatever happens to it now */
		memcpy(lo, hk, h.len);
		lo[h.len] = 0xFF;
		lo_len = h.len + 1;
		if (plen <= r->root_len || key_under(r->prev, r->prev_len, p, plen) ||
		    (k && key_under(k->data, k->len, p, plen)))
			continue;	/* its parent shows through other keys */
		/* a deeper emptied directory below p renders p through itself */
		ret = store_txn_hidden_from(txn, STORE_SPACE_DATA, lo, lo_len, &h2);
		while (ret == 1 && key_under(h2.data, h2.len, p, plen) &&
		       parent_len(h2.data, h2.len) == plen) {
			memcpy(lo, h2.data, h2.len);
			lo[h2.len] = 0xFF;
			lo_len = h2.len + 1;
			ret = store_txn_hidden_from(txn, STORE_SPACE_DATA, lo, lo_len, &h2);
		}
		if (ret == 1 && key_under(h2.data, h2.len, p, plen))
			continue;	/* h2 is deeper: its own parent is the marker */
		ret = render_marker(r, p, plen, hk);
		if (ret < 0)
			return ret;
		memcpy(lo, p, plen);
		lo[plen] = 0xFF;
		lo_len = plen + 1;
	}
	return 0;
}

static int render_scan(struct store_scan *scan, size_t len, struct render *r)
{
	struct store_txn *txn = store_scan_txn(scan);
	struct store_val k, v;
	int ret;

	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (((const uint8_t *)k.data)[len] == 0xFF)
			break;
		int t = render_table_of(r, k.data, k.len);

		ret = render_emptied_before(txn, r, &k);
		if (ret == 0)
			ret = t < 0 ? render_key(r, k.data, k.len, &v) : render_table(scan, r, t);
		if (ret == 0 && r->w->out->failed)
			ret = -EIO;	/* the stream refused a write: the rest would be lost too */
		if (ret < 0)
			return ret;
	}
	if (ret == 0)
		ret = render_emptied_before(txn, r, NULL);
	render_close_to(r, 0);
	return ret;
}

static int render_first(struct store_scan *scan, const uint8_t *key, size_t len, struct render *r)
{
	struct store_val k, v;
	struct tuple_reader tr;
	struct tuple_elem e;
	int t, ret = store_scan_next(scan, &k, &v);

	if (ret < 0)
		return ret;
	/* k.len == len is the node itself: there is no byte [len] to look at. */
	if (ret == 0 || (k.len > len && ((const uint8_t *)k.data)[len] == 0xFF))
		return -ENOENT;	/* the empty root is rendered by render_emptied */
	if (k.len == len)
		return render_value(r->w, r->format, k.data, k.len, &v);
	tuple_reader_init(&tr, (const uint8_t *)k.data + len, k.len - len);
	if (tuple_next(&tr, &e) != 1)
		return -EIO;
	render_open(r, len, len == 0 ? TUPLE_TYPE_STRING : e.type);
	memcpy(r->prev, key, len);
	r->prev_len = len;
	ret = render_emptied_before(store_scan_txn(scan), r, &k);
	t = render_table_of(r, k.data, k.len);
	if (ret == 0)
		ret = t < 0 ? render_key(r, k.data, k.len, &v) : render_table(scan, r, t);
	return ret < 0 ? ret : render_scan(scan, len, r);
}

/*
 * A directory whose every key expired (not reaped yet; model/ttl/ttl_space.c) renders
 * as the removal will leave it: empty, but for directories below it that
 * are emptied too.
 */
static int render_emptied(struct store_txn *txn, const uint8_t *key, size_t len,
			  struct render *r)
{
	struct tree_node n;
	int ret;

	if (tree_lookup(txn, key, len, &n) < 0 || !n.exists || n.kind == MODEL_KIND_LEAF)
		return -ENOENT;
	render_open(r, len, n.kind == MODEL_KIND_ARRAY ? TUPLE_TYPE_INT : TUPLE_TYPE_STRING);
	memcpy(r->prev, key, len);
	r->prev_len = len;
	ret = render_emptied_before(txn, r, NULL);
	render_close_to(r, 0);
	return ret;
}

/*
 * A table level whose children its key index orders (model/table/table_order.c):
 * an object of the children in that order, each rendered whole in turn.
 */
static int render_ordered(struct store_txn *txn, struct table_order *o, size_t len,
			  struct json_writer *w)
{
	uint8_t child[STORE_KEY_MAX];
	struct tuple_reader tr;
	struct tuple_elem e;
	size_t clen;
	int ret;

	json_write_object_begin(w);
	while ((ret = table_order_next(o, child, &clen)) == 1) {
		tuple_reader_init(&tr, child + len, clen - len);
		if (tuple_next(&tr, &e) != 1)
			return -EIO;
		render_name(w, &e);
		ret = doc_render(txn, child, clen, w);
		if (ret < 0)
			return ret == -ENOENT ? -EIO : ret;	/* the index names a row that is gone */
		if (w->out->failed)
			return -EIO;
	}
	json_write_object_end(w);
	return ret;
}

int doc_render(struct store_txn *txn, const uint8_t *key, size_t len, struct json_writer *w)
{
	struct store_scan *scan;
	struct table_order *o;
	struct render *r;
	int ret = table_order_open(txn, key, len, true, &o);

	if (ret != 0) {
		if (ret == 1) {
			ret = render_ordered(txn, o, len, w);
			table_order_close(o);
		}
		return ret;
	}
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->w = w;
	r->nopen = 0;
	r->prev_len = 0;
	r->format = store_txn_format(txn);
	r->root = key;
	r->root_len = len;
	r->ntables = 0;
	ret = table_order_under(txn, key, len, render_table_add, r);
	if (ret == 0)
		ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);
	if (ret == 0) {
		ret = render_first(scan, key, len, r);
		store_scan_close(scan);
	}
	if (ret == -ENOENT)
		ret = render_emptied(txn, key, len, r);
	free(r);
	return ret;
}

int doc_render_buf(struct store_txn *txn, const uint8_t *key, size_t len, unsigned flags,
		   struct strbuf *out, FILE *flush_to)
{
	struct json_writer w;
	int ret;

	json_writer_init(&w, out, flush_to, !(flags & MODEL_JSON_COMPACT));
	ret = doc_render(txn, key, len, &w);
	if (ret < 0)
		return ret;
	return json_writer_finish(&w);
}

/* ---- export / import ---- */

static int export_in(struct store_txn *txn, const char *path, struct json_writer *w,
		     struct model_error *err)
{
	struct tree_path p;
	struct tree_node n;
	int ret = tree_find(txn, path, &p, &n, err);

	if (ret < 0)
		return ret;
	ret = doc_render(txn, p.key, p.len, w);
	if (ret == -EIO)
		return tree_fail_corrupt(txn, p.key, p.len, path, err);
	if (ret == 0)
		ret = json_writer_finish(w);
	if (ret < 0)
		return tree_fail(err, ret, "%s: cannot render: %s", path, strerror(-ret));
	return 0;
}

static int export_run(struct model *m, const char *path, unsigned flags, struct strbuf *sb,
		      FILE *out, struct model_error *err)
{
	struct store_txn *txn;
	struct json_writer w;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	json_writer_init(&w, sb, out, !(flags & MODEL_JSON_COMPACT));
	ret = export_in(txn, path, &w, err);
	store_txn_end(txn);
	return ret;
}

int model_export(struct model *m, const char *path, unsigned flags, char **out, size_t *len,
		 struct model_error *err)
{
	struct strbuf sb;
	int ret;

	strbuf_init(&sb);
	ret = export_run(m, path, flags, &sb, NULL, err);
	if (ret == 0 && sb.failed)
		ret = tree_fail(err, -ENOMEM, "%s: out of memory", path);
	if (ret == 0) {
		*out = strbuf_detach(&sb, len);
		if (!*out)
			ret = tree_fail(err, -ENOMEM, "%s: out of memory", path);
	}
	strbuf_release(&sb);
	return ret;
}

int model_export_file(struct model *m, const char *path, unsigned flags, FILE *out,
		      struct model_error *err)
{
	struct strbuf sb;
	int ret;

	strbuf_init(&sb);
	ret = export_run(m, path, flags, &sb, out, err);
	strbuf_release(&sb);
	return ret;
}
