/*
 * model/tree/attr_space.c - the attr space (docs/FORMAT.md, "attr: node attributes"):
 * a node's mode, owner and times where they differ from the defaults, one
 * small sealed record per node under the node's data key, kept in the same
 * transaction as the data it belongs to (create, remove, rename).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

/*
 * Record layout, version 1 (36 bytes): u8 version, u8 fields (MODEL_ATTR_*),
 * u16 zero, u32 mode, u32 uid, u32 gid, i64 mtime_ns, i64 ctime_ns (all
 * big-endian), then the CRC-32C of key || the 32 bytes before it. Fields
 * not flagged are zero and mean "the default". Version 2 (44 bytes) adds
 * i64 atime_ns before the CRC; it is written only for a record that has an
 * atime, so every other record stays version 1 (and readable by older kvfs).
 */
#define ATTR_VERSION 1
#define ATTR_VERSION_ATIME 2
#define ATTR_BODY 32
#define ATTR_BODY_ATIME 40
#define ATTR_RECORD_MAX (ATTR_BODY_ATIME + 4)
#define ATTR_ALL (MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID | MODEL_ATTR_MTIME | \
		  MODEL_ATTR_CTIME | MODEL_ATTR_ATIME)

/* The root has no data key: its record lives under the one byte 0x00, which
 * no node key can be (top-level elements are strings, 0x02). */
static const uint8_t attr_root_key[1] = { 0x00 };

static void attr_key(const uint8_t **key, size_t *len)
{
	if (*len == 0) {
		*key = attr_root_key;
		*len = 1;
	}
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | p[i];
	return v;
}

/* Returns the record's length: 36 bytes, or 44 with an atime. */
static size_t attr_encode(const uint8_t *key, size_t key_len, const struct model_attr *a,
			  uint8_t out[ATTR_RECORD_MAX])
{
	size_t body = (a->have & MODEL_ATTR_ATIME) ? ATTR_BODY_ATIME : ATTR_BODY;

	memset(out, 0, ATTR_RECORD_MAX);
	out[0] = body == ATTR_BODY ? ATTR_VERSION : ATTR_VERSION_ATIME;
	out[1] = (uint8_t)(a->have & ATTR_ALL);
	if (a->have & MODEL_ATTR_MODE)
		put_be(out + 4, a->mode & 07777, 4);
	if (a->have & MODEL_ATTR_UID)
		put_be(out + 8, a->uid, 4);
	if (a->have & MODEL_ATTR_GID)
		put_be(out + 12, a->gid, 4);
	if (a->have & MODEL_ATTR_MTIME)
		put_be(out + 16, (uint64_t)a->mtime_ns, 8);
	if (a->have & MODEL_ATTR_CTIME)
		put_be(out + 24, (uint64_t)a->ctime_ns, 8);
	if (a->have & MODEL_ATTR_ATIME)
		put_be(out + 32, (uint64_t)a->atime_ns, 8);
	put_be(out + body, crc32c(crc32c(0, key, key_len), out, body), 4);
	return body + 4;
}

int attr_decode(const uint8_t *key, size_t key_len, const void *val, size_t len,
		struct model_attr *out)
{
	const uint8_t *v = val;
	size_t body = len == ATTR_BODY_ATIME + 4 ? ATTR_BODY_ATIME : ATTR_BODY;

	memset(out, 0, sizeof(*out));
	attr_key(&key, &key_len);
	if (len != ATTR_BODY + 4 && len != ATTR_BODY_ATIME + 4)
		return -EBADMSG;
	if (get_be(v + body, 4) != crc32c(crc32c(0, key, key_len), v, body))
		return -EBADMSG;
	/* version 1 has no atime; version 2 is the record that has one */
	if (v[0] != (body == ATTR_BODY ? ATTR_VERSION : ATTR_VERSION_ATIME) ||
	    (v[1] & ~ATTR_ALL) || v[2] || v[3] || (uint32_t)get_be(v + 4, 4) > 07777 ||
	    ((v[1] & MODEL_ATTR_ATIME) != 0) != (body == ATTR_BODY_ATIME))
		return -EINVAL;
	out->have = v[1];
	out->mode = (uint32_t)get_be(v + 4, 4);
	out->uid = (uint32_t)get_be(v + 8, 4);
	out->gid = (uint32_t)get_be(v + 12, 4);
	out->mtime_ns = (int64_t)get_be(v + 16, 8);
	out->ctime_ns = (int64_t)get_be(v + 24, 8);
	if (body == ATTR_BODY_ATIME)
		out->atime_ns = (int64_t)get_be(v + 32, 8);
	return 0;
}

int attr_get(struct store_txn *txn, const uint8_t *key, size_t len, struct model_attr *out)
{
	struct store_val v;
	int ret;

	memset(out, 0, sizeof(*out));
	attr_key(&key, &len);
	ret = store_get(txn, STORE_SPACE_ATTR, key, len, &v);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	return attr_decode(key, len, v.data, v.len, out) < 0 ? -EIO : 0;
}

