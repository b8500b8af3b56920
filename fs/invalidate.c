/*
 * fs/invalidate.c - telling the kernel what changed behind its caches: the
 * invalidation worker (notifications never run inside an operation), the
 * write section (shared by commits, exclusive for renames), and the watcher that
 * notices commits by other processes and reads the store's change feed to
 * re-check only the nodes they touched.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs/fs_int.h"

/* One notification waiting for the worker (ctx->inval_head; inval_lock). */
struct fs_inval {
	struct fs_inval *next;
	enum fs_inval_kind kind;
	fuse_ino_t ino;		/* the node, or the parent for FS_INVAL_ENTRY */
	char name[];		/* FS_INVAL_ENTRY */
};

/*
 * The node a view NAME.json in dir stands for: NAME in dir, or dir itself
 * for ".json"; NULL when the kernel knows no such node. Pinned (a ref).
 */
static struct fs_node *view_target(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	size_t len = strlen(name);
	struct fs_node *target = NULL;
	char *base;

	if (!model_name_is_view(name, len))
		return NULL;
	base = strndup(name, model_name_view_base(name, len));
	if (!base)
		return NULL;
	pthread_mutex_lock(&ctx->lock);
	if (model_name_view_base(name, len) == 0)
		target = dir;
	else if (dir->hashed)
		target = fs_node_child_locked(ctx, dir, base, false);
	if (target)
		fs_node_ref_locked(target);
	pthread_mutex_unlock(&ctx->lock);
	free(base);
	return target;
}

void fs_inval_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *target = view_target(ctx, dir, name);

	if (!target)
		return;
	fs_inval_subtree(ctx, target);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, target);
	pthread_mutex_unlock(&ctx->lock);
}

void fs_inval_after_change(struct fs_ctx *ctx, struct fs_node *node, bool view)
{
	struct fs_node *dir;
	char *name;

	if (node == &ctx->root)
		return;
	fs_inval_attr_now(ctx, fs_node_ino(ctx, node));	/* before close returns */
	if (!view)
		return;
	pthread_mutex_lock(&ctx->lock);
	dir = node->hashed ? node->parent : NULL;
	if (dir)
		fs_node_ref_locked(dir);
	name = dir ? strdup(node->name) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (name)
		fs_inval_name(ctx, dir, name);
	free(name);
	if (dir) {
		/* a new document is a new entry: the directory's mtime moved */
		fs_inval_node(ctx, fs_node_ino(ctx, dir), FS_INVAL_ATTR);
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, dir);
		pthread_mutex_unlock(&ctx->lock);
	}
}

/* ---- invalidation worker ---- */

/* Frees an item; a subtree or push item gives back the ref it held. */
static void inval_free(struct fs_ctx *ctx, struct fs_inval *iv)
{
	if (iv->kind == FS_INVAL_SUBTREE || iv->kind == FS_INVAL_STORE) {
		pthread_mutex_lock(&ctx->lock);
		if (iv->kind == FS_INVAL_STORE)	/* not pushed: the next miss may ask again */
			fs_node_from_ino(ctx, iv->ino)->push_state = FS_PUSH_LISTED;
		fs_node_unref_locked(ctx, fs_node_from_ino(ctx, iv->ino));
		pthread_mutex_unlock(&ctx->lock);
	}
	free(iv);
}

static void inval_push(struct fs_ctx *ctx, struct fs_inval *iv)
{
	pthread_mutex_lock(&ctx->inval_lock);
	if (!ctx->inval_started || ctx->inval_stop ||
	    (iv->kind == FS_INVAL_STORE && ctx->inval_npush >= FS_PUSH_QUEUE_MAX)) {
		pthread_mutex_unlock(&ctx->inval_lock);
		inval_free(ctx, iv);
		return;
	}
	if (iv->kind == FS_INVAL_STORE) {
		/* not counted in inval_queued: fs_inval_wait never waits for a push */
		ctx->inval_npush++;
		if (ctx->push_tail)
			ctx->push_tail->next = iv;
		else
			ctx->push_head = iv;
		ctx->push_tail = iv;
	} else {
		if (ctx->inval_tail)
			ctx->inval_tail->next = iv;
		else
			ctx->inval_head = iv;
		ctx->inval_tail = iv;
		ctx->inval_queued++;
	}
	pthread_cond_signal(&ctx->inval_cond);
	pthread_mutex_unlock(&ctx->inval_lock);
}

