/*
 * store/store_scan.c - store.h's range scans for every backend: opening and
 * stepping a scan through the backend's cursor, skipping hidden subtrees,
 * progress for long scans, and listing distinct children at a depth.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_int.h"
#include "store/store_ops.h"

/* ---- scans ---- */

int store_scan_open(struct store_txn *txn, enum store_space space,
		    const void *prefix, size_t prefix_len, struct store_scan **out)
{
	const struct store_ops *ops = txn->st->ops;
	struct store_scan *s;
	int rc;

	*out = NULL;
	if ((rc = store_key_check(prefix_len)))
		return rc;
	s = calloc(1, ops->scan_size);
	if (!s)
		return -ENOMEM;
	s->txn = txn;
	s->space = space;
	if (prefix_len)
		memcpy(s->prefix, prefix, prefix_len);
	s->prefix_len = prefix_len;
	rc = ops->core.scan_open(s);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_scan_close(struct store_scan *scan)
{
	if (!scan)
		return;
	atomic_fetch_add_explicit(&scan->txn->st->keys_read, scan->keys, memory_order_relaxed);
	scan->txn->st->ops->core.scan_close(scan);
	free(scan);
}

void store_scan_expect_children(struct store_scan *scan)
{
	if (scan->txn->st->ops->hint.scan_expect_children)
		scan->txn->st->ops->hint.scan_expect_children(scan);
}

int store_scan_child_subdirs(struct store_scan *scan, const void *child, size_t len,
			     uint32_t *count)
{
	struct store_val hidden;
	int ret;

	*count = 0;
	if (!scan->txn->st->ops->hint.scan_child_subdirs)
		return 0;
	/*
	 * Keys under it this transaction hides (past their TTL, not deleted by
	 * the backend yet) still count there: a stat counts what model/ shows.
	 */
	ret = store_txn_hidden_from(scan->txn, STORE_SPACE_DATA, child, len, &hidden);
	if (ret < 0)
		return ret;
	if (ret == 1 && hidden.len > len && memcmp(hidden.data, child, len) == 0)
		return 0;
	return scan->txn->st->ops->hint.scan_child_subdirs(scan, child, len, count);
}

int store_txn_prefetch(struct store_txn *txn, enum store_space space, const void *prefix,
		       size_t prefix_len)
{
	if (!txn->st->ops->hint.prefetch || txn->write)
		return 0;
	if (prefix_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	return txn->st->ops->hint.prefetch(txn, space, prefix, prefix_len);
}

void store_txn_expect_reads(struct store_txn *txn, enum store_space space, const void *prefix,
			    size_t prefix_len)
{
	if (txn->st->ops->hint.expect_reads && !txn->write && prefix_len <= STORE_KEY_MAX)
		txn->st->ops->hint.expect_reads(txn, space, prefix, prefix_len);
}

int store_txn_check(struct store_txn *txn, store_check_fn fn, void *arg)
{
	if (!txn->st->ops->admin.check || txn->write)
		return 0;
	return txn->st->ops->admin.check(txn, fn, arg);
}

int store_txn_repair(struct store_txn *txn)
{
	if (!txn->st->ops->admin.repair || !txn->write)
		return 0;
	return txn->st->ops->admin.repair(txn);
}

uint64_t store_scan_steps(const struct store_scan *scan)
{
	return scan->steps;
}

const char *store_scan_damage(const struct store_scan *scan)
{
	return scan->damage;
}

/*
 * Forward progress. A backend's step hands out key: it must sort after the
 * key handed out before it, or, when a seek came in between, at or after
 * the seek's target. On a sound store both hold by definition; a damaged
 * page (a flipped bit in a key LMDB compares against) breaks them, and a
 * caller that trusted the answer would hide keys or, seeking past what it
 * was given and landing before it again, loop. So the scan stops for good.
 * Costs a compare and a copy of the key per step.
 */
static int scan_progress(struct store_scan *scan, const struct store_val *key)
{
	if (scan->seeking) {
		if (store_key_cmp(key->data, key->len, scan->target, scan->target_len) < 0)
			scan->damage = "a seek landed before its target (keys out of order)";
	} else if (scan->have_last &&
		   store_key_cmp(key->data, key->len, scan->last, scan->last_len) <= 0) {
		scan->damage = "a step did not move past the key before it (keys out of order)";
	}
	if (scan->damage)
		return -EIO;
	memcpy(scan->last, key->data, key->len);
	scan->last_len = key->len;
	scan->have_last = true;
	scan->seeking = false;
	return 1;
}

/* Every backend seek goes through here: the next key is checked against key. */
static int scan_seek_to(struct store_scan *scan, const void *key, size_t key_len)
{
	memcpy(scan->target, key, key_len);
	scan->target_len = key_len;
	scan->seeking = true;
	return scan->txn->st->ops->core.scan_seek(scan, key, key_len);
}

/* One backend step, checked; -EINTR once the store's interrupt flag is up. */
static int scan_step(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	int rc;

	if (scan->damage)
		return -EIO;
	if (store_interrupted(scan->txn->st))
		return -EINTR;
	rc = scan->txn->st->ops->core.scan_next(scan, key, val);
	if (rc == -EIO && !scan->damage)
		scan->damage = "the store's pages are damaged";
	return rc == 1 ? scan_progress(scan, key) : rc;
}

struct store_txn *store_scan_txn(struct store_scan *scan)
{
	return scan->txn;
}

/*
 * Where the subtree of the element ending at key[len] ends: key[0..len) + 0xff.
 * No tuple element starts with 0xff, so every key below that element sorts
 * before it, while a sibling that merely continues the element's bytes (the
 * string "a\0b" after "a": 02 61 00 ff 62 00) sorts after it. A plain byte
 * successor ("strinc") would skip such siblings.
 */
static void subtree_end(const uint8_t *key, size_t len, uint8_t *out, size_t *out_len)
{
	memcpy(out, key, len);
	out[len] = 0xff;
	*out_len = len + 1;
}

/* One seek past a hidden subtree, as a listing skips a child. */
static int skip_hidden(struct store_scan *scan, const struct store_val *h)
{
	uint8_t end[STORE_KEY_MAX + 1];
	size_t end_len;

	subtree_end(h->data, h->len, end, &end_len);
	return scan_seek_to(scan, end, end_len);
}

/* past_hidden's answer when the scan was moved past a hidden subtree: step again. */
#define SCAN_AGAIN 2

/*
 * After a step that answered rc (1: key found): SCAN_AGAIN when key lies
 * in a hidden subtree and the scan now stands past it, else what the
 * step should return (rc, or the seek's error).
 */
static int past_hidden(struct store_scan *scan, const struct store_val *key, int rc)
{
	const struct store_val *h;

	if (rc != 1 || !(h = store_hidden_covering(scan->txn, scan->space, key->data, key->len)))
		return rc;
	rc = skip_hidden(scan, h);
	return rc < 0 ? rc : SCAN_AGAIN;
}

int store_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	int rc;

	for (;;) {
		rc = scan_step(scan, key, val);
		scan->keys += rc == 1;
		rc = past_hidden(scan, key, rc);
		if (rc != SCAN_AGAIN)
			return rc;
	}
}

/* Keys below the prefix seek to the prefix; keys past it end the scan on the next step. */
int store_scan_seek(struct store_scan *scan, const void *key, size_t key_len)
{
	size_t n = key_len < scan->prefix_len ? key_len : scan->prefix_len;
	int c = n ? memcmp(key, scan->prefix, n) : 0;

	if (key_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	if (c < 0 || (c == 0 && key_len <= scan->prefix_len))
		return scan_seek_to(scan, scan->prefix, scan->prefix_len);
	return scan_seek_to(scan, key, key_len);
}

/*
 * Length of key up to the end of the depth-th element after the prefix:
 * 1 with *end set, 0 when the key has fewer elements, -EIO if it does not
 * decode (keys in the data space are tuples).
 */
static int child_boundary(const struct store_scan *s, const struct store_val *key,
			  int depth, size_t *end)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int rc = 1;

	tuple_reader_init(&r, (const uint8_t *)key->data + s->prefix_len, key->len - s->prefix_len);
	for (int i = 0; i < depth && rc == 1; i++)
		rc = tuple_next(&r, &e);
	if (rc < 0)
		return -EIO;
	*end = s->prefix_len + r.pos;
	return rc;
}

/* A backend's own distinct listing; hidden subtrees are still skipped here. */
static int next_distinct_backend(struct store_scan *scan, int depth, struct store_val *key,
				 struct store_val *val, size_t *child_end)
{
	int rc;

	for (;;) {
		if (scan->damage)
			return -EIO;
		if (store_interrupted(scan->txn->st))
			return -EINTR;
		rc = scan->txn->st->ops->hint.scan_next_distinct(scan, depth, key, val, child_end);
		scan->keys += rc == 1;
		if (rc == 1)
			rc = scan_progress(scan, key);
		rc = past_hidden(scan, key, rc);
		if (rc != SCAN_AGAIN)
			return rc;
	}
}

/*
 * Keys with fewer than `depth` elements after the prefix (the prefix's own
 * key, or a leaf above the wanted depth) name no element there: skipped.
 */
int store_scan_next_distinct(struct store_scan *scan, int depth,
			     struct store_val *key, struct store_val *val, size_t *child_end)
{
	uint8_t end_key[STORE_KEY_MAX + 1];
	size_t end, end_len;
	int rc;

	if (depth < 1)
		return -EINVAL;
	if (scan->txn->st->ops->hint.scan_next_distinct)
		return next_distinct_backend(scan, depth, key, val, child_end);
	for (;;) {
		rc = store_scan_next(scan, key, val);
		if (rc != 1)
			return rc;
		rc = child_boundary(scan, key, depth, &end);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
	}
	*child_end = end;
	subtree_end(key->data, end, end_key, &end_len);
	rc = scan_seek_to(scan, end_key, end_len);
	return rc < 0 ? rc : 1;
}
