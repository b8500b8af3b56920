/*
 * store/etcd/etcd_store.c - the etcd backend (docs/ETCD.md): read transactions
 * pinned at one revision, write transactions buffered (store/etcd/etcd_buf.c)
 * and committed as one guarded Txn, run again on conflict, and the point
 * operations. Opening is in store/etcd/etcd_open.c, scans in store/etcd/etcd_scan.c,
 * the change feed in store/etcd/etcd_feed.c.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "store/store_int.h"



#define ETCD_WRITE_TRIES 400	/* conflicts in a row before giving up with -EBUSY */

int etcd_space_byte(enum store_space space)
{
	static const char bytes[STORE_SPACE_COUNT] = {
		[STORE_SPACE_META] = 'm', [STORE_SPACE_DATA] = 'd', [STORE_SPACE_SCHEMA] = 's',
		[STORE_SPACE_INDEX] = 'i', [STORE_SPACE_ATTR] = 'a', [STORE_SPACE_EXPIRY] = 'e',
		[STORE_SPACE_TTL] = 't',
	};

	if ((int)space == ETCD_SPACE_STAMP || (int)space == ETCD_SPACE_WRITER ||
	    (int)space == ETCD_SPACE_RECORD || (int)space == ETCD_SPACE_STAGE ||
	    (int)space == ETCD_SPACE_PENDING || (int)space == ETCD_SPACE_VALUE ||
	    (int)space == ETCD_SPACE_TURN)
		return (int)space;	/* the private spaces are named by their byte */
	return (unsigned)space < STORE_SPACE_COUNT ? bytes[space] : 'l';
}

size_t etcd_key(const struct store_etcd *st, int space, const void *key, size_t key_len,
		uint8_t *out)
{
	memcpy(out, st->prefix, st->prefix_len);
	out[st->prefix_len] = (uint8_t)etcd_space_byte((enum store_space)space);
	if (key_len)
		memcpy(out + st->prefix_len + 1, key, key_len);
	return st->prefix_len + 1 + key_len;
}

size_t etcd_writer_key(const struct store_etcd *st, uint8_t *out)
{
	return etcd_key(st, ETCD_SPACE_WRITER, &st->base.writer, sizeof(st->base.writer), out);
}

/*
 * A range, tried again while the cluster is briefly unable to answer (a
 * member gone mid-call: the next try moves to another; no leader during an
 * election): reads change nothing, so repeating them is safe. About 4 s.
 */
int etcd_range_retry(struct etcd_client *c, const void *key, size_t key_len,
		       const struct etcd_range_opts *o, struct etcd_range_result *out)
{
	int rc;

	for (int tries = 0;; tries++) {
		rc = etcd_client_range(c, key, key_len, o, out);
		if (!etcd_read_again(rc) || tries >= 40)
			return rc;
		if (tries)
			usleep(100 * 1000);
	}
}

int etcd_read_txn_retry(struct etcd_client *c, const struct etcd_op *ops, size_t n_ops,
			struct etcd_txn_result *out)
{
	int rc;

	for (int tries = 0;; tries++) {
		rc = etcd_client_txn(c, NULL, 0, ops, n_ops, NULL, 0, out);
		if (!etcd_read_again(rc) || tries >= 40)
			return rc;
		if (tries)
			usleep(100 * 1000);
	}
}

/* ---- the handle pool: one client per thread in a call ---- */

int etcd_client_open_for(struct store_etcd *st, struct etcd_client **out, char *why,
			 size_t why_len)
{
	int rc = etcd_client_open(st->endpoints, out, why, why_len);

	if (rc == 0)
		etcd_client_share_health(*out, &st->health);
	return rc;
}

int etcd_client_take(struct store_etcd *st, struct etcd_client **out)
{
	pthread_mutex_lock(&st->pool_lock);
	if (st->n_pool) {
		*out = st->pool[--st->n_pool];
		pthread_mutex_unlock(&st->pool_lock);
		return 0;
	}
	pthread_mutex_unlock(&st->pool_lock);
	return etcd_client_open_for(st, out, NULL, 0);
}

/*
 * The calling thread's request waited its whole deadline and nothing
 * answered any client of st since the span began: the cluster is silent,
 * noted for the requests after it (store_etcd_deadline). A shorter span
 * (the root's getattr) does not replace a longer one's mark.
 */
static void note_silence(struct store_etcd *st)
{
	struct etcd_deadline d = etcd_deadline_mine();
	int64_t answered = atomic_load(&st->health.answered_ns);

	int64_t now = store_mono_ns();

	if (!etcd_deadline_passed() || !d.span_ns || now - answered < d.span_ns)
		return;
	pthread_mutex_lock(&st->silent_lock);
	if (st->silent_answered_ns != answered || st->silent_span_ns < d.span_ns ||
	    now - st->silent_noted_ns >= st->silent_keep_ns) {
		st->silent_span_ns = d.span_ns;
		st->silent_answered_ns = answered;
		st->silent_noted_ns = now;
	}
	pthread_mutex_unlock(&st->silent_lock);
}

