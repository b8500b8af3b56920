/*
 * store/etcd/etcd_big.c - write transactions larger than one etcd request
 * (docs/ETCD.md section 6): the attempt's operations are staged in chunks,
 * made visible by one small guarded Txn that writes the store's commit
 * record, then applied to the real keys in further requests (by the writer,
 * or by whoever finds the record first); readers pin below the record.
 */
#include "store/etcd/etcd_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_int.h"

/*
 * A chunk is one apply Txn: at most the handle's operations per Txn, room
 * left for the guard, and two thirds of its bytes (base64 adds a third
 * when it is staged as one value).
 */
#define BIG_CHUNK_BYTES_MAX (ETCD_TXN_BYTES / 3 * 2)
#define BIG_LEASE_TTL 15	/* s: a writer silent this long is taken for dead */
#define BIG_REC_VERSION 1
#define BIG_REC_HEAD 21	/* version, id (16), chunks (4); the change-log entry follows */
#define BIG_TRIES 40	/* tries of an idempotent request while the cluster is unsettled */

/* One staged commit's name: the writer id and the attempt number. */
struct big_id {
	uint8_t b[16];
};

/*
 * Op codes of a chunk's encoding: code, key length (4), key, length (4),
 * value or range end; a put on a lease (section 9) then has the lease id (8).
 */
enum { BIG_OP_PUT = 'p', BIG_OP_PUT_LEASE = 'P', BIG_OP_DEL = 'd', BIG_OP_RANGE = 'r' };

/* The etcd key of a private space with the id and a chunk number (chunk < 0: none). */
static size_t big_key(const struct store_etcd *st, int space, const struct big_id *id, long chunk,
		      uint8_t *out)
{
	uint8_t tail[20];
	size_t n = 0;

	if (id) {
		memcpy(tail, id->b, 16);
		n = 16;
	}
	if (chunk >= 0) {
		put_be(tail + n, (uint64_t)chunk, 4);
		n += 4;
	}
	return etcd_key(st, space, tail, n, out);
}

/* The test hook: KVFS_ETCD_TEST_STEP_MS pauses between the requests of a staged commit. */
static void big_step_pause(void)
{
	const char *s = getenv("KVFS_ETCD_TEST_STEP_MS");

	if (s && *s)
		usleep((useconds_t)strtoul(s, NULL, 10) * 1000u);
}

/*
 * The writer's lease, in seconds: BIG_LEASE_TTL, or KVFS_ETCD_TEST_LEASE_S
 * (at least 3: renewals come once a second) for tests that kill a writer
 * and wait for its lease to run out.
 */
static int64_t big_lease_ttl(void)
{
	const char *s = getenv("KVFS_ETCD_TEST_LEASE_S");
	long ttl = s && *s ? strtol(s, NULL, 10) : 0;

	return ttl >= 3 && ttl < BIG_LEASE_TTL ? ttl : BIG_LEASE_TTL;
}

/* An error worth trying again after, unless the thread's deadline passed (its operation gave up). */
static bool transient(int rc)
{
	return (rc == -ECONNRESET || rc == -EAGAIN || rc == -ECONNREFUSED || rc == -EPIPE ||
		rc == -ETIMEDOUT) && !etcd_deadline_passed();
}

/* Renews the writer's lease (0: none) at most once a second: BIG_LEASE_TTL leaves room. */
static void keep_lease(struct etcd_client *c, int64_t lease, int64_t *renewed_ns)
{
	int64_t now = store_now_ns();

	if (!lease || now - *renewed_ns < 1000000000)
		return;
	*renewed_ns = now;
	(void)etcd_client_lease_keepalive(c, lease, NULL);
}

/* A Txn whose repetition is harmless (staging, applying, cleaning): tried again while transient. */
static int txn_retry(struct etcd_client *c, const struct etcd_cmp *cmps, size_t n_cmps,
		     const struct etcd_op *ops, size_t n_ops, struct etcd_txn_result *out)
{
	int rc;

	for (int tries = 0;; tries++) {
		rc = etcd_client_txn(c, cmps, n_cmps, ops, n_ops, NULL, 0, out);
		if (!transient(rc) || tries >= BIG_TRIES)
			return rc;
		usleep(100 * 1000);
	}
}

/*
 * Before the handle's first commit over one request: a Txn of as many
 * compares (on the record key; it reads and writes nothing) as the budget
 * has operations, which a cluster at a lower --max-txn-ops refuses before
 * anything is staged (a chunk staged too big is refused only at its
 * apply, after the commit point). Repeated at each lower budget until one
 * is accepted. -EMSGSIZE when it lowered the budget: the plan in hand was
 * made for the old one.
 */