void fs_inval_entry(struct fs_ctx *ctx, fuse_ino_t parent, const char *name, size_t len)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + len + 1);

	if (!iv)
		return;		/* the entry expires by itself within entry_timeout */
	iv->kind = FS_INVAL_ENTRY;
	iv->ino = parent;
	memcpy(iv->name, name, len);
	inval_push(ctx, iv);
}

void fs_inval_node(struct fs_ctx *ctx, fuse_ino_t ino, enum fs_inval_kind kind)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + 1);

	if (!iv)
		return;
	iv->kind = kind;
	iv->ino = ino;
	inval_push(ctx, iv);
}

void fs_inval_subtree(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + 1);

	if (!iv)
		return;
	pthread_mutex_lock(&ctx->lock);
	fs_node_ref_locked(node);
	pthread_mutex_unlock(&ctx->lock);
	iv->kind = FS_INVAL_SUBTREE;
	iv->ino = fs_node_ino(ctx, node);
	inval_push(ctx, iv);
}

void fs_inval_push(struct fs_ctx *ctx, struct fs_node *dir)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + 1);

	if (!iv) {
		pthread_mutex_lock(&ctx->lock);
		dir->push_state = FS_PUSH_LISTED;
		fs_node_unref_locked(ctx, dir);
		pthread_mutex_unlock(&ctx->lock);
		return;
	}
	iv->kind = FS_INVAL_STORE;
	iv->ino = fs_node_ino(ctx, dir);
	inval_push(ctx, iv);
}

void fs_inval_attr_now(struct fs_ctx *ctx, fuse_ino_t ino)
{
	bool serving;
	int ret;

	pthread_mutex_lock(&ctx->inval_lock);
	serving = ctx->inval_started && !ctx->inval_stop;
	pthread_mutex_unlock(&ctx->inval_lock);
	if (!serving)
		return;		/* not serving (yet, or any more): nothing is cached */
	ret = fuse_lowlevel_notify_inval_inode(ctx->se, ino, -1, 0);
	if (ret < 0 && ret != -ENOENT)
		fs_trace(ctx, "invalidate %lu: %s", (unsigned long)ino, strerror(-ret));
}

bool fs_inval_waiting(struct fs_ctx *ctx)
{
	bool waiting;

	pthread_mutex_lock(&ctx->inval_lock);
	waiting = ctx->inval_head || ctx->inval_foreign || ctx->inval_stop;
	pthread_mutex_unlock(&ctx->inval_lock);
	return waiting;
}

void fs_inval_foreign(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->inval_lock);
	ctx->inval_foreign = true;
	pthread_cond_signal(&ctx->inval_cond);
	pthread_mutex_unlock(&ctx->inval_lock);
}

/* Sends one notification; the kernel answers ENOENT for what it no longer caches. */
static void inval_send(struct fs_ctx *ctx, const struct fs_inval *iv)
{
	int ret = 0;

	switch (iv->kind) {
	case FS_INVAL_ENTRY:
		ret = fuse_lowlevel_notify_inval_entry(ctx->se, iv->ino, iv->name, strlen(iv->name));
		break;
	case FS_INVAL_ATTR:
		ret = fuse_lowlevel_notify_inval_inode(ctx->se, iv->ino, -1, 0);
		break;
	case FS_INVAL_DATA:
		ret = fuse_lowlevel_notify_inval_inode(ctx->se, iv->ino, 0, 0);
		break;
	case FS_INVAL_SUBTREE:
		fs_node_revalidate_subtree(ctx, fs_node_from_ino(ctx, iv->ino));
		return;		/* the item's ref is given back there */
	case FS_INVAL_PATH:
	case FS_INVAL_PATH_TREE:
		fs_node_revalidate_path(ctx, iv->name, iv->kind == FS_INVAL_PATH_TREE);
		return;
	case FS_INVAL_STORE:
		fs_cache_push_dir(ctx, fs_node_from_ino(ctx, iv->ino));
		return;		/* the item's ref is given back there */
	}
	if (ret < 0 && ret != -ENOENT)
		fs_trace(ctx, "invalidate %lu %s: %s", (unsigned long)iv->ino, iv->name,
			 strerror(-ret));
}