void etcd_client_give(struct store_etcd *st, struct etcd_client *c)
{
	note_silence(st);	/* every request's calls end here, before its answer goes out */
	if (!c)
		return;
	pthread_mutex_lock(&st->pool_lock);
	if (st->n_pool < ETCD_POOL_MAX) {
		st->pool[st->n_pool++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&st->pool_lock);
	etcd_client_close(c);
}

/* ---- transactions ---- */

/* Fills the backend's part of a transaction whose shared part is set. */
static int txn_init(struct store_etcd *st, struct store_etcd_txn *t)
{
	int rc;

	t->st = st;
	t->id = atomic_fetch_add(&st->txn_ids, 1) + 1;
	feed_set_init(&t->feed);
	rc = etcd_client_take(st, &t->c);
	if (rc == 0 && t->base.write)
		rc = etcd_buf_new(&t->buf);
	if (rc) {
		etcd_client_give(st, t->c);
		t->c = NULL;
	}
	return rc;
}

void etcd_kept_release(struct etcd_kept *list)
{
	while (list) {
		struct etcd_kept *k = list;

		list = k->next;
		etcd_range_result_release(&k->r);
		free(k);
	}
}

/* Releases the backend's part: the answers kept, the buffer, the client. */
static void txn_release(struct store_etcd_txn *t)
{
	etcd_kept_release(t->kept);
	t->kept = t->pages = NULL;
	etcd_snap_detach(t);
	etcd_val_release(t);
	etcd_buf_free(t->buf);
	t->buf = NULL;
	feed_set_release(&t->feed);
	etcd_client_give(t->st, t->c);
	t->c = NULL;
}

int store_etcd_read_begin(struct store *st, struct store_txn *txn)
{
	int rc = txn_init(ETCD(st), ETXN(txn));

	if (rc == 0)
		etcd_snap_attach(ETXN(txn));
	return rc;
}

void store_etcd_read_end(struct store_txn *txn)
{
	txn_release(ETXN(txn));
}

struct etcd_kept *etcd_txn_page_covering(struct store_etcd_txn *t, const void *key, size_t key_len,
					 bool vals)
{
	for (struct etcd_kept *k = etcd_txn_pages(t); k; k = k->next_page) {
		if (vals && !k->has_vals)
			continue;
		if (store_key_cmp(k->from, k->from_len, key, key_len) <= 0 &&
		    ((k->end_len == 1 && k->end[0] == 0) || store_key_cmp(key, key_len, k->end, k->end_len) < 0))
			return k;
	}
	return NULL;
}

struct etcd_kept *etcd_txn_page_before(struct store_etcd_txn *t, const void *key, size_t key_len,
				       bool vals)
{
	struct etcd_kept *best = NULL;

	for (struct etcd_kept *k = etcd_txn_pages(t); k; k = k->next_page) {
		if ((vals && !k->has_vals) ||
		    store_key_cmp(k->end, k->end_len, key, key_len) > 0 ||
		    !((k->scan_hi_len == 1 && k->scan_hi[0] == 0) ||
		      store_key_cmp(key, key_len, k->scan_hi, k->scan_hi_len) < 0))
			continue;
		if (!best || store_key_cmp(k->end, k->end_len, best->end, best->end_len) > 0)
			best = k;
	}
	return best;
}

int etcd_txn_range(struct store_etcd_txn *t, const void *key, size_t key_len,
		   const struct etcd_range_opts *opts, struct etcd_range_result **out)
{
	struct etcd_kept *k;
	int rc = etcd_txn_range_kept(t, key, key_len, opts, &k);

	*out = rc ? NULL : &k->r;
	return rc;
}

/*
 * The first read of a transaction: one read-only Txn of the commit record
 * (store/etcd/etcd_big.c), the range asked for and, in a read transaction, the
 * probes (etcd_probes_add), all at one revision. With no record that
 * revision is pinned and the answer is *out's (*done); a record being
 * applied pins the revision below it (or is rolled forward first).
 */
static int txn_first_read(struct store_etcd_txn *t, const void *key, size_t key_len,
			  const struct etcd_range_opts *o, struct etcd_range_result *out, bool *done)
{
	uint8_t rk[ETCD_KEY_MAX];
	struct etcd_probes probes;
	struct etcd_op ops[2 + ETCD_PROBES];
	size_t n = 0, asked;
	int rc;

	ops[n++] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = rk,
				     .key_len = etcd_key(t->st, ETCD_SPACE_RECORD, NULL, 0, rk) };
	if (!o->count_only)	/* a count is read afterwards, at the pinned revision */
		ops[n++] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = key, .key_len = key_len,
					     .range_end = o->range_end,
					     .range_end_len = o->range_end_len,
					     .keys_only = o->keys_only, .limit = o->limit };
	asked = n;
	if (!t->base.write)	/* a write's reads are guarded one by one as it makes them */
		etcd_probes_add(t, &probes, ops, &n);
	*done = false;
	for (int tries = 0, rounds = 0;;) {
		struct etcd_txn_result r;
		bool again;

		rc = etcd_client_txn(t->c, NULL, 0, ops, n, NULL, 0, &r);
		if (etcd_read_again(rc)) {	/* (a Txn of ranges only: reads) */
			if (++tries >= 40)
				return rc;
			usleep(100 * 1000);
			continue;
		}
		if (rc)
			return rc;
		if (r.len != n) {
			etcd_txn_result_release(&r);
			return -EPROTO;
		}
		rc = etcd_big_pin(t, &r.ranges[0], r.revision, &again);
		if (rc == 0 && !again && t->rev == r.revision) {
			if (asked == 2) {
				*out = r.ranges[1];	/* taken over: the release below finds it empty */
				memset(&r.ranges[1], 0, sizeof(r.ranges[1]));
				out->revision = r.revision;
				*done = true;
			}
			if (n > asked)
				(void)etcd_probes_keep(t, &probes, r.ranges + asked);	/* a hint */
		}
		etcd_txn_result_release(&r);
		if (rc || !again)
			return rc;
		if (++rounds >= 100)
			return -EIO;	/* records applied one after another without end: give up */
	}
}