static int limits_probe(struct store_etcd *st, struct etcd_client *c)
{
	uint8_t rk[ETCD_KEY_MAX];
	size_t rkl = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk), n;
	struct etcd_cmp *cmps = NULL;
	struct etcd_txn_result r;
	bool lowered = false;
	int rc;

	if (atomic_load(&st->limits_probed) || getenv("KVFS_ETCD_TEST_NO_PROBE"))
		return 0;	/* (the test hook: chunks staged as by a kvfs that did not probe) */
	for (;;) {
		struct etcd_cmp *more;

		n = etcd_txn_ops(st);
		more = realloc(cmps, n * sizeof(*cmps));
		if (!more) {
			rc = -ENOMEM;
			break;
		}
		cmps = more;
		for (size_t i = 0; i < n; i++)
			cmps[i] = (struct etcd_cmp){ .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL,
						     .key = rk, .key_len = rkl, .rev = 0 };
		rc = txn_retry(c, cmps, n, NULL, 0, &r);
		if (rc == 0) {
			etcd_txn_result_release(&r);
			atomic_store(&st->limits_probed, true);
			rc = lowered ? -EMSGSIZE : 0;
			break;
		}
		if (rc != -EMSGSIZE || !etcd_limits_lower(st, rc, n, 0))
			break;
		lowered = true;
	}
	free(cmps);
	return rc;
}

/* ---- chunks ---- */

static size_t op_size(const struct etcd_op *op)
{
	if (op->type == ETCD_OP_PUT)
		return 9 + op->key_len + op->val_len + (op->lease ? 8 : 0);
	return 9 + op->key_len + op->range_end_len;
}

static uint8_t *op_encode(uint8_t *p, const struct etcd_op *op)
{
	const void *second = op->type == ETCD_OP_PUT ? op->val : op->range_end;
	size_t second_len = op->type == ETCD_OP_PUT ? op->val_len : op->range_end_len;

	if (op->type == ETCD_OP_PUT)
		*p++ = op->lease ? BIG_OP_PUT_LEASE : BIG_OP_PUT;
	else
		*p++ = op->range_end ? BIG_OP_RANGE : BIG_OP_DEL;
	put_be(p, op->key_len, 4);
	memcpy(p + 4, op->key, op->key_len);
	p += 4 + op->key_len;
	put_be(p, second_len, 4);
	if (second_len)
		memcpy(p + 4, second, second_len);
	p += 4 + second_len;
	if (op->type == ETCD_OP_PUT && op->lease) {
		put_be(p, (uint64_t)op->lease, 8);
		p += 8;
	}
	return p;
}

/*
 * Decodes a chunk into ops (heap, *ops; keys and values point into data).
 * -EPROTO on bytes that are not a chunk.
 */
static int chunk_decode(const uint8_t *data, size_t len, struct etcd_op **ops, size_t *n)
{
	size_t cap = 64, i = 0, pos = 0;
	struct etcd_op *o = malloc(cap * sizeof(*o));

	if (!o)
		return -ENOMEM;
	while (pos < len) {
		uint8_t code = data[pos];
		size_t kl, sl, tail = code == BIG_OP_PUT_LEASE ? 8 : 0;

		if (len - pos < 9 + tail || (kl = get_be(data + pos + 1, 4)) > len - pos - 9 - tail ||
		    (sl = get_be(data + pos + 5 + kl, 4)) > len - pos - 9 - tail - kl ||
		    (code != BIG_OP_PUT && code != BIG_OP_PUT_LEASE && code != BIG_OP_DEL &&
		     code != BIG_OP_RANGE)) {
			free(o);
			return -EPROTO;
		}
		if (i == cap) {
			struct etcd_op *g = realloc(o, 2 * cap * sizeof(*o));

			if (!g) {
				free(o);
				return -ENOMEM;
			}
			o = g;
			cap *= 2;
		}
		o[i] = (struct etcd_op){ .type = code == BIG_OP_PUT || code == BIG_OP_PUT_LEASE ?
						 ETCD_OP_PUT : ETCD_OP_DELETE,
					 .key = data + pos + 5, .key_len = kl };
		if (code == BIG_OP_RANGE) {
			o[i].range_end = data + pos + 9 + kl;
			o[i].range_end_len = sl;
		} else if (code != BIG_OP_DEL) {
			o[i].val = data + pos + 9 + kl;
			o[i].val_len = sl;
		}
		if (tail)
			o[i].lease = (int64_t)get_be(data + pos + 9 + kl + sl, 8);
		i++;
		pos += 9 + kl + sl + tail;
	}
	*ops = o;
	*n = i;
	return 0;
}

