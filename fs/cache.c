/*
 * fs/cache.c - the page-cache and reader rules: when a leaf reader takes a
 * snapshot (at open, at its first read, or never for big leaves), when it
 * may share the kernel's pages, and when they are kept or dropped.
 *
 * Readers of leaves read a snapshot of the text taken at open (or at the
 * first read, when the kernel's pages already hold the text): an open fd
 * keeps its content after an unlink or a rename over its name. Leaves above
 * FS_SNAPSHOT_MAX are read per call and answer EIO once they changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

void fs_cache_forget(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	node->cache_known = false;
	pthread_mutex_unlock(&ctx->lock);
	fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_DATA);
}

int fs_file_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	struct model_error err = { { 0 } };
	int ret = model_read_all(ctx->model, path, &f->buf, &f->len, &err);

	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	f->cap = f->len + 1;
	return 0;
}

int fs_cache_leaf_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			   struct model_node *n)
{
	int ret = fs_file_snapshot(ctx, f, path);

	if (ret == 0 && f->len != n->size && model_stat(ctx->model, path, 0, n, NULL) < 0)
		n->size = f->len;
	return ret;
}

bool fs_cache_matches(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n)
{
	bool match;

	pthread_mutex_lock(&ctx->lock);
	match = node->cache_known && node->cache_mtime == n->mtime_ns &&
		node->cache_size == n->size;
	pthread_mutex_unlock(&ctx->lock);
	return match;
}

void fs_cache_reader_deferred(struct fs_file *f, const struct model_node *n, bool lazy)
{
	f->kind = lazy ? FS_FILE_READER_LAZY : FS_FILE_READER_BIG;
	f->open_mtime = n->mtime_ns;
	f->open_size = n->size;
}

bool fs_cache_reader_share(struct fs_ctx *ctx, struct fs_file *f, const struct model_node *n)
{
	struct fs_node *node = f->node;
	bool share;

	pthread_mutex_lock(&ctx->lock);
	share = node->nreaders == 0 ||
		(node->rd_mtime == n->mtime_ns && node->rd_size == n->size);
	if (share) {
		node->nreaders++;
		node->rd_mtime = n->mtime_ns;
		node->rd_size = n->size;
		f->cached_reader = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	return share;
}

bool fs_cache_leaf_valid(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n)
{
	bool keep, changed;

	pthread_mutex_lock(&ctx->lock);
	keep = node->cache_known && node->cache_mtime == n->mtime_ns &&
	       node->cache_size == n->size;
	changed = node->cache_known && !keep;
	node->cache_known = true;
	node->cache_mtime = n->mtime_ns;
	node->cache_size = n->size;
	pthread_mutex_unlock(&ctx->lock);
	if (changed)	/* changed elsewhere: let the kernel fetch the new size */
		fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_ATTR);
	return keep;
}

bool fs_cache_big_changed(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	struct model_node n;

	return model_stat(ctx->model, path, 0, &n, NULL) < 0 || n.mtime_ns != f->open_mtime ||
	       n.size != f->open_size;
}

int fs_cache_lazy_snapshot_locked(struct fs_ctx *ctx, struct fs_file *f, fuse_ino_t ino)
{
	char *path;
	int ret;

	ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);
	if (ret < 0)
		return ret;
	ret = fs_file_snapshot(ctx, f, path);
	if (ret == 0)
		f->kind = FS_FILE_READER;
	free(path);
	return ret;
}
