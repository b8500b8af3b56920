/*
 * store/lmdb/lmdb_queue.c - queued commits of the LMDB backend (store_queue_start,
 * kvfs mount -o commit=MS): one batch transaction held open by a committer
 * thread, each write checked in a nested transaction of it.
 *
 * One committer thread owns one write transaction, the batch, and keeps it
 * open for at most `ms` after the first change in it. Each store_write has
 * its fn run in a nested transaction of the batch: on its own thread while
 * a batch is open and the committer idle (queue_apply_here), else handed
 * to the committer and waited for. Its verdict (a refusal undoes only its
 * own nested transaction) comes back at once, without a commit or a sync. The
 * batch is committed as one ordinary transaction (one sync in
 * STORE_OPEN_SYNC_ONCE, the store's integrity kept) when ms have passed,
 * at store_sync, when it grows past QUEUE_BATCH_MAX, and at store_close.
 * A process killed before that loses the batch whole, never a part of one
 * fn's changes. LMDB ties a write transaction's lock to the thread that
 * began it, so only the committer begins and ends it.
 *
 * STORE_QUEUE_LATER (the mount's default mode) queues only
 * store_write_later, and the committer owns the write path (q->owner) only
 * while it works or holds a batch open: then every other write is handed
 * to it too (it alone may take LMDB's writer lock) and committed before
 * its writer returns, together with the batch; otherwise a write takes the
 * group commit on its own thread, as without a queue.
 * While such a batch holds queued writes, the committer holds a write lock
 * on one byte of data.mdb (QUEUE_LOCK_BYTE, an open file description lock,
 * far past any page): another process opening the store waits for it
 * (lmdb_queue_barrier), so a CLI started after a write was acknowledged
 * reads it, as it would read a commit.
 *
 * While a batch is open, this process's read transactions read the batch
 * itself (queue_read_begin), one at a time under b_mutex, so that what a
 * write acknowledged is seen at once by this process; other processes
 * see it at the commit. Other processes' writers wait for the commit.
 *
 * Locks: b_mutex, then q_mutex or write_mutex, then the gate; b_mutex is
 * recursive because one thread may nest read transactions. The committer
 * is the only writer of the process, so it may take write_mutex (for the
 * accounting of its commit) while it holds LMDB's writer lock: no thread
 * of the process waits for that lock holding write_mutex.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/lmdb/lmdb_int.h"

#define QUEUE_BATCH_MAX 20000	/* writes in one batch before it is committed early */
#define QUEUE_LOCK_BYTE ((off_t)1 << 46)	/* beyond any map LMDB allows here */
/*
 * A store_open waits at most this for a batch: its 1 s, then its commit's
 * sync, which a disk busy with other writers can stretch past a second
 * (2 s was seen to expire there, and the open then read without an
 * acknowledged write). The bound only guards against a daemon stopped
 * while it holds a batch.
 */
#define QUEUE_BARRIER_MS 10000

struct lmdb_queue {
	unsigned ms;		/* fixed */
	bool later_only;	/* fixed: STORE_QUEUE_LATER */
	pthread_t thread;	/* fixed once started */
	pthread_cond_t cond;	/* the committer waits here (with st->q_mutex) */
	/* st->q_mutex: */
	struct lmdb_req *head, *tail;	/* writes handed to the committer */
	bool owner;		/* writers hand theirs to the committer (always with
				 * STORE_QUEUE_ALL; with LATER while it works or holds
				 * a batch open, else they take the group commit) */
	bool stop;
	bool working;		/* the committer left its wait: writers hand theirs over */
	bool end_wanted;	/* a write run on its own thread filled the batch */
	uint64_t flush_want, flush_done;	/* store_sync's tickets */
	int flush_rc;		/* the result of the commit that served flush_done */
	int lost_rc;		/* a timed commit failed: told to the next store_sync */
	/* b_mutex: the open batch (only the committer changes it) */
	pthread_mutex_t b_mutex;
	struct lmdb_txn batch;	/* batch.txn is NULL when no batch is open */
	int failed;		/* <0: a write on its own thread failed the batch itself */
	struct feed_set feed;
	unsigned count;		/* writes applied in the batch */
	uint64_t written;	/* bytes they put (store_txn.written) */
	struct timespec deadline;	/* CLOCK_MONOTONIC: commit by then */
	_Atomic bool open;	/* batch.txn != NULL; a hint read without b_mutex */
	bool locked;		/* committer: QUEUE_LOCK_BYTE held (later_only) */
	unsigned acked;		/* b_mutex: writes in the batch whose writers have returned */
	uint64_t epoch;		/* b_mutex: batches ended so far (lmdb_req.epoch) */
	struct lmdb_req *round;	/* committer: the requests queue_run is running */
	_Atomic uint64_t applied;	/* writes ever applied (store_version) */
};

