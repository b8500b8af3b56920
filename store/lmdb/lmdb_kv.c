/*
 * store/lmdb/lmdb_kv.c - LMDB point operations (get, put, reserve, delete, a
 * prefix deleted) and cursors over a prefix. store.c has checked the
 * arguments and handles hidden subtrees and distinct children.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "store/lmdb/lmdb_int.h"

static MDB_dbi dbi_of(struct store_txn *txn, enum store_space space)
{
	return lmdb_of(txn->st)->dbi[space];
}

static bool absent(struct store_txn *txn, enum store_space space)
{
	return lmdb_of(txn->st)->absent[space];
}

/*
 * False when a key or value read is longer than the pages of the store
 * span: a damaged page's sizes, which the caller would read past the map.
 */
static bool within_span(const struct lmdb_txn *t, const MDB_val *k, const MDB_val *v)
{
	return !t->span || (k->mv_size <= t->span && v->mv_size <= t->span);
}

int lmdb_get(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
	     struct store_val *out)
{
	MDB_val k = { key_len, (void *)key }, v;
	int rc;

	if (absent(txn, space))
		return -ENOENT;
	rc = LMDB_ENGINE(mdb_get(lmdb_txn_of(txn)->txn, dbi_of(txn, space), &k, &v));
	if (rc == 0 && !within_span(lmdb_txn_of(txn), &v, &v))
		rc = MDB_CORRUPTED;
	if (rc)
		return lmdb_txn_err(lmdb_txn_of(txn), rc);
	out->data = v.mv_data;
	out->len = v.mv_size;
	return 0;
}

/* Every put goes through here (a plain one, or MDB_RESERVE: v gets the place). */
static int put_with(struct store_txn *txn, enum store_space space, const void *key,
		    size_t key_len, MDB_val *v, unsigned flags)
{
	struct lmdb_txn *t = lmdb_txn_of(txn);
	MDB_val k = { key_len, (void *)key };

	int rc;

	if (t->map_full)
		return -ENOSPC;	/* lmdb_write will grow the map and retry */
	rc = mdb_put(t->txn, dbi_of(txn, space), &k, v, flags);
	if (rc == 0)
		t->dirty = true;
	if (rc == 0 && t->written)
		*t->written += key_len + v->mv_size;	/* a queued batch's size (lmdb_queue.c) */
	return lmdb_txn_err(t, rc);
}

int lmdb_put(struct store_txn *txn, enum store_space space, const void *key, size_t key_len,
	     const void *val, size_t val_len)
{
	MDB_val v = { val_len, (void *)val };

	return put_with(txn, space, key, key_len, &v, 0);
}

int lmdb_put_reserve(struct store_txn *txn, enum store_space space, const void *key,
		     size_t key_len, size_t val_len, void **out)
{
	MDB_val v = { val_len, NULL };
	/* LMDB hands back the value's place in its own dirty page: no copy. */
	int rc = put_with(txn, space, key, key_len, &v, MDB_RESERVE);

	*out = rc == 0 ? v.mv_data : NULL;
	return rc;
}

int lmdb_del(struct store_txn *txn, enum store_space space, const void *key, size_t key_len)
{
	struct lmdb_txn *t = lmdb_txn_of(txn);
	MDB_val k = { key_len, (void *)key };

	int rc;

	if (t->map_full)
		return -ENOSPC;
	rc = mdb_del(t->txn, dbi_of(txn, space), &k, NULL);
	if (rc == 0)
		t->dirty = true;
	return lmdb_txn_err(t, rc);
}

/*
 * The map is a read-only MAP_SHARED mapping of data.mdb: dropping its
 * resident pages only unmaps them from this process (the page cache keeps
 * them, and so does the file: a later read of any thread faults the same
 * bytes back in). A transaction's own dirty pages are LMDB's heap copies,
 * never the map, so they are untouched. Matters once a big transaction
 * spills: it then reads (and so maps) every page it revisits.
 *
 * LMDB does not say where its map is (mdb_env_info's me_mapaddr is the
 * MDB_FIXEDMAP address, NULL here), and the map moves when it grows: so
 * the mappings of data.mdb are found in /proc/self/maps by device and
 * inode. Anything unexpected only leaves the pages where they are.
 */
