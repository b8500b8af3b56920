/*
 * model/doc.c - JSON documents <-> keys. Flattening streams json_parse
 * events straight into store_put calls (a stack of open containers over
 * one key buffer; no DOM). Rendering is one prefix scan turned into
 * json_writer calls. Also the public export/import entry points.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table_int.h"
#include "model/tree_int.h"
#include "model/ttl_int.h"

/* ---- flatten ---- */

/*
 * Writing a document onto an existing node applies the difference, so that
 * what the user did not touch keeps its exact record (type, flags, mtime)
 * and an incremental backup copies only what changed:
 *
 * - each scalar is compared with the record already at its key (one seek);
 *   an equal value keeps the record, anything else is put with the new time;
 * - a container's old record (a leaf, or a marker of the other kind) goes
 *   when the container opens, a marker of the same kind when its first child
 *   comes (or stays, untouched, if none comes);
 * - when a container closes, its old children that the document did not
 *   write are deleted ("sweep"). An array wrote exactly the indices 0..n-1:
 *   its sweep deletes string children and one seek finds the indices >= n.
 *   An object remembers the encoded key elements of its members in `names`
 *   (an arena shared by the open objects, popped when one closes), sorts
 *   them, and walks its old children in key order beside them.
 *
 * So memory is bounded by the member names of the objects open at once (at
 * most about the input's size), never by the old subtree, and the work is
 * one seek per written key plus one per old child. A member name that
 * repeats needs no special case: the second value overwrites scalars and
 * its own sweep removes what the first one left (last wins).
 *
 * Under a key where nothing was before (a new document, a new member, an
 * append: a "fresh" frame) there is nothing to compare or sweep. There only
 * each object member's key is looked up, to drop an earlier member of the
 * same name, as a plain import always did.
 */

struct flat_frame {
	size_t len;		/* key length of the container */
	bool array;
	bool has_child;
	bool marker;		/* a marker of this kind is still at the key */
	bool fresh;		/* nothing was under this key before: no compare, no sweep */
	int64_t next;		/* arrays: the next index */
	size_t names;		/* objects: where this frame's names start */
};

/* Parser events held back while `{"$base64": "..."}` may still be bytes. */
enum flat_pending {
	PEND_NONE,
	PEND_BEGIN,		/* '{' */
	PEND_KEY,		/* '{' "$base64" */
	PEND_STRING,		/* '{' "$base64" "...", held in pend_str */
};

struct flat {
	struct store_txn *txn;
	const struct tree_path *p;
	struct model_error *err;
	struct tuple_writer w;
	uint8_t key[STORE_KEY_MAX];
	struct flat_frame stack[MODEL_DEPTH_MAX + 2];
	int depth;
	bool append;
	int64_t next_top;	/* append: the next index of the target array */
	bool top_full;		/* append: next_top is past INT64_MAX */
	uint64_t appended;
	int64_t now;
	bool failed;		/* the error came from a callback, not the parser */
	bool top_fresh;		/* nothing was at the target key (or: appending) */
	struct strbuf names;	/* per name: 2 bytes length, encoded element */
	enum flat_pending pend;
	struct strbuf pend_str;
	struct strbuf bytes;	/* a decoded $base64 value */
};

_Static_assert(MODEL_DEPTH_MAX > STORE_KEY_MAX,
	       "every level takes at least one key byte: the key limit must come first");

static int flat_fail(struct flat *f, int ret)
{
	struct strbuf sb;

	f->failed = true;
	if (ret == -ENAMETOOLONG) {
		strbuf_init(&sb);
		tree_key_to_path(f->key, f->w.len, &sb);
		tree_fail(f->err, ret, "path too long for a key: %s/... (in %s)",
			  sb.buf ? sb.buf : "", f->p->text);
		strbuf_release(&sb);
		return ret;
	}
	return tree_fail(f->err, ret, "%s: %s", f->p->text, strerror(-ret));
}

/* A member name that could not be a file name (docs/FORMAT.md, "Names"). */
static int flat_long_name(struct flat *f)
{
	struct strbuf sb;

	f->failed = true;
	strbuf_init(&sb);
	tree_key_to_path(f->key, f->w.len, &sb);
	tree_fail(f->err, -ENAMETOOLONG, "%s: name longer than %d bytes as a file name (in %s)",
		  sb.buf ? sb.buf : "", TREE_FILE_NAME_MAX, f->p->text);
	strbuf_release(&sb);
	return -ENAMETOOLONG;
}

