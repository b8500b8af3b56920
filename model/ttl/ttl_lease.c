/*
 * model/ttl/ttl_lease.c - TTLs a store enforces itself (STORE_CAN_EXPIRE; etcd:
 * leases, docs/ETCD.md section 9): at the end of every model write, the
 * deadline of each key it put (its node's or an ancestor's, the earliest),
 * and the re-put of a subtree whose TTL is set, changed or removed, so
 * that its keys move to the new deadline or lose theirs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

#define LEASE_PRELOAD 1024	/* ttl entries read at once; a bigger space is asked key by key */
#define LEASE_LEVELS 32		/* tuple levels whose deadlines are remembered between keys */

struct own_ttl {
	uint8_t *key;	/* heap */
	size_t len;
	int64_t deadline_ns;
};

struct lease_walk {
	struct table_txn *tt;	/* borrowed: the write's tables (index entries -> rows) */
	struct own_ttl *all;	/* heap, in key order: the whole ttl space when preloaded */
	size_t n_all;
	bool preloaded;
	/* the levels of the last key looked up: key[0..end[i]] has deadline d[i] (0: none) */
	uint8_t key[STORE_KEY_MAX];
	size_t n;
	size_t end[LEASE_LEVELS];
	int64_t d[LEASE_LEVELS];
};

static void walk_release(struct lease_walk *w)
{
	for (size_t i = 0; i < w->n_all; i++)
		free(w->all[i].key);
	free(w->all);
}

/* Reads the ttl space whole when it is small (one range instead of a get per key). */
static int preload(struct store_txn *txn, struct lease_walk *w)
{
	struct store_scan *scan;
	struct store_val k, v;
	size_t cap = 0;
	int ret = store_scan_open(txn, STORE_SPACE_TTL, NULL, 0, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		int64_t d;

		if (w->n_all == LEASE_PRELOAD) {
			ret = 0;	/* too many: key by key */
			goto out_close;
		}
		if (!ttl_deadline_decode(v.data, v.len, &d))
			continue;	/* kvfs check reports it */
		if (w->n_all == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct own_ttl *g = realloc(w->all, nc * sizeof(*g));

			if (!g) {
				ret = -ENOMEM;
				goto out_close;
			}
			w->all = g;
			cap = nc;
		}
		w->all[w->n_all].key = malloc(k.len);
		if (!w->all[w->n_all].key) {
			ret = -ENOMEM;
			goto out_close;
		}
		memcpy(w->all[w->n_all].key, k.data, k.len);
		w->all[w->n_all].len = k.len;
		w->all[w->n_all].deadline_ns = d;
		w->n_all++;
	}
	if (ret == 0)
		w->preloaded = true;
out_close:
	store_scan_close(scan);
	return ret;
}

static int key_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

