/*
 * model/doc/doc.c - JSON documents -> keys. Flattening streams json_parse
 * events straight into store_put calls (a stack of open containers over
 * one key buffer; no DOM). Also the public import entry points; the way
 * back (rendering, export) is model/doc/doc_render.c; the sweep of what a
 * document no longer holds is model/doc/doc_sweep.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"
#include "model/doc/flat_int.h"

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
 *
 * Written on behalf of a user (doc_write's who), each change is also one
 * the user could make by itself (model/tree/perm.c): a changed leaf needs write
 * permission on it; a node created, removed (swept) or replaced by one of
 * another kind, what its directory allows. A frame whose container was
 * there before keeps its mode and owner for its children's checks
 * ("guard"); below a container this write made, everything is the user's
 * own and nothing is checked. The nodes made get the user as owner.
 */

/*
 * Leaves put between two store_txn_trim calls. Once a big transaction
 * spills (LMDB: past 512 MiB of written pages), each put at a random place
 * reads a page of the file through the map, so the map's resident pages
 * grow by up to a page per put: this bounds them to some 16 MiB, for one
 * walk of /proc/self/maps and one madvise per 4096 puts.
 */
#define DOC_TRIM_PUTS 4096

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

/*
 * The directory whose rules the value at the current key meets: NULL when
 * unchecked. *reach: who may search it and every directory above it (the
 * kernel checked those above the view itself).
 */
static const struct perm_node *flat_dir(const struct flat *f, bool *reach)
{
	const struct flat_frame *top;

	*reach = true;
	if (!f->who)
		return NULL;
	if (f->depth == 0)
		return f->top_guard ? &f->top_dir : NULL;
	top = &f->stack[f->depth - 1];
	*reach = top->reach;
	return top->guard ? &top->dir : NULL;
}

/* A change the path to the current key does not let who reach: -EACCES. */
static int flat_unreachable(struct flat *f)
{
	struct strbuf sb;

	f->failed = true;
	strbuf_init(&sb);
	tree_key_to_path(f->key, f->w.len, &sb);
	tree_fail(f->err, -EACCES, "%s: permission denied to reach %s (no search permission "
		  "on a directory above it)", f->p->text, sb.buf ? sb.buf : "?");
	strbuf_release(&sb);
	return -EACCES;
}

/* The node at the current key is about to be created. */
static int flat_may_create(struct flat *f)
{
	bool reach;
	const struct perm_node *d = flat_dir(f, &reach);
	int ret;

	if (!d)
		return 0;
	if (!reach)
		return flat_unreachable(f);
	ret = perm_may_create(f->who, d, f->key, f->w.len, f->p->text, f->err);
	f->failed |= ret < 0;	/* with perm.c's message */
	return ret;
}

/* The node at the current key (a container when dir) is about to go or be replaced. */
static int flat_may_remove(struct flat *f, bool dir)
{
	bool reach;
	const struct perm_node *d = flat_dir(f, &reach);
	int ret;

	if (!d)
		return 0;
	if (!reach)
		return flat_unreachable(f);
	ret = perm_may_remove(f->txn, f->who, d, f->key, f->w.len, dir, f->p->text, f->err);
	f->failed |= ret < 0;
	return ret;
}

/* The leaf at the current key is about to change. */
static int flat_may_change(struct flat *f)
{
	bool reach;
	int ret;

	if (!f->who)
		return 0;
	flat_dir(f, &reach);
	if (!reach)
		return flat_unreachable(f);
	ret = perm_may_change(f->txn, f->who, f->key, f->w.len, f->p->text, f->err);
	f->failed |= ret < 0;
	return ret;
}

/* A node this write made (or replaced) at the current key: its owner is the writer. */
static int flat_owned(struct flat *f)
{
	int ret;

	if (!f->owner.have || f->w.len == 0)
		return 0;
	ret = attr_merge(f->txn, f->key, f->w.len, &f->owner);
	return ret < 0 ? flat_fail(f, ret) : 0;
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
	bool fresh, stays;
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
	/* The container stays (its children are checked against it), or is made. */
	stays = f->w.len == 0 || (n.exists && n.kind != MODEL_KIND_LEAF &&
				  !(n.marker && n.leaf.tag != same));
	if (!n.exists)
		ret = flat_may_create(f);
	else if (!stays)
		ret = flat_may_remove(f, n.kind != MODEL_KIND_LEAF);
	if (ret == 0 && !stays)
		ret = flat_owned(f);
	if (ret < 0)
		return ret;
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
	fr->guard = f->who && stays;
	if (fr->guard) {
		ret = perm_get(f->txn, f->who, f->key, fr->len, true, &fr->dir);
		if (ret < 0) {
			f->depth--;
			return flat_fail(f, ret);
		}
		fr->reach = (f->depth == 1 || fr[-1].reach) &&
			    perm_allows(f->who, &fr->dir, PERM_X);
	}
	fr->next = 0;
	fr->names = f->names.len;
	return 0;
}