/* F_WRLCK, F_RDLCK or F_UNLCK of QUEUE_LOCK_BYTE on this handle's data.mdb. */
static int queue_lock(struct lmdb_store *st, short type, bool wait)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = QUEUE_LOCK_BYTE,
			    .l_len = 1 };
	mdb_filehandle_t fd;

	if (mdb_env_get_fd(st->env, &fd))
		return -EBADF;
	return fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

static bool deadline_passed(const struct timespec *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > d->tv_sec || (now.tv_sec == d->tv_sec && now.tv_nsec >= d->tv_nsec);
}

void lmdb_queue_barrier(struct lmdb_store *st)
{
	const struct timespec pause = { 0, 2000000 };
	struct timespec give_up;

	/* by the clock, not by counting pauses: a loaded machine stretches each */
	clock_gettime(CLOCK_MONOTONIC, &give_up);
	give_up.tv_sec += QUEUE_BARRIER_MS / 1000;
	for (;;) {
		int rc = queue_lock(st, F_RDLCK, false);

		if (rc == 0) {
			queue_lock(st, F_UNLCK, false);
			return;
		}
		if (rc != -EAGAIN && rc != -EACCES)
			return;	/* no such locks here: nothing can be waited for */
		if (deadline_passed(&give_up))
			return;
		nanosleep(&pause, NULL);
	}
}

/* Committer. Other processes' opens need not wait any more. */
static void queue_unlock(struct lmdb_store *st)
{
	if (st->queue->locked) {
		queue_lock(st, F_UNLCK, false);
		st->queue->locked = false;
	}
}

bool lmdb_queue_read_begin(struct lmdb_store *st, struct lmdb_txn *t)
{
	struct lmdb_queue *q = st->queue;

	if (!q || !atomic_load(&q->open))
		return false;
	pthread_mutex_lock(&q->b_mutex);
	if (!q->batch.txn || q->failed) {	/* committed meanwhile (an ordinary snapshot sees it), or lost */
		pthread_mutex_unlock(&q->b_mutex);
		return false;
	}
	t->txn = q->batch.txn;
	t->base.format = q->batch.base.format;
	t->borrowed = true;
	return true;	/* b_mutex held until store_txn_end */
}

void lmdb_queue_read_end(struct lmdb_store *st)
{
	pthread_mutex_unlock(&st->queue->b_mutex);
}

/* Committer, b_mutex held. Opens a batch. */
static int queue_begin(struct lmdb_store *st)
{
	struct lmdb_queue *q = st->queue;
	int rc;

	memset(&q->batch, 0, sizeof(q->batch));
	store_txn_init_write(&q->batch.base, &st->base, &q->feed);	/* before it begins */
	q->batch.written = &q->written;
	feed_set_init(&q->feed);
	rc = lmdb_begin(st, 0, &q->batch.txn);
	if (rc) {
		feed_set_release(&q->feed);
		q->batch.txn = NULL;
		return rc;
	}
	q->count = 0;
	q->acked = 0;
	q->written = 0;
	/*
	 * Before any write in it is acknowledged, and only now that LMDB's
	 * writer lock is ours (so no other committer can hold the byte and
	 * wait for that lock): other processes' opens wait for the commit.
	 */
	if (q->later_only && !q->locked)
		q->locked = queue_lock(st, F_WRLCK, true) == 0;
	clock_gettime(CLOCK_MONOTONIC, &q->deadline);
	q->deadline.tv_sec += q->ms / 1000;
	q->deadline.tv_nsec += (long)(q->ms % 1000) * 1000000L;
	if (q->deadline.tv_nsec >= 1000000000L) {
		q->deadline.tv_nsec -= 1000000000L;
		q->deadline.tv_sec++;
	}
	atomic_store(&q->open, true);
	return 0;
}