/* Append ran out of indices: the last one, INT64_MAX, is taken. */
static int flat_no_index(struct flat *f)
{
	f->failed = true;
	return tree_fail(f->err, -EOVERFLOW, "%s: cannot append: the array already ends at "
			 "index %lld", f->p->text, (long long)INT64_MAX);
}

/* A member name again in a fresh object: last wins, so the earlier value goes. */
static int flat_drop_duplicate(struct flat *f)
{
	struct tree_node n;
	int ret = tree_lookup(f->txn, f->key, f->w.len, &n);

	if (ret < 0 || !n.exists)
		return ret;
	return tree_delete(f->txn, f->key, f->w.len);
}

/* The first child of a container replaces the container's marker. */
static int flat_child_comes(struct flat *f, struct flat_frame *top)
{
	int ret;

	top->has_child = true;
	if (!top->marker)
		return 0;
	top->marker = false;
	ret = table_touch(f->txn, f->key, top->len, false);
	if (ret == 0)
		ret = store_del(f->txn, STORE_SPACE_DATA, f->key, top->len);
	return ret < 0 && ret != -ENOENT ? flat_fail(f, ret) : 0;
}

/* Sets the key for the value about to come. */
static int flat_value_key(struct flat *f, bool container)
{
	struct flat_frame *top;
	int ret;

	if (f->depth == 0) {
		f->w.len = f->p->len;
		if (f->append) {
			if (f->top_full)
				return flat_no_index(f);
			tuple_put_int(&f->w, f->next_top);
			if (f->next_top == INT64_MAX)
				f->top_full = true;
			else
				f->next_top++;
			f->appended++;
		} else if (f->p->len == 0 && !container) {
			f->failed = true;
			return tree_fail(f->err, -EINVAL, "%s: the root must be an object",
					 f->p->text);
		}
	} else {
		top = &f->stack[f->depth - 1];
		ret = flat_child_comes(f, top);
		if (ret < 0)
			return ret;
		if (top->array) {
			f->w.len = top->len;
			tuple_put_int(&f->w, top->next++);
		}
	}
	return f->w.overflow ? flat_fail(f, -ENAMETOOLONG) : 0;
}

/* What is at the key about to be written (the old document's node). */
static int flat_old(struct flat *f, struct tree_node *n)
{
	bool fresh = f->depth ? f->stack[f->depth - 1].fresh : f->top_fresh;
	int ret;

	if (fresh) {
		memset(n, 0, sizeof(*n));	/* inside a new subtree: nothing to look up */
		return 0;
	}
	ret = tree_lookup(f->txn, f->key, f->w.len, n);
	if (ret == -EIO) {
		f->failed = true;
		return tree_fail(f->err, ret, "%s: corrupt record in the store", f->p->text);
	}
	return ret < 0 ? flat_fail(f, ret) : 0;
}

static int flat_begin(struct flat *f, bool array)
{
	struct flat_frame *fr;
	struct tree_node n;
	enum leaf_tag same = array ? LEAF_EMPTY_ARRAY : LEAF_EMPTY_OBJECT;
	bool fresh;
	int ret = flat_value_key(f, true);

	if (ret < 0)
		return ret;
	if (f->depth == 0 && f->p->len == 0 && !f->append && array) {
		f->failed = true;
		return tree_fail(f->err, -EINVAL, "%s: the root must be an object", f->p->text);
	}
	if (f->depth > MODEL_DEPTH_MAX) {
		f->failed = true;
		return tree_fail(f->err, -EINVAL, "%s: invalid JSON: nested deeper than %d",
				 f->p->text, MODEL_DEPTH_MAX);
	}
	ret = flat_old(f, &n);
	if (ret < 0)
		return ret;
	/* Nothing is under a missing node, a leaf or a marker: no sweep there. */
	fresh = !n.exists || n.kind == MODEL_KIND_LEAF || n.marker;
	/* A leaf or a marker of the other kind cannot stay under children. */
	if (f->w.len > 0 && n.exists && (n.kind == MODEL_KIND_LEAF ||
					 (n.marker && n.leaf.tag != same))) {
		ret = table_touch(f->txn, f->key, f->w.len, false);
		if (ret == 0)
			ret = store_del(f->txn, STORE_SPACE_DATA, f->key, f->w.len);
		if (ret < 0)
			return flat_fail(f, ret);
		n.marker = false;
	}
	fr = &f->stack[f->depth++];
	fr->len = f->w.len;
	fr->array = array;
	fr->has_child = false;
	fr->marker = n.exists && n.marker;
	fr->fresh = fresh;
	fr->next = 0;
	fr->names = f->names.len;
	return 0;
}