static int flat_end(struct flat *f)
{
	struct flat_frame *fr = &f->stack[--f->depth];
	int ret = fr->fresh ? 0 : flat_sweep(f, fr);

	if (ret < 0 && f->failed)
		return ret;	/* a removal refused, with its message */
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
	if (!n.exists)
		ret = flat_may_create(f);
	else if (n.kind != MODEL_KIND_LEAF)
		ret = flat_may_remove(f, true);	/* a directory, empty or not, becomes a leaf */
	else if (!flat_same_value(&n.leaf, leaf))
		ret = flat_may_change(f);
	if (ret < 0)
		return ret;
	if (n.exists && n.kind == MODEL_KIND_LEAF) {
		if (flat_same_value(&n.leaf, leaf))
			return 0;
		/*
		 * A changed value of the same type keeps how it was shown:
		 * `printf abc > s` has no newline. A new type (a string that
		 * becomes null) prints as a new leaf does, newline included.
		 */
		if (leaf->tag != LEAF_BYTES &&
		    leaf_model_type(leaf) == leaf_model_type(&n.leaf))
			leaf->flags = n.leaf.flags & LEAF_FLAG_NEWLINE;
	} else if (n.exists && !n.marker && f->w.len > 0) {
		ret = tree_delete(f->txn, f->key, f->w.len);
		if (ret < 0)
			return flat_fail(f, ret);
	}
	ret = tree_put_leaf(f->txn, f->key, f->w.len, leaf);
	if (ret < 0)
		return flat_fail(f, ret);
	if (!n.exists || n.kind != MODEL_KIND_LEAF) {
		ret = flat_owned(f);
		if (ret < 0)
			return ret;
	}
	if (++f->puts >= DOC_TRIM_PUTS) {
		store_txn_trim(f->txn);
		f->puts = 0;
	}
	return 0;
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

/*
 * Where the values at depth 0 go, for the checks: appended, in the array
 * (made by this write when missing: created in its parent, and the
 * writer's); a document, in the node's parent (the root has none).
 */
static int prepare_guard(struct flat *f, const struct tree_node *n)
{
	const struct tree_path *p = f->p;
	int ret;

	if (!f->who)
		return 0;
	if (f->append && n->exists) {
		f->top_guard = true;
		ret = perm_get(f->txn, f->who, p->key, p->len, true, &f->top_dir);
	} else if (p->len > 0) {
		f->top_guard = true;
		ret = perm_get(f->txn, f->who, p->key, p->parent_len, true, &f->top_dir);
	} else {
		return 0;
	}
	if (ret < 0)
		return tree_fail(f->err, ret, "%s: corrupt attribute record (run kvfs check)",
				 p->text);
	if (!f->append || n->exists)
		return 0;
	/* the array itself is made now: checked in its parent, then the writer's */
	f->w.len = p->len;
	ret = flat_may_create(f);
	f->top_guard = false;
	return ret;
}

static int prepare_append(struct flat *f, const struct tree_node *n)
{
	const struct tree_path *p = f->p;
	int ret;

	if (!n->exists) {
		ret = tree_attach(f->txn, p, f->err);
		f->w.len = p->len;
		return ret < 0 ? ret : flat_owned(f);
	}
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
	      unsigned flags, const struct model_cred *who, model_progress_fn progress,
	      void *arg, struct model_error *err)
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
	f->who = who && who->uid != 0 ? who : NULL;	/* uid 0 may anything */
	if (who)
		perm_new_owner(who, &f->owner);
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
		ret = prepare_guard(f, &n);
	if (ret == 0)
		ret = f->append ? prepare_append(f, &n) : prepare_replace(f, &n);
	if (ret == 0)
		ret = flat_parse(f, json, len, flags & DOC_MAPPED, progress, arg);
	if (ret == 0 && f->append && !f->appended && (!n.exists || n.marker))
		ret = tree_put_marker(txn, p->key, p->len, MODEL_KIND_ARRAY);
	/* a document over a directory holding a table keeps the table's directory */
	if (ret == 0 && !f->append && n.exists && n.kind != MODEL_KIND_LEAF)
		ret = table_check_kept(txn, p->key, p->len, p->text, err);
	strbuf_release(&f->bytes);
	strbuf_release(&f->pend_str);
	strbuf_release(&f->names);
	free(f);
	return ret;
}

/* ---- import ---- */

/* Below this an import's pages fit the map's usual room. */
#define IMPORT_RESERVE_MIN ((size_t)16 << 20)

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
		ret = doc_write(txn, &p, op->json, op->len, op->flags, NULL, op->progress, op->arg,
				op->err);
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
	/* room for the pages at once, not a whole new attempt per doubling of
	 * the map (small values take about five times their JSON); a hint */
	if (len > IMPORT_RESERVE_MIN && !m->readonly)
		(void)store_reserve(m->st, len <= UINT64_MAX / 6 ? (uint64_t)len * 6 : UINT64_MAX);
	return tree_write(m, path, import_txn, &op, err);
}
