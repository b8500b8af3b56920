/*
 * fs/write_section.c - the write section around every model call that may
 * commit (ctx->section.gen_lock), and the shape marks by which a commit keeps the
 * nlink counts of the directories it changes.
 */
#include <assert.h>

#include "fs/fs_int.h"

/* A section that may make or remove directories opens: see fs_shape_carry. */
static void shape_enter(struct fs_ctx *ctx)
{
	atomic_fetch_add(&ctx->section.shape_writers, 1);
	atomic_fetch_add(&ctx->section.shape_seq, 1);
}

void fs_write_begin(struct fs_ctx *ctx)
{
	pthread_rwlock_rdlock(&ctx->section.gen_lock);
	shape_enter(ctx);
}

void fs_write_begin_excl(struct fs_ctx *ctx)
{
	pthread_rwlock_wrlock(&ctx->section.gen_lock);
	shape_enter(ctx);
}

void fs_write_end(struct fs_ctx *ctx, int ret)
{
	(void)ret;
	atomic_fetch_sub(&ctx->section.shape_writers, 1);
	pthread_rwlock_unlock(&ctx->section.gen_lock);
}

void fs_write_end_leaf(struct fs_ctx *ctx)
{
	pthread_rwlock_unlock(&ctx->section.gen_lock);
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
		pthread_rwlock_rdlock(&ctx->section.gen_lock);
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
	return reaped_since(ctx, mark) || atomic_load(&ctx->section.shape_writers) != 0 ||
	       atomic_load(&ctx->section.shape_seq) != mark->seq;
}

void fs_shape_mark(struct fs_ctx *ctx, struct fs_shape_mark *mark)
{
	bool reaping;

	mark->seq = atomic_load(&ctx->section.shape_seq);
	model_reaps(ctx->model, &mark->reaps, &reaping);
	mark->quiet = !reaping && atomic_load(&ctx->section.shape_writers) == 0;
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