/* Deletes the child whose key is c->key[0..c->end]; c->key then points at buf. */
static int sweep_child(struct flat *f, struct tree_child *c, uint8_t *buf)
{
	memcpy(buf, c->key, c->end);
	c->key = buf;		/* the scan resumes after it (tree_child_next) */
	return tree_delete(f->txn, buf, c->end);
}

struct flat_name {
	const uint8_t *elem;
	size_t len;
};

static int flat_name_cmp(const void *a, const void *b)
{
	const struct flat_name *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->elem, y->elem, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The member names of the object frame fr, sorted; *out is heap (free()). */
static int flat_names_sorted(struct flat *f, const struct flat_frame *fr,
			     struct flat_name **out, size_t *count)
{
	const uint8_t *a = (const uint8_t *)f->names.buf;
	size_t pos = fr->names, n = 0, cap = 0;
	struct flat_name *v = NULL, *grown;

	*out = NULL;
	*count = 0;
	while (pos < f->names.len) {
		size_t len = (size_t)a[pos] << 8 | a[pos + 1];

		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		v[n].elem = a + pos + 2;
		v[n++].len = len;
		pos += 2 + len;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), flat_name_cmp);
	*out = v;
	*count = n;
	return 0;
}

/* Old children of the object fr that the document did not write go. */
static int sweep_object(struct flat *f, const struct flat_frame *fr, struct store_scan *scan,
			uint8_t *buf)
{
	struct flat_name *names, child;
	struct tree_child c;
	size_t count, i = 0;
	int ret = flat_names_sorted(f, fr, &names, &count);

	if (ret < 0)
		return ret;
	for (ret = tree_child_first(scan, f->key, fr->len, NULL, 0, &c); ret == 1;
	     ret = tree_child_next(scan, fr->len, &c)) {
		child.elem = c.key + fr->len;
		child.len = c.end - fr->len;
		while (i < count && flat_name_cmp(&names[i], &child) < 0)
			i++;
		if (c.elem.type == TUPLE_TYPE_STRING && i < count &&
		    flat_name_cmp(&names[i], &child) == 0)
			continue;
		ret = sweep_child(f, &c, buf);
		if (ret < 0)
			break;
	}
	free(names);
	return ret;
}

