/*
 * store/etcd/etcd_kids_check.c - kvfs check and repair of the children
 * space: every container above a data key has its entry, every record its
 * own, every leaf's directory its leaf flag; a repair puts the missing.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/tuple.h"

/*
 * Calls fn for every key of [lo, hi) at the transaction's revision, a page
 * at a time (pages are given back, not kept: a check reads everything).
 */
static int walk_range(struct store_etcd_txn *t, const uint8_t *lo, size_t ll, const uint8_t *hi,
		      size_t hl, bool values, int (*fn)(void *arg, const struct etcd_kv *kv),
		      void *arg)
{
	uint8_t from[ETCD_KEY_MAX];
	size_t fl = ll;
	int rc;

	memcpy(from, lo, ll);
	for (;;) {
		struct etcd_range_opts o = { .range_end = hi, .range_end_len = hl, .limit = KIDS_PAGE,
					     .keys_only = !values, .revision = t->rev };
		struct etcd_range_result r = { 0 };
		bool more;

		rc = etcd_range_retry(t->c, from, fl, &o, &r);
		if (rc)
			return rc;
		for (size_t i = 0; i < r.len && rc == 0; i++)
			rc = fn(arg, &r.kvs[i]);
		more = r.more && r.len;
		if (more)
			fl = etcd_key_after(&r.kvs[r.len - 1], from);
		etcd_range_result_release(&r);
		if (rc || !more)
			return rc;
	}
}

struct kids_walk {
	struct store_etcd_txn *repair;	/* puts the entries missing instead of reporting them */
	int rc;	/* the first put that failed */
	struct key_list set;	/* containers with an entry, sorted */
	struct key_list flags;	/* containers with a leaf flag, sorted (a store that keeps them) */
	bool leaf_flags;	/* the store keeps them (marker "3") */
	size_t skip;	/* bytes before the container key (entries) or tuple key (data) */
	store_check_fn fn;
	void *arg;
	store_container_test_fn record;	/* keys holding a container record need their own (or NULL) */
	uint8_t prev[STORE_KEY_MAX];	/* the last data key, whose containers are checked */
	size_t prev_len;
};

static int add_entry(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;

	if (kv->key_len <= w->skip)
		return 0;	/* the marker */
	return etcd_key_list_add(&w->set, kv->key + w->skip, kv->key_len - w->skip);
}

static int add_flag(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;

	if (kv->key_len < w->skip)
		return 0;	/* the lease flag */
	return etcd_key_list_add(&w->flags, kv->key + w->skip, kv->key_len - w->skip);
}