/*
 * Committer, b_mutex held, no batch open. A batch that fills the map cannot
 * be run again (its writers have returned), and its commit needs pages of
 * its own: the map is grown while more than half of it is used, so that a
 * write that finds it full leaves room for committing the batch before it.
 */
static void queue_headroom(struct lmdb_store *st)
{
	MDB_envinfo info;
	MDB_stat ms;

	if (mdb_env_info(st->env, &info) || mdb_env_stat(st->env, &ms))
		return;
	if ((uint64_t)(info.me_last_pgno + 1) * ms.ms_psize <= info.me_mapsize / 2)
		return;
	/* on failure, the next write that needs the room finds the map full */
	pthread_mutex_lock(&st->write_mutex);
	(void)lmdb_grow(st);
	pthread_mutex_unlock(&st->write_mutex);
}

/* Whether r must be committed before its writer returns. */
static bool queue_urgent(const struct lmdb_queue *q, const struct lmdb_req *r)
{
	return q->later_only && !r->later;
}

/*
 * Committer, b_mutex held. A batch that did not commit: its urgent writes
 * of this round that were applied get its failure; writes whose writers
 * have returned are reported by the next store_sync.
 */
static void queue_lose(struct lmdb_store *st, int rc)
{
	struct lmdb_queue *q = st->queue;

	/* what readers saw of the batch is gone: the version moves on, so no cache keeps it */
	atomic_fetch_add(&q->applied, 1);

	for (struct lmdb_req *r = q->round; r; r = r->next)
		if (queue_urgent(q, r) && r->rc == 0 && r->epoch == q->epoch)
			r->rc = rc;
	if (q->acked) {
		pthread_mutex_lock(&st->q_mutex);
		q->lost_rc = rc;
		pthread_mutex_unlock(&st->q_mutex);
	}
}

/*
 * Committer, b_mutex held. Ends the batch: committed when anything is in
 * it, or with lost < 0 given up for that reason (queue_lose).
 */
static int queue_end(struct lmdb_store *st, int lost)
{
	struct lmdb_queue *q = st->queue;
	struct lmdb_txn c = { .map_full = false };
	uint64_t txnid;
	int rc = lost;

	if (!q->batch.txn) {
		queue_unlock(st);
		return 0;
	}
	if (lost < 0 || !q->count) {
		mdb_txn_abort(q->batch.txn);
		lmdb_gate_leave(st, false);
		goto out_release;
	}
	/*
	 * The change log entry in a nested transaction: when it does not fit,
	 * the batch commits without it (readers see a gap, and re-check all).
	 */
	store_txn_init_write(&c.base, &st->base, &q->feed);
	c.base.format = q->batch.base.format;
	if (mdb_txn_begin(st->env, q->batch.txn, 0, &c.txn) == 0) {
		if (feed_txn_commit(&c.base, &q->feed, st->base.writer, st->base.feed_keep) == 0 &&
		    !c.map_full) {
			if (mdb_txn_commit(c.txn) == 0)	/* frees it even on failure */
				q->batch.dirty |= c.dirty;
		} else {
			mdb_txn_abort(c.txn);
		}
	}
	txnid = mdb_txn_id(q->batch.txn);
	pthread_mutex_lock(&st->write_mutex);
	if (q->batch.dirty) {
		rc = mdb_txn_commit(q->batch.txn);
		if (rc == 0)
			lmdb_note_own_commit(st, txnid);
	} else {
		mdb_txn_abort(q->batch.txn);	/* wrote nothing: no txnid to claim */
		rc = 0;
	}
	pthread_mutex_unlock(&st->write_mutex);
	lmdb_gate_leave(st, false);
	rc = rc ? lmdb_commit_err(st, rc) : 0;
out_release:
	if (rc < 0)
		queue_lose(st, rc);
	feed_set_release(&q->feed);
	q->batch.txn = NULL;
	q->failed = 0;
	q->count = 0;
	q->epoch++;
	atomic_store(&q->open, false);
	queue_unlock(st);
	if (rc == 0)
		queue_headroom(st);
	return rc;
}

