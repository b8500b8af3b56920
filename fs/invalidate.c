/*
 * fs/invalidate.c - the invalidation worker: telling the kernel what changed
 * behind its caches from a thread of its own (notifications never run inside
 * an operation), and what a commit through the mount has it revalidate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs_int.h"

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

	if (node == &ctx->inodes.root)
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

void fs_inval_queue(struct fs_ctx *ctx, struct fs_inval *iv)
{
	pthread_mutex_lock(&ctx->inval.lock);
	if (!ctx->inval.started || ctx->inval.stop ||
	    (iv->kind == FS_INVAL_STORE && ctx->inval.npush >= FS_PUSH_QUEUE_MAX)) {
		pthread_mutex_unlock(&ctx->inval.lock);
		inval_free(ctx, iv);
		return;
	}
	if (iv->kind == FS_INVAL_STORE) {
		/* not counted in inval.queued: fs_inval_wait never waits for a push */
		ctx->inval.npush++;
		if (ctx->inval.push_tail)
			ctx->inval.push_tail->next = iv;
		else
			ctx->inval.push_head = iv;
		ctx->inval.push_tail = iv;
	} else {
		if (ctx->inval.tail)
			ctx->inval.tail->next = iv;
		else
			ctx->inval.head = iv;
		ctx->inval.tail = iv;
		ctx->inval.queued++;
	}
	pthread_cond_signal(&ctx->inval.cond);
	pthread_mutex_unlock(&ctx->inval.lock);
}

void fs_inval_entry(struct fs_ctx *ctx, fuse_ino_t parent, const char *name, size_t len)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + len + 1);

	if (!iv)
		return;		/* the entry expires by itself within entry_timeout */
	iv->kind = FS_INVAL_ENTRY;
	iv->ino = parent;
	memcpy(iv->name, name, len);
	fs_inval_queue(ctx, iv);
}

void fs_inval_node(struct fs_ctx *ctx, fuse_ino_t ino, enum fs_inval_kind kind)
{
	struct fs_inval *iv = calloc(1, sizeof(*iv) + 1);

	if (!iv)
		return;
	iv->kind = kind;
	iv->ino = ino;
	fs_inval_queue(ctx, iv);
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
	fs_inval_queue(ctx, iv);
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
	fs_inval_queue(ctx, iv);
}

void fs_inval_attr_now(struct fs_ctx *ctx, fuse_ino_t ino)
{
	bool serving;
	int ret;

	pthread_mutex_lock(&ctx->inval.lock);
	serving = ctx->inval.started && !ctx->inval.stop;
	pthread_mutex_unlock(&ctx->inval.lock);
	if (!serving)
		return;		/* not serving (yet, or any more): nothing is cached */
	ret = fuse_lowlevel_notify_inval_inode(ctx->se, ino, -1, 0);
	if (ret < 0 && ret != -ENOENT)
		fs_trace(ctx, "invalidate %lu: %s", (unsigned long)ino, strerror(-ret));
}

bool fs_inval_waiting(struct fs_ctx *ctx)
{
	bool waiting;

	pthread_mutex_lock(&ctx->inval.lock);
	waiting = ctx->inval.head || ctx->inval.foreign || ctx->inval.stop;
	pthread_mutex_unlock(&ctx->inval.lock);
	return waiting;
}

void fs_inval_foreign(struct fs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->inval.lock);
	ctx->inval.foreign = true;
	pthread_cond_signal(&ctx->inval.cond);
	pthread_mutex_unlock(&ctx->inval.lock);
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
	/* counted sent: the cost of a wake-up is the worker's, whatever the kernel held */
	fs_stat_add(ctx, FS_STAT_INVAL, 1);
	if (ret < 0 && ret != -ENOENT)
		fs_trace(ctx, "invalidate %lu %s: %s", (unsigned long)iv->ino, iv->name,
			 strerror(-ret));
}

static void *inval_main(void *arg)
{
	struct fs_ctx *ctx = arg;

	pthread_mutex_lock(&ctx->inval.lock);
	for (;;) {
		struct fs_inval *iv;
		bool push;

		while (!ctx->inval.head && !ctx->inval.push_head && !ctx->inval.foreign &&
		       !ctx->inval.stop)
			pthread_cond_wait(&ctx->inval.cond, &ctx->inval.lock);
		if (ctx->inval.stop)
			break;
		if (ctx->inval.foreign) {
			ctx->inval.foreign = false;
			pthread_mutex_unlock(&ctx->inval.lock);
			fs_node_revalidate_all(ctx);
			pthread_mutex_lock(&ctx->inval.lock);
			continue;
		}
		push = !ctx->inval.head;
		if (!push) {
			iv = ctx->inval.head;
			ctx->inval.head = iv->next;
			if (!ctx->inval.head)
				ctx->inval.tail = NULL;
		} else {
			/* pushes only when no invalidation waits */
			iv = ctx->inval.push_head;
			ctx->inval.push_head = iv->next;
			if (!ctx->inval.push_head)
				ctx->inval.push_tail = NULL;
			ctx->inval.npush--;
		}
		pthread_mutex_unlock(&ctx->inval.lock);
		inval_send(ctx, iv);
		free(iv);
		pthread_mutex_lock(&ctx->inval.lock);
		if (!push) {
			ctx->inval.sent++;
			pthread_cond_broadcast(&ctx->inval.sent_cond);
		}
	}
	pthread_cond_broadcast(&ctx->inval.sent_cond);
	pthread_mutex_unlock(&ctx->inval.lock);
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
	pthread_mutex_lock(&ctx->inval.lock);
	target = ctx->inval.queued;
	while (ctx->inval.started && !ctx->inval.stop && ctx->inval.sent < target)
		if (pthread_cond_timedwait(&ctx->inval.sent_cond, &ctx->inval.lock, &deadline) != 0)
			break;
	pthread_mutex_unlock(&ctx->inval.lock);
}

int fs_inval_start(struct fs_ctx *ctx)
{
	int ret;

	pthread_mutex_lock(&ctx->inval.lock);
	ret = pthread_create(&ctx->inval.thread, NULL, inval_main, ctx);
	ctx->inval.started = ret == 0;
	pthread_mutex_unlock(&ctx->inval.lock);
	return -ret;
}

void fs_inval_stop(struct fs_ctx *ctx)
{
	struct fs_inval *iv, *next;

	pthread_mutex_lock(&ctx->inval.lock);
	if (!ctx->inval.started) {
		pthread_mutex_unlock(&ctx->inval.lock);
		return;
	}
	ctx->inval.stop = true;
	pthread_cond_signal(&ctx->inval.cond);
	pthread_mutex_unlock(&ctx->inval.lock);
	pthread_join(ctx->inval.thread, NULL);
	for (iv = ctx->inval.head; iv; iv = next) {
		next = iv->next;
		inval_free(ctx, iv);
	}
	for (iv = ctx->inval.push_head; iv; iv = next) {
		next = iv->next;
		inval_free(ctx, iv);
	}
	ctx->inval.head = ctx->inval.tail = NULL;
	ctx->inval.push_head = ctx->inval.push_tail = NULL;
	ctx->inval.npush = 0;
	ctx->inval.started = false;
}