int etcd_txn_range_kept(struct store_etcd_txn *t, const void *key, size_t key_len,
			const struct etcd_range_opts *opts, struct etcd_kept **out)
{
	struct etcd_kept *k = calloc(1, sizeof(*k));
	struct etcd_range_opts o = { 0 };
	bool done = false, first = !t->rev;
	int rc = 0;

	if (!k)
		return -ENOMEM;
	if (opts)
		o = *opts;
	if (first && !o.revision)
		rc = txn_first_read(t, key, key_len, &o, &k->r, &done);
	o.revision = t->rev;
	if (rc == 0 && !done)
		rc = etcd_range_retry(t->c, key, key_len, &o, &k->r);
	if (rc) {
		free(k);
		return rc;
	}
	if (!t->rev)
		t->rev = k->r.revision;
	etcd_txn_keep(t, k);
	if (first)
		etcd_snap_start(t);	/* what this one reads, the next ones find */
	*out = k;
	return 0;
}

uint64_t store_etcd_txn_id(const struct store_txn *ctxn)
{
	/* pinning is a read: the snapshot is fixed by it, not changed */
	struct store_etcd_txn *txn = (struct store_etcd_txn *)(uintptr_t)ctxn;

	if (!txn->rev) {
		struct etcd_range_result *r;
		uint8_t k[ETCD_KEY_MAX];
		size_t kl = etcd_key(txn->st, STORE_SPACE_META, "format", 6, k);
		struct etcd_range_opts o = { .count_only = true };

		if (etcd_txn_range(txn, k, kl, &o, &r) != 0)
			return 0;
	}
	return (uint64_t)txn->rev;
}

/*
 * A read transaction reads at the revision it pinned and never moves it:
 * from etcd with `revision` set, or from a snapshot's answers at that
 * revision (etcd_snap.c; a carried one is the state a commit of ours made
 * one revision after it). A revision names the whole cluster's state.
 */
bool store_etcd_txn_snapshot(const struct store_txn *txn, uint64_t *id)
{
	*id = store_etcd_txn_id(txn);
	return *id != 0;
}

uint64_t etcd_oneshot_pin(struct store_etcd *st)
{
	struct store_txn *txn;
	struct etcd_range_result *r;
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_key(st, STORE_SPACE_META, "format", 6, k);
	uint64_t rev = 0;

	if (store_read_begin(&st->base, &txn) < 0)
		return 0;
	/* a key's read, not a count: a count would be read again at the pinned revision */
	if (etcd_txn_range(ETXN(txn), k, kl, NULL, &r) == 0)
		rev = (uint64_t)ETXN(txn)->rev;
	store_txn_end(txn);
	return rev;
}

/*
 * The answer for etcd key k: the snapshot's, when another read at its
 * revision asked; else read now (and offered to the snapshot). Borrowed.
 */
static int point_read(struct store_etcd_txn *t, const uint8_t *k, size_t kl, struct etcd_kept **out)
{
	int rc;

	*out = etcd_snap_point(t, k, kl);
	if (*out)
		return 0;
	rc = etcd_txn_range_kept(t, k, kl, NULL, out);
	if (rc == 0)
		etcd_snap_point_keep(t, k, kl, *out);
	return rc;
}

int etcd_txn_guard_stamp(struct store_etcd_txn *t)
{
	struct etcd_range_result *r;
	struct etcd_kept *kept;
	uint8_t sk[ETCD_KEY_MAX];
	size_t sl = etcd_key(t->st, ETCD_SPACE_STAMP, NULL, 0, sk);
	int rc;

	if (!t->base.write || t->stamp_guarded)
		return 0;
	/* deletes after our revision do not show in a range compare: the stamp does */
	if ((rc = point_read(t, sk, sl, &kept)))
		return rc;
	r = &kept->r;
	rc = etcd_buf_guard_key(t->buf, sk, sl, r->len ? r->kvs[0].mod_rev : 0);
	if (rc == 0)
		t->stamp_guarded = true;
	return rc;
}

