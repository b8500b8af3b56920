/*
 * fs/watcher.c - the watcher thread, each tick: notices commits by other
 * processes and has the worker re-check only what the change feed says they
 * touched; runs the TTL reaper, commits held leaves, tries held removals,
 * retries waiting schemas.
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

/*
 * Runs on the watcher thread, once per poll. When no other process
 * committed, the generation moved by our own commits only: nothing to
 * read. Otherwise the feed names what the other commits touched; when it
 * cannot (its log trimmed past our position, a commit without an entry,
 * a store without a log), every known node is re-checked as before.
 */
static void feed_poll(struct fs_ctx *ctx)
{
	struct feed_batch b = { NULL, NULL, 0, ctx->watch.reap_lo, ctx->watch.reap_hi };
	uint64_t gen, upto = ctx->watch.feed_pos;
	int ret;

	if (store_changed_elsewhere(ctx, &gen) && gen > ctx->watch.feed_want)
		ctx->watch.feed_want = gen;
	if (ctx->watch.feed_pos >= ctx->watch.feed_want) {
		if (gen > ctx->watch.feed_pos)
			ctx->watch.feed_pos = gen;
		return;
	}
	ret = model_changes_read(ctx->model, ctx->watch.feed_pos, feed_one, &b, &upto);
	ctx->watch.feed_pos = upto > ctx->watch.feed_pos ? upto : ctx->watch.feed_pos;
	if (ret < 0) {
		batch_free(&b);
		fs_trace(ctx, "the store changed elsewhere (%s): re-checking every node",
			 ret == -ESTALE ? "the change log cannot tell what" : strerror(-ret));
		if (ret != -ESTALE || ctx->watch.feed_pos < ctx->watch.feed_want)
			ctx->watch.feed_pos = ctx->watch.feed_want;	/* the re-check covers it */
		fs_inval_foreign(ctx);
		return;
	}
	fs_trace(ctx, "the store changed elsewhere: re-checking %u paths", b.n);
	while (b.head) {
		struct fs_inval *iv = b.head;

		b.head = iv->next;
		iv->next = NULL;
		fs_inval_queue(ctx, iv);
	}
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
 * The feed read and the position published: at both ends of a tick, as the
 * work between can wait on the store's servers (the TTL reaper's read, say,
 * up to its limit once they stop answering) and the watch meanwhile
 * brings in what the position waits for: traced after a heal, the reaper
 * held a backlog the watch had applied 0.8 s out of the position.
 */
static void feed_step(struct fs_ctx *ctx)
{
	feed_poll(ctx);
	atomic_store(&ctx->watch.position, ctx->watch.feed_pos);
}

static void *watch_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	struct timespec until;
	unsigned ticks = 0;

	pthread_mutex_lock(&ctx->watch.lock);
	long tick_ms = FS_WATCH_MS;

	while (!ctx->watch.stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += tick_ms * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_nsec -= 1000000000L;
			until.tv_sec++;
		}
		while (!ctx->watch.stop &&
		       pthread_cond_timedwait(&ctx->watch.cond, &ctx->watch.lock,
					      &until) != ETIMEDOUT)
			;
		if (ctx->watch.stop)
			break;
		pthread_mutex_unlock(&ctx->watch.lock);
		feed_step(ctx);
		if (++ticks % FS_READERS_CHECK_TICKS == 0)
			readers_check(ctx);
		fs_ttl_reap(ctx);
		if (!ctx->read_only)
			fs_held_commit(ctx, false);	/* leaves made by mknod and never opened */
		fs_rmhold_settle(ctx, false);	/* removals in rows no rmdir took */
		fs_table_settle(ctx, FS_SETTLE_IDLE);	/* schemas waiting for their rows */
		feed_step(ctx);
		pthread_mutex_lock(&ctx->watch.lock);
	}
	pthread_mutex_unlock(&ctx->watch.lock);
	return NULL;
}

int fs_watch_start(struct fs_ctx *ctx)
{
	int ret;

	model_changed_elsewhere(ctx->model);	/* what came before the mount is no news */
	ctx->watch.feed_pos = ctx->watch.feed_want = model_generation(ctx->model);
	atomic_store(&ctx->watch.position, ctx->watch.feed_pos);
	pthread_mutex_lock(&ctx->watch.lock);
	ret = pthread_create(&ctx->watch.thread, NULL, watch_main, ctx);
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
	pthread_cond_signal(&ctx->watch.cond);
	pthread_mutex_unlock(&ctx->watch.lock);
	pthread_join(ctx->watch.thread, NULL);
	ctx->watch.started = false;
}