/* b_mutex held. Accounts for r, just run in the batch (its verdict r->rc). */
static void queue_count(struct lmdb_queue *q, struct lmdb_req *r)
{
	if (r->rc != 0)
		return;
	q->count++;
	r->epoch = q->epoch;
	if (!queue_urgent(q, r))
		q->acked++;
	atomic_fetch_add(&q->applied, 1);
}

/* b_mutex held. Big: to be committed while the room queue_headroom kept is surely enough. */
static bool queue_full(struct lmdb_store *st)
{
	struct lmdb_queue *q = st->queue;

	return q->count >= QUEUE_BATCH_MAX || q->written > lmdb_mapsize(st) / 8;
}

/*
 * Committer, b_mutex held. Runs one write in the batch. When the map is
 * full, the batch so far is committed (it is whole) and the write runs
 * again in a new one, after the map is grown; when the transaction holds
 * too many pages (-EFBIG), again in a new one, alone.
 */
static void queue_apply(struct lmdb_store *st, struct lmdb_req *r)
{
	struct lmdb_queue *q = st->queue;
	bool full;
	int rc;

	for (int attempt = 0;; attempt++) {
		if (!q->batch.txn && (rc = queue_begin(st)) < 0) {
			r->rc = rc;
			return;
		}
		full = false;
		rc = lmdb_run_nested(&q->batch, r, &full);
		if (rc < 0) {
			/* the batch itself failed: nothing in it can be trusted */
			r->rc = rc;
			queue_end(st, rc);
			return;
		}
		/* too many dirty pages for one transaction: maybe not alone */
		if (r->rc == -EFBIG && q->count > 0 && attempt == 0)
			full = true;
		if (!full)
			break;
		queue_end(st, 0);	/* whole so far: committed (its failure: queue_lose) */
		if (attempt > 0) {
			pthread_mutex_lock(&st->write_mutex);
			rc = lmdb_grow(st);
			pthread_mutex_unlock(&st->write_mutex);
			if (rc < 0 || attempt > 8) {
				r->rc = rc < 0 ? rc : -ENOSPC;
				return;
			}
		}
	}
	queue_count(q, r);
	if (queue_full(st))
		queue_end(st, 0);
}

/*
 * Committer, b_mutex held. Runs the requests taken from the queue; true
 * when one of them that changed something waits for the commit (a
 * refusal or a dry run needs none). Urgent requests alone with no batch
 * open take the group commit's way, committed at once.
 */
static bool queue_run(struct lmdb_store *st, struct lmdb_req *batch)
{
	struct lmdb_queue *q = st->queue;
	bool urgent = false, later = false;
	struct lmdb_req *r;

	for (r = batch; r; r = r->next) {
		if (queue_urgent(q, r))
			urgent = true;
		else
			later = true;
	}
	if (urgent && !later && !q->batch.txn) {
		lmdb_batch_run(st, batch);
		return false;	/* committed (or refused) already */
	}
	urgent = false;
	q->round = batch;
	for (r = batch; r; r = r->next) {
		queue_apply(st, r);
		if (queue_urgent(q, r) && r->rc == 0)
			urgent = true;
	}
	return urgent;
}

/*
 * Committer, q_mutex held. Takes the writes handed over; the first time
 * since it let go, takes the write path: waits for a group commit that
 * runs (LMDB's writer lock is the committer's alone while it works), and
 * takes the writers queued for the next one too (they wait for done).
 */