int etcd_txn_guard_range(struct store_etcd_txn *t, const void *key, size_t key_len,
			 const void *end, size_t end_len)
{
	int rc;

	if (!t->base.write)
		return 0;
	if ((rc = etcd_txn_guard_stamp(t)))
		return rc;
	return etcd_buf_guard_range(t->buf, key, key_len, end, end_len, t->rev);
}

/* ---- writes ---- */

static void note_commit(struct store_etcd *st, uint64_t rev)
{
	/*
	 * Shared answers older than it go first: a reader that sees the new
	 * position must not take them (the mount caches what it reads under
	 * the position it saw before reading).
	 */
	etcd_snap_retire(st, (int64_t)rev);
	atomic_store(&st->last_commit, rev);
	store_etcd_feed_mine(st, rev);
}

bool etcd_outcome_unknown(int rc)
{
	return rc != -EINVAL && rc != -E2BIG && rc != -EMSGSIZE && rc != -ENOSPC &&
	       rc != -EACCES && rc != -ENOMEM && rc != -ECONNREFUSED && rc != -EPROTO;
}

/*
 * Reads our writer key at the newest revision (from whichever member
 * answers) and learns its mod revision: *committed when it holds an
 * attempt of this write (first..seq), whose commit is then noted. 0, or
 * the error when no member could tell (the revision is then unknown).
 * The turn key comes in the same request (etcd_turn_note): a failed
 * guard may have been the turn's.
 */
static int writer_settle(struct store_etcd_txn *t, uint64_t first, uint64_t seq, bool *committed)
{
	struct store_etcd *st = t->st;
	uint8_t k[ETCD_KEY_MAX], uk[ETCD_KEY_MAX];
	struct etcd_op ops[2] = {
		{ .type = ETCD_OP_RANGE, .key = k, .key_len = etcd_writer_key(st, k) },
		{ .type = ETCD_OP_RANGE, .key = uk, .key_len = etcd_turn_key(st, uk) },
	};
	int rc = -EIO;

	st->writer_rev = -1;
	etcd_turn_note(st, NULL);
	for (int tries = 0; tries < 4; tries++) {
		struct etcd_txn_result x;
		struct etcd_range_result *r;
		uint64_t v;

		rc = etcd_read_txn_retry(t->c, ops, 2, &x);
		if (rc == 0 && x.len != 2) {
			etcd_txn_result_release(&x);
			rc = -EPROTO;
		}
		if (rc == 0) {
			r = &x.ranges[0];
			v = r->len == 1 && r->kvs[0].val_len == 8 ? get_be(r->kvs[0].val, 8) : 0;
			*committed = v >= first && v <= seq && v;
			st->writer_rev = r->len == 1 ? r->kvs[0].mod_rev : 0;
			if (*committed)
				note_commit(st, (uint64_t)r->kvs[0].mod_rev);
			etcd_turn_note(st, &x.ranges[1]);
			etcd_txn_result_release(&x);
			return 0;
		}
		if (etcd_deadline_passed())
			break;	/* the operation gave up: the revision stays unknown (-1) */
		usleep(250 * 1000);	/* a leader election takes about a second */
	}
	return rc;
}

/*
 * Guards our writer key at the mod revision of our own last commit, so an
 * attempt whose answer was lost and that lands late (held by a member that
 * froze) fails once another attempt, or a later write, has landed: it can
 * never apply a write twice nor undo a newer one. Learnt first when unknown.
 */
static int writer_guard(struct store_etcd_txn *t)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_writer_key(t->st, k);
	bool mine = false;
	int rc;

	if (t->st->writer_rev < 0 && (rc = writer_settle(t, 0, 0, &mine)))
		return rc;
	return etcd_buf_guard_key(t->buf, k, kl, t->st->writer_rev);
}

/*
 * The cluster refused a request of the attempt as too big (rc): true when
 * the budget it was planned with (max_ops, max_bytes) is lowered, so that
 * the attempt is worth running again.
 */
static bool too_big_again(struct store_etcd_txn *t, int rc, size_t max_ops, size_t max_bytes)
{
	return etcd_limits_lower(t->st, rc, rc == -EMSGSIZE ? max_ops : max_bytes,
				 etcd_buf_largest(t->buf));
}

/*
 * A write that took answers from a snapshot and ends without a commit (fn
 * refused, or changed nothing): its outcome stands only if what it read
 * still holds at the newest revision, which one Txn of its guards alone
 * tells (no commit record being applied, as a commit would guard too).
 */
static bool outcome_holds(struct store_etcd_txn *t)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_key(t->st, ETCD_SPACE_RECORD, NULL, 0, k), max_ops = etcd_txn_ops(t->st);
	size_t max_cmps = max_ops - ETCD_TXN_ROOM < ETCD_CMPS_MAX ? max_ops - ETCD_TXN_ROOM
								 : ETCD_CMPS_MAX;
	bool holds = false;

	if (etcd_buf_guard_key(t->buf, k, kl, 0))
		return false;
	if (etcd_buf_guards(t->buf) > max_cmps) {
		if (etcd_txn_guard_stamp(t))
			return false;
		etcd_buf_coalesce(t->buf, t->rev, t->st->prefix_len, max_cmps);
	}
	return etcd_buf_check(t->buf, t->c, &holds, &t->checked) == 0 && holds;
}