static void *inval_main(void *arg)
{
	struct fs_ctx *ctx = arg;

	pthread_mutex_lock(&ctx->inval_lock);
	for (;;) {
		struct fs_inval *iv;
		bool push;

		while (!ctx->inval_head && !ctx->push_head && !ctx->inval_foreign &&
		       !ctx->inval_stop)
			pthread_cond_wait(&ctx->inval_cond, &ctx->inval_lock);
		if (ctx->inval_stop)
			break;
		if (ctx->inval_foreign) {
			ctx->inval_foreign = false;
			pthread_mutex_unlock(&ctx->inval_lock);
			fs_node_revalidate_all(ctx);
			pthread_mutex_lock(&ctx->inval_lock);
			continue;
		}
		push = !ctx->inval_head;
		if (!push) {
			iv = ctx->inval_head;
			ctx->inval_head = iv->next;
			if (!ctx->inval_head)
				ctx->inval_tail = NULL;
		} else {
			/* pushes only when no invalidation waits */
			iv = ctx->push_head;
			ctx->push_head = iv->next;
			if (!ctx->push_head)
				ctx->push_tail = NULL;
			ctx->inval_npush--;
		}
		pthread_mutex_unlock(&ctx->inval_lock);
		inval_send(ctx, iv);
		free(iv);
		pthread_mutex_lock(&ctx->inval_lock);
		if (!push) {
			ctx->inval_sent++;
			pthread_cond_broadcast(&ctx->inval_sent_cond);
		}
	}
	pthread_cond_broadcast(&ctx->inval_sent_cond);
	pthread_mutex_unlock(&ctx->inval_lock);
	return NULL;
}

/*
 * Bounded: were every daemon thread parked here while the worker waits for
 * a directory lock held by a process whose lookup needs a thread, the wait
 * would never end; after a second the names are left to follow a little late.
 */
void fs_inval_wait(struct fs_ctx *ctx)
{
	struct timespec deadline;
	uint64_t target;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 1;
	pthread_mutex_lock(&ctx->inval_lock);
	target = ctx->inval_queued;
	while (ctx->inval_started && !ctx->inval_stop && ctx->inval_sent < target)
		if (pthread_cond_timedwait(&ctx->inval_sent_cond, &ctx->inval_lock, &deadline) != 0)
			break;
	pthread_mutex_unlock(&ctx->inval_lock);
}

int fs_inval_start(struct fs_ctx *ctx)
{
	int ret;

	pthread_mutex_lock(&ctx->inval_lock);
	ret = pthread_create(&ctx->inval_thread, NULL, inval_main, ctx);
	ctx->inval_started = ret == 0;
	pthread_mutex_unlock(&ctx->inval_lock);
	return -ret;
}

void fs_inval_stop(struct fs_ctx *ctx)
{
	struct fs_inval *iv, *next;

	pthread_mutex_lock(&ctx->inval_lock);
	if (!ctx->inval_started) {
		pthread_mutex_unlock(&ctx->inval_lock);
		return;
	}
	ctx->inval_stop = true;
	pthread_cond_signal(&ctx->inval_cond);
	pthread_mutex_unlock(&ctx->inval_lock);
	pthread_join(ctx->inval_thread, NULL);
	for (iv = ctx->inval_head; iv; iv = next) {
		next = iv->next;
		inval_free(ctx, iv);
	}
	for (iv = ctx->push_head; iv; iv = next) {
		next = iv->next;
		inval_free(ctx, iv);
	}
	ctx->inval_head = ctx->inval_tail = NULL;
	ctx->push_head = ctx->push_tail = NULL;
	ctx->inval_npush = 0;
	ctx->inval_started = false;
}

/* ---- noticing other processes' commits ---- */

/* A section that may make or remove directories opens: see fs_shape_carry. */
static void shape_enter(struct fs_ctx *ctx)
{
	atomic_fetch_add(&ctx->shape_writers, 1);
	atomic_fetch_add(&ctx->shape_seq, 1);
}

void fs_write_begin(struct fs_ctx *ctx)
{
	pthread_rwlock_rdlock(&ctx->gen_lock);
	shape_enter(ctx);
}

void fs_write_begin_excl(struct fs_ctx *ctx)
{
	pthread_rwlock_wrlock(&ctx->gen_lock);
	shape_enter(ctx);
}

void fs_write_end(struct fs_ctx *ctx, int ret)
{
	(void)ret;
	atomic_fetch_sub(&ctx->shape_writers, 1);
	pthread_rwlock_unlock(&ctx->gen_lock);
}

void fs_write_end_leaf(struct fs_ctx *ctx)
{
	pthread_rwlock_unlock(&ctx->gen_lock);
}

enum section { SECTION_SHARED, SECTION_EXCL, SECTION_LEAF };

static int write_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out,
		      enum section kind)
{
	int ret;