/* ---- applying a committed record ---- */

/* What a commit record says; borrowed from the answer that holds it. */
struct big_rec {
	struct big_id id;
	uint32_t chunks;
	const uint8_t *feed;	/* the change-log entry for the other mounts */
	size_t feed_len;
	int64_t mod_rev;	/* its revision: the guard of every request applying it */
};

static int rec_parse(const struct etcd_kv *kv, struct big_rec *out)
{
	if (kv->val_len < BIG_REC_HEAD || kv->val[0] != BIG_REC_VERSION)
		return -EPROTO;
	memcpy(out->id.b, kv->val + 1, 16);
	out->chunks = (uint32_t)get_be(kv->val + 17, 4);
	out->feed = kv->val + BIG_REC_HEAD;
	out->feed_len = kv->val_len - BIG_REC_HEAD;
	out->mod_rev = kv->mod_rev;
	return 0;
}

/*
 * etcd refuses a whole Txn that puts a key on a lease it no longer has
 * (-ENOENT). A staged put's lease ends at the key's deadline, which may
 * pass while the commit is staged or applied; such a put becomes a delete,
 * as etcd would have deleted the key at the end of its lease. The ops
 * still touch the same keys, so any applier turns them into the same Txn.
 * True when one changed (so the Txn is worth sending again).
 */
static bool expired_puts_to_deletes(struct etcd_client *c, struct etcd_op *ops, size_t n)
{
	int64_t gone = 0, alive = 0;	/* the last answers: ops of one lease come in runs */
	bool changed = false;

	for (size_t i = 0; i < n; i++) {
		int64_t lease = ops[i].type == ETCD_OP_PUT ? ops[i].lease : 0, ttl;

		if (!lease || lease == alive)
			continue;
		if (lease != gone) {
			if (etcd_client_lease_ttl(c, lease, &ttl) != 0)
				continue;	/* unknown: the put stays as it is */
			if (ttl >= 0) {
				alive = lease;
				continue;
			}
			gone = lease;
		}
		ops[i] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = ops[i].key,
					   .key_len = ops[i].key_len };
		changed = true;
	}
	return changed;
}

static int apply_ops(struct store_etcd *st, struct etcd_client *c, const struct etcd_cmp *cmp,
		     const struct etcd_op *ops, size_t n, bool *gone);

/* How many of the n ops, from the first, fit the handle's budget (at least one). */
static size_t ops_fitting(struct store_etcd *st, const struct etcd_op *ops, size_t n)
{
	size_t max_ops = etcd_txn_ops(st) - ETCD_TXN_ROOM, max_bytes = etcd_txn_bytes(st), bytes = 0, i;

	for (i = 0; i < n && i < max_ops; i++) {
		bytes += op_size(&ops[i]);
		if (i > 0 && bytes > max_bytes)
			break;
	}
	return i;
}

/*
 * The cluster refused ops (n > 1) as too big (rc): the handle's budget is
 * lowered when the refused Txn was within it, then the ops go in slices
 * that fit the budget (halves when the budget says they all fit).
 */
static int apply_in_slices(struct store_etcd *st, struct etcd_client *c,
			   const struct etcd_cmp *cmp, const struct etcd_op *ops, size_t n,
			   int rc, bool *gone)
{
	size_t budget = rc == -EMSGSIZE ? etcd_txn_ops(st) : etcd_txn_bytes(st), size = n + 1;
	size_t largest = 0;

	if (rc == -E2BIG) {
		size = 0;
		for (size_t i = 0; i < n; i++) {
			size += op_size(&ops[i]);
			if (op_size(&ops[i]) > largest)
				largest = op_size(&ops[i]);
		}
	}
	if (size <= budget)	/* the handle's next commits fit */
		(void)etcd_limits_lower(st, rc, budget, largest);
	rc = 0;
	for (size_t i = 0; rc == 0 && !*gone && i < n;) {
		size_t m = ops_fitting(st, ops + i, n - i);

		if (i == 0 && m == n)
			m = n / 2;
		rc = apply_ops(st, c, cmp, ops + i, m, gone);
		i += m;
	}
	return rc;
}

/*
 * Sends ops as one Txn guarded by cmp; *gone when the guard failed. A chunk
 * staged under larger limits than this cluster's (another host's budget,
 * or one not learned yet) is refused as too big: its halves go one after
 * the other then. That is sound because a commit's ops never overlap, so
 * they commute: a helper applying the chunk meanwhile, or again later,
 * leaves the same keys.
 */
