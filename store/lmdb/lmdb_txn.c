/*
 * store/lmdb/lmdb_txn.c - LMDB transactions: the gate that lets the map grow
 * (store/lmdb/lmdb_int.h explains it), read transactions, and write transactions
 * with group commit and the change log entry of each commit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/lmdb/lmdb_int.h"

/* ---- the gate (see store/lmdb/lmdb_int.h) ---- */

/* Counts a transaction (or a copy) in; waits while a closer is pending. */
void lmdb_gate_enter(struct lmdb_store *st, bool copy)
{
	pthread_mutex_lock(&st->gate_mutex);
	while (st->resizing || st->closers > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->active_txns++;
	st->copies += copy;
	pthread_mutex_unlock(&st->gate_mutex);
}

void lmdb_gate_leave(struct lmdb_store *st, bool copy)
{
	pthread_mutex_lock(&st->gate_mutex);
	st->copies -= copy;
	if (--st->active_txns == 0 || copy)
		pthread_cond_broadcast(&st->gate_cond);
	pthread_mutex_unlock(&st->gate_mutex);
}

/*
 * Keeps new transactions out, then waits until no transaction is open.
 * A running copy is waited for first, without keeping anyone out.
 */
static void gate_close(struct lmdb_store *st)
{
	pthread_mutex_lock(&st->gate_mutex);
	while (st->copies > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->closers++;
	while (st->resizing || st->active_txns > 0)
		pthread_cond_wait(&st->gate_cond, &st->gate_mutex);
	st->closers--;
	st->resizing = true;
	pthread_mutex_unlock(&st->gate_mutex);
}

static void gate_open(struct lmdb_store *st)
{
	pthread_mutex_lock(&st->gate_mutex);
	st->resizing = false;
	pthread_cond_broadcast(&st->gate_cond);
	pthread_mutex_unlock(&st->gate_mutex);
}

/* ---- map size ---- */

/*
 * Another process grew the map past our mapping: adopt its size.
 * Called with no transaction of ours open.
 */
static int adopt_mapsize(struct lmdb_store *st)
{
	int rc;

	gate_close(st);
	rc = mdb_env_set_mapsize(st->env, 0);
	gate_open(st);
	return lmdb_err(rc);
}

/*
 * Doubles the map (or takes another process's larger size). Called holding
 * write_mutex, with no transaction of ours open. Failure means the address
 * space or the disk cannot hold more: -ENOSPC.
 */
int lmdb_grow(struct lmdb_store *st)
{
	size_t old, adopted;
	int rc;

	gate_close(st);
	old = lmdb_mapsize(st);
	rc = mdb_env_set_mapsize(st->env, 0);
	adopted = lmdb_mapsize(st);
	if (rc == 0 && adopted <= old)
		rc = old > SIZE_MAX / 2 ? ENOMEM : mdb_env_set_mapsize(st->env, old * 2);
	gate_open(st);
	return rc ? -ENOSPC : 0;
}

/*
 * Grows the map to the pages in use plus bytes (rounded up to a MiB), so a
 * big write does not fill it and start over; never shrinks it. Holds
 * write_mutex as lmdb_grow's callers do.
 */
int lmdb_reserve(struct store *base, uint64_t bytes)
{
	struct lmdb_store *st = lmdb_of(base);
	MDB_envinfo info;
	MDB_stat ms;
	uint64_t want;
	int rc;

	if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &ms) != 0)
		return -EIO;
	want = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	if (bytes > SIZE_MAX - want - (1u << 20))
		return -ENOSPC;	/* more than the address space */
	want = (want + bytes + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
	if (want <= lmdb_mapsize(st))
		return 0;
	pthread_mutex_lock(&st->write_mutex);
	gate_close(st);
	rc = want > lmdb_mapsize(st) ? mdb_env_set_mapsize(st->env, (size_t)want) : 0;
	gate_open(st);
	pthread_mutex_unlock(&st->write_mutex);
	return rc ? -ENOSPC : 0;
}

/* ---- transactions ---- */

/* Begins an LMDB transaction inside the gate, adopting a map grown elsewhere. */
int lmdb_begin(struct lmdb_store *st, unsigned flags, MDB_txn **out)
{
	int rc;

	for (;;) {
		lmdb_gate_enter(st, false);
		rc = mdb_txn_begin(st->env, NULL, flags, out);
		if (rc == 0)
			return 0;
		lmdb_gate_leave(st, false);
		if (rc != MDB_MAP_RESIZED)
			return lmdb_err(rc);
		rc = adopt_mapsize(st);
		if (rc)
			return rc;
	}
}

/* The bytes the store's pages span now (0 when LMDB cannot say). */
static size_t pages_span(struct lmdb_store *st)
{
	MDB_envinfo info;
	MDB_stat ms;

	if (mdb_env_info(st->env, &info) != 0 || mdb_env_stat(st->env, &ms) != 0)
		return 0;
	return (size_t)(info.me_last_pgno + 1) * ms.ms_psize;
}

int lmdb_read_begin(struct store *st, struct store_txn *txn)
{
	struct lmdb_txn *t = lmdb_txn_of(txn);
	int rc;

	if (lmdb_queue_read_begin(lmdb_of(st), t))
		return 0;
	rc = lmdb_begin(lmdb_of(st), MDB_RDONLY, &t->txn);
	if (rc == 0)
		t->span = pages_span(lmdb_of(st));	/* after the begin: it covers the snapshot */
	return rc;
}

void lmdb_read_end(struct store_txn *txn)
{
	if (lmdb_txn_of(txn)->borrowed) {
		lmdb_queue_read_end(lmdb_of(txn->st));	/* the batch is the committer's to end */
		return;
	}
	mdb_txn_abort(lmdb_txn_of(txn)->txn);
	lmdb_gate_leave(lmdb_of(txn->st), false);
}

uint64_t lmdb_txn_id(const struct store_txn *txn)
{
	return mdb_txn_id(((const struct lmdb_txn *)txn)->txn);
}

/*
 * A read transaction of its own reads the snapshot of the last commit at
 * its begin, which its txn id names; one of the queued batch reads a
 * write transaction that more writes join under the same id.
 */
bool lmdb_txn_snapshot(const struct store_txn *txn, uint64_t *id)
{
	const struct lmdb_txn *t = (const struct lmdb_txn *)txn;

	if (t->borrowed)
		return false;
	*id = mdb_txn_id(t->txn);
	return true;
}

/*
 * Group commit. Writers of this process queue their operations; the first
 * one to find no batch running becomes the leader: it takes every queued
 * operation and runs them in one LMDB transaction, each in a nested
 * transaction of its own (so that a refusal undoes only its own changes),
 * and commits them together: one sync for all. Writers that arrive while
 * it commits queue up for the next batch. Each gets its own result.
 */

static void batch_fail(struct lmdb_req *batch, int rc, bool only_ok)
{
	for (struct lmdb_req *r = batch; r; r = r->next)
		if (!only_ok || r->rc == 0)
			r->rc = rc;
}

/* write_mutex held. Our commit txnid: anything between it and the last one seen is foreign. */
void lmdb_note_own_commit(struct lmdb_store *st, uint64_t txnid)
{
	if (txnid - 1 > st->seen_txnid)
		st->foreign = true;
	st->seen_txnid = txnid;
}

/* One request of a batch of several, in a nested transaction of t. 0, or <0: fail the batch. */
int lmdb_run_nested(struct lmdb_txn *t, struct lmdb_req *r, bool *map_full)
{
	struct lmdb_store *ls = lmdb_of(t->base.st);
	struct lmdb_txn c;
	int rc;

	store_txn_init_write(&c.base, t->base.st, t->base.feed);
	c.base.format = t->base.format;
	c.map_full = false;
	c.borrowed = false;
	c.written = t->written;
	c.span = 0;	/* a write: its values may be in its own new pages */
	c.dirty = false;
	rc = mdb_txn_begin(ls->env, t->txn, 0, &c.txn);
	if (rc)
		return lmdb_err(rc);
	r->rc = r->fn(&c.base, r->arg);
	if (c.map_full || r->rc) {
		mdb_txn_abort(c.txn);
		*map_full = c.map_full;
		return 0;
	}
	rc = mdb_txn_commit(c.txn);	/* into t */
	if (rc == MDB_MAP_FULL)
		*map_full = true;
	else if (rc)
		return lmdb_commit_err(ls, rc);
	t->base.format = c.base.format;
	t->dirty |= c.dirty;
	return 0;
}

/*
 * write_mutex held. One attempt at a batch: begin, run each request,
 * commit. *retry is set when the map was full (the transaction is then gone
 * and the caller grows the map). Sets every request's rc.
 */
static void batch_attempt(struct lmdb_store *st, struct lmdb_req *batch, bool *retry)
{
	struct feed_set feed;
	struct lmdb_txn t = { .map_full = false };
	bool map_full = false;
	unsigned ok = 0;
	uint64_t txnid;
	int rc;

	*retry = false;
	store_txn_init_write(&t.base, &st->base, &feed);	/* before the txn begins */
	feed_set_init(&feed);
	rc = lmdb_begin(st, 0, &t.txn);
	if (rc) {
		feed_set_release(&feed);
		batch_fail(batch, rc, false);
		return;
	}
	for (struct lmdb_req *r = batch; r && !map_full; r = r->next) {
		if (!batch->next) {	/* alone: in t itself, as without batching */
			r->rc = r->fn(&t.base, r->arg);
			map_full = t.map_full;
		} else {
			rc = lmdb_run_nested(&t, r, &map_full);
			if (rc) {
				batch_fail(batch, rc, false);
				goto out_abort_txn;
			}
		}
		ok += r->rc == 0;
	}
	if (!map_full && ok) {
		/* The change log entry, in the same transaction. Without memory
		 * for it the commit goes without: readers see a gap, and
		 * re-check everything. (A refused request's keys may be in it:
		 * readers then re-check a little more.) */
		rc = feed_txn_commit(&t.base, &feed, st->base.writer, st->base.feed_keep);
		map_full = t.map_full;
		if (rc < 0 && rc != -ENOMEM && !map_full) {
			batch_fail(batch, rc, true);
			goto out_abort_txn;
		}
	}
	if (map_full) {
		*retry = true;
		goto out_abort_txn;
	}
	if (!ok || !t.dirty)
		goto out_abort_txn;	/* nothing to commit: refusals, or writes that wrote nothing */
	feed_set_release(&feed);
	txnid = mdb_txn_id(t.txn);
	rc = mdb_txn_commit(t.txn);	/* frees the transaction even on failure */
	lmdb_gate_leave(st, false);
	*retry = rc == MDB_MAP_FULL;
	if (rc)
		batch_fail(batch, lmdb_commit_err(st, rc), true);
	else
		lmdb_note_own_commit(st, txnid);
	return;

out_abort_txn:
	feed_set_release(&feed);
	mdb_txn_abort(t.txn);
	lmdb_gate_leave(st, false);
}

void lmdb_batch_run(struct lmdb_store *st, struct lmdb_req *batch)
{
	bool retry;
	int rc;

	pthread_mutex_lock(&st->write_mutex);
	for (;;) {
		batch_attempt(st, batch, &retry);
		if (!retry)
			break;
		rc = lmdb_grow(st);
		if (rc) {
			batch_fail(batch, rc, false);
			break;
		}
	}
	pthread_mutex_unlock(&st->write_mutex);
}

static int write_req(struct lmdb_store *st, struct lmdb_req *req);

int lmdb_write(struct store *base, store_write_fn fn, void *arg)
{
	struct lmdb_req req = { .fn = fn, .arg = arg };

	return write_req(lmdb_of(base), &req);
}

int lmdb_write_later(struct store *base, store_write_fn fn, void *arg)
{
	struct lmdb_req req = { .fn = fn, .arg = arg, .later = true };

	return write_req(lmdb_of(base), &req);
}

/*
 * With a queue that holds a batch, a write goes to its committer (it
 * alone may hold LMDB's writer lock while a batch is open); else to the
 * group commit.
 */
static int write_req(struct lmdb_store *st, struct lmdb_req *req)
{
	struct lmdb_req *batch, *r, *next;

	if (st->queue && lmdb_queue_write(st, req) == 0)
		return req->rc;
	pthread_mutex_lock(&st->q_mutex);
	if (st->q_tail)
		st->q_tail->next = req;
	else
		st->q_head = req;
	st->q_tail = req;
	while (!req->done) {
		/* the queue's committer may take this request (lmdb_queue.c) */
		if (st->q_leader || lmdb_queue_owned_locked(st)) {
			pthread_cond_wait(&st->q_cond, &st->q_mutex);
			continue;
		}
		st->q_leader = true;
		batch = st->q_head;
		st->q_head = st->q_tail = NULL;
		pthread_mutex_unlock(&st->q_mutex);
		lmdb_batch_run(st, batch);
		pthread_mutex_lock(&st->q_mutex);
		for (r = batch; r; r = next) {
			next = r->next;
			r->done = true;	/* its writer may return (and free r) once we unlock */
		}
		st->q_leader = false;
		pthread_cond_broadcast(&st->q_cond);
	}
	pthread_mutex_unlock(&st->q_mutex);
	return req->rc;
}

bool lmdb_changed_elsewhere(struct store *base)
{
	struct lmdb_store *st = lmdb_of(base);
	MDB_envinfo info;
	bool changed;

	/* under write_mutex: no commit of ours is half accounted for */
	pthread_mutex_lock(&st->write_mutex);
	if (mdb_env_info(st->env, &info) == 0 && info.me_last_txnid > st->seen_txnid) {
		st->foreign = true;
		st->seen_txnid = info.me_last_txnid;
	}
	changed = st->foreign;
	st->foreign = false;
	pthread_mutex_unlock(&st->write_mutex);
	return changed;
}

/* Inside the gate: the meta pages move when the map is resized. */
uint64_t lmdb_position(struct store *base)
{
	struct lmdb_store *st = lmdb_of(base);
	MDB_envinfo info;

	lmdb_gate_enter(st, false);
	mdb_env_info(st->env, &info);
	lmdb_gate_leave(st, false);
	return info.me_last_txnid;
}