/*
 * A revision no older than the cluster's newest when attempt t began,
 * from an answer it had (store_txn_as_of): its commit's, its outcome's
 * confirmation, or its first read's when no snapshot served it (that
 * read pinned the newest revision); 0 when it had none.
 */
static int64_t attempt_as_of(const struct store_etcd_txn *t)
{
	if (t->landed)
		return t->landed;
	if (t->checked)
		return t->checked;
	return t->snap ? 0 : t->rev;
}

/*
 * Commits the attempt's buffer as one guarded Txn: attempt seq of the
 * write whose first attempt was `first`.
 */
static int commit_attempt(struct store_etcd_txn *t, uint64_t first, uint64_t seq, bool *committed)
{
	uint8_t k[ETCD_KEY_MAX], v[8];
	size_t kl, max_ops = etcd_txn_ops(t->st), max_bytes = etcd_txn_bytes(t->st);
	size_t max_cmps = max_ops - ETCD_TXN_ROOM < ETCD_CMPS_MAX ? max_ops - ETCD_TXN_ROOM
								 : ETCD_CMPS_MAX;
	int64_t rev = 0;
	int rc, slot;

	*committed = true;
	if ((rc = etcd_val_flush(t)))
		return rc;
	if (etcd_buf_empty(t->buf))
		return 0;	/* it only read */
	t->sent = true;
	/*
	 * The delete stamp tells range readers that a key may have gone. Chunks
	 * of big values are read through their stub, whose own put or delete
	 * guards them, so forgetting chunks (every data put does) is no such news.
	 */
	kl = etcd_key(t->st, ETCD_SPACE_VALUE, NULL, 0, k);
	if (etcd_buf_deletes(t->buf, k, kl)) {
		kl = etcd_key(t->st, ETCD_SPACE_STAMP, NULL, 0, k);
		put_be(v, seq, 8);
		if ((rc = etcd_buf_put(t->buf, k, kl, v, 8)))
			return rc;
		if ((rc = etcd_kids_stamp(t)))	/* and the containers' own, for listings */
			return rc;
	}
	if (t->feed.dirty) {
		uint8_t *entry;
		size_t len;

		kl = etcd_key(t->st, STORE_SPACE_FEED, NULL, 0, k);
		if ((rc = feed_entry_encode(&t->feed, t->st->base.writer, &entry, &len)))
			return rc;
		rc = etcd_buf_put(t->buf, k, kl, entry, len);
		free(entry);
		if (rc)
			return rc;
	}
	if ((rc = etcd_kids_note(t)))	/* the children space, in the same Txn */
		return rc;
	kl = etcd_writer_key(t->st, k);
	put_be(v, seq, 8);
	if ((rc = etcd_buf_put(t->buf, k, kl, v, 8)))
		return rc;
	/* no commit record is being applied: what this attempt read is the whole state */
	kl = etcd_key(t->st, ETCD_SPACE_RECORD, NULL, 0, k);
	if ((rc = etcd_buf_guard_key(t->buf, k, kl, 0)))
		return rc;
	if (etcd_buf_guards(t->buf) > max_cmps) {
		/* too many keys read to guard one by one: runs of them become ranges, sound with the stamp */
		if ((rc = etcd_txn_guard_stamp(t)))
			return rc;
		etcd_buf_coalesce(t->buf, t->rev, t->st->prefix_len, max_cmps);
	}
	if ((rc = writer_guard(t)))	/* after the coalescing: exact, within ETCD_TXN_ROOM */
		return rc;
	if ((rc = etcd_turn_guard(t)))	/* nobody's turn, or ours: exact too */
		return rc;
	if (etcd_buf_ops(t->buf) > max_ops || etcd_buf_bytes(t->buf) > max_bytes) {
		/* over one request: staged, flipped, applied (store/etcd/etcd_big.c) */
		/*
		 * No feed slot (etcd_feed_commit_begin): its staging can take
		 * seconds, and would hold back every other host's events that
		 * long; its own, taken for another's, cost a re-check at worst.
		 */
		t->staged = true;
		rc = etcd_big_commit(t, seq, committed, &rev);
		if (rc == 0 && *committed && rev)
			note_commit(t->st, (uint64_t)rev);
		/* applying the record puts the writer key again, maybe by another process */
		t->st->writer_rev = -1;
		if (rc == 0 && !*committed)
			rc = writer_settle(t, first, seq, committed);
		if (rc && !*committed && too_big_again(t, rc, max_ops, max_bytes))
			rc = 0;	/* staged or flipped over the cluster's limits: nothing visible, plan again */
		return rc;
	}
	/* until it is noted as ours, or known not to have landed: */
	slot = etcd_feed_commit_begin(t->st);
	rc = etcd_buf_commit(t->buf, t->c, committed, &rev);
	if (t->st->test_note_late_us)
		usleep(t->st->test_note_late_us);	/* the watch may bring it first */
	if (rc == 0 && *committed) {
		t->st->writer_rev = rev;
		t->landed = rev;
		etcd_snap_carry(t, rev);	/* before note_commit: the position moves after it */
		note_commit(t->st, (uint64_t)rev);
	} else if (rc && too_big_again(t, rc, max_ops, max_bytes)) {
		/* refused whole (nothing applied): run again, within the limits just learned */
		*committed = false;
		rc = 0;
	} else if (rc == -ENOENT && etcd_buf_has_leases(t->buf)) {
		/* a cached TTL lease is gone (refused, nothing applied): grant anew and run again */
		etcd_lease_forget(t->st);
		*committed = false;
		rc = 0;
	} else if ((rc && etcd_outcome_unknown(rc)) || rc == 0) {
		/*
		 * The answer was lost, or a guard failed (maybe ours on the
		 * writer key, as an earlier attempt landed late): did one land?
		 */
		rc = writer_settle(t, first, seq, committed);
	}
	etcd_feed_commit_end(t->st, slot);
	return rc;
}