static bool key_list_has(const struct key_list *ks, const uint8_t *key, size_t len)
{
	size_t lo = 0, hi = ks->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = store_key_cmp(ks->keys[mid], ks->lens[mid], key, len);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * The container key[0..len) has no entry: reported, or (a repair) given
 * one whose hint is hint[0..hint_len), the first key under it or its own.
 */
static void kids_missing(struct kids_walk *w, const uint8_t *key, size_t len, const uint8_t *hint,
			 size_t hint_len, const char *message)
{
	uint8_t k[ETCD_KEY_MAX];
	int n = etcd_kids_elements(key, len);

	if (!w->repair) {
		w->fn(w->arg, key, len, message);
		return;
	}
	if (w->rc == 0 && n >= 1)
		w->rc = etcd_buf_put(w->repair->buf, k, etcd_kids_key(w->repair->st, (unsigned)n - 1, key, len, k),
				     hint, hint_len);
}

/*
 * A leaf tk[0..len) (not a record) needs its container's leaf flag, or a
 * listing that trusts entries skips it: reported, or (repair) put.
 */
static void check_leaf_flag(struct kids_walk *w, const uint8_t *tk, size_t len)
{
	unsigned depth;
	size_t parent = etcd_kids_parent_of(tk, len, &depth);

	if (parent == SIZE_MAX || depth >= KIDS_DEPTH_MAX || key_list_has(&w->flags, tk, parent))
		return;
	if (!w->repair)
		w->fn(w->arg, tk, len, "leaf without its directory's leaf flag in the etcd children "
		      "space: ls of its directory may leave it out (docs/ETCD.md section 7)");
	else if (w->rc == 0)
		w->rc = etcd_kids_note_leaf(w->repair, tk, len);	/* once per directory: the buffer has it after */
}

/*
 * Every container above a data key needs its entry, or a listing of its
 * parent passes it over. Keys come in order, so the containers this key
 * shares with the last one were checked with it.
 */
static int check_key(void *arg, const struct etcd_kv *kv)
{
	struct kids_walk *w = arg;
	const uint8_t *tk = kv->key + w->skip;
	size_t len = kv->key_len - w->skip, same = 0;
	struct tuple_reader r;
	struct tuple_elem e;
	unsigned depth = 0;

	/*
	 * A key on a lease (a TTL) is deleted by etcd itself at its deadline,
	 * and the entries above it with it or not (another lease, or none): a
	 * check at that moment may see either first, so it is passed over (a
	 * repair gives it its entries all the same: one left behind is stale,
	 * which listings allow for).
	 */
	if (kv->key_len <= w->skip || len > STORE_KEY_MAX || (kv->lease && !w->repair))
		return 0;
	while (same < len && same < w->prev_len && tk[same] == w->prev[same])
		same++;
	tuple_reader_init(&r, tk, len);
	while (tuple_next(&r, &e) == 1 && r.pos < len && depth++ < KIDS_DEPTH_MAX) {
		if (r.pos <= same || key_list_has(&w->set, tk, r.pos))
			continue;
		kids_missing(w, tk, r.pos, tk, len, "no entry in the etcd children space: ls of "
			     "its directory does not show it (docs/ETCD.md section 7)");
	}
	if (w->record && w->record(kv->val, kv->val_len) && etcd_kids_elements(tk, len) - 1 < KIDS_DEPTH_MAX &&
	    !key_list_has(&w->set, tk, len))
		kids_missing(w, tk, len, tk, len, "empty container without its entry in the etcd "
			     "children space: ls -l gives its parent a wrong nlink (docs/ETCD.md "
			     "section 7)");
	else if (w->leaf_flags && !(w->record && w->record(kv->val, kv->val_len)))
		check_leaf_flag(w, tk, len);
	memcpy(w->prev, tk, len);
	w->prev_len = len;
	return w->rc;
}

static int kid_cmp(const void *a, const void *b, void *arg)
{
	const struct key_list *ks = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;

	return store_key_cmp(ks->keys[i], ks->lens[i], ks->keys[j], ks->lens[j]);
}

/* Sorts the set by container key (the space orders it by depth first). */
static int key_list_sort(struct key_list *ks)
{
	size_t *order = malloc((ks->n ? ks->n : 1) * sizeof(*order));
	uint8_t **keys = malloc((ks->n ? ks->n : 1) * sizeof(*keys));
	size_t *lens = malloc((ks->n ? ks->n : 1) * sizeof(*lens));

	if (!order || !keys || !lens) {
		free(order);
		free(keys);
		free(lens);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ks->n; i++)
		order[i] = i;
	qsort_r(order, ks->n, sizeof(*order), kid_cmp, ks);
	for (size_t i = 0; i < ks->n; i++) {
		keys[i] = ks->keys[order[i]];
		lens[i] = ks->lens[order[i]];
	}
	free(order);
	free(ks->keys);
	free(ks->lens);
	ks->keys = keys;
	ks->lens = lens;
	ks->cap = ks->n;
	return 0;
}

/*
 * Reads every entry, then walks every data key against them (check_key),
 * at the transaction's pinned revision: a missing entry is reported to fn,
 * or (repair) put in the transaction. record: the container test that
 * records' entries are checked with, or NULL.
 */
static int kids_walk_all(struct store_etcd_txn *t, store_check_fn fn, void *arg,
			 store_container_test_fn record, bool repair)
{
	uint8_t lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t ll = etcd_kids_marker(t->st, lo), hl = etcd_prefix_end(lo, ll, hi);
	struct kids_walk *w;
	int rc;

	if (!store_etcd_txn_id(&t->base))
		return -EIO;	/* the revision the walks read at */
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fn = fn;
	w->arg = arg;
	w->record = record;
	w->repair = repair ? t : NULL;
	w->skip = ll + 1;	/* the marker and the depth byte */
	rc = walk_range(t, lo, ll, hi, hl, false, add_entry, w);
	if (rc == 0)
		rc = key_list_sort(&w->set);
	w->leaf_flags = t->st->kids_trust;
	if (rc == 0 && w->leaf_flags) {
		ll = etcd_kids_lease_flag(t->st, lo);
		hl = etcd_prefix_end(lo, ll, hi);
		w->skip = ll + 1;	/* the flag's space and the depth byte */
		rc = walk_range(t, lo, ll, hi, hl, false, add_flag, w);
		if (rc == 0)
			rc = key_list_sort(&w->flags);
	}
	if (rc == 0) {
		ll = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, lo);
		hl = etcd_prefix_end(lo, ll, hi);
		w->skip = ll;
		rc = walk_range(t, lo, ll, hi, hl, w->record != NULL, check_key, w);
	}
	rc = rc ? rc : w->rc;
	etcd_key_list_release(&w->set);
	etcd_key_list_release(&w->flags);
	free(w);
	return rc;
}

int store_etcd_check(struct store_txn *txn, store_check_fn fn, void *arg)
{
	struct store_etcd_txn *t = ETXN(txn);

	if (!t->st->kids)
		return 0;	/* a store from before the space lists by its pages */
	return kids_walk_all(t, fn, arg, t->st->kids_records ? t->st->base.container_test : NULL,
			     false);
}

/*
 * Gives every container and container record without an entry one, in the
 * write transaction; a store from before records' entries then says it
 * keeps them (the marker's "2"). The reads are not guarded, as entries
 * never are (a listing allows for stale ones, and a writer of this version
 * that commits meanwhile writes its own), except for that upgrade: below.
 */
int store_etcd_repair(struct store_txn *txn)
{
	struct store_etcd_txn *t = ETXN(txn);
	uint8_t k[ETCD_KEY_MAX], lo[ETCD_KEY_MAX], hi[ETCD_KEY_MAX];
	size_t ll, hl;
	int rc;

	if (!t->st->kids)
		return 0;	/* a store from before the space lists by its pages */
	rc = kids_walk_all(t, NULL, NULL, t->st->base.container_test, true);
	if (rc || t->st->kids_records || !t->st->base.container_test)
		return rc;
	/*
	 * The marker's "2" promises every record an entry from now on: a data
	 * write since the walk (an older kvfs gives its records none) makes
	 * the repair run again. Writers after it must be this version or newer.
	 */
	ll = etcd_key(t->st, STORE_SPACE_DATA, NULL, 0, lo);
	hl = etcd_prefix_end(lo, ll, hi);
	rc = etcd_buf_guard_range(t->buf, lo, ll, hi, hl, t->rev);
	if (rc == 0)
		rc = etcd_buf_put(t->buf, k, etcd_kids_marker(t->st, k), "2", 1);
	t->kids_upgrade = rc == 0;
	return rc;
}