static struct lmdb_req *queue_take_locked(struct lmdb_store *st)
{
	struct lmdb_queue *q = st->queue;
	struct lmdb_req *batch = q->head;

	q->head = q->tail = NULL;
	if (!batch || q->owner)
		return batch;
	q->owner = true;
	while (st->q_leader)
		pthread_cond_wait(&st->q_cond, &st->q_mutex);
	if (st->q_head) {
		st->q_tail->next = batch;	/* they came first */
		batch = st->q_head;
		st->q_head = st->q_tail = NULL;
	}
	return batch;
}

static void *queue_main(void *arg)
{
	struct lmdb_store *st = arg;
	struct lmdb_queue *q = st->queue;
	struct lmdb_req *batch, *r, *next;
	uint64_t flush;
	bool stop, due, urgent, end;
	int rc;

	pthread_mutex_lock(&st->q_mutex);
	for (;;) {
		for (;;) {
			bool open = atomic_load(&q->open);

			if (q->stop || q->head || q->flush_want > q->flush_done || q->end_wanted)
				break;
			if (open && deadline_passed(&q->deadline))
				break;
			if (open)
				pthread_cond_timedwait(&q->cond, &st->q_mutex, &q->deadline);
			else
				pthread_cond_wait(&q->cond, &st->q_mutex);
		}
		q->working = true;	/* writers hand theirs over until this round is done */
		batch = queue_take_locked(st);
		flush = q->flush_want;
		stop = q->stop;
		end = q->end_wanted;
		q->end_wanted = false;
		pthread_mutex_unlock(&st->q_mutex);
		pthread_mutex_lock(&q->b_mutex);
		if (q->failed)
			(void)queue_end(st, q->failed);	/* its writers learn it (queue_lose) */
		urgent = queue_run(st, batch);
		due = q->batch.txn && deadline_passed(&q->deadline);
		rc = 0;
		if (urgent || stop || due || end || flush > q->flush_done)
			rc = queue_end(st, 0);
		q->round = NULL;
		pthread_mutex_unlock(&q->b_mutex);
		pthread_mutex_lock(&st->q_mutex);
		for (r = batch; r; r = next) {
			next = r->next;
			r->done = true;	/* its writer may return (and free r) once we unlock */
		}
		if (flush > q->flush_done) {
			q->flush_done = flush;
			q->flush_rc = rc;
		}
		/* nothing held open: writers take the group commit again */
		if (q->later_only && !atomic_load(&q->open) && !q->head)
			q->owner = false;
		q->working = false;
		pthread_cond_broadcast(&st->q_cond);
		if (stop && !q->head)
			break;
	}
	pthread_mutex_unlock(&st->q_mutex);
	return NULL;
}

/*
 * Writer. While a batch is open and the committer idle, runs r in it on
 * the writer's own thread, as queue_apply would (the batch's transaction
 * is used under b_mutex, as this process's readers use it), which spares
 * two thread switches per write: the hand-over and the wake-up. Only the
 * committer begins and ends a batch (LMDB's writer lock is its thread's):
 * a write that fills the batch, or finds it failed, asks it to end the
 * batch (end_wanted, failed), and one that would need a new batch (a full
 * map, too many pages) is handed over as before, as is every write while
 * the committer works, writes wait or a sync is wanted. true when r ran
 * here (r->rc its verdict); false, r not applied (fn may have run once,
 * in a nested transaction undone since), to be handed over.
 */