int attr_put(struct store_txn *txn, const uint8_t *key, size_t len, const struct model_attr *a)
{
	uint8_t rec[ATTR_RECORD_MAX];
	size_t rec_len;
	int ret;

	attr_key(&key, &len);
	if (!(a->have & ATTR_ALL)) {
		ret = store_del(txn, STORE_SPACE_ATTR, key, len);
		return ret == -ENOENT ? 0 : ret;	/* all default: no record at all */
	}
	rec_len = attr_encode(key, len, a, rec);
	return store_put(txn, STORE_SPACE_ATTR, key, len, rec, rec_len);
}

int attr_merge(struct store_txn *txn, const uint8_t *key, size_t len, const struct model_attr *set)
{
	struct model_attr a;
	int ret = attr_get(txn, key, len, &a);

	if (ret == -EIO)
		memset(&a, 0, sizeof(a));	/* a corrupt record is replaced, not kept */
	else if (ret < 0)
		return ret;
	if (set->have & MODEL_ATTR_MODE)
		a.mode = set->mode & 07777;
	if (set->have & MODEL_ATTR_UID)
		a.uid = set->uid;
	if (set->have & MODEL_ATTR_GID)
		a.gid = set->gid;
	if (set->have & MODEL_ATTR_MTIME)
		a.mtime_ns = set->mtime_ns;
	if (set->have & MODEL_ATTR_CTIME)
		a.ctime_ns = set->ctime_ns;
	if (set->have & MODEL_ATTR_ATIME)
		a.atime_ns = set->atime_ns;
	a.have |= set->have & ATTR_ALL;
	return attr_put(txn, key, len, &a);
}

int attr_touch_dir(struct store_txn *txn, const uint8_t *key, size_t len, int64_t now_ns)
{
	struct model_attr t = { .have = MODEL_ATTR_MTIME | MODEL_ATTR_CTIME,
				.mtime_ns = now_ns, .ctime_ns = now_ns };

	return attr_merge(txn, key, len, &t);
}

/* Is key[len..] (a key that starts with the node's key) inside the subtree? */
static bool in_subtree(const uint8_t *k, size_t klen, size_t len)
{
	return klen == len || (len > 0 && k[len] != 0xFF);
}

int attr_delete_subtree(struct store_txn *txn, const uint8_t *key, size_t len)
{
	uint8_t buf[STORE_KEY_MAX + 1];
	int ret;

	if (len == 0)
		return 0;	/* the root is never removed */
	ret = store_del(txn, STORE_SPACE_ATTR, key, len);
	if (ret < 0 && ret != -ENOENT)
		return ret;
	if (len >= STORE_KEY_MAX)
		return 0;
	if (tree_subtree_empty(txn, STORE_SPACE_ATTR, key, len))
		return ttl_delete_subtree(txn, key, len);
	memcpy(buf, key, len);
	/* children start with a string (0x02) or an index (0x14..0x1c) element,
	 * as in tree_delete: a sibling continuing the name is left alone */
	for (int code = 0x02; code <= 0x1c; code++) {
		if (code != 0x02 && code < 0x14)
			continue;
		buf[len] = (uint8_t)code;
		ret = store_del_prefix(txn, STORE_SPACE_ATTR, buf, len + 1, NULL);
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	return ttl_delete_subtree(txn, key, len);	/* deadlines follow the nodes as attributes do */
}

int attr_each(struct store_txn *txn, const uint8_t *key, size_t len, attr_each_fn fn,
	      void *arg)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct model_attr a;
	const uint8_t *node;
	size_t node_len;
	int ret = store_scan_open(txn, STORE_SPACE_ATTR, key, len, &scan);

	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (len > 0 && !in_subtree(k.data, k.len, len))
			continue;	/* a sibling whose name continues this one's */
		if (attr_decode(k.data, k.len, v.data, v.len, &a) < 0) {
			ret = -EIO;
			break;
		}
		node = k.data;
		node_len = k.len;
		if (node_len == sizeof(attr_root_key) && node[0] == attr_root_key[0])
			node_len = 0;	/* the root's record (len 0 scans every record) */
		ret = fn(arg, node, node_len, &a);
		if (ret != 0)
			break;
	}
	store_scan_close(scan);
	return ret;
}

/* A rename's source and target: what attr_move_key maps from and to. */
struct attr_move {
	size_t src_len;
	const uint8_t *dst;
	size_t dst_len;
};

/*
 * The attr_rekey_fn of a rename: a key of src's subtree under dst instead.
 * 0 for a key too long there: no node has it (the data move refuses such
 * a key first), and the move drops it with the rest of src.
 */
static int attr_move_key(void *arg, const uint8_t *key, size_t len, uint8_t *out, size_t *out_len)
{
	const struct attr_move *m = arg;
	size_t rest = len - m->src_len;

	if (m->dst_len + rest > STORE_KEY_MAX)
		return 0;
	memcpy(out, m->dst, m->dst_len);
	memcpy(out + m->dst_len, key + m->src_len, rest);
	*out_len = m->dst_len + rest;
	return 1;
}