/*
 * fn refused at attempt seq after an earlier attempt of the same write was
 * sent and not known to have landed: when one did (held by a member, late),
 * the refusal judged the state it made (an O_EXCL create finding its own
 * leaf), and that attempt is the write. *landed gets its revision.
 */
static bool earlier_landed(struct store_etcd_txn *t, uint64_t first, uint64_t seq, int64_t *landed)
{
	bool committed = false;

	if (seq <= first || writer_settle(t, first, seq - 1, &committed) != 0 || !committed)
		return false;
	*landed = t->st->writer_rev;
	return true;
}

/*
 * After a staged commit, gives the freed heap back to the system. Its
 * buffer was hundreds of thousands of small allocations, freed inside
 * the arenas, which glibc returns only from a heap's top: a copy of a
 * 1.4 MB document of 100,000 leaves left the daemon at 56 MB resident
 * (11.6 MB before it) until it exited.
 */
static void etcd_heap_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

int store_etcd_write(struct store *sb, store_write_fn fn, void *arg)
{
	struct store_etcd *st = ETCD(sb);
	unsigned delay_us = 1000;
	uint64_t first = 0;
	uint64_t *as_of = NULL;	/* the caller's (store_txn_as_of) */
	int64_t landed = 0, fresh = 0, losing_ns = 0;
	unsigned lost = 0;	/* attempts lost in a row (etcd_turn_between) */
	bool sent = false, staged = false;
	int rc = -EBUSY;

	if (sb->readonly)
		return -EROFS;
	pthread_mutex_lock(&st->write_lock);
	for (int attempt = 0; attempt < ETCD_WRITE_TRIES; attempt++) {
		struct store_etcd_txn *t;
		uint64_t seq = atomic_fetch_add(&st->seq, 1) + 1;
		int64_t began_ns = store_mono_ns();
		bool committed = false;

		if (!first)
			first = seq;	/* the attempts of this write are first..seq */
		etcd_turn_note(st, NULL);	/* its settle, if it has one, reads the turn */

		t = calloc(1, sizeof(*t));
		if (!t) {
			rc = -ENOMEM;
			break;
		}
		store_txn_init_write(&t->base, sb, NULL);	/* no change log: the watch is the feed */
		rc = txn_init(st, t);
		if (rc) {
			free(t);
			break;
		}
		t->attempt = (unsigned)attempt;
		etcd_snap_attach(t);	/* reads at its revision; the commit's guards say if it still holds */
		rc = fn(&t->base, arg);
		if (rc >= 0 && t->guard_rc)
			rc = t->guard_rc;	/* a scan's guard went unrecorded: nothing may land */
		as_of = t->base.as_of;
		if (rc < 0 && rc != -ESTALE && sent && earlier_landed(t, first, seq, &landed)) {
			fresh = landed;
			txn_release(t);
			free(t);
			rc = 0;
			break;
		}
		/*
		 * A check whose later commit makes the outcome right anyway
		 * (rc > 0, unconfirmed) stands as read: the dry run of a create
		 * with O_TRUNC, one round trip a file fewer.
		 */
		if (t->snap && rc != -ESTALE && (rc != 0 || (etcd_buf_empty(t->buf) && !t->resv)) &&
		    !(rc > 0 && t->base.unconfirmed) && !outcome_holds(t)) {
			/* shared answers it read no longer hold: run it again at the newest revision */
			txn_release(t);
			free(t);
			etcd_snap_retire(st, INT64_MAX);
			rc = -EBUSY;
			continue;
		}
		if (rc == -ESTALE)
			committed = false;	/* read at a compacted revision: run again at a new one */
		else if (rc == 0)
			rc = commit_attempt(t, first, seq, &committed);
		if (rc == 0 && !committed) {
			/* a commit record in the way fails every guard until it is applied: help */
			bool found;

			rc = etcd_big_help(st, t->c, &found);
		}
		if (rc == 0 && committed && t->kids_upgrade)
			st->kids_records = true;	/* under write_lock; a repair's process (the CLI) */
		sent = sent || t->sent;
		staged = staged || t->staged;
		landed = t->landed;
		fresh = attempt_as_of(t);
		txn_release(t);
		free(t);
		if ((rc == 0 || rc == -ESTALE) && !committed) {
			/* someone changed what fn read: run it again, backing off a little */
			losing_ns += store_mono_ns() - began_ns;
			etcd_turn_between(st, ++lost, losing_ns);	/* or after a turn */
			if (attempt >= 2 && !st->turn_rev) {
				uint32_t r = 0;

				if (getrandom(&r, sizeof(r), 0) != sizeof(r))
					r = (uint32_t)store_now_ns();
				usleep(r % delay_us);
				if (delay_us < 64000)
					delay_us *= 2;
			}
			rc = -EBUSY;
			/* what it read was old: the next attempt reads anew, not from shared answers */
			etcd_snap_retire(st, INT64_MAX);
			continue;
		}
		break;
	}
	/*
	 * What readers shared is older than this commit now (or than one that
	 * may have landed); a snapshot carried to the commit's revision stays.
	 */
	if (sent)
		etcd_snap_retire(st, landed ? landed : INT64_MAX);
	etcd_turn_release(st);	/* on every way out: commit, refusal, error */
	pthread_mutex_unlock(&st->write_lock);
	if (staged)
		etcd_heap_trim();
	if (as_of) {
		/* none had: a dry run served by shared answers and taken as read */
		if (!fresh)
			fresh = (int64_t)etcd_newest_revision(st);
		if (fresh > 0 && (uint64_t)fresh > *as_of)
			*as_of = (uint64_t)fresh;
	}
	return rc;
}