static bool queue_apply_here(struct lmdb_store *st, struct lmdb_req *r)
{
	struct lmdb_queue *q = st->queue;
	bool busy, full = false, done = false, end = false;
	int rc;

	if (queue_urgent(q, r) || !atomic_load(&q->open) || pthread_mutex_trylock(&q->b_mutex))
		return false;
	pthread_mutex_lock(&st->q_mutex);
	busy = q->head || q->working || q->stop || q->end_wanted || q->flush_want > q->flush_done;
	pthread_mutex_unlock(&st->q_mutex);
	if (busy || !q->batch.txn || q->failed || deadline_passed(&q->deadline) ||
	    q->count + 1 >= QUEUE_BATCH_MAX || q->written > lmdb_mapsize(st) / 16)
		goto out;
	rc = lmdb_run_nested(&q->batch, r, &full);
	if (rc < 0) {
		/* the batch itself failed: nothing in it can be trusted (queue_apply) */
		r->rc = rc;
		q->failed = rc;
		done = end = true;
	} else if (!full && r->rc != -EFBIG) {
		queue_count(q, r);
		done = true;
		end = queue_full(st);
	}
out:
	pthread_mutex_unlock(&q->b_mutex);
	if (end) {
		pthread_mutex_lock(&st->q_mutex);
		q->end_wanted = true;
		pthread_cond_signal(&q->cond);
		pthread_mutex_unlock(&st->q_mutex);
	}
	return done;
}

int lmdb_queue_write(struct lmdb_store *st, struct lmdb_req *req)
{
	struct lmdb_queue *q = st->queue;

	if (queue_apply_here(st, req))
		return 0;
	pthread_mutex_lock(&st->q_mutex);
	if (!q->owner && !req->later) {
		pthread_mutex_unlock(&st->q_mutex);
		return 1;	/* no batch held: the caller's own group commit */
	}
	if (q->tail)
		q->tail->next = req;
	else
		q->head = req;
	q->tail = req;
	pthread_cond_signal(&q->cond);
	while (!req->done)
		pthread_cond_wait(&st->q_cond, &st->q_mutex);
	pthread_mutex_unlock(&st->q_mutex);
	return 0;
}

bool lmdb_queue_owned_locked(struct lmdb_store *st)
{
	return st->queue && st->queue->owner;
}

int lmdb_queue_flush(struct lmdb_store *st)
{
	struct lmdb_queue *q = st->queue;
	uint64_t ticket;
	int rc;

	pthread_mutex_lock(&st->q_mutex);
	ticket = ++q->flush_want;
	pthread_cond_signal(&q->cond);
	while (q->flush_done < ticket)
		pthread_cond_wait(&st->q_cond, &st->q_mutex);
	rc = q->flush_rc ? q->flush_rc : q->lost_rc;
	q->lost_rc = 0;
	pthread_mutex_unlock(&st->q_mutex);
	return rc;
}

int lmdb_queue_start(struct store *base, unsigned ms, enum store_queue_mode mode)
{
	struct lmdb_store *st = lmdb_of(base);
	struct lmdb_queue *q;
	pthread_condattr_t attr;
	pthread_mutexattr_t ma;
	int rc;

	if (base->readonly || st->queue || !ms)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ms = ms;
	q->later_only = mode == STORE_QUEUE_LATER;
	q->owner = !q->later_only;
	q->epoch = 1;	/* a request not yet applied has epoch 0 */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&q->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (rc) {
		free(q);
		return -rc;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&q->b_mutex, &ma);
	pthread_mutexattr_destroy(&ma);
	st->queue = q;
	rc = pthread_create(&q->thread, NULL, queue_main, st);
	if (rc) {
		st->queue = NULL;
		pthread_mutex_destroy(&q->b_mutex);
		pthread_cond_destroy(&q->cond);
		free(q);
		return -rc;
	}
	return 0;
}

void lmdb_queue_stop(struct lmdb_store *st)
{
	struct lmdb_queue *q = st->queue;

	if (!q)
		return;
	pthread_mutex_lock(&st->q_mutex);
	q->stop = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&st->q_mutex);
	pthread_join(q->thread, NULL);
	st->queue = NULL;
	pthread_mutex_destroy(&q->b_mutex);
	pthread_cond_destroy(&q->cond);
	free(q);
}

uint64_t lmdb_version(struct store *base)
{
	struct lmdb_store *st = lmdb_of(base);
	uint64_t applied = st->queue ? atomic_load(&st->queue->applied) : 0;

	return lmdb_position(base) + applied;
}

