/*
 * model/ttl/ttl_space.c - time-to-live of nodes (docs/FORMAT.md, "TTL"): the two
 * spaces that hold deadlines (ttl: node -> deadline; expiry: deadline-ordered),
 * hiding expired nodes from reads, and the reaper that removes them in
 * bounded batches as rm -r does, so tables stay exact.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/table/table_int.h"
#include "model/tree/tree_int.h"
#include "model/ttl/ttl_int.h"

static bool node_exists(struct store_txn *txn, const uint8_t *key, size_t len);

/* ---- encoding ---- */

void ttl_deadline_encode(int64_t deadline_ns, uint8_t out[TTL_DEADLINE_SIZE])
{
	uint64_t v = (uint64_t)deadline_ns;

	for (int i = TTL_DEADLINE_SIZE - 1; i >= 0; i--) {
		out[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

bool ttl_deadline_decode(const void *v, size_t len, int64_t *deadline_ns)
{
	const uint8_t *b = v;
	uint64_t d = 0;

	if (len != TTL_DEADLINE_SIZE)
		return false;
	for (size_t i = 0; i < len; i++)
		d = d << 8 | b[i];
	if (d == 0 || d > INT64_MAX)
		return false;
	*deadline_ns = (int64_t)d;
	return true;
}

size_t ttl_expiry_key(int64_t deadline_ns, const uint8_t *key, size_t len,
		      uint8_t out[TTL_EXPIRY_KEY_MAX])
{
	ttl_deadline_encode(deadline_ns, out);
	memcpy(out + TTL_DEADLINE_SIZE, key, len);
	return TTL_DEADLINE_SIZE + len;
}

bool ttl_expiry_parse(const void *ek, size_t len, int64_t *deadline_ns, const uint8_t **key,
		      size_t *key_len)
{
	if (len <= TTL_DEADLINE_SIZE || len > TTL_EXPIRY_KEY_MAX ||
	    !ttl_deadline_decode(ek, TTL_DEADLINE_SIZE, deadline_ns))
		return false;
	*key = (const uint8_t *)ek + TTL_DEADLINE_SIZE;
	*key_len = len - TTL_DEADLINE_SIZE;
	return true;
}

/* ---- one node ---- */

int ttl_get(struct store_txn *txn, const uint8_t *key, size_t len, int64_t *deadline_ns)
{
	struct store_val v;
	int ret;

	if (len == 0)
		return -ENOENT;	/* the root never expires */
	ret = store_get(txn, STORE_SPACE_TTL, key, len, &v);
	if (ret < 0)
		return ret;
	return ttl_deadline_decode(v.data, v.len, deadline_ns) ? 0 : -EIO;
}

int ttl_clear(struct store_txn *txn, const uint8_t *key, size_t len)
{
	uint8_t ek[TTL_EXPIRY_KEY_MAX];
	int64_t old;
	int ret = ttl_get(txn, key, len, &old);

	if (ret == -ENOENT)
		return 0;
	if (ret == 0) {
		ret = store_del(txn, STORE_SPACE_EXPIRY, ek, ttl_expiry_key(old, key, len, ek));
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	/* a bad value (-EIO) is dropped too: kvfs check --repair rebuilds */
	ret = store_del(txn, STORE_SPACE_TTL, key, len);
	return ret == -ENOENT ? 0 : ret;
}

int ttl_set(struct store_txn *txn, const uint8_t *key, size_t len, int64_t deadline_ns)
{
	uint8_t ek[TTL_EXPIRY_KEY_MAX], d[TTL_DEADLINE_SIZE];
	int ret;

	if (len == 0 || deadline_ns <= 0)
		return -EINVAL;
	ret = ttl_clear(txn, key, len);
	if (ret < 0)
		return ret;
	ttl_deadline_encode(deadline_ns, d);
	ret = store_put(txn, STORE_SPACE_TTL, key, len, d, sizeof(d));
	if (ret == 0)
		ret = store_put(txn, STORE_SPACE_EXPIRY, ek, ttl_expiry_key(deadline_ns, key, len, ek),
				"", 0);
	return ret;
}

int ttl_default(struct store_txn *txn, const uint8_t *key, size_t len, int64_t seconds,
		int64_t now_ns)
{
	int64_t d;
	int ret = ttl_get(txn, key, len, &d);

	if (ret != -ENOENT)
		return ret == -EIO ? 0 : ret;	/* given by the write (or a move): kept */
	if (model_ttl_deadline(seconds, now_ns, &d) < 0)
		return 0;
	return ttl_set(txn, key, len, d);
}

/* ---- subtrees ---- */

struct ttl_entry {
	uint8_t key[STORE_KEY_MAX];
	size_t len;
	int64_t deadline_ns;
};

struct ttl_list {
	struct ttl_entry *e;
	size_t n, cap;
};

static int list_add(struct ttl_list *l, const void *key, size_t len, int64_t deadline_ns)
{
	if (len > STORE_KEY_MAX)
		return -EIO;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct ttl_entry *g = realloc(l->e, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		l->e = g;
		l->cap = cap;
	}
	memcpy(l->e[l->n].key, key, len);
	l->e[l->n].len = len;
	l->e[l->n].deadline_ns = deadline_ns;
	l->n++;
	return 0;
}

/*
 * The ttl entries of key[0..len] and its subtree (collected first: deletes
 * while a cursor walks could move it). A sibling continuing the key's
 * bytes (next byte 0xff) is not under it.
 */
static int collect_subtree(struct store_txn *txn, const uint8_t *key, size_t len,
			   struct ttl_list *l)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_TTL, key, len, &scan);

	if (ret == -ENOENT)
		return 0;	/* a read-only open of an older store */
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		int64_t d = 0;

		if (k.len > len && ((const uint8_t *)k.data)[len] == 0xff)
			continue;
		if (!ttl_deadline_decode(v.data, v.len, &d))
			d = 0;	/* dropped without its expiry entry; check finds that */
		ret = list_add(l, k.data, k.len, d);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	return ret;
}

static int drop_entry(struct store_txn *txn, const struct ttl_entry *e)
{
	uint8_t ek[TTL_EXPIRY_KEY_MAX];
	int ret = 0;

	if (e->deadline_ns > 0)
		ret = store_del(txn, STORE_SPACE_EXPIRY, ek,
				ttl_expiry_key(e->deadline_ns, e->key, e->len, ek));
	if (ret == 0 || ret == -ENOENT)
		ret = store_del(txn, STORE_SPACE_TTL, e->key, e->len);
	return ret == -ENOENT ? 0 : ret;
}

/* Collects and removes the TTLs at and below key into *l (heap; the caller frees l->e). */
static int take_subtree(struct store_txn *txn, const uint8_t *key, size_t len,
			struct ttl_list *l)
{
	int ret = collect_subtree(txn, key, len, l);

	for (size_t i = 0; ret == 0 && i < l->n; i++)
		ret = drop_entry(txn, &l->e[i]);
	return ret;
}

int ttl_delete_subtree(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct ttl_list l = { 0 };
	int ret;

	if (store_space_is_empty(txn, STORE_SPACE_TTL))
		return 0;
	ret = take_subtree(txn, key, len, &l);
	free(l.e);
	return ret;
}

int ttl_remap_subtree(struct store_txn *txn, const uint8_t *key, size_t len,
		      int (*fn)(void *arg, const uint8_t *key, size_t len, uint8_t *out,
				size_t *out_len),
		      void *arg, bool whole)
{
	struct ttl_list l = { 0 };
	uint8_t nk[STORE_KEY_MAX];
	size_t nk_len;
	int mapped, ret;

	if (store_space_is_empty(txn, STORE_SPACE_TTL))
		return 0;
	ret = collect_subtree(txn, key, len, &l);
	/* each entry is dropped before it is set anew: fn maps no new key again */
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		mapped = fn(arg, l.e[i].key, l.e[i].len, nk, &nk_len);
		if (mapped < 0)
			ret = mapped;
		else if (mapped || whole)
			ret = drop_entry(txn, &l.e[i]);
		if (ret == 0 && mapped && l.e[i].deadline_ns > 0)
			ret = ttl_set(txn, nk, nk_len, l.e[i].deadline_ns);
	}
	free(l.e);
	return ret;
}

int ttl_prune(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct ttl_list l = { 0 };
	struct tree_node n;
	int ret;

	if (store_space_is_empty(txn, STORE_SPACE_TTL))
		return 0;
	ret = collect_subtree(txn, key, len, &l);
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		ret = tree_lookup(txn, l.e[i].key, l.e[i].len, &n);
		if (ret == 0 && !n.exists)
			ret = drop_entry(txn, &l.e[i]);
	}
	free(l.e);
	return ret;
}