static int apply_ops(struct store_etcd *st, struct etcd_client *c, const struct etcd_cmp *cmp,
		     const struct etcd_op *ops, size_t n, bool *gone)
{
	struct etcd_txn_result t;
	int rc = txn_retry(c, cmp, 1, ops, n, &t);

	if ((rc == -EMSGSIZE || rc == -E2BIG) && n > 1)
		return apply_in_slices(st, c, cmp, ops, n, rc, gone);
	if (rc == 0) {
		*gone = !t.succeeded;
		etcd_txn_result_release(&t);
	}
	return rc;
}

/* Applies chunk i of rec, guarded by the record; *gone when the record is gone (someone finished). */
static int apply_chunk(struct store_etcd *st, struct etcd_client *c, const struct big_rec *rec,
		       uint32_t i, bool *gone)
{
	uint8_t k[ETCD_KEY_MAX], rk[ETCD_KEY_MAX];
	size_t kl = big_key(st, ETCD_SPACE_STAGE, &rec->id, i, k);
	struct etcd_cmp cmp = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL, .key = rk,
				.key_len = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk),
				.rev = rec->mod_rev };
	struct etcd_range_result r;
	struct etcd_txn_result t;
	struct etcd_op *ops = NULL;
	size_t n = 0;
	int rc = etcd_range_retry(c, k, kl, NULL, &r);

	if (rc)
		return rc;
	if (r.len != 1) {
		/*
		 * Whoever finished removed the staging: nothing left to do, unless
		 * the record still stands. Then its chunk is lost and rolling forward
		 * cannot finish it; say so rather than report it applied.
		 */
		rc = txn_retry(c, &cmp, 1, NULL, 0, &t);
		if (rc == 0) {
			*gone = !t.succeeded;
			if (t.succeeded)
				rc = -EIO;
			etcd_txn_result_release(&t);
		}
		goto out_release;
	}
	rc = chunk_decode(r.kvs[0].val, r.kvs[0].val_len, &ops, &n);
	for (int tries = 0; rc == 0; tries++) {
		rc = apply_ops(st, c, &cmp, ops, n, gone);
		if (rc != -ENOENT || tries >= BIG_TRIES || !expired_puts_to_deletes(c, ops, n))
			break;
		rc = 0;	/* a put turned into a delete: the Txn goes again */
	}
	free(ops);
out_release:
	etcd_range_result_release(&r);
	return rc;
}

/*
 * Rolls a committed record forward: every chunk applied (each guarded by
 * the record, so a late helper changes nothing once it is gone), then one
 * Txn that removes the record, the staging and the writer's marker and puts
 * the change-log entry naming what changed. Safe to run by several at once
 * and again after a crash: the ops are idempotent and commute. lease: the
 * writer's, renewed on the way (0: a helper). *rev: the revision at which
 * the new state became visible (0 when someone else finished it).
 */
static int big_finish(struct store_etcd *st, struct etcd_client *c, const struct big_rec *rec,
		      int64_t lease, int64_t *rev)
{
	uint8_t rk[ETCD_KEY_MAX], sk[ETCD_KEY_MAX], se[ETCD_KEY_MAX], qk[ETCD_KEY_MAX],
		lk[ETCD_KEY_MAX];
	size_t rkl = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk);
	size_t skl = big_key(st, ETCD_SPACE_STAGE, &rec->id, -1, sk);
	size_t sel = etcd_prefix_end(sk, skl, se);
	size_t qkl = big_key(st, ETCD_SPACE_PENDING, &rec->id, -1, qk);
	size_t lkl = etcd_key(st, STORE_SPACE_FEED, NULL, 0, lk);
	struct etcd_cmp cmp = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL, .key = rk,
				.key_len = rkl, .rev = rec->mod_rev };
	struct etcd_op ops[4] = {
		{ .type = ETCD_OP_DELETE, .key = rk, .key_len = rkl },
		{ .type = ETCD_OP_DELETE, .key = sk, .key_len = skl, .range_end = se, .range_end_len = sel },
		{ .type = ETCD_OP_DELETE, .key = qk, .key_len = qkl },
		{ .type = ETCD_OP_PUT, .key = lk, .key_len = lkl, .val = rec->feed, .val_len = rec->feed_len },
	};
	struct etcd_txn_result t;
	bool gone = false;
	int64_t renewed_ns = 0;
	int rc = 0;

	*rev = 0;
	for (uint32_t i = 0; i < rec->chunks && !gone; i++) {
		big_step_pause();
		keep_lease(c, lease, &renewed_ns);
		rc = apply_chunk(st, c, rec, i, &gone);
		if (rc)
			return rc;
	}
	if (gone)
		return 0;
	big_step_pause();
	rc = txn_retry(c, &cmp, 1, ops, rec->feed_len ? 4 : 3, &t);
	if (rc)
		return rc;
	if (t.succeeded)
		*rev = t.revision;
	etcd_txn_result_release(&t);
	return 0;
}