void lmdb_trim(struct store_txn *txn)
{
	unsigned long long start, end, ino;
	unsigned dmaj, dmin;
	struct stat sb;
	char line[512];
	FILE *maps;
	int fd;

	if (mdb_env_get_fd(lmdb_of(txn->st)->env, &fd) != 0 || fstat(fd, &sb) != 0)
		return;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps)) {
		if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu", &start, &end, &dmaj, &dmin,
			   &ino) != 5 || ino != (unsigned long long)sb.st_ino ||
		    dmaj != major(sb.st_dev) || dmin != minor(sb.st_dev) || end <= start)
			continue;
		/* a hint: failing costs memory only */
		(void)madvise((void *)(uintptr_t)start, (size_t)(end - start), MADV_DONTNEED);
	}
	fclose(maps);
}

bool lmdb_space_is_empty(struct store_txn *txn, enum store_space space)
{
	MDB_stat ms;

	if (absent(txn, space))
		return true;
	return LMDB_ENGINE(mdb_stat(lmdb_txn_of(txn)->txn, dbi_of(txn, space), &ms)) == 0 &&
	       ms.ms_entries == 0;
}

static bool has_prefix(const MDB_val *k, const void *prefix, size_t prefix_len)
{
	return prefix_len == 0 ||
	       (k->mv_size >= prefix_len && memcmp(k->mv_data, prefix, prefix_len) == 0);
}

/* Positions c at the first key >= key (the first key at all for an empty key). */
static int cursor_seek(MDB_cursor *c, const void *key, size_t key_len, MDB_val *k, MDB_val *v)
{
	*k = (MDB_val){ key_len, (void *)key };
	return LMDB_ENGINE(mdb_cursor_get(c, k, v, key_len ? MDB_SET_RANGE : MDB_FIRST));
}

/*
 * Each deletion re-seeks to the prefix: everything before it is gone, so the
 * first key >= prefix is the next victim, whatever LMDB does with a cursor
 * after mdb_cursor_del.
 */
int lmdb_del_prefix(struct store_txn *txn, enum store_space space, const void *prefix,
		    size_t prefix_len, uint64_t *deleted)
{
	struct lmdb_txn *t = lmdb_txn_of(txn);
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t n = 0;
	int rc;

	if (t->map_full)
		return -ENOSPC;
	rc = mdb_cursor_open(t->txn, dbi_of(txn, space), &c);
	if (rc)
		return lmdb_txn_err(t, rc);
	while ((rc = cursor_seek(c, prefix, prefix_len, &k, &v)) == 0 &&
	       has_prefix(&k, prefix, prefix_len)) {
		rc = mdb_cursor_del(c, 0);
		if (rc)
			break;
		n++;
	}
	mdb_cursor_close(c);
	if (n)
		t->dirty = true;
	*deleted = n;
	return rc == MDB_NOTFOUND ? 0 : lmdb_txn_err(t, rc);
}

/* ---- scans ---- */

int lmdb_scan_open(struct store_scan *scan)
{
	struct lmdb_scan *s = lmdb_scan_of(scan);
	int rc;

	if (absent(scan->txn, scan->space))
		return -ENOENT;
	rc = mdb_cursor_open(lmdb_txn_of(scan->txn)->txn, dbi_of(scan->txn, scan->space),
			     &s->cursor);
	if (rc)
		return lmdb_txn_err(lmdb_txn_of(scan->txn), rc);
	s->state = SCAN_START;
	return 0;
}

void lmdb_scan_close(struct store_scan *scan)
{
	mdb_cursor_close(lmdb_scan_of(scan)->cursor);
}

static int val_cmp(const MDB_val *a, const void *b, size_t b_len)
{
	return store_key_cmp(a->mv_data, a->mv_size, b, b_len);
}

/* Marks the scan damaged (the first reason stays); the step gives -EIO. */
static int scan_damaged(struct lmdb_scan *s, const char *why)
{
	if (!s->base.damage)
		s->base.damage = why;
	return MDB_CORRUPTED;
}