int ttl_effective(struct store_txn *txn, const uint8_t *key, size_t len, int64_t *deadline_ns)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int ret;

	*deadline_ns = 0;
	if (len == 0 || store_space_is_empty(txn, STORE_SPACE_TTL))
		return 0;
	tuple_reader_init(&r, key, len);
	while ((ret = tuple_next(&r, &e)) == 1) {
		int64_t d;

		ret = ttl_get(txn, key, r.pos, &d);
		if (ret == -ENOENT)
			continue;
		if (ret < 0)
			return ret;
		if (*deadline_ns == 0 || d < *deadline_ns)
			*deadline_ns = d;
	}
	return ret < 0 ? -EIO : 0;
}

/* ---- reads ---- */

int ttl_hide_expired(struct store_txn *txn, int64_t now_ns)
{
	struct ttl_list l = { 0 };
	struct store_scan *scan;
	struct store_val k, v;
	int ret;

	if (store_space_is_empty(txn, STORE_SPACE_EXPIRY))
		return 0;
	ret = store_scan_open(txn, STORE_SPACE_EXPIRY, NULL, 0, &scan);
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key;
		size_t len;
		int64_t d;

		if (!ttl_expiry_parse(k.data, k.len, &d, &key, &len))
			continue;	/* not a node: kvfs check reports it */
		if (d > now_ns)
			break;	/* in deadline order: nothing further is due */
		ret = list_add(&l, key, len, d);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	/* index entries first: they are computed from rows still visible; only
	 * nodes that exist are hidden (their parents then read as containers) */
	for (size_t i = 0; ret >= 0 && i < l.n; i++) {
		if (!node_exists(txn, l.e[i].key, l.e[i].len))
			l.e[i].len = 0;
		else
			ret = table_hide_expired(txn, l.e[i].key, l.e[i].len);
	}
	for (size_t i = 0; ret >= 0 && i < l.n; i++)
		if (l.e[i].len)
			ret = store_txn_hide(txn, STORE_SPACE_DATA, l.e[i].key, l.e[i].len);
	free(l.e);
	return ret < 0 ? ret : 0;
}