/* Old children of the array fr other than the indices 0..next-1 go. */
static int sweep_array(struct flat *f, const struct flat_frame *fr, struct store_scan *scan,
		       uint8_t *buf)
{
	struct tuple_writer w;
	struct tree_child c;
	int ret;

	/* Strings sort before integers: an old object's members come first. */
	for (ret = tree_child_first(scan, f->key, fr->len, NULL, 0, &c);
	     ret == 1 && c.elem.type != TUPLE_TYPE_INT;
	     ret = tree_child_next(scan, fr->len, &c)) {
		ret = sweep_child(f, &c, buf);
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	memcpy(buf, f->key, fr->len);
	tuple_writer_init(&w, buf, STORE_KEY_MAX + 16);
	w.len = fr->len;
	tuple_put_int(&w, fr->next);
	if (w.len > STORE_KEY_MAX)
		return 0;	/* no key can hold such an index */
	ret = store_scan_seek(scan, buf, w.len);
	for (ret = ret < 0 ? ret : tree_child_first(scan, f->key, fr->len, NULL, 0, &c);
	     ret == 1; ret = tree_child_next(scan, fr->len, &c)) {
		ret = sweep_child(f, &c, buf);
		if (ret < 0)
			return ret;
	}
	return ret;
}

static int flat_sweep(struct flat *f, const struct flat_frame *fr)
{
	struct store_scan *scan;
	uint8_t *buf = malloc(STORE_KEY_MAX + 16);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = store_scan_open(f->txn, STORE_SPACE_DATA, f->key, fr->len, &scan);
	if (ret == 0) {
		ret = fr->array ? sweep_array(f, fr, scan, buf) : sweep_object(f, fr, scan, buf);
		store_scan_close(scan);
	}
	free(buf);
	return ret;
}

static int flat_end(struct flat *f)
{
	struct flat_frame *fr = &f->stack[--f->depth];
	int ret = fr->fresh ? 0 : flat_sweep(f, fr);

	f->names.len = fr->names;	/* pop this object's names */
	if (ret == 0 && !fr->has_child && !fr->marker && fr->len > 0)
		ret = tree_put_marker(f->txn, f->key, fr->len,
				      fr->array ? MODEL_KIND_ARRAY : MODEL_KIND_OBJECT);
	return ret < 0 ? flat_fail(f, ret) : 0;
}

/*
 * Names `$base64`, `$$base64`, ... are escaped by one more `$` when
 * rendered, so a real object `{"$base64": "..."}` is never read back as
 * bytes (docs/FORMAT.md, "JSON rendering"). Here: how many `$` to drop.
 */
static size_t flat_name_unescape(const char *s, size_t len)
{
	size_t d = 0;

	while (d < len && s[d] == '$')
		d++;
	return d >= 2 && len - d == 6 && !memcmp(s + d, "base64", 6) ? 1 : 0;
}

static int flat_key(struct flat *f, const char *str, size_t len)
{
	struct flat_frame *top = &f->stack[f->depth - 1];
	uint8_t head[2];
	size_t drop = flat_name_unescape(str, len);
	int ret;

	f->w.len = top->len;
	tuple_put_string(&f->w, str + drop, len - drop);
	if (f->w.overflow)
		return flat_fail(f, -ENAMETOOLONG);
	if (tree_name_escaped_len(str + drop, len - drop) > TREE_FILE_NAME_MAX)
		return flat_long_name(f);
	if (top->fresh) {	/* nothing to sweep: no names to keep */
		ret = flat_drop_duplicate(f);
		return ret < 0 ? flat_fail(f, ret) : 0;
	}
	head[0] = (uint8_t)((f->w.len - top->len) >> 8);
	head[1] = (uint8_t)(f->w.len - top->len);
	strbuf_add(&f->names, head, 2);
	strbuf_add(&f->names, f->key + top->len, f->w.len - top->len);
	return f->names.failed ? flat_fail(f, -ENOMEM) : 0;
}

/* Same JSON value: what the user did not change keeps its record. */
static bool flat_same_value(const struct leaf *old, const struct leaf *new)
{
	if (old->tag != new->tag)
		return false;
	switch (new->tag) {
	case LEAF_INTEGER:
		return old->integer == new->integer;
	case LEAF_DOUBLE:
		return memcmp(&old->real, &new->real, sizeof(new->real)) == 0;
	case LEAF_STRING:
	case LEAF_BYTES:
	case LEAF_BIG_INTEGER:
		return old->payload_len == new->payload_len &&
		       (!new->payload_len ||
			!memcmp(old->payload, new->payload, new->payload_len));
	default:
		return true;
	}
}

/* Puts leaf at the current key unless an equal value is there already. */
static int flat_put(struct flat *f, struct leaf *leaf)
{
	struct tree_node n;
	int ret = flat_value_key(f, false);

	if (ret < 0)
		return ret;
	ret = flat_old(f, &n);
	if (ret < 0)
		return ret;
	if (n.exists && n.kind == MODEL_KIND_LEAF) {
		if (flat_same_value(&n.leaf, leaf))
			return 0;
		/* A changed value keeps how it was shown: `printf abc > s` has no newline. */
		if (leaf->tag != LEAF_BYTES && n.leaf.tag != LEAF_BYTES)
			leaf->flags = n.leaf.flags & LEAF_FLAG_NEWLINE;
	} else if (n.exists && !n.marker && f->w.len > 0) {
		ret = tree_delete(f->txn, f->key, f->w.len);
		if (ret < 0)
			return flat_fail(f, ret);
	}
	ret = tree_put_leaf(f->txn, f->key, f->w.len, leaf);
	return ret < 0 ? flat_fail(f, ret) : 0;
}

static int flat_scalar(struct flat *f, const struct json_token *tok)
{
	struct leaf leaf;

	memset(&leaf, 0, sizeof(leaf));
	leaf.flags = LEAF_FLAG_NEWLINE;
	leaf.mtime_ns = f->now;
	switch (tok->event) {
	case JSON_STRING:
		leaf.tag = LEAF_STRING;
		leaf.payload = (const uint8_t *)tok->str;
		leaf.payload_len = tok->len;
		break;
	case JSON_INTEGER:
		leaf.tag = LEAF_INTEGER;
		leaf.integer = tok->integer;
		break;
	case JSON_BIG_INTEGER:
		leaf.tag = LEAF_BIG_INTEGER;
		leaf.payload = (const uint8_t *)tok->str;
		leaf.payload_len = tok->len;
		break;
	case JSON_DOUBLE:
		leaf.tag = LEAF_DOUBLE;
		leaf.real = tok->real;
		break;
	case JSON_TRUE:
		leaf.tag = LEAF_TRUE;
		break;
	case JSON_FALSE:
		leaf.tag = LEAF_FALSE;
		break;
	default:
		leaf.tag = LEAF_NULL;
		break;
	}
	return flat_put(f, &leaf);
}

static int flat_bytes(struct flat *f)
{
	struct leaf leaf;

	memset(&leaf, 0, sizeof(leaf));
	leaf.tag = LEAF_BYTES;
	leaf.mtime_ns = f->now;
	leaf.payload = (const uint8_t *)f->bytes.buf;
	leaf.payload_len = f->bytes.len;
	return flat_put(f, &leaf);
}

/* Decodes standard base64 with padding into sb; false unless canonical. */
static bool base64_decode(const char *s, size_t len, struct strbuf *sb)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t out[3];

	strbuf_reset(sb);
	if (len % 4)
		return false;
	for (size_t i = 0; i < len; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (int j = 0; j < 4; j++) {
			const char *hit = s[i + j] ? memchr(abc, s[i + j], 64) : NULL;

			if (s[i + j] == '=' && i + 4 == len && j >= 2 &&
			    (j == 3 || s[i + 3] == '=')) {
				pad++;
				v <<= 6;
				continue;
			}
			if (!hit || pad)
				return false;
			v = v << 6 | (uint32_t)(hit - abc);
		}
		out[0] = (uint8_t)(v >> 16);
		out[1] = (uint8_t)(v >> 8);
		out[2] = (uint8_t)v;
		/* Bits under the padding must be zero, so each text has one meaning. */
		if ((pad == 1 && out[2]) || (pad == 2 && (out[1] || out[2])))
			return false;
		strbuf_add(sb, out, (size_t)(3 - pad));
	}
	return !sb->failed;
}