/* The deadline of the node key[0..len] itself: 0 when it has none. */
static int own_deadline(struct store_txn *txn, const struct lease_walk *w, const uint8_t *key,
			size_t len, int64_t *d)
{
	int ret;

	*d = 0;
	if (w->preloaded) {
		size_t lo = 0, hi = w->n_all;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			int c = key_cmp(w->all[mid].key, w->all[mid].len, key, len);

			if (c == 0) {
				*d = w->all[mid].deadline_ns;
				return 0;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		return 0;
	}
	ret = ttl_get(txn, key, len, d);
	if (ret == -ENOENT || ret == -EIO) {
		*d = 0;	/* none, or a bad value kvfs check reports */
		return 0;
	}
	return ret;
}

/*
 * The earliest deadline of key[0..len]'s nodes from the top down (a key
 * part that is no tuple element ends the walk). Levels shared with the
 * last key looked up are not read again.
 */
static int effective(struct store_txn *txn, struct lease_walk *w, const uint8_t *key, size_t len,
		     int64_t *out)
{
	struct tuple_reader r;
	struct tuple_elem e;
	size_t lvl = 0;
	bool same = true;
	int ret;

	*out = 0;
	if (len > STORE_KEY_MAX)
		return 0;
	tuple_reader_init(&r, key, len);
	while (tuple_next(&r, &e) == 1) {
		int64_t d;

		if (same && lvl < w->n && w->end[lvl] == r.pos && memcmp(w->key, key, r.pos) == 0) {
			d = w->d[lvl];
		} else {
			same = false;
			ret = own_deadline(txn, w, key, r.pos, &d);
			if (ret < 0)
				return ret;
			if (lvl < LEASE_LEVELS) {
				w->end[lvl] = r.pos;
				w->d[lvl] = d;
			}
		}
		if (d > 0 && (*out == 0 || d < *out))
			*out = d;
		lvl++;
	}
	memcpy(w->key, key, len);
	w->n = lvl < LEASE_LEVELS ? lvl : LEASE_LEVELS;
	return 0;
}

/*
 * An index entry's: its row's, or that of a field it indexes when earlier
 * (the entry goes when that field does, as the reaper re-derives it).
 */
static int entry_deadline(struct store_txn *txn, struct lease_walk *w, const uint8_t *row,
			  size_t row_len, const struct table_index *idx, int64_t *out)
{
	uint8_t fk[STORE_KEY_MAX];
	struct tuple_writer tw;
	int ret = effective(txn, w, row, row_len, out);

	for (int f = 0; ret == 0 && f < idx->nfields; f++) {
		int64_t d;

		/* the field's key: the row's, then the field's name as one element */
		tuple_writer_init(&tw, fk, sizeof(fk));
		memcpy(fk, row, row_len);
		tw.len = row_len;
		tuple_put_string(&tw, idx->fields[f], strlen(idx->fields[f]));
		if (tw.overflow)
			continue;
		ret = own_deadline(txn, w, fk, tw.len, &d);
		if (ret == 0 && d > 0 && (*out == 0 || d < *out))
			*out = d;
	}
	return ret;
}

/* store_expiry_fn: the deadline of one key the write put. */
static int deadline_of(struct store_txn *txn, void *arg, enum store_space space,
		       const uint8_t *key, size_t len, int64_t *deadline_ns)
{
	struct lease_walk *w = arg;
	uint8_t row[STORE_KEY_MAX];
	const struct table_index *idx;
	const uint8_t *node;
	size_t row_len, node_len;
	int64_t d;

	*deadline_ns = 0;
	switch (space) {
	case STORE_SPACE_DATA:
	case STORE_SPACE_ATTR:
	case STORE_SPACE_SCHEMA:
	case STORE_SPACE_TTL:
		return effective(txn, w, key, len, deadline_ns);
	case STORE_SPACE_EXPIRY:
		if (!ttl_expiry_parse(key, len, &d, &node, &node_len))
			return 0;
		return effective(txn, w, node, node_len, deadline_ns);
	case STORE_SPACE_INDEX:
		/* an entry goes with its row (tables are loaded: the write put it) */
		if (!w->tt || table_txn_load(txn, w->tt) < 0 ||
		    table_entry_row(w->tt, key, len, row, &row_len, &idx) < 0)
			return 0;
		return entry_deadline(txn, w, row, row_len, idx, deadline_ns);
	default:
		return 0;
	}
}

int ttl_lease_txn(struct store_txn *txn, struct table_txn *tt)
{
	struct lease_walk *w;
	int ret;

	/* no TTL at all: every put goes without a deadline, dropping any it had */
	if (!store_txn_can(txn, STORE_CAN_EXPIRE) || store_space_is_empty(txn, STORE_SPACE_TTL))
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->tt = tt;
	ret = preload(txn, w);
	if (ret == 0)
		ret = store_txn_expire_puts(txn, deadline_of, w);
	walk_release(w);
	free(w);
	return ret;
}

struct kv_copy {
	uint8_t *buf;	/* heap: the key, then the value */
	size_t key_len, val_len;
};

/* Puts every key of space at and below key[0..len] again, with its value as it is. */
static int reput_space(struct store_txn *txn, enum store_space space, const uint8_t *key,
		       size_t len)
{
	struct store_scan *scan;
	struct store_val k, v;
	struct kv_copy *all = NULL;
	size_t n = 0, cap = 0;
	int ret = store_scan_open(txn, space, key, len, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	/* copied first: a write may end what the scan borrowed */
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		if (k.len > len && ((const uint8_t *)k.data)[len] == 0xff)
			continue;	/* a sibling continuing the key's bytes */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 64;
			struct kv_copy *g = realloc(all, nc * sizeof(*g));

			if (!g) {
				ret = -ENOMEM;
				break;
			}
			all = g;
			cap = nc;
		}
		all[n].buf = malloc(k.len + v.len + 1);
		if (!all[n].buf) {
			ret = -ENOMEM;
			break;
		}
		memcpy(all[n].buf, k.data, k.len);
		if (v.len)
			memcpy(all[n].buf + k.len, v.data, v.len);
		all[n].key_len = k.len;
		all[n].val_len = v.len;
		n++;
	}
	store_scan_close(scan);
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = store_put(txn, space, all[i].buf, all[i].key_len, all[i].buf + all[i].key_len,
				all[i].val_len);
	for (size_t i = 0; i < n; i++)
		free(all[i].buf);
	free(all);
	return ret;
}

/* The expiry entries of the ttl entries at and below key[0..len], put again. */
static int reput_expiry(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct store_scan *scan;
	struct store_val k, v;
	uint8_t (*eks)[TTL_EXPIRY_KEY_MAX] = NULL;
	size_t *lens = NULL, n = 0, cap = 0;
	int ret = store_scan_open(txn, STORE_SPACE_TTL, key, len, &scan);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		int64_t d;

		if ((k.len > len && ((const uint8_t *)k.data)[len] == 0xff) ||
		    !ttl_deadline_decode(v.data, v.len, &d) || k.len > STORE_KEY_MAX)
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			void *g = realloc(eks, nc * sizeof(*eks));
			void *gl = g ? realloc(lens, nc * sizeof(*lens)) : NULL;

			if (g)
				eks = g;
			if (!gl) {
				ret = -ENOMEM;
				break;
			}
			lens = gl;
			cap = nc;
		}
		lens[n] = ttl_expiry_key(d, k.data, k.len, eks[n]);
		n++;
	}
	store_scan_close(scan);
	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = store_put(txn, STORE_SPACE_EXPIRY, eks[i], lens[i], "", 0);
	free(eks);
	free(lens);
	return ret;
}

int ttl_lease_reput(struct store_txn *txn, const uint8_t *key, size_t len)
{
	static const enum store_space spaces[] = {
		STORE_SPACE_DATA, STORE_SPACE_ATTR, STORE_SPACE_SCHEMA, STORE_SPACE_TTL,
	};
	int ret = 0;

	if (!store_txn_can(txn, STORE_CAN_EXPIRE) || len == 0)
		return 0;
	for (size_t i = 0; ret == 0 && i < sizeof(spaces) / sizeof(spaces[0]); i++)
		ret = reput_space(txn, spaces[i], key, len);
	if (ret == 0)
		ret = reput_expiry(txn, key, len);
	/* the index entries of the rows in it: re-derived, so put again, at commit */
	if (ret == 0)
		ret = table_touch(txn, key, len, true);
	return ret;
}