int tree_read_begin(struct model *m, struct store_txn **out)
{
	int ret = store_read_begin(m->st, out);

	if (ret < 0)
		return ret;
	ret = ttl_hide_expired(*out, tree_now_ns());
	if (ret < 0) {
		store_txn_end(*out);
		*out = NULL;
	}
	return ret;
}

/* ---- the reaper ---- */

/* Length of the parent's key: all elements but the last. */
static size_t parent_len_of(const uint8_t *key, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	size_t last = 0;

	tuple_reader_init(&r, key, len);
	while (r.pos < len) {
		last = r.pos;
		if (tuple_next(&r, &e) != 1)
			break;
	}
	return last;
}

/* Removes one expired node as rm -r does: data, attributes, deadlines. */
static int reap_node(struct store_txn *txn, const uint8_t *key, size_t len, int64_t now_ns)
{
	size_t parent = parent_len_of(key, len);
	int ret = tree_delete(txn, key, len);

	if (ret == 0)
		ret = tree_keep_parent(txn, key, parent);
	if (ret == 0)
		ret = attr_delete_subtree(txn, key, len);	/* deadlines under it too */
	if (ret == 0)
		ret = ttl_delete_subtree(txn, key, len);
	if (ret == 0)
		ret = attr_touch_dir(txn, key, parent, now_ns);
	return ret;
}

