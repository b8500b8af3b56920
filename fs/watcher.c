/*
 * fs/watcher.c - two threads ticking: the watcher notices commits by other
 * processes and has the worker re-check only what the change feed says they
 * touched; the chores thread runs the TTL reaper, commits held leaves,
 * tries held removals, retries waiting schemas.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs_int.h"

/* ---- noticing other processes' commits ---- */

/*
 * true once per change of the store by another process (the store accounts
 * for our commits as it makes them); *gen: the generation now.
 */
static bool store_changed_elsewhere(struct fs_ctx *ctx, uint64_t *gen)
{
	bool changed;

	*gen = model_generation(ctx->model);
	changed = model_changed_elsewhere(ctx->model);
	/*
	 * Changed: what it looked at may be past the generation read before
	 * (another's commit came between), and is not looked at again: the
	 * feed is read up to the generation as it is now, which covers it.
	 * Unchanged: everything up to the earlier generation was ours.
	 */
	if (changed)
		*gen = model_generation(ctx->model);
	return changed;
}

/* ---- the change feed: what other commits touched ---- */

/* The paths one read of the feed gathered, queued for the worker at the end. */
struct feed_batch {
	struct fs_inval *head, *tail;
	unsigned n;
	uint64_t reap_lo, reap_hi;	/* a copy of ctx's */
};

/*
 * One node a commit touched. Our own commits were invalidated by the
 * operation that made them, except the reaper's (made outside any
 * operation: ctx->watch.reap_lo..reap_hi), treated as another's. -ESTALE asks
 * for the whole re-check: everything changed, or too much to list.
 */
static int feed_one(void *arg, const struct model_change *c)
{
	struct feed_batch *b = arg;
	size_t len = strlen(c->path);
	struct fs_inval *iv;

	if (c->mine && !(c->generation >= b->reap_lo && c->generation <= b->reap_hi))
		return 0;
	if ((c->flags & MODEL_CHANGE_SUBTREE) && strcmp(c->path, "/") == 0)
		return -ESTALE;
	if (++b->n > FS_FEED_PATHS_MAX)
		return -ESTALE;
	iv = calloc(1, sizeof(*iv) + len + 1);
	if (!iv)
		return -ENOMEM;
	iv->kind = (c->flags & MODEL_CHANGE_SUBTREE) ? FS_INVAL_PATH_TREE : FS_INVAL_PATH;
	memcpy(iv->name, c->path, len);
	if (b->tail)
		b->tail->next = iv;
	else
		b->head = iv;
	b->tail = iv;
	return 0;
}

static void batch_free(struct feed_batch *b)
{
	struct fs_inval *iv, *next;

	for (iv = b->head; iv; iv = next) {
		next = iv->next;
		free(iv);
	}
	b->head = b->tail = NULL;
}

/* The feed was read up to pos, its invalidations queued (the watcher thread). */
static void feed_publish(struct fs_ctx *ctx, uint64_t pos)
{
	pthread_mutex_lock(&ctx->watch.lock);
	if (pos > ctx->watch.feed_pos)
		ctx->watch.feed_pos = pos;
	pthread_mutex_unlock(&ctx->watch.lock);
}

/*
 * Runs on the watcher thread, once per poll. When no other process
 * committed, the generation moved by our own commits only: nothing to
 * read. Otherwise the feed names what the other commits touched; when it
 * cannot (its log trimmed past our position, a commit without an entry,
 * a store without a log), every known node is re-checked as before.
 */
static void feed_poll(struct fs_ctx *ctx)
{
	struct fs_watcher *w = &ctx->watch;
	struct feed_batch b = { NULL, NULL, 0, 0, 0 };
	uint64_t gen, pos, want, upto;
	bool changed = store_changed_elsewhere(ctx, &gen);
	int ret;

	pthread_mutex_lock(&w->lock);
	if (changed && gen > w->feed_want)
		w->feed_want = gen;
	/* a reap under way: its commits may be in, and are read as another's */
	if (w->reap_hi == FS_REAP_OPEN && gen > w->feed_want)
		w->feed_want = gen;
	if (w->feed_pos >= w->feed_want && gen > w->feed_pos)
		w->feed_pos = gen;
	b.reap_lo = w->reap_lo;
	b.reap_hi = w->reap_hi;
	pos = upto = w->feed_pos;
	want = w->feed_want;
	pthread_mutex_unlock(&w->lock);
	if (pos >= want)
		return;
	ret = model_changes_read(ctx->model, pos, feed_one, &b, &upto);
	if (upto > pos)
		pos = upto;
	if (ret < 0) {
		batch_free(&b);
		fs_trace(ctx, "the store changed elsewhere (%s): re-checking every node",
			 ret == -ESTALE ? "the change log cannot tell what" : strerror(-ret));
		if (ret != -ESTALE || pos < want)
			pos = want;	/* the re-check covers it */
		fs_inval_foreign(ctx);
		feed_publish(ctx, pos);
		return;
	}
	fs_trace(ctx, "the store changed elsewhere: re-checking %u paths", b.n);
	while (b.head) {
		struct fs_inval *iv = b.head;

		b.head = iv->next;
		iv->next = NULL;
		fs_inval_queue(ctx, iv);
	}
	feed_publish(ctx, pos);
}

/*
 * A reader killed mid-transaction (kvfs dump | head) leaves its slot behind:
 * LMDB then keeps every page freed after its snapshot, so the file grows on
 * each write until the slots run out. Clearing such slots is cheap (a
 * kill(pid, 0) per slot), so the watcher does it every few seconds.
 */