int etcd_big_help(struct store_etcd *st, struct etcd_client *c, bool *found)
{
	uint8_t rk[ETCD_KEY_MAX];
	size_t rkl = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk);
	struct etcd_range_result r;
	struct big_rec rec;
	int64_t rev;
	int rc;

	*found = false;
	if (st->base.readonly)
		return 0;
	rc = etcd_range_retry(c, rk, rkl, NULL, &r);
	if (rc)
		return rc;
	if (r.len == 1) {
		*found = true;
		rc = rec_parse(&r.kvs[0], &rec);
		if (rc == 0)
			rc = big_finish(st, c, &rec, 0, &rev);
	}
	etcd_range_result_release(&r);
	return rc;
}

/*
 * The revision a transaction that found record kv at revision R reads at:
 * R itself when none, else the one just before the record (the old state,
 * whole). A writer, or a reader finding the record's writer gone (its
 * marker's lease expired), rolls it forward first and reports *again, so
 * that the caller reads afresh.
 */
int etcd_big_pin(struct store_etcd_txn *t, const struct etcd_range_result *rec_r, int64_t rev,
		 bool *again)
{
	struct store_etcd *st = t->st;
	struct etcd_range_result q;
	uint8_t qk[ETCD_KEY_MAX];
	struct big_rec rec;
	int64_t done;
	bool alive;
	int rc;

	*again = false;
	if (rec_r->len != 1) {
		t->rev = rev;
		return 0;
	}
	rc = rec_parse(&rec_r->kvs[0], &rec);
	if (rc)
		return rc;
	if (!t->base.write) {
		rc = etcd_range_retry(t->c, qk, big_key(st, ETCD_SPACE_PENDING, &rec.id, -1, qk),
				      NULL, &q);
		if (rc)
			return rc;
		alive = q.len == 1;
		etcd_range_result_release(&q);
		if (alive || st->base.readonly) {
			t->rev = rec.mod_rev - 1;
			return 0;
		}
	}
	rc = big_finish(st, t->c, &rec, 0, &done);
	*again = rc == 0;
	return rc;
}

/* ---- staging and committing ---- */

/* Removes staging whose writer died before its record (no marker, not the record's). */
static int big_sweep(struct store_etcd *st, struct etcd_client *c)
{
	uint8_t sk[ETCD_KEY_MAX], se[ETCD_KEY_MAX], qk[ETCD_KEY_MAX], qe[ETCD_KEY_MAX];
	size_t skl = etcd_key(st, ETCD_SPACE_STAGE, NULL, 0, sk), sel = etcd_prefix_end(sk, skl, se);
	size_t qkl = etcd_key(st, ETCD_SPACE_PENDING, NULL, 0, qk), qel = etcd_prefix_end(qk, qkl, qe);
	struct etcd_op reads[2] = {
		{ .type = ETCD_OP_RANGE, .key = sk, .key_len = skl, .range_end = se,
		  .range_end_len = sel, .keys_only = true },
		{ .type = ETCD_OP_RANGE, .key = qk, .key_len = qkl, .range_end = qe,
		  .range_end_len = qel, .keys_only = true },
	};
	struct etcd_txn_result t;
	int rc = txn_retry(c, NULL, 0, reads, 2, &t);	/* both at one revision */

	if (rc)
		return rc;
	for (size_t i = 0; t.len == 2 && i < t.ranges[0].len; i++) {
		const struct etcd_kv *kv = &t.ranges[0].kvs[i];
		struct big_id id;
		bool pending = false;

		if (kv->key_len != skl + 20 || (i && !memcmp(kv->key, t.ranges[0].kvs[i - 1].key, skl + 16)))
			continue;	/* not a chunk, or its commit was seen already */
		memcpy(id.b, kv->key + skl, 16);
		for (size_t j = 0; j < t.ranges[1].len; j++)
			pending |= t.ranges[1].kvs[j].key_len == qkl + 16 &&
				   !memcmp(t.ranges[1].kvs[j].key + qkl, id.b, 16);
		if (!pending) {
			/* the record's chunks have a marker until it is applied: these are orphans */
			uint8_t ok[ETCD_KEY_MAX], oe[ETCD_KEY_MAX], mk[ETCD_KEY_MAX], rk[ETCD_KEY_MAX];
			size_t okl = big_key(st, ETCD_SPACE_STAGE, &id, -1, ok);
			struct etcd_cmp cmps[2] = {
				{ .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .key = mk,
				  .key_len = big_key(st, ETCD_SPACE_PENDING, &id, -1, mk), .rev = 0 },
				{ .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .key = rk,
				  .key_len = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk), .rev = 0 },
			};
			struct etcd_op del = { .type = ETCD_OP_DELETE, .key = ok, .key_len = okl,
					       .range_end = oe,
					       .range_end_len = etcd_prefix_end(ok, okl, oe) };
			struct etcd_txn_result d;

			if (txn_retry(c, cmps, 2, &del, 1, &d) == 0)
				etcd_txn_result_release(&d);
		}
	}
	etcd_txn_result_release(&t);
	return 0;
}

