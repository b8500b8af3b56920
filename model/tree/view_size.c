/*
 * model/tree/view_size.c - the size of a document view (NAME.json): the
 * length of its rendering, counted as it is rendered, and kept for the
 * state it was rendered from.
 *
 * A stat of a view renders its whole subtree, and a `cp big.json
 * MNT/big.json` over an existing document stats it twice (the lookup, the
 * getattr), `ls -l` of a directory each time: over a big document that was
 * most of the daemon's work. What a rendering holds is fixed by what the
 * transaction reads: the data, schema and index spaces of one committed
 * state, less the keys it hides (expired, model/ttl/ttl_space.c, by the
 * clock, not by a commit). So a size is kept by (view key, the state's id:
 * store_txn_snapshot), only for a transaction that hides nothing the
 * rendering could read; any other is rendered and kept nowhere. A write
 * transaction never asks (store_txn_snapshot is false for it: it reads
 * its own puts). The size is the same for every caller: who may read it
 * is checked per call by view_stat, before it asks here.
 *
 * Only where reads are local (LMDB): on etcd a stat's render is also what
 * brings the document into the mount's shared answers (docs/ETCD.md 8a),
 * and a `cp` over it then writes in them: its sweep of the old keys opens
 * a scan per container, which without those pages is a round trip each.
 * With the cache there, `cp` of 40,000 records over the same document took
 * 237 s and 160 s of the daemon's CPU against 15.6 s and 2.2 s
 * (scripts/bench-viewsize.sh, 2026-11-30), while two stats of its view
 * took 0.012 s against 8.3 s. The etcd snapshot is exact
 * (store_txn_snapshot): it is the sweep that must read ahead first.
 *
 * A few entries, replaced least recently used first: enough for a lookup
 * and its getattr, and for `ls -l` of one directory's views.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tree/tree_int.h"

#define VIEW_SIZES_MAX 8

struct view_size_entry {
	uint64_t snap;	/* store_txn_snapshot's id; the entry is empty while len is 0 and used 0 */
	uint64_t size;
	uint64_t used;	/* the cache's tick at its last use: the least is replaced */
	size_t len;
	uint8_t key[STORE_KEY_MAX];
};

struct view_sizes {
	pthread_mutex_t lock;	/* guards tick and e[]; FUSE threads share the model */
	uint64_t tick;
	struct view_size_entry e[VIEW_SIZES_MAX];
	atomic_uint_fast64_t rendered;	/* renders for a size (model_view_sizes) */
	atomic_uint_fast64_t kept;	/* sizes answered from e[] */
};

struct view_sizes *view_sizes_new(void)
{
	struct view_sizes *vs = calloc(1, sizeof(*vs));

	if (vs)
		pthread_mutex_init(&vs->lock, NULL);
	return vs;
}

void view_sizes_free(struct view_sizes *vs)
{
	if (!vs)
		return;
	pthread_mutex_destroy(&vs->lock);
	free(vs);
}

void model_view_sizes(struct model *m, uint64_t *rendered, uint64_t *kept)
{
	*rendered = atomic_load(&m->views->rendered);
	*kept = atomic_load(&m->views->kept);
}

/* A stream that only counts what is written to it. */
static ssize_t count_write(void *cookie, const char *buf, size_t size)
{
	(void)buf;
	*(uint64_t *)cookie += size;
	return (ssize_t)size;
}

/* The rendering counted, never held (a stat of the root's view of a big store would hold it all). */
static int view_render_size(struct store_txn *txn, const uint8_t *key, size_t len, uint64_t *size)
{
	struct strbuf sb;
	FILE *counter;
	int ret;

	*size = 0;
	counter = fopencookie(size, "w", (cookie_io_functions_t){ .write = count_write });
	if (!counter)
		return -ENOMEM;
	strbuf_init(&sb);
	ret = doc_render_buf(txn, key, len, 0, &sb, counter);
	strbuf_release(&sb);
	if (fclose(counter) != 0 && ret == 0)
		ret = -EIO;
	return ret;
}

/*
 * Whether a size rendered in txn may be kept and looked up: the state's
 * id in *snap when reads are local, txn reads one named state, and it hides nothing the
 * rendering reads: no data key at or under key (a hidden row's index
 * entries are hidden with it; any hidden index entry at all is taken as
 * a reason, for a table's order is read there).
 */
static bool view_size_keyed(struct store_txn *txn, const uint8_t *key, size_t len,
			    uint64_t *snap)
{
	static const uint8_t from_start[1];
	struct store_val h;

	if (!store_txn_can(txn, STORE_CAN_READ_LOCALLY) || !store_txn_snapshot(txn, snap))
		return false;
	if (store_txn_hidden_from(txn, STORE_SPACE_INDEX, from_start, 0, &h) == 1)
		return false;
	/* keys under key are contiguous from it: the first hidden one at or after it tells */
	if (store_txn_hidden_from(txn, STORE_SPACE_DATA, key, len, &h) == 1 &&
	    h.len >= len && memcmp(h.data, key, len) == 0)
		return false;
	return true;
}

static struct view_size_entry *view_size_find(struct view_sizes *vs, const uint8_t *key,
					      size_t len)
{
	for (int i = 0; i < VIEW_SIZES_MAX; i++) {
		struct view_size_entry *e = &vs->e[i];

		if (e->used && e->len == len && memcmp(e->key, key, len) == 0)
			return e;
	}
	return NULL;
}

static bool view_size_lookup(struct view_sizes *vs, const uint8_t *key, size_t len,
			     uint64_t snap, uint64_t *size)
{
	struct view_size_entry *e;
	bool found = false;

	pthread_mutex_lock(&vs->lock);
	e = view_size_find(vs, key, len);
	if (e && e->snap == snap) {
		e->used = ++vs->tick;
		*size = e->size;
		found = true;
	}
	pthread_mutex_unlock(&vs->lock);
	return found;
}

/*
 * Keeps size for (key, snap): in the view's own entry (one per view, the
 * newest state's: an older transaction finishing late does not replace
 * it), else in the least recently used one.
 */
static void view_size_keep(struct view_sizes *vs, const uint8_t *key, size_t len,
			   uint64_t snap, uint64_t size)
{
	struct view_size_entry *e;

	pthread_mutex_lock(&vs->lock);
	e = view_size_find(vs, key, len);
	if (e && e->snap > snap)
		goto out_unlock;
	if (!e) {
		e = &vs->e[0];
		for (int i = 1; i < VIEW_SIZES_MAX; i++)
			if (vs->e[i].used < e->used)
				e = &vs->e[i];
		memcpy(e->key, key, len);
		e->len = len;
	}
	e->snap = snap;
	e->size = size;
	e->used = ++vs->tick;
out_unlock:
	pthread_mutex_unlock(&vs->lock);
}

int view_size(struct model *m, struct store_txn *txn, const uint8_t *key, size_t len,
	      uint64_t *size)
{
	bool keyed;
	uint64_t snap;
	int ret;

	keyed = view_size_keyed(txn, key, len, &snap);
	if (keyed && view_size_lookup(m->views, key, len, snap, size)) {
		atomic_fetch_add(&m->views->kept, 1);
		return 0;
	}
	atomic_fetch_add(&m->views->rendered, 1);
	ret = view_render_size(txn, key, len, size);
	if (ret == 0 && keyed)
		view_size_keep(m->views, key, len, snap, *size);
	return ret;
}