static int flat_event_now(struct flat *f, const struct json_token *tok)
{
	switch (tok->event) {
	case JSON_OBJECT_BEGIN:
		return flat_begin(f, false);
	case JSON_ARRAY_BEGIN:
		return flat_begin(f, true);
	case JSON_OBJECT_END:
	case JSON_ARRAY_END:
		return flat_end(f);
	case JSON_KEY:
		return flat_key(f, tok->str, tok->len);
	case JSON_VALUE_END:
		return 0;
	default:
		return flat_scalar(f, tok);
	}
}

/* Replays the events held back: it was an ordinary object after all. */
static int flat_release(struct flat *f)
{
	enum flat_pending pend = f->pend;
	struct json_token tok = { .event = JSON_STRING };
	int ret;

	f->pend = PEND_NONE;
	ret = flat_begin(f, false);
	if (ret == 0 && pend >= PEND_KEY)
		ret = flat_key(f, "$base64", 7);
	if (ret == 0 && pend == PEND_STRING) {
		tok.str = f->pend_str.buf ? f->pend_str.buf : "";
		tok.len = f->pend_str.len;
		ret = flat_scalar(f, &tok);
	}
	return ret;
}

/*
 * `{"$base64": "<base64>"}` is a bytes leaf: the object's first three
 * events are held back until its end shows whether it is exactly that.
 */
