/*
 * store/lmdb/lmdb_check.c - store_txn_check for LMDB: the order of the B-trees
 * as a seek sees it, not only as a walk does.
 *
 * A walk (MDB_NEXT) follows the pages' pointers; a seek (MDB_SET_RANGE,
 * every point read and every listing's skip) compares the target against
 * the keys of the branch pages on its way down. LMDB keeps no checksum, so
 * a flipped bit in a branch key goes unseen by a walk, and a flipped bit in
 * a leaf key leaves that key where no seek finds it. So every key the walk
 * finds must be greater than the one before it, and a seek for it must
 * land on it, on the same record. One seek per key: a check costs about
 * twice a walk.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/lmdb/lmdb_int.h"

#define CHECK_REPORTS_MAX 20	/* problems told per space; the rest are counted */

struct order_check {
	struct lmdb_txn *t;
	enum store_space space;
	store_check_fn fn;
	void *arg;
	unsigned reported;
	uint64_t more;
};

/* One problem: a data key is passed as such (the caller names its path), others in hex. */
static void order_report(struct order_check *c, const MDB_val *k, const char *what)
{
	char msg[256 + 2 * 64];
	size_t n, shown;

	if (c->reported >= CHECK_REPORTS_MAX) {
		c->more++;
		return;
	}
	c->reported++;
	if (c->space == STORE_SPACE_DATA) {
		snprintf(msg, sizeof(msg), "%s (a page of the store is damaged)", what);
		c->fn(c->arg, k->mv_data, k->mv_size, msg);
		return;
	}
	n = (size_t)snprintf(msg, sizeof(msg), "the %s space, key ", lmdb_space_name(c->space));
	shown = k->mv_size < 64 ? k->mv_size : 64;
	for (size_t i = 0; i < shown && n + 3 < sizeof(msg); i++)
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, "%02x",
				      ((const uint8_t *)k->mv_data)[i]);
	snprintf(msg + n, sizeof(msg) - n, "%s: %s (a page of the store is damaged)",
		 shown < k->mv_size ? "..." : "", what);
	c->fn(c->arg, NULL, 0, msg);
}

/* A seek for k (from the root, through the branch keys) lands on it: the same record. */
static bool seek_finds(struct order_check *c, MDB_cursor *probe, const MDB_val *k,
		       const MDB_val *v)
{
	MDB_val sk = *k, sv;
	int rc = LMDB_ENGINE(mdb_cursor_get(probe, &sk, &sv, MDB_SET_RANGE));

	(void)c;
	return rc == 0 && sk.mv_size == k->mv_size &&
	       memcmp(sk.mv_data, k->mv_data, k->mv_size) == 0 && sv.mv_data == v->mv_data;
}

static int check_space(struct order_check *c)
{
	MDB_txn *txn = c->t->txn;
	MDB_dbi dbi = lmdb_of(c->t->base.st)->dbi[c->space];
	MDB_cursor *walk, *probe;
	uint8_t prev[STORE_KEY_MAX];
	size_t prev_len = 0;
	bool have_prev = false;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(txn, dbi, &walk);
	if (rc)
		return lmdb_err(rc);
	rc = mdb_cursor_open(txn, dbi, &probe);
	if (rc) {
		mdb_cursor_close(walk);
		return lmdb_err(rc);
	}
	for (rc = LMDB_ENGINE(mdb_cursor_get(walk, &k, &v, MDB_FIRST)); rc == 0;
	     rc = LMDB_ENGINE(mdb_cursor_get(walk, &k, &v, MDB_NEXT))) {
		if (k.mv_size > STORE_KEY_MAX || (c->t->span && v.mv_size > c->t->span)) {
			order_report(c, &(MDB_val){ 0, NULL }, "a key or value longer than "
				     "the store allows: the walk stops here");
			rc = MDB_NOTFOUND;
			break;
		}
		if (have_prev && store_key_cmp(k.mv_data, k.mv_size, prev, prev_len) <= 0)
			order_report(c, &k, "key out of order: a walk finds it after a key not "
				     "below it");
		else if (!seek_finds(c, probe, &k, &v))
			order_report(c, &k, "a seek for this key does not find it (listings "
				     "skip it, or loop, or fail)");
		memcpy(prev, k.mv_data, k.mv_size);
		prev_len = k.mv_size;
		have_prev = true;
	}
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) {
		order_report(c, &(MDB_val){ 0, NULL }, "LMDB finds a page damaged: the walk "
			     "stops here");
		rc = MDB_NOTFOUND;
	}
	mdb_cursor_close(probe);
	mdb_cursor_close(walk);
	return rc == MDB_NOTFOUND ? 0 : lmdb_err(rc);
}

int lmdb_check(struct store_txn *txn, store_check_fn fn, void *arg)
{
	struct order_check c = { .t = lmdb_txn_of(txn), .fn = fn, .arg = arg };
	char msg[160];
	int ret = 0;

	for (int sp = 0; sp < STORE_SPACES_ALL && ret == 0; sp++) {
		if (lmdb_of(txn->st)->absent[sp])
			continue;
		c.space = (enum store_space)sp;
		c.reported = 0;
		c.more = 0;
		ret = check_space(&c);
		if (c.more) {
			snprintf(msg, sizeof(msg), "the %s space: %llu more keys out of order "
				 "or not found by a seek", lmdb_space_name(c.space),
				 (unsigned long long)c.more);
			fn(arg, NULL, 0, msg);
		}
	}
	return ret;
}