	if (kind == SECTION_EXCL)
		fs_write_begin_excl(ctx);
	else if (kind == SECTION_SHARED)
		fs_write_begin(ctx);
	else
		pthread_rwlock_rdlock(&ctx->gen_lock);
	ret = fs_node_path(ctx, node, name, out);
	if (ret < 0 && kind == SECTION_LEAF)
		fs_write_end_leaf(ctx);
	else if (ret < 0)
		fs_write_end(ctx, ret);
	return ret;
}

int fs_write_path(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out)
{
	return write_path(ctx, node, name, out, SECTION_SHARED);
}

int fs_write_path_excl(struct fs_ctx *ctx, struct fs_node *node, const char *name, char **out)
{
	return write_path(ctx, node, name, out, SECTION_EXCL);
}

int fs_write_path_leaf(struct fs_ctx *ctx, struct fs_node *node, char **out)
{
	return write_path(ctx, node, NULL, out, SECTION_LEAF);
}

/* Whether a TTL reap runs now or began since the mark. */
static bool reaped_since(struct fs_ctx *ctx, const struct fs_shape_mark *mark)
{
	uint64_t reaps;
	bool reaping;

	model_reaps(ctx->model, &reaps, &reaping);
	return reaping || reaps != mark->reaps;
}

/* Whether a section that may change shapes, or a TTL reap, ran since (or at) the mark. */
static bool shape_moved(struct fs_ctx *ctx, const struct fs_shape_mark *mark)
{
	return reaped_since(ctx, mark) || atomic_load(&ctx->shape_writers) != 0 ||
	       atomic_load(&ctx->shape_seq) != mark->seq;
}

void fs_shape_mark(struct fs_ctx *ctx, struct fs_shape_mark *mark)
{
	bool reaping;

	mark->seq = atomic_load(&ctx->shape_seq);
	model_reaps(ctx->model, &mark->reaps, &reaping);
	mark->quiet = !reaping && atomic_load(&ctx->shape_writers) == 0;
	mark->version = model_version(ctx->model);
}

/*
 * After a leaf's content commit that succeeded: when no section that may
 * change shapes, nor a TTL reap (which commits outside any section, and in
 * a group commit may share ours), was running at the mark or began since,
 * and the store moved by exactly one commit (ours, perhaps shared with
 * other leaves' commits, which change no directory either; another
 * process's commit would add one), the parent's child directories are the
 * ones it had at the mark, and an nlink counted then holds now too.
 */
void fs_shape_carry(struct fs_ctx *ctx, struct fs_node *node, const struct fs_shape_mark *mark)
{
	uint64_t now = model_version(ctx->model);
	struct fs_node *parent;

	if (!mark->quiet || shape_moved(ctx, mark) || now != mark->version + 1)
		return;
	pthread_mutex_lock(&ctx->lock);
	parent = node->parent;
	if (parent && parent->nlink_gen == mark->version + 1)
		parent->nlink_gen = now + 1;
	pthread_mutex_unlock(&ctx->lock);
}

void fs_shape_mark_dirs(struct fs_ctx *ctx, struct fs_shape_mark *mark, struct fs_node *from,
			struct fs_node *to)
{
	bool reaping;