/* ---- point operations ---- */

static int check_write(const struct store_etcd_txn *t, size_t key_len)
{
	if (!t->base.write)
		return -EROFS;
	return key_len > STORE_KEY_MAX ? -ENAMETOOLONG : 0;
}

/* Whether page k holds etcd key key[0..len): *at its index, or where it would go. */
static bool page_find(const struct etcd_kept *k, const uint8_t *key, size_t len, size_t *at)
{
	size_t lo = 0, hi = k->r.len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (store_key_cmp(k->r.kvs[mid].key, k->r.kvs[mid].key_len, key, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return lo < k->r.len && !store_key_cmp(k->r.kvs[lo].key, k->r.kvs[lo].key_len, key, len);
}

int store_etcd_get(struct store_txn *tb, enum store_space space,
		   const void *key, size_t key_len, struct store_val *out)
{
	struct store_etcd_txn *txn = ETXN(tb);
	uint8_t k[ETCD_KEY_MAX];
	struct etcd_range_result *r;
	struct etcd_kept *kept;
	size_t kl;
	int rc;

	if (key_len == 0)
		return -ENOENT;	/* the root has no key */
	if (key_len > STORE_KEY_MAX)
		return -ENAMETOOLONG;
	if ((rc = etcd_val_flush(txn)))
		return rc;
	kl = etcd_key(txn->st, space, key, key_len, k);
	if (txn->base.write) {
		if (txn->st->test_read_us)
			usleep(txn->st->test_read_us);	/* (a slow read: a write that keeps losing) */
		rc = etcd_buf_get(txn->buf, k, kl, &out->data, &out->len);
		if (rc == 1)
			return etcd_val_resolve(txn, k, kl, 0, &out->data, &out->len);
		if (rc == 0)
			return -ENOENT;
	}
	struct etcd_kept *page = etcd_txn_page_covering(txn, k, kl, true);
	size_t lo;

	if (!page && !txn->base.write)
		page = etcd_read_ahead(txn, k, kl);
	if (!page && (page = etcd_txn_page_covering(txn, k, kl, false)) != NULL &&
	    page_find(page, k, kl, &lo))
		page = NULL;	/* a page of keys alone holds it: its value is asked for below */
	if (page) {
		etcd_read_ahead_served(txn, page);
		/* a scan read this place already (and guarded it, unless another transaction did) */
		bool found = page_find(page, k, kl, &lo);

		/*
		 * A write guards the key alone, as a point read's answer: the
		 * page's range may be a whole space (the probes' first read)
		 * that etcd would read key by key at the commit.
		 */
		if (txn->base.write && txn->snap && page->reader != txn->id &&
		    (rc = etcd_buf_guard_key(txn->buf, k, kl, found ? page->r.kvs[lo].mod_rev : 0)))
			return rc;
		if (!found)
			return -ENOENT;
		out->data = page->r.kvs[lo].val ? (const void *)page->r.kvs[lo].val : (const void *)"";
		out->len = page->r.kvs[lo].val_len;
		return etcd_val_resolve(txn, k, kl, page->r.kvs[lo].mod_rev, &out->data, &out->len);
	}
	if ((rc = point_read(txn, k, kl, &kept)))
		return rc;
	r = &kept->r;
	if (txn->base.write && (rc = etcd_buf_guard_key(txn->buf, k, kl, r->len ? r->kvs[0].mod_rev : 0)))
		return rc;
	if (!r->len)
		return -ENOENT;
	out->data = r->kvs[0].val ? (const void *)r->kvs[0].val : (const void *)"";
	out->len = r->kvs[0].val_len;
	return etcd_val_resolve(txn, k, kl, r->kvs[0].mod_rev, &out->data, &out->len);
}

int store_etcd_put(struct store_txn *tb, enum store_space space,
		   const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct store_etcd_txn *txn = ETXN(tb);
	uint8_t k[ETCD_KEY_MAX];
	int rc = check_write(txn, key_len);

	if (rc || (rc = etcd_val_flush(txn)))
		return rc;
	return etcd_val_put(txn, k, etcd_key(txn->st, space, key, key_len, k), val, val_len);
}

int store_etcd_put_reserve(struct store_txn *tb, enum store_space space,
			   const void *key, size_t key_len, size_t val_len, void **out)
{
	struct store_etcd_txn *txn = ETXN(tb);
	uint8_t k[ETCD_KEY_MAX];
	int rc = check_write(txn, key_len);

	if (rc)
		return rc;
	return etcd_val_reserve(txn, k, etcd_key(txn->st, space, key, key_len, k), val_len, out);
}

int store_etcd_del(struct store_txn *tb, enum store_space space,
		   const void *key, size_t key_len)
{
	struct store_etcd_txn *txn = ETXN(tb);
	uint8_t k[ETCD_KEY_MAX];
	struct store_val v;
	size_t kl;
	int rc = check_write(txn, key_len);

	if (rc)
		return rc;
	rc = store_etcd_get(tb, space, key, key_len, &v);	/* 0 or -ENOENT, guarded */
	if (rc)
		return rc;
	kl = etcd_key(txn->st, space, key, key_len, k);
	if ((rc = etcd_val_forget(txn, k, kl, false)))	/* a big value's chunks go with it */
		return rc;
	return etcd_buf_del(txn->buf, k, kl);
}

/* Into this commit's entry, which the watch reads back as a removed subtree. */
void store_etcd_note_removed(struct store_txn *tb, enum store_space space, const void *key,
			     size_t len)
{
	feed_set_note_removed(&ETXN(tb)->feed, space, key, len);
}

int store_etcd_del_prefix(struct store_txn *tb, enum store_space space,
			  const void *prefix, size_t prefix_len, uint64_t *deleted)
{
	struct store_etcd_txn *txn = ETXN(tb);
	uint8_t k[ETCD_KEY_MAX], end[ETCD_KEY_MAX];
	size_t kl, el;
	int rc;

	if (deleted)
		*deleted = 0;
	if (!txn->base.write)
		return -EROFS;
	if (prefix_len > STORE_KEY_MAX)
		return 0;	/* no key is that long, so none starts with it */
	if ((rc = etcd_val_flush(txn)))
		return rc;
	{
		/*
		 * The keys are read (store.c always wants the count), so the read is
		 * guarded like a scan; up to ETCD_DEL_KEYS of them are deleted one by
		 * one, so that a document written again over them costs no gap
		 * deletes (section 4, step 4), a bigger subtree goes as one range.
		 */
		struct store_etcd_scan *s = calloc(1, sizeof(*s));
		struct store_val sk, sv;
		uint64_t n = 0;

		if (!s)
			return -ENOMEM;
		s->base.txn = tb;
		s->base.space = space;
		s->base.prefix_len = prefix_len;
		if (prefix_len)
			memcpy(s->base.prefix, prefix, prefix_len);
		s->keys_only = true;
		rc = store_etcd_scan_open(&s->base);
		if (rc == 0)
			while ((rc = store_etcd_scan_next(&s->base, &sk, &sv)) == 1) {
				if (++n <= ETCD_DEL_KEYS &&
				    (rc = etcd_buf_del(txn->buf, k, etcd_key(txn->st, space, sk.data,
									sk.len, k))) < 0)
					break;
			}
		store_etcd_scan_close(&s->base);
		free(s);
		if (rc < 0)
			return rc;
		if (deleted)
			*deleted = n;
		if (n)
			feed_set_note(&txn->feed, space, prefix, prefix_len, true);
		if (n && space == STORE_SPACE_DATA && (rc = etcd_kids_forget(txn, prefix, prefix_len)))
			return rc;
		/* the chunks of big values under it (etcd_val.c) */
		if (n && (rc = etcd_val_forget(txn, k, etcd_key(txn->st, space, prefix, prefix_len, k),
					       true)))
			return rc;
		if (n <= ETCD_DEL_KEYS)
			return 0;
	}
	kl = etcd_key(txn->st, space, prefix, prefix_len, k);
	el = etcd_prefix_end(k, kl, end);
	return etcd_buf_del_range(txn->buf, k, kl, end, el);
}

bool store_etcd_space_is_empty(struct store_txn *tb, enum store_space space)
{
	struct store_etcd_txn *txn = ETXN(tb);
	struct store_etcd_scan *s = calloc(1, sizeof(*s));
	struct store_val k, v;
	int rc;

	if (!s)
		return false;
	s->base.txn = tb;
	s->base.space = space;
	s->keys_only = true;
	rc = store_etcd_scan_open(&s->base);
	if (rc == 0)
		rc = store_etcd_scan_next(&s->base, &k, &v);	/* through the buffer in a write */
	store_etcd_scan_close(&s->base);
	free(s);
	(void)txn;
	return rc == 0;
}