/*
 * Writes the buffer's operations (etcd_buf_op_next: the plan's, one at a
 * time, encoded as they come) as chunks b<id><i>; *chunks their number.
 */
static int big_stage(struct store_etcd *st, struct etcd_client *c, const struct big_id *id,
		     const struct etcd_buf *b, int64_t lease, uint32_t *chunks)
{
	uint8_t *data = malloc(BIG_CHUNK_BYTES_MAX + ETCD_TXN_BYTES + 64);
	uint8_t k[ETCD_KEY_MAX];
	size_t chunk_ops = etcd_txn_ops(st) - ETCD_TXN_ROOM, chunk_bytes = etcd_txn_bytes(st) / 3 * 2;
	struct etcd_buf_op_iter it;
	struct etcd_op op;
	int64_t renewed_ns = 0;
	int more, rc = data ? 0 : -ENOMEM;

	*chunks = 0;
	etcd_buf_op_iter_init(&it);
	more = rc ? 0 : etcd_buf_op_next(b, &it, &op);
	while (rc == 0 && more > 0) {
		uint8_t *w = data;
		size_t n = 0;

		/* at least one op, then as many as fit (a value is at most ETCD_TXN_BYTES) */
		while (more > 0 && n < chunk_ops &&
		       (n == 0 || (size_t)(w - data) + op_size(&op) <= chunk_bytes)) {
			w = op_encode(w, &op);
			n++;
			more = etcd_buf_op_next(b, &it, &op);
		}
		if (more < 0) {
			rc = more;
			break;
		}
		big_step_pause();
		keep_lease(c, lease, &renewed_ns);
		for (int tries = 0;; tries++) {
			rc = etcd_client_put(c, k, big_key(st, ETCD_SPACE_STAGE, id, *chunks, k), data,
					     (size_t)(w - data), 0, NULL);
			if (!transient(rc) || tries >= BIG_TRIES)
				break;
			usleep(100 * 1000);
		}
		(*chunks)++;
	}
	if (rc == 0 && more < 0)
		rc = more;
	etcd_buf_op_iter_release(&it);
	free(data);
	return rc;
}

/*
 * Deletes one attempt's marker. The flip compares the marker's revision, so
 * once this has returned no flip of the attempt can land any more: what
 * big_lost then finds is the final word.
 */
static int big_unmark(struct store_etcd *st, struct etcd_client *c, const struct big_id *id)
{
	uint8_t qk[ETCD_KEY_MAX];
	struct etcd_op op = { .type = ETCD_OP_DELETE, .key = qk,
			      .key_len = big_key(st, ETCD_SPACE_PENDING, id, -1, qk) };
	struct etcd_txn_result t;
	int rc = txn_retry(c, NULL, 0, &op, 1, &t);

	if (rc == 0)
		etcd_txn_result_release(&t);
	return rc;
}

/* Removes one attempt's staging and marker (a refused or failed commit). */
static void big_unstage(struct store_etcd *st, struct etcd_client *c, const struct big_id *id)
{
	uint8_t sk[ETCD_KEY_MAX], se[ETCD_KEY_MAX], qk[ETCD_KEY_MAX];
	size_t skl = big_key(st, ETCD_SPACE_STAGE, id, -1, sk);
	struct etcd_op ops[2] = {
		{ .type = ETCD_OP_DELETE, .key = sk, .key_len = skl, .range_end = se,
		  .range_end_len = etcd_prefix_end(sk, skl, se) },
		{ .type = ETCD_OP_DELETE, .key = qk,
		  .key_len = big_key(st, ETCD_SPACE_PENDING, id, -1, qk) },
	};
	struct etcd_txn_result t;

	if (txn_retry(c, NULL, 0, ops, 2, &t) == 0)
		etcd_txn_result_release(&t);
}