static int flat_event(void *arg, const struct json_token *tok)
{
	struct flat *f = arg;
	int ret;

	switch (f->pend) {
	case PEND_NONE:
		if (tok->event != JSON_OBJECT_BEGIN)
			return flat_event_now(f, tok);
		f->pend = PEND_BEGIN;
		return 0;
	case PEND_BEGIN:
		if (tok->event == JSON_KEY && tok->len == 7 && !memcmp(tok->str, "$base64", 7)) {
			f->pend = PEND_KEY;
			return 0;
		}
		break;
	case PEND_KEY:
		if (tok->event == JSON_STRING) {
			strbuf_reset(&f->pend_str);
			strbuf_add(&f->pend_str, tok->str, tok->len);
			if (f->pend_str.failed)
				return flat_fail(f, -ENOMEM);
			f->pend = PEND_STRING;
			return 0;
		}
		break;
	case PEND_STRING:
		if (tok->event == JSON_OBJECT_END &&
		    base64_decode(f->pend_str.buf ? f->pend_str.buf : "", f->pend_str.len,
				  &f->bytes)) {
			f->pend = PEND_NONE;
			return flat_bytes(f);
		}
		break;
	}
	ret = flat_release(f);
	if (ret == 0 && tok->event == JSON_OBJECT_BEGIN)
		return flat_event(f, tok);	/* may be bytes itself */
	return ret ? ret : flat_event_now(f, tok);
}

/* ---- the last index of an array ---- */

/*
 * 1 when the array at prefix has an element with index >= i. A probe key
 * longer than the key limit means no: an element with index >= i would
 * have a key at least as long.
 */
static int has_index_from(struct store_scan *scan, const uint8_t *prefix, size_t len, int64_t i)
{
	uint8_t buf[STORE_KEY_MAX + 16];
	struct tuple_writer w;
	struct store_val k, v;
	int ret;

	memcpy(buf, prefix, len);
	tuple_writer_init(&w, buf, sizeof(buf));
	w.len = len;
	tuple_put_int(&w, i);
	ret = store_scan_seek(scan, buf, w.len);
	if (ret == -ENAMETOOLONG)
		return 0;
	if (ret == 0)
		ret = store_scan_next(scan, &k, &v);
	if (ret <= 0)
		return ret;
	return k.len > len && ((const uint8_t *)k.data)[len] != 0xFF;
}

/* The next free index of the non-empty array at key[0..len]: galloping search. */
static int array_next_index(struct store_txn *txn, const uint8_t *key, size_t len, int64_t *out)
{
	struct store_scan *scan;
	int64_t lo = 0, hi = 1, mid;
	int ret = store_scan_open(txn, STORE_SPACE_DATA, key, len, &scan);

	if (ret < 0)
		return ret;
	while ((ret = has_index_from(scan, key, len, hi)) == 1) {
		lo = hi;
		if (hi == INT64_MAX)
			break;	/* the last index is taken: lo == hi, no search */
		hi = hi > INT64_MAX / 2 ? INT64_MAX : hi * 2;
	}
	while (ret >= 0 && hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		ret = has_index_from(scan, key, len, mid);
		if (ret == 1)
			lo = mid;
		else if (ret == 0)
			hi = mid;
	}
	store_scan_close(scan);
	if (ret < 0)
		return ret;
	if (lo == INT64_MAX)
		return -EOVERFLOW;
	*out = lo + 1;
	return 0;
}

/* ---- write ---- */

static int prepare_append(struct flat *f, const struct tree_node *n)
{
	const struct tree_path *p = f->p;
	int ret;

	if (!n->exists)
		return tree_attach(f->txn, p, f->err);
	if (n->kind == MODEL_KIND_LEAF)
		return tree_fail(f->err, -ENOTDIR, "%s: cannot append to a leaf", p->text);
	if (n->kind == MODEL_KIND_OBJECT)
		return tree_fail(f->err, -EINVAL, "%s: cannot append to an object", p->text);
	if (n->marker) {
		ret = table_touch(f->txn, p->key, p->len, false);
		return ret < 0 ? ret : store_del(f->txn, STORE_SPACE_DATA, p->key, p->len);
	}
	ret = array_next_index(f->txn, p->key, p->len, &f->next_top);
	if (ret == -EOVERFLOW)
		f->top_full = true;	/* fails at the first value: an empty append is fine */
	else if (ret < 0)
		return tree_fail(f->err, ret, "%s: %s", p->text, strerror(-ret));
	return 0;
}