int ttl_reap_txn(struct store_txn *txn, int64_t now_ns, unsigned skip, unsigned max,
		 unsigned *done)
{
	struct ttl_list l = { 0 };
	struct store_scan *scan;
	struct store_val k, v;
	unsigned seen = 0;
	int ret;

	*done = 0;
	if (store_space_is_empty(txn, STORE_SPACE_EXPIRY))
		return 0;
	ret = store_scan_open(txn, STORE_SPACE_EXPIRY, NULL, 0, &scan);
	if (ret < 0)
		return ret;
	while (l.n < max && (ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key;
		size_t len;
		int64_t d;

		if (!ttl_expiry_parse(k.data, k.len, &d, &key, &len))
			continue;
		if (d > now_ns)
			break;
		if (seen++ < skip)
			continue;
		ret = list_add(&l, key, len, d);
		if (ret < 0)
			break;
	}
	store_scan_close(scan);
	for (size_t i = 0; ret >= 0 && i < l.n; i++) {
		int64_t d;

		/* an earlier node of this batch may have taken it along */
		ret = ttl_get(txn, l.e[i].key, l.e[i].len, &d);
		if (ret == -ENOENT || (ret == 0 && d != l.e[i].deadline_ns)) {
			uint8_t ek[TTL_EXPIRY_KEY_MAX];

			/* an expiry entry without its ttl entry: only drop it */
			ret = store_del(txn, STORE_SPACE_EXPIRY, ek,
					ttl_expiry_key(l.e[i].deadline_ns, l.e[i].key, l.e[i].len,
						       ek));
			ret = ret == -ENOENT ? 0 : ret;
			continue;
		}
		if (ret == 0)
			ret = reap_node(txn, l.e[i].key, l.e[i].len, now_ns);
	}
	if (ret >= 0)
		*done = (unsigned)l.n;
	free(l.e);
	return ret < 0 ? ret : 0;
}

#define TTL_REAP_BATCH 256	/* nodes per reaper transaction */
#define TTL_REAP_DUE_BATCHES 4	/* batches a write runs first, at most */

struct reap_op {
	int64_t now_ns;
	unsigned skip, max;
	unsigned done;
	struct model_error *err;
};

static int reap_txn(struct store_txn *txn, void *arg)
{
	struct reap_op *op = arg;

	tree_clear(op->err);
	return ttl_reap_txn(txn, op->now_ns, op->skip, op->max, &op->done);
}

/* True when the expiry space's first deadline is due: one read. */
static bool reap_is_due(struct model *m, int64_t now_ns)
{
	uint64_t version = store_version(m->st);	/* before the look: a later change asks again */
	struct store_txn *txn;
	struct store_scan *scan;
	struct store_val k, v;
	int64_t next = 0;
	bool known;

	pthread_mutex_lock(&m->reap_lock);
	known = m->reap_version && m->reap_version == version &&
		(m->reap_next_ns == 0 || m->reap_next_ns > now_ns);
	pthread_mutex_unlock(&m->reap_lock);
	if (known)
		return false;
	if (store_read_begin(m->st, &txn) < 0)
		return false;
	if (!store_space_is_empty(txn, STORE_SPACE_EXPIRY) &&
	    store_scan_open(txn, STORE_SPACE_EXPIRY, NULL, 0, &scan) == 0) {
		const uint8_t *key;
		size_t len;

		if (store_scan_next(scan, &k, &v) != 1 ||
		    !ttl_expiry_parse(k.data, k.len, &next, &key, &len))
			next = now_ns;	/* unreadable: look again at the next tick */
		store_scan_close(scan);
	}
	store_txn_end(txn);
	pthread_mutex_lock(&m->reap_lock);
	m->reap_version = version;
	m->reap_next_ns = next;
	pthread_mutex_unlock(&m->reap_lock);
	return next != 0 && next <= now_ns;
}

/*
 * Batches of TTL_REAP_BATCH; a batch a table refuses (an expired row that
 * another table's row still references: EBUSY) is retried node by node,
 * and the refused nodes are skipped: they stay, hidden, until the
 * reference goes.
 */
static int reap_batches(struct model *m, struct reap_op *op, unsigned batches, uint64_t *reaped)
{
	int ret = 0;

	for (unsigned b = 0; b < batches; b++) {
		op->max = TTL_REAP_BATCH;
		ret = tree_write_plain(m, "ttl reaper", reap_txn, op, op->err);
		if (ret == 0) {
			*reaped += op->done;
			if (op->done < op->max)
				return 0;
			continue;
		}
		if (ret != -EBUSY && ret != -EINVAL)
			return ret;
		for (unsigned i = 0; i < TTL_REAP_BATCH; i++) {
			op->max = 1;
			ret = tree_write_plain(m, "ttl reaper", reap_txn, op, op->err);
			if (ret < 0 && ret != -EBUSY && ret != -EINVAL)
				return ret;
			if (ret < 0)
				op->skip++;
			else if (op->done == 0)
				return 0;
			else
				*reaped += op->done;
		}
	}
	return ret == -EBUSY || ret == -EINVAL ? 0 : ret;
}

static int reap_run(struct model *m, unsigned batches, uint64_t *reaped, struct model_error *err)
{
	struct reap_op op = { .now_ns = tree_now_ns(), .max = TTL_REAP_BATCH, .err = err };
	int ret;

	*reaped = 0;
	if (!reap_is_due(m, op.now_ns))
		return 0;
	/* counted before its first write: a commit that shares a group with it sees it (model_reaps) */
	atomic_fetch_add(&m->reaps_running, 1);
	atomic_fetch_add(&m->reaps_begun, 1);
	ret = reap_batches(m, &op, batches, reaped);
	atomic_fetch_sub(&m->reaps_running, 1);
	return ret;
}

void model_reaps(struct model *m, uint64_t *begun, bool *running)
{
	*running = atomic_load(&m->reaps_running) != 0;
	*begun = atomic_load(&m->reaps_begun);
}

void ttl_reap_due(struct model *m)
{
	uint64_t reaped;

	(void)reap_run(m, TTL_REAP_DUE_BATCHES, &reaped, NULL);
}

int model_ttl_reap(struct model *m, unsigned batches, uint64_t *reaped, struct model_error *err)
{
	uint64_t n = 0;
	int ret;

	if (m->readonly)
		return tree_fail(err, -EROFS, "ttl reaper: the store is read-only");
	ret = reap_run(m, batches ? batches : 1, &n, err);
	if (reaped)
		*reaped = n;
	return ret;
}

struct ttl_op {
	const char *path;
	int64_t deadline_ns;	/* 0: clear */
	struct model_error *err;
};

static int ttl_set_txn(struct store_txn *txn, void *arg)
{
	struct ttl_op *op = arg;
	struct tree_path p;
	struct tree_node n;
	int ret;

	ret = tree_find_own(txn, op->path, "time to live", &p, &n, op->err);
	if (ret < 0)
		return ret;
	if (p.len == 0)
		return tree_fail(op->err, -EPERM, "%s: the root cannot expire", op->path);
	ret = op->deadline_ns ? ttl_set(txn, p.key, p.len, op->deadline_ns) :
	      ttl_clear(txn, p.key, p.len);
	if (ret == 0)
		ret = ttl_lease_reput(txn, p.key, p.len);	/* the store's own expiry follows */
	if (ret < 0)
		return tree_fail(op->err, ret, "%s: %s", op->path, strerror(-ret));
	return 0;
}

int model_ttl_deadline(int64_t seconds, int64_t now_ns, int64_t *deadline_ns)
{
	if (seconds < 1 || seconds > TTL_SECONDS_MAX)
		return -EINVAL;
	*deadline_ns = now_ns + seconds * 1000000000LL;
	return 0;
}

int model_ttl_set(struct model *m, const char *path, int64_t seconds, struct model_error *err)
{
	struct ttl_op op = { .path = path, .err = err };

	if (model_ttl_deadline(seconds, tree_now_ns(), &op.deadline_ns) < 0)
		return tree_fail(err, -EINVAL, "%s: a time to live is 1 to %lld seconds", path,
				 (long long)TTL_SECONDS_MAX);
	return tree_write(m, path, ttl_set_txn, &op, err);
}

int model_ttl_clear(struct model *m, const char *path, struct model_error *err)
{
	struct ttl_op op = { .path = path, .err = err };

	return tree_write(m, path, ttl_set_txn, &op, err);
}

int model_ttl_set_at(struct model *m, const char *path, int64_t deadline_ns,
		     struct model_error *err)
{
	struct ttl_op op = { .path = path, .deadline_ns = deadline_ns, .err = err };

	if (deadline_ns < 1)
		return tree_fail(err, -EINVAL, "%s: a deadline is after 1970-01-01T00:00:00Z",
				 path);
	return tree_write(m, path, ttl_set_txn, &op, err);
}

int model_ttl_get_at(struct model *m, const char *path, int64_t *deadline_ns,
		     struct model_error *err)
{
	struct store_txn *txn;
	struct tree_path p;
	struct tree_node n;
	int ret = tree_read_begin(m, &txn);

	if (ret < 0)
		return tree_fail(err, ret, "%s: %s", path, strerror(-ret));
	ret = tree_find(txn, path, &p, &n, err);
	if (ret == 0 && !p.is_view) {
		ret = ttl_get(txn, p.key, p.len, deadline_ns);
		if (ret == -ENOENT)
			ret = tree_fail(err, -ENODATA, "%s: no time to live", path);
		else if (ret < 0)
			tree_fail(err, ret, "%s: corrupt ttl record (run kvfs check)", path);
	} else if (ret == 0) {
		ret = tree_fail(err, -ENODATA, "%s: a view has no time to live", path);
	}
	store_txn_end(txn);
	return ret;
}

int model_ttl_get(struct model *m, const char *path, int64_t *seconds, struct model_error *err)
{
	int64_t d = 0, now = tree_now_ns();
	int ret = model_ttl_get_at(m, path, &d, err);

	if (ret < 0)
		return ret;
	/* rounded up: a node that is still there has at least 1 second left */
	*seconds = d > now ? (d - now + 999999999) / 1000000000 : 0;
	return 0;
}

/* ---- check and repair ---- */

static bool is_node_key(const void *key, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int ret;

	tuple_reader_init(&r, key, len);
	while ((ret = tuple_next(&r, &e)) == 1)
		if (e.type != TUPLE_TYPE_STRING && (e.type != TUPLE_TYPE_INT || e.integer < 0))
			return false;
	return ret == 0 && len > 0;
}

static bool node_exists(struct store_txn *txn, const uint8_t *key, size_t len)
{
	struct tree_node n;

	return tree_lookup(txn, key, len, &n) == 0 && n.exists;
}

/* The ttl space: each entry a node's, with a deadline and its expiry entry. */
static int check_ttl_space(struct store_txn *txn, table_report_fn fn, void *arg, uint64_t *n)
{
	uint8_t ek[TTL_EXPIRY_KEY_MAX];
	struct store_scan *scan;
	struct store_val k, v, e;
	int ret = store_scan_open(txn, STORE_SPACE_TTL, NULL, 0, &scan);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		int64_t d;

		(*n)++;
		if (!is_node_key(k.data, k.len)) {
			fn(arg, k.data, k.len, "ttl entry: key is no node key");
			continue;
		}
		if (!ttl_deadline_decode(v.data, v.len, &d)) {
			fn(arg, k.data, k.len, "ttl entry: bad deadline");
			continue;
		}
		if (!node_exists(txn, k.data, k.len))
			fn(arg, k.data, k.len, "ttl entry of a node that does not exist");
		ret = store_get(txn, STORE_SPACE_EXPIRY, ek,
				ttl_expiry_key(d, k.data, k.len, ek), &e);
		if (ret == -ENOENT)
			fn(arg, k.data, k.len, "ttl entry without its expiry entry");
		else if (ret < 0)
			break;
		ret = 0;
	}
	store_scan_close(scan);
	return ret;
}