/*
 * Records collected before any is written: a write while the scan walks
 * its range can move the cursor (on LMDB, deleting the space's last key
 * resets it to the first key, and the scan stops with -EIO).
 */
struct attr_list {
	struct attr_rec {
		uint8_t key[STORE_KEY_MAX];
		size_t len;
		struct model_attr a;
		bool valid;	/* false: a record that does not verify */
	} *r;
	size_t n, cap;
};

/* Appends the key k to l (its fields for the caller to fill): 0 or -ENOMEM. */
static int attr_list_add(struct attr_list *l, const struct store_val *k)
{
	struct attr_rec *grown;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		grown = realloc(l->r, l->cap * sizeof(*l->r));
		if (!grown)
			return -ENOMEM;
		l->r = grown;
	}
	memcpy(l->r[l->n].key, k->data, k->len);
	l->r[l->n].len = k->len;
	l->n++;
	return 0;
}

/*
 * Moves the deadlines (ttl_remap_subtree), then the records, of the
 * subtree at key[0..len] (the node's own included) that fn maps to the
 * keys fn gives them; a record that does not verify is dropped. whole (a
 * rename): the subtree is then deleted whole, what fn left and all; else
 * each moved record's old key is deleted and what fn left stays.
 */
static int attr_remap(struct store_txn *txn, const uint8_t *key, size_t len, attr_rekey_fn fn,
		      void *arg, bool whole)
{
	uint8_t to[STORE_KEY_MAX];
	struct attr_list l = { 0 };
	struct store_scan *scan;
	struct store_val k, v;
	size_t to_len;
	int ret = ttl_remap_subtree(txn, key, len, fn, arg, whole);

	if (ret == 0)
		ret = store_scan_open(txn, STORE_SPACE_ATTR, key, len, &scan);
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (!in_subtree(k.data, k.len, len))
			continue;	/* a sibling continuing the node's name */
		ret = fn(arg, k.data, k.len, to, &to_len);
		if (ret < 0)
			break;
		if (ret == 0)
			continue;
		ret = attr_list_add(&l, &k);
		if (ret < 0)
			break;
		l.r[l.n - 1].valid = attr_decode(k.data, k.len, v.data, v.len, &l.r[l.n - 1].a) == 0;
	}
	store_scan_close(scan);
	if (ret == 0 && whole)
		ret = attr_delete_subtree(txn, key, len);
	/* fn again for the new key (it answers alike): a list of old keys holds half as much */
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		ret = fn(arg, l.r[i].key, l.r[i].len, to, &to_len);
		if (ret <= 0)
			continue;
		/* a new key is none fn maps: no later delete takes it */
		ret = whole ? 0 : store_del(txn, STORE_SPACE_ATTR, l.r[i].key, l.r[i].len);
		if (ret == 0 && l.r[i].valid)
			ret = attr_put(txn, to, to_len, &l.r[i].a);
	}
	free(l.r);
	return ret;
}

int attr_move_subtree(struct store_txn *txn, const uint8_t *src, size_t src_len,
		      const uint8_t *dst, size_t dst_len)
{
	struct attr_move m = { .src_len = src_len, .dst = dst, .dst_len = dst_len };

	if (src_len == 0 || dst_len == 0)
		return -EINVAL;
	return attr_remap(txn, src, src_len, attr_move_key, &m, true);
}

int attr_rekey_subtree(struct store_txn *txn, const uint8_t *key, size_t len, attr_rekey_fn fn,
		       void *arg)
{
	if (len == 0)
		return -EINVAL;	/* the root's record key is not a node key */
	return attr_remap(txn, key, len, fn, arg, false);
}

/* Drops the records under key[0..len] whose node is gone (after a view write). */
int attr_prune(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct attr_list gone = { 0 };
	struct store_scan *scan;
	struct store_val k, v;
	struct tree_node node;
	int ret = store_scan_open(txn, STORE_SPACE_ATTR, key, len, &scan);

	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (len == 0 && k.len == 1 && ((const uint8_t *)k.data)[0] == 0x00)
			continue;	/* the root's record */
		if (!in_subtree(k.data, k.len, len) && len > 0)
			continue;
		if (tree_lookup(txn, k.data, k.len, &node) == 0 && node.exists)
			continue;
		ret = attr_list_add(&gone, &k);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	for (size_t i = 0; ret == 0 && i < gone.n; i++) {
		ret = store_del(txn, STORE_SPACE_ATTR, gone.r[i].key, gone.r[i].len);
		if (ret == -ENOENT)
			ret = 0;
	}
	free(gone.r);
	return ret < 0 ? ret : ttl_prune(txn, key, len);
}

void attr_apply(const struct model_attr *a, struct model_node *out)
{
	out->attr = *a;
	if (out->kind != MODEL_KIND_LEAF && (a->have & MODEL_ATTR_MTIME))
		out->mtime_ns = a->mtime_ns;
	out->ctime_ns = out->mtime_ns;
	if ((a->have & MODEL_ATTR_CTIME) && a->ctime_ns > out->ctime_ns)
		out->ctime_ns = a->ctime_ns;
}