/* Adds every node-naming key the buffer touches to the attempt's change set. */
static int note_key(const uint8_t *key, size_t len, void *arg)
{
	struct store_etcd_txn *t = arg;
	size_t pl = t->st->prefix_len;
	enum store_space space;

	if (len <= pl)
		return 0;
	switch (key[pl]) {
	case 'd': space = STORE_SPACE_DATA; break;
	case 'a': space = STORE_SPACE_ATTR; break;
	case 's': space = STORE_SPACE_SCHEMA; break;
	default: return 0;
	}
	feed_set_note(&t->feed, space, key + pl + 1, len - pl - 1, false);
	return 0;
}

/* The record's value: version, id, chunks, the change-log entry. Heap in *out. */
static int rec_encode(struct store_etcd_txn *t, const struct big_id *id, uint32_t chunks,
		      uint8_t **out, size_t *len)
{
	uint8_t *entry = NULL;
	size_t elen = 0;
	int rc = etcd_buf_walk(t->buf, note_key, t);

	if (rc == 0)
		rc = feed_entry_encode(&t->feed, t->st->base.writer, &entry, &elen);
	if (rc)
		return rc;
	*out = malloc(BIG_REC_HEAD + elen);
	if (!*out) {
		free(entry);
		return -ENOMEM;
	}
	(*out)[0] = BIG_REC_VERSION;
	memcpy(*out + 1, id->b, 16);
	put_be(*out + 17, chunks, 4);
	if (elen)
		memcpy(*out + BIG_REC_HEAD, entry, elen);
	*len = BIG_REC_HEAD + elen;
	free(entry);
	return 0;
}

/*
 * The commit point: the attempt's guards, no record yet, our marker still
 * there (else a sweeper may have taken our chunks); puts the record and
 * the writer key. *rec_rev: the record's revision when it committed.
 */
static int big_flip(struct store_etcd_txn *t, const struct etcd_buf_plan *p, const struct big_id *id,
		    int64_t marker_rev, uint32_t chunks, uint64_t seq, bool *committed,
		    int64_t *rec_rev)
{
	struct store_etcd *st = t->st;
	uint8_t rk[ETCD_KEY_MAX], qk[ETCD_KEY_MAX], wk[ETCD_KEY_MAX], wv[8], *rv = NULL;
	size_t rkl = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk), rvl = 0;
	struct etcd_cmp *cmps = calloc(p->n_cmps + 1, sizeof(*cmps));
	struct etcd_op ops[2];
	struct etcd_txn_result r;
	int rc = cmps ? rec_encode(t, id, chunks, &rv, &rvl) : -ENOMEM;

	*committed = false;
	if (rc)
		goto out_free;
	/* the plan guards the record's absence already (commit_attempt) */
	memcpy(cmps, p->cmps, p->n_cmps * sizeof(*cmps));
	cmps[p->n_cmps] = (struct etcd_cmp){ .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL,
						  .key = qk, .rev = marker_rev,
						  .key_len = big_key(st, ETCD_SPACE_PENDING, id, -1, qk) };
	put_be(wv, seq, 8);
	ops[0] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = rk, .key_len = rkl, .val = rv,
				   .val_len = rvl };
	ops[1] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = wk, .val = wv, .val_len = 8,
				   .key_len = etcd_writer_key(st, wk) };
	big_step_pause();
	rc = etcd_client_txn(t->c, cmps, p->n_cmps + 1, ops, 2, NULL, 0, &r);
	if (rc == 0) {
		*committed = r.succeeded;
		*rec_rev = r.revision;
		etcd_txn_result_release(&r);
	}
out_free:
	free(rv);
	free(cmps);
	return rc;
}

/*
 * After a lost flip answer: our record present means committed (*found);
 * else the writer key holding seq means committed and applied already.
 */