/* The expiry space: each entry parses and matches its node's ttl entry. */
static int check_expiry_space(struct store_txn *txn, table_report_fn fn, void *arg)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_EXPIRY, NULL, 0, &scan);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key;
		size_t len;
		int64_t d, have;

		if (!ttl_expiry_parse(k.data, k.len, &d, &key, &len) || !is_node_key(key, len) ||
		    v.len != 0) {
			fn(arg, k.data, k.len, "expiry entry: bad layout");
			continue;
		}
		ret = ttl_get(txn, key, len, &have);
		if (ret == -ENOENT || (ret == 0 && have != d))
			fn(arg, k.data, k.len, "expiry entry without its ttl entry");
		else if (ret < 0 && ret != -EIO)
			break;
		ret = 0;
	}
	store_scan_close(scan);
	return ret;
}

int ttl_check(struct store_txn *txn, table_report_fn fn, void *arg, uint64_t *entries)
{
	uint64_t n = 0;
	int ret = check_ttl_space(txn, fn, arg, &n);

	if (ret == 0)
		ret = check_expiry_space(txn, fn, arg);
	if (entries)
		*entries = n;
	return ret;
}

/* Both spaces' valid pairs whose node exists (an expiry entry can restore a lost ttl entry). */
static int repair_collect(struct store_txn *txn, struct ttl_list *l)
{
	struct store_scan *scan;
	struct store_val k, v;
	int ret = store_scan_open(txn, STORE_SPACE_TTL, NULL, 0, &scan);

	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		int64_t d;

		if (is_node_key(k.data, k.len) && ttl_deadline_decode(v.data, v.len, &d) &&
		    node_exists(txn, k.data, k.len) && (ret = list_add(l, k.data, k.len, d)) < 0)
			break;
	}
	store_scan_close(scan);
	if (ret < 0)
		return ret;
	ret = store_scan_open(txn, STORE_SPACE_EXPIRY, NULL, 0, &scan);
	if (ret < 0)
		return ret;
	while ((ret = store_scan_next(scan, &k, &v)) == 1) {
		const uint8_t *key;
		size_t len;
		int64_t d;

		if (ttl_expiry_parse(k.data, k.len, &d, &key, &len) && is_node_key(key, len) &&
		    node_exists(txn, key, len) && (ret = list_add(l, key, len, d)) < 0)
			break;
	}
	store_scan_close(scan);
	return ret;
}

int ttl_repair(struct store_txn *txn, uint64_t *kept)
{
	struct ttl_list l = { 0 };
	int ret = repair_collect(txn, &l);

	*kept = 0;
	if (ret == 0)
		ret = store_del_prefix(txn, STORE_SPACE_TTL, NULL, 0, NULL);
	if (ret == 0)
		ret = store_del_prefix(txn, STORE_SPACE_EXPIRY, NULL, 0, NULL);
	/* a node found twice keeps the earlier deadline */
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		int64_t d;

		ret = ttl_get(txn, l.e[i].key, l.e[i].len, &d);
		if (ret == 0 && d <= l.e[i].deadline_ns)
			continue;
		ret = ttl_set(txn, l.e[i].key, l.e[i].len, l.e[i].deadline_ns);
		if (ret == 0)
			(*kept)++;
	}
	free(l.e);
	return ret;
}