static int prepare_replace(struct flat *f, const struct tree_node *n)
{
	/* An existing node stays: flattening applies the difference to it. */
	return n->exists ? 0 : tree_attach(f->txn, f->p, f->err);
}

static int flat_parse(struct flat *f, const char *json, size_t len, bool mapped,
		      model_progress_fn progress, void *arg)
{
	struct stream_progress sp = { .fn = progress, .arg = arg };
	struct model_error perr;
	int ret;

	perr.msg[0] = '\0';
	stream_drop_init(&sp.drop, json, mapped);
	ret = json_parse(json, len, f->append ? JSON_PARSE_SEQUENCE : 0, MODEL_DEPTH_MAX,
			 flat_event, f, mapped || progress ? stream_progress : NULL, &sp, &perr);
	if (ret < 0 && !f->failed)
		return tree_fail_reason(f->err, ret, ret == -EINVAL ? MODEL_REASON_BAD_JSON :
					MODEL_REASON_NONE, "%s: invalid JSON: %s", f->p->text,
					perr.msg[0] ? perr.msg : strerror(-ret));
	return ret;
}

int doc_write(struct store_txn *txn, const struct tree_path *p, const char *json, size_t len,
	      unsigned flags, model_progress_fn progress, void *arg, struct model_error *err)
{
	struct tree_node n;
	struct flat *f;
	int ret;

	f = calloc(1, sizeof(*f));
	if (!f)
		return tree_fail(err, -ENOMEM, "%s: out of memory", p->text);
	f->txn = txn;
	f->p = p;
	f->err = err;
	f->append = flags & DOC_APPEND;
	f->now = tree_now_ns();
	strbuf_init(&f->names);
	strbuf_init(&f->pend_str);
	strbuf_init(&f->bytes);
	memcpy(f->key, p->key, p->len);
	tuple_writer_init(&f->w, f->key, sizeof(f->key));
	/* A missing node is expected here (attach reports a missing parent). */
	ret = tree_lookup(txn, p->key, p->len, &n);
	if (ret < 0)
		tree_fail(err, ret, "%s: %s", p->text,
			  ret == -EIO ? "corrupt record in the store" : strerror(-ret));
	f->top_fresh = f->append || !n.exists;
	if (ret == 0)
		ret = f->append ? prepare_append(f, &n) : prepare_replace(f, &n);
	if (ret == 0)
		ret = flat_parse(f, json, len, flags & DOC_MAPPED, progress, arg);
	if (ret == 0 && f->append && !f->appended && (!n.exists || n.marker))
		ret = tree_put_marker(txn, p->key, p->len, MODEL_KIND_ARRAY);
	strbuf_release(&f->bytes);
	strbuf_release(&f->pend_str);
	strbuf_release(&f->names);
	free(f);
	return ret;
}

/* ---- render ---- */

static void base64_encode(const uint8_t *data, size_t len, struct strbuf *sb)
{
	static const char abc[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char quad[4];

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16;
		size_t n = len - i < 3 ? len - i : 3;

		if (n > 1)
			v |= (uint32_t)data[i + 1] << 8;
		if (n > 2)
			v |= data[i + 2];
		quad[0] = abc[v >> 18 & 63];
		quad[1] = abc[v >> 12 & 63];
		quad[2] = n > 1 ? abc[v >> 6 & 63] : '=';
		quad[3] = n > 2 ? abc[v & 63] : '=';
		strbuf_add(sb, quad, 4);
	}
}

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

static void render_member(struct render *r, const struct tuple_elem *e)
{
	char raw[STORE_KEY_MAX + 1];
	char num[NUMBER_TEXT_MAX];
	size_t dollars = 0;

	if (r->array[r->nopen - 1])
		return;
	if (e->type == TUPLE_TYPE_STRING) {
		/* `$base64`, `$$base64`...: one more `$` (see flat_name_unescape). */
		tuple_elem_copy(e, raw + 1);
		while (dollars < e->len && raw[1 + dollars] == '$')
			dollars++;
		if (dollars >= 1 && e->len - dollars == 6 && !memcmp(raw + 1 + dollars, "base64", 6)) {
			raw[0] = '$';
			json_write_key(r->w, raw, e->len + 1);
		} else {
			json_write_key(r->w, raw + 1, e->len);
		}
	} else {
		json_write_key(r->w, num, number_format_integer(e->integer, num));
	}
}