	/* the caller's exclusive section keeps every other section out: no seq to note */
	model_reaps(ctx->model, &mark->reaps, &reaping);
	mark->quiet = !reaping;
	mark->version = model_version(ctx->model);
	mark->dir[0] = from;
	mark->dir[1] = to == from ? NULL : to;
	pthread_mutex_lock(&ctx->lock);
	for (int i = 0; i < 2; i++) {
		const struct fs_node *d = mark->dir[i];

		mark->counted[i] = d && d->nlink_gen == mark->version + 1;
		mark->nlink[i] = mark->counted[i] ? d->nlink : 0;
	}
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * The store moved by exactly the caller's commit: each directory's child
 * containers are the ones counted at the mark, changed by what the commit
 * did. A count that is not the one noted at the mark (a getattr that raced
 * the commit wrote its own) is left alone: it may be of the new state.
 */
void fs_shape_adjust(struct fs_ctx *ctx, const struct fs_shape_mark *mark, int from_dirs,
		     int to_dirs)
{
	uint64_t now = model_version(ctx->model);
	int delta[2] = { from_dirs, to_dirs };

	if (!mark->quiet || reaped_since(ctx, mark) || now != mark->version + 1)
		return;
	if (!mark->dir[1])
		delta[0] += to_dirs;	/* within one directory */
	pthread_mutex_lock(&ctx->lock);
	for (int i = 0; i < 2; i++) {
		struct fs_node *d = mark->dir[i];

		if (!d || !mark->counted[i] || d->nlink_gen != mark->version + 1 ||
		    d->nlink != mark->nlink[i])
			continue;
		/* exact at the mark, and the commit removed a container that was there */
		assert((int64_t)d->nlink + delta[i] >= 2);
		d->nlink = (uint32_t)((int64_t)d->nlink + delta[i]);
		d->nlink_gen = now + 1;
	}
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * true once per change of the store by another process (the store accounts
 * for our commits as it makes them); *gen: the generation now.
 */
static bool store_changed_elsewhere(struct fs_ctx *ctx, uint64_t *gen)
{
	*gen = model_generation(ctx->model);
	return model_changed_elsewhere(ctx->model);
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
 * operation: ctx->reap_lo..reap_hi), treated as another's. -ESTALE asks
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
	struct feed_batch b = { NULL, NULL, 0, ctx->reap_lo, ctx->reap_hi };
	uint64_t gen, upto = ctx->feed_pos;
	int ret;

	if (store_changed_elsewhere(ctx, &gen) && gen > ctx->feed_want)
		ctx->feed_want = gen;
	if (ctx->feed_pos >= ctx->feed_want) {
		if (gen > ctx->feed_pos)
			ctx->feed_pos = gen;
		return;
	}
	ret = model_changes_read(ctx->model, ctx->feed_pos, feed_one, &b, &upto);
	ctx->feed_pos = upto > ctx->feed_pos ? upto : ctx->feed_pos;
	if (ret < 0) {
		batch_free(&b);
		fs_trace(ctx, "the store changed elsewhere (%s): re-checking every node",
			 ret == -ESTALE ? "the change log cannot tell what" : strerror(-ret));
		if (ret != -ESTALE || ctx->feed_pos < ctx->feed_want)
			ctx->feed_pos = ctx->feed_want;	/* the re-check covers it */
		fs_inval_foreign(ctx);
		return;
	}
	fs_trace(ctx, "the store changed elsewhere: re-checking %u paths", b.n);
	while (b.head) {
		struct fs_inval *iv = b.head;

		b.head = iv->next;
		iv->next = NULL;
		inval_push(ctx, iv);
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

static void *watch_main(void *arg)
{
	struct fs_ctx *ctx = arg;
	struct timespec until;
	unsigned ticks = 0;

	pthread_mutex_lock(&ctx->watch_lock);
	long tick_ms = FS_WATCH_MS;

	while (!ctx->watch_stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += tick_ms * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_nsec -= 1000000000L;
			until.tv_sec++;
		}
		while (!ctx->watch_stop &&
		       pthread_cond_timedwait(&ctx->watch_cond, &ctx->watch_lock, &until) != ETIMEDOUT)
			;
		if (ctx->watch_stop)
			break;
		pthread_mutex_unlock(&ctx->watch_lock);
		if (++ticks % FS_READERS_CHECK_TICKS == 0)
			readers_check(ctx);
		fs_ttl_reap(ctx);
		if (!ctx->read_only)
			fs_held_commit(ctx, false);	/* leaves made by mknod and never opened */
		fs_table_settle(ctx, FS_SETTLE_IDLE);	/* schemas waiting for their rows */
		feed_poll(ctx);
		pthread_mutex_lock(&ctx->watch_lock);
	}
	pthread_mutex_unlock(&ctx->watch_lock);
	return NULL;
}

int fs_watch_start(struct fs_ctx *ctx)
{
	int ret;

	model_changed_elsewhere(ctx->model);	/* what came before the mount is no news */
	ctx->feed_pos = ctx->feed_want = model_generation(ctx->model);
	pthread_mutex_lock(&ctx->watch_lock);
	ret = pthread_create(&ctx->watch_thread, NULL, watch_main, ctx);
	ctx->watch_started = ret == 0;
	pthread_mutex_unlock(&ctx->watch_lock);
	return -ret;
}

void fs_watch_stop(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->watch_lock);
	if (!ctx->watch_started) {
		pthread_mutex_unlock(&ctx->watch_lock);
		return;
	}
	ctx->watch_stop = true;
	pthread_cond_signal(&ctx->watch_cond);
	pthread_mutex_unlock(&ctx->watch_lock);
	pthread_join(ctx->watch_thread, NULL);
	ctx->watch_started = false;
}