static void readers_check(struct fs_ctx *ctx)
{
	unsigned cleared = 0;

	if (model_readers_check(ctx->model, &cleared) < 0)
		fs_log(ctx, LOG_WARNING, "cannot check the store's reader table");
	else if (cleared)
		fs_log(ctx, LOG_INFO, "cleared %u reader slots of dead processes", cleared);
}

/*
 * Waits out one tick from now; false once the threads are to stop. Called
 * and returning with ctx->watch.lock held.
 */
static bool tick_wait(struct fs_ctx *ctx)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += FS_WATCH_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_nsec -= 1000000000L;
		until.tv_sec++;
	}
	while (!ctx->watch.stop &&
	       pthread_cond_timedwait(&ctx->watch.cond, &ctx->watch.lock, &until) != ETIMEDOUT)
		;
	return !ctx->watch.stop;
}

/*
 * The watcher: the feed read and the position published, each tick, and
 * nothing else. The chores wait on the store's servers (the TTL reaper's
 * read, up to its limit and more once they stop answering): on this
 * thread they held the position back after a heal, 6.8 s once when the
 * reaper took 25 s in a cut, while the watch had what it waited for.
 */
static void *watch_main(void *arg)
{
	struct fs_ctx *ctx = arg;

	pthread_mutex_lock(&ctx->watch.lock);
	while (tick_wait(ctx)) {
		uint64_t pos;

		pthread_mutex_unlock(&ctx->watch.lock);
		feed_poll(ctx);
		pthread_mutex_lock(&ctx->watch.lock);
		pos = ctx->watch.feed_pos;
		atomic_store(&ctx->watch.position, pos);
	}
	pthread_mutex_unlock(&ctx->watch.lock);
	return NULL;
}

/* The chores, each tick; each may wait on the store. */
static void *chores_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	unsigned ticks = 0;

	pthread_mutex_lock(&ctx->watch.lock);
	while (tick_wait(ctx)) {
		pthread_mutex_unlock(&ctx->watch.lock);
		if (++ticks % FS_READERS_CHECK_TICKS == 0)
			readers_check(ctx);
		fs_ttl_reap(ctx);
		if (!ctx->read_only)
			fs_held_commit(ctx, false);	/* leaves made by mknod and never opened */
		fs_rmhold_settle(ctx, false);	/* removals in rows no rmdir took */
		fs_table_settle(ctx, FS_SETTLE_IDLE);	/* schemas waiting for their rows */
		pthread_mutex_lock(&ctx->watch.lock);
	}
	pthread_mutex_unlock(&ctx->watch.lock);
	return NULL;
}

/*
 * The reaper's commits are ours, and the feed must read them as another's
 * (they were made outside any operation, nothing invalidated them): from
 * before on, every commit of ours is read so until fs_watch_reap_end.
 * Returns what to hand back to it. The chores thread.
 */
uint64_t fs_watch_reap_begin(struct fs_ctx *ctx, uint64_t before)
{
	struct fs_watcher *w = &ctx->watch;
	uint64_t hi;

	pthread_mutex_lock(&w->lock);
	hi = w->reap_hi;
	if (w->reap_hi <= w->feed_pos)
		w->reap_lo = before + 1;	/* the last reap's range read: a new one */
	w->reap_hi = FS_REAP_OPEN;
	pthread_mutex_unlock(&w->lock);
	return hi;
}

/* The reap ended at generation after (0: it committed nothing); hi from fs_watch_reap_begin. */
void fs_watch_reap_end(struct fs_ctx *ctx, uint64_t after, uint64_t hi)
{
	struct fs_watcher *w = &ctx->watch;

	pthread_mutex_lock(&w->lock);
	w->reap_hi = after > hi ? after : hi;
	if (after > w->feed_want)
		w->feed_want = after;
	pthread_mutex_unlock(&w->lock);
}

int fs_watch_start(struct fs_ctx *ctx)
{
	int ret;

	model_changed_elsewhere(ctx->model);	/* what came before the mount is no news */
	ctx->watch.feed_pos = ctx->watch.feed_want = model_generation(ctx->model);
	atomic_store(&ctx->watch.position, ctx->watch.feed_pos);
	pthread_mutex_lock(&ctx->watch.lock);
	ret = pthread_create(&ctx->watch.thread, NULL, watch_main, ctx);
	if (ret == 0) {
		ret = pthread_create(&ctx->watch.chores, NULL, chores_main, ctx);
		if (ret != 0) {
			ctx->watch.stop = true;
			pthread_cond_broadcast(&ctx->watch.cond);
			pthread_mutex_unlock(&ctx->watch.lock);
			pthread_join(ctx->watch.thread, NULL);
			pthread_mutex_lock(&ctx->watch.lock);
			ctx->watch.stop = false;
		}
	}
	ctx->watch.started = ret == 0;
	pthread_mutex_unlock(&ctx->watch.lock);
	return -ret;
}

void fs_watch_stop(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->watch.lock);
	if (!ctx->watch.started) {
		pthread_mutex_unlock(&ctx->watch.lock);
		return;
	}
	ctx->watch.stop = true;
	pthread_cond_broadcast(&ctx->watch.cond);
	pthread_mutex_unlock(&ctx->watch.lock);
	pthread_join(ctx->watch.thread, NULL);
	pthread_join(ctx->watch.chores, NULL);
	ctx->watch.started = false;
}