/* Renders one key: closes what it leaves, opens what it enters, writes its value. */
static int render_key(struct render *r, const uint8_t *k, size_t klen, const struct store_val *val)
{
	struct tuple_reader tr;
	struct tuple_elem e, next;
	size_t common = 0, pos;

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
	return render_value(r->w, r->format, k, klen, val);
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
 * expired (model/ttl.c hides them; not reaped yet) render as {} or [], as
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
		ret = render_emptied_before(txn, r, &k);
		if (ret == 0)
			ret = render_key(r, k.data, k.len, &v);
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
	int ret = store_scan_next(scan, &k, &v);

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
	if (ret == 0)
		ret = render_key(r, k.data, k.len, &v);
	return ret < 0 ? ret : render_scan(scan, len, r);
}

/*
 * A directory whose every key expired (not reaped yet; model/ttl.c) renders
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

int doc_render(struct store_txn *txn, const uint8_t *key, size_t len, struct json_writer *w)
{
	struct store_scan *scan;
	struct render *r;
	int ret;

	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->w = w;
	r->nopen = 0;
	r->prev_len = 0;
	r->format = store_txn_format(txn);
	r->root = key;
	r->root_len = len;
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
		   struct strbuf *out)
{
	struct json_writer w;
	int ret;

	json_writer_init(&w, out, NULL, !(flags & MODEL_JSON_COMPACT));
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

struct import_op {
	const char *path;
	const char *json;
	size_t len;
	model_progress_fn progress;
	void *arg;
	struct model_error *err;
	int64_t ttl_deadline_ns;	/* the imported node's; 0: none */
	unsigned flags;		/* DOC_* */
};

static int import_txn(struct store_txn *txn, void *arg)
{
	struct import_op *op = arg;
	struct tree_path p;
	int ret;

	tree_clear(op->err);
	ret = tree_resolve(txn, op->path, TREE_FOR_CREATE, &p, op->err);
	if (ret < 0)
		return ret;
	/* the document replaces the node: TTLs in it are cleared, unless given again */
	ret = p.len ? ttl_delete_subtree(txn, p.key, p.len) : 0;
	if (ret == 0)
		ret = doc_write(txn, &p, op->json, op->len, op->flags, op->progress, op->arg, op->err);
	if (ret == 0 && op->ttl_deadline_ns && p.len)
		ret = ttl_set(txn, p.key, p.len, op->ttl_deadline_ns);
	/* nodes the document keeps keep their attributes; removed ones lose them */
	return ret < 0 ? ret : attr_prune(txn, p.key, p.len);
}

int model_import(struct model *m, const char *path, const char *json, size_t len,
		 model_progress_fn progress, void *arg, struct model_error *err)
{
	return model_import_ttl(m, path, json, len, 0, 0, progress, arg, err);
}

int model_import_mapped(struct model *m, const char *path, const char *json, size_t len,
			model_progress_fn progress, void *arg, struct model_error *err)
{
	return model_import_ttl(m, path, json, len, 0, MODEL_WRITE_MAPPED, progress, arg, err);
}

int model_import_ttl(struct model *m, const char *path, const char *json, size_t len,
		     int64_t ttl_seconds, unsigned flags, model_progress_fn progress, void *arg,
		     struct model_error *err)
{
	struct import_op op = { .path = path, .json = json, .len = len, .progress = progress,
				.arg = arg, .err = err,
				.flags = (flags & MODEL_WRITE_MAPPED) ? DOC_MAPPED : 0 };

	if (ttl_seconds && model_ttl_deadline(ttl_seconds, tree_now_ns(), &op.ttl_deadline_ns) < 0)
		return tree_fail(err, -EINVAL, "%s: a time to live is 1 to %lld seconds", path,
				 (long long)TTL_SECONDS_MAX);
	if (ttl_seconds && (!path[strspn(path, "/")]))
		return tree_fail(err, -EINVAL, "%s: the root cannot expire", path);
	return tree_write(m, path, import_txn, &op, err);
}