/*
 * Checking what a seek found. LMDB finds the leaf a key belongs in by the
 * keys of its branch pages; a flipped bit in one of them sends a seek to
 * the wrong leaf, and the answer alone cannot show it: it may lie before
 * the target (a listing that seeks past a child would come back to it
 * for ever) or past keys it should have found (a listing would hide
 * them). Steps follow the pages' pointers, not their keys, so the key a
 * step back from the answer k tells: it must lie below the target, and
 * not below `floor` (a key the cursor stood at before, when known). Then
 * the cursor steps forward to k again. k equal to the target needs no
 * look: nothing can lie between them. Costs two steps, mostly in one page.
 */
static int seek_verify(struct lmdb_scan *s, const void *target, size_t target_len,
		       const MDB_val *floor, MDB_val *k, MDB_val *v)
{
	MDB_val pk, pv, nk, nv;
	int rc, c = val_cmp(k, target, target_len);

	if (c == 0)
		return 0;
	if (c < 0)	/* store.c would see it too, unless it lies outside the prefix */
		return scan_damaged(s, "a seek landed before its target (keys out of order)");
	rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &pk, &pv, MDB_PREV));
	if (rc == MDB_NOTFOUND) {
		/* k is the first key of all, as the step says: the first key must be k */
		rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &pk, &pv, MDB_FIRST));
		if (rc == 0 && (floor || val_cmp(&pk, k->mv_data, k->mv_size) != 0))
			return scan_damaged(s, "a seek skipped keys (a branch page is damaged)");
		return rc;
	}
	if (rc)
		return rc;
	if (val_cmp(&pk, target, target_len) >= 0 ||
	    (floor && val_cmp(&pk, floor->mv_data, floor->mv_size) < 0))
		return scan_damaged(s, "a seek skipped keys or landed out of order (a page is "
				    "damaged)");
	rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &nk, &nv, MDB_NEXT));
	if (rc == MDB_NOTFOUND || (rc == 0 && val_cmp(&nk, k->mv_data, k->mv_size) != 0))
		return scan_damaged(s, "steps back and forth disagree (a page is damaged)");
	if (rc == 0) {
		*k = nk;
		*v = nv;
	}
	return rc;
}

/*
 * A seek found nothing at or after target: then the last key of all lies
 * below it (MDB_LAST follows pointers only).
 */
static int seek_verify_end(struct lmdb_scan *s, const void *target, size_t target_len)
{
	MDB_val k, v;
	int rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &k, &v, MDB_LAST));

	if (rc == 0 && val_cmp(&k, target, target_len) >= 0)
		return scan_damaged(s, "a seek found nothing where keys are (a branch page is "
				    "damaged)");
	return rc == 0 ? MDB_NOTFOUND : rc;
}

/* A checked seek to the first key >= target, none known to lie before it but floor. */
static int seek_checked(struct lmdb_scan *s, const void *target, size_t target_len,
			const MDB_val *floor, MDB_val *k, MDB_val *v)
{
	int rc = cursor_seek(s->cursor, target, target_len, k, v);

	if (target_len == 0)
		return rc;	/* MDB_FIRST: pointers only */
	if (rc == MDB_NOTFOUND)
		return seek_verify_end(s, target, target_len);
	return rc ? rc : seek_verify(s, target, target_len, floor, k, v);
}

#define SEEK_STEPS 4	/* steps a seek from the cursor tries before it seeks */

/*
 * A seek from where the cursor stands (base.last, below the target): a
 * few steps find the answer when the keys skipped are few (the next leaf
 * of a listing, a small child's subtree), checked by the steps alone:
 * each must go forward. Else a seek, whose answer must lie past the key
 * the last step reached; the next such seek of the scan then tries one
 * step only (a listing's children tend to be alike: big ones stay big).
 */