static int big_lost(struct store_etcd_txn *t, const struct big_id *id, uint64_t seq, bool *committed,
		  bool *found, int64_t *rec_rev)
{
	struct store_etcd *st = t->st;
	uint8_t rk[ETCD_KEY_MAX], wk[ETCD_KEY_MAX];
	size_t rkl = etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk);
	size_t wkl = etcd_writer_key(st, wk);
	struct etcd_range_result r;
	int rc = -EIO;

	*committed = *found = false;
	for (int tries = 0; tries < 8; tries++) {
		rc = etcd_range_retry(t->c, rk, rkl, NULL, &r);
		if (rc && etcd_deadline_passed())
			break;	/* the operation gave up: the outcome stays unknown */
		if (rc) {
			usleep(250 * 1000);
			continue;
		}
		*found = r.len == 1 && r.kvs[0].val_len >= BIG_REC_HEAD &&
			 !memcmp(r.kvs[0].val + 1, id->b, 16);
		if (*found)
			*rec_rev = r.kvs[0].mod_rev;
		etcd_range_result_release(&r);
		if (*found) {
			*committed = true;
			return 0;
		}
		rc = etcd_range_retry(t->c, wk, wkl, NULL, &r);
		if (rc)
			continue;
		*committed = r.len == 1 && r.kvs[0].val_len == 8 && get_be(r.kvs[0].val, 8) == seq;
		etcd_range_result_release(&r);
		return 0;
	}
	return rc;
}

int etcd_big_commit(struct store_etcd_txn *t, uint64_t seq, bool *committed, int64_t *rev)
{
	struct store_etcd *st = t->st;
	struct etcd_client *c = t->c;
	struct etcd_buf_plan p;
	struct big_id id;
	struct big_rec rec = { .mod_rev = 0 };
	uint8_t qk[ETCD_KEY_MAX];
	int64_t lease = 0, marker_rev = 0;
	uint32_t chunks = 0;
	int rc;

	*committed = false;
	*rev = 0;
	put_be(id.b, st->base.writer, 8);
	put_be(id.b + 8, seq, 8);
	rc = etcd_buf_plan_cmps(t->buf, &p);	/* the operations come from the buffer as staged */
	if (rc)
		return rc;
	if (p.n_cmps + 1 > etcd_txn_ops(st)) {
		rc = -EFBIG;	/* too many reads to guard in the one commit Txn */
		goto out_plan;
	}
	(void)big_sweep(st, c);
	if ((rc = limits_probe(st, c)))
		goto out_plan;	/* -EMSGSIZE with the budget lowered: the caller plans again */
	rc = etcd_client_lease_grant(c, big_lease_ttl(), &lease, NULL);
	if (rc)
		goto out_plan;
	/* the marker first: staging without a live marker is an orphan to any sweeper */
	rc = etcd_client_put(c, qk, big_key(st, ETCD_SPACE_PENDING, &id, -1, qk), "", 0, lease,
			     &marker_rev);
	if (rc == 0)
		rc = big_stage(st, c, &id, t->buf, lease, &chunks);
	if (rc)
		goto out_unstage;
	rc = big_flip(t, &p, &id, marker_rev, chunks, seq, committed, &rec.mod_rev);
	if (rc == 0 && getenv("KVFS_ETCD_TEST_LOSE_FLIP")) {
		/* the test hook: the flip's answer is lost on the way back */
		rc = -ETIMEDOUT;
		*committed = false;
	}
	if (rc && etcd_outcome_unknown(rc)) {
		/*
		 * The flip's answer was lost: it may still be in flight. Remove the
		 * marker it compares first, so that it can no longer land, then ask
		 * whether it did: the record says (or, applied, the writer key).
		 */
		bool found = false;

		rc = big_unmark(st, c, &id);
		if (rc == 0)
			rc = big_lost(t, &id, seq, committed, &found, &rec.mod_rev);
		if (rc || (*committed && !found))
			goto out_lease;	/* unknown, or already applied by someone */
	}
	if (rc || !*committed)
		goto out_unstage;
	rec.id = id;
	rec.chunks = chunks;
	rec.feed = NULL;
	{
		/* apply it ourselves: the feed entry is what the record holds */
		struct etcd_range_result r;
		uint8_t rk[ETCD_KEY_MAX];

		rc = etcd_range_retry(c, rk, etcd_key(st, ETCD_SPACE_RECORD, NULL, 0, rk), NULL, &r);
		if (rc == 0) {
			if (r.len == 1 && rec_parse(&r.kvs[0], &rec) == 0 &&
			    !memcmp(rec.id.b, id.b, 16))
				(void)big_finish(st, c, &rec, lease, rev);
			etcd_range_result_release(&r);
		}
	}
	/* committed whatever the roll-forward did: a later reader or writer finishes it */
	rc = 0;
	goto out_lease;
out_unstage:
	big_unstage(st, c, &id);
out_lease:
	if (lease)
		(void)etcd_client_lease_revoke(c, lease);
out_plan:
	etcd_buf_plan_release(&p);
	return rc;
}