static int seek_from_last(struct lmdb_scan *s, MDB_val *k, MDB_val *v)
{
	MDB_val pk = { s->base.last_len, s->base.last }, nk, nv;
	int rc, steps = s->seeks_needed ? 1 : SEEK_STEPS;

	for (int i = 0; i < steps; i++) {
		rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &nk, &nv, MDB_NEXT));
		if (rc)
			return rc;
		if (val_cmp(&nk, pk.mv_data, pk.mv_size) <= 0)
			return scan_damaged(s, "a step went back (keys out of order)");
		if (val_cmp(&nk, s->target, s->target_len) >= 0) {
			*k = nk;
			*v = nv;
			s->stepped = true;
			return 0;
		}
		pk = nk;
	}
	s->seeks_needed = true;
	return seek_checked(s, s->target, s->target_len, &nk, k, v);
}

/*
 * A move that left the prefix: the key it found may be one of ours,
 * misplaced by a flipped bit (a step or a seek takes it for the end, and
 * hides what follows). So the key after it must lie past it, and a key a
 * step found past the last one handed out.
 */
static int end_verify(struct lmdb_scan *s, const MDB_val *k)
{
	MDB_val nk, nv;
	int rc;

	if (s->stepped && s->base.have_last &&
	    val_cmp(k, s->base.last, s->base.last_len) <= 0)
		return scan_damaged(s, "a step went back (keys out of order)");
	rc = LMDB_ENGINE(mdb_cursor_get(s->cursor, &nk, &nv, MDB_NEXT));
	if (rc == 0 && val_cmp(&nk, k->mv_data, k->mv_size) <= 0)
		return scan_damaged(s, "a key out of order ends the prefix (a leaf page is "
				    "damaged)");
	return rc == 0 || rc == MDB_NOTFOUND ? MDB_NOTFOUND : rc;
}

/* One cursor move, as the state says; counts it. */
static int scan_move(struct lmdb_scan *s, MDB_val *k, MDB_val *v)
{
	bool at_last = s->at_last;

	s->base.steps++;
	s->at_last = false;
	s->stepped = s->state == SCAN_NEXT;
	switch (s->state) {
	case SCAN_START:
		return seek_checked(s, s->base.prefix, s->base.prefix_len, NULL, k, v);
	case SCAN_SEEK:
		if (at_last && val_cmp(&(MDB_val){ s->base.last_len, s->base.last },
				       s->target, s->target_len) < 0)
			return seek_from_last(s, k, v);
		return seek_checked(s, s->target, s->target_len, NULL, k, v);
	default:
		return LMDB_ENGINE(mdb_cursor_get(s->cursor, k, v, MDB_NEXT));
	}
}

int lmdb_scan_next(struct store_scan *scan, struct store_val *key, struct store_val *val)
{
	struct lmdb_scan *s = lmdb_scan_of(scan);
	MDB_val k, v;
	int rc;

	if (s->state == SCAN_END)
		return 0;
	rc = scan_move(s, &k, &v);
	if (rc == 0 && !within_span(lmdb_txn_of(scan->txn), &k, &v))
		rc = MDB_CORRUPTED;
	/* every reader copies a key into STORE_KEY_MAX bytes: a longer one is a damaged size */
	if (rc == 0 && k.mv_size > STORE_KEY_MAX)
		rc = scan_damaged(s, "a key longer than any written (a leaf page is damaged)");
	if (rc == 0 && !has_prefix(&k, scan->prefix, scan->prefix_len))
		rc = end_verify(s, &k);
	if (rc) {
		s->state = SCAN_END;
		return rc == MDB_NOTFOUND ? 0 : lmdb_txn_err(lmdb_txn_of(scan->txn), rc);
	}
	s->state = SCAN_NEXT;
	s->at_last = true;
	key->data = k.mv_data;
	key->len = k.mv_size;
	val->data = v.mv_data;
	val->len = v.mv_size;
	return 1;
}

/* Lazily: the cursor moves on the next scan_next (one step). */
int lmdb_scan_seek(struct store_scan *scan, const void *key, size_t key_len)
{
	struct lmdb_scan *s = lmdb_scan_of(scan);

	if (key_len == scan->prefix_len && memcmp(key, scan->prefix, key_len) == 0) {
		s->state = SCAN_START;
		return 0;
	}
	memcpy(s->target, key, key_len);
	s->target_len = key_len;
	s->state = SCAN_SEEK;
	return 0;
}
