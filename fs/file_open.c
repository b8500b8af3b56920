/*
 * fs/file_open.c - opening files (fs_file_open): which kind a leaf or view
 * opens as, the leaf's one shared writer and its starting content, a view
 * writer's opener, and the writers of leaves and views not stored yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"

/*
 * A writer's kind and starting content: empty (O_TRUNC, appends to a view)
 * or the current text.
 */
static int file_load(struct fs_ctx *ctx, struct fs_file *f, const char *path, int flags,
		     bool view)
{
	f->writable = true;
	/* a leaf's handles share one writer: O_APPEND is per write */
	f->kind = !view ? FS_FILE_WRITER : (flags & O_APPEND) ? FS_FILE_VIEW_APPEND :
		  FS_FILE_VIEW_WRITER;
	f->wmtime_ns = fs_now_ns();
	if (f->kind == FS_FILE_VIEW_APPEND)
		return 0;
	if (flags & O_TRUNC) {
		/*
		 * Not dirty: the shell's `> FILE` closes a dup of the descriptor
		 * (a flush) before anything is written, and committing "" then
		 * would lose a leaf's type. An empty leaf is committed at release;
		 * an empty view too, where the model refuses it (not JSON).
		 */
		f->trunc = true;
		fs_file_publish(ctx, f);
		return 0;
	}
	/* a view's starting content is rendered for its opener (view_set_opener) */
	f->loaded = !view;
	return fs_file_take_text(ctx, f, path, view ? &f->who : NULL);
}

/* f->lock held. O_TRUNC on the shared buffer: empty now, committed at the latest at release. */
static void writer_trunc_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	f->len = 0;
	f->trunc = true;
	f->refused = 0;
	f->loaded = false;
	f->wmtime_ns = fs_now_ns();
	fs_file_publish(ctx, f);
}

struct fs_file *fs_writer_share(struct fs_ctx *ctx, struct fs_node *node, int flags)
{
	struct fs_file *f;

	pthread_mutex_lock(&ctx->lock);
	f = node->wfile;
	if (f)
		f->refs++;
	pthread_mutex_unlock(&ctx->lock);
	if (f && (flags & O_TRUNC)) {
		pthread_mutex_lock(&f->lock);
		writer_trunc_locked(ctx, f);
		pthread_mutex_unlock(&f->lock);
	}
	return f;
}

/*
 * Makes the freshly loaded writer f the leaf's shared one; when another
 * open made one meanwhile, f is dropped and that one is shared instead.
 */
static struct fs_file *writer_publish(struct fs_ctx *ctx, struct fs_file *f, int flags)
{
	struct fs_node *node = f->node;	/* the caller's: pinned by its op */
	struct fs_file *other;

	pthread_mutex_lock(&ctx->lock);
	other = node->wfile;
	if (!other)
		node->wfile = f;
	pthread_mutex_unlock(&ctx->lock);
	if (!other)
		return f;
	fs_file_put(ctx, f);
	/* not other->node: other may be closed and freed since the lock was let go */
	return fs_writer_share(ctx, node, flags);
}

int fs_view_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 struct fs_file **out)
{
	struct fs_file *f = fs_file_new(ctx, node);

	if (!f)
		return -ENOMEM;
	f->writable = true;
	f->kind = (fi->flags & O_APPEND) ? FS_FILE_VIEW_APPEND : FS_FILE_VIEW_WRITER;
	f->pending = true;
	f->wmtime_ns = fs_now_ns();
	pthread_mutex_lock(&f->lock);
	fs_file_publish(ctx, f);
	pthread_mutex_unlock(&f->lock);
	fi->direct_io = 1;
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

int fs_leaf_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			 const struct model_attr *attr, uint64_t ino, uint64_t as_of,
			 struct fs_file **out)
{
	struct fs_file *f = fs_file_new(ctx, node);

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&ctx->lock);
	ino = fs_node_st_ino_locked(ctx, node, ino);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&f->lock);
	f->writable = true;
	f->kind = FS_FILE_WRITER;
	f->pending = true;
	f->trunc = true;	/* empty: committed at release when nothing is written */
	f->new_attr = *attr;
	f->new_trunc = fi->flags & O_TRUNC;
	f->excl = fi->flags & O_EXCL;
	f->ino = ino;
	/*
	 * What the cluster had at the open, not only what this mount's
	 * watch brought: a directory another host removed and made again
	 * before it is the one the leaf goes in.
	 */
	if (f->stage_gen < as_of)
		f->stage_gen = as_of;
	f->wmtime_ns = fs_now_ns();
	fs_file_publish(ctx, f);
	pthread_mutex_unlock(&f->lock);
	f = writer_publish(ctx, f, fi->flags);
	fi->keep_cache = 0;
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

/*
 * `>> NAME.json` appends to an array: refused at open when NAME is an
 * object or a leaf, instead of failing at close (which shells ignore).
 */
static int view_append_check(struct fs_ctx *ctx, const char *path)
{
	struct model_error err = { 0 };
	size_t len = strlen(path);
	struct model_node n;
	char *target;
	int ret;

	target = strndup(path, model_name_view_base(path, len));
	if (!target)
		return -ENOMEM;
	ret = model_stat(ctx->model, target, 0, &n, NULL);
	if (ret < 0) {
		free(target);
		return ret == -ENOENT ? 0 : ret;	/* missing: the first append makes the array */
	}
	if (n.kind == MODEL_KIND_LEAF)
		ret = -ENOTDIR;
	else if (n.kind == MODEL_KIND_OBJECT)
		ret = -EISDIR;
	if (ret < 0) {
		snprintf(err.msg, sizeof(err.msg),
			 "%s: cannot append: %s is %s, and >> adds elements to an array", path,
			 *target ? target : "/", n.kind == MODEL_KIND_LEAF ? "a leaf" : "an object");
		fs_log_model(ctx, ret, &err, path);
	}
	free(target);
	return ret;
}

/*
 * A view writer's opener, before its text is rendered for them (file_load)
 * and its commits are checked on their behalf: f's who, kept to its close,
 * so its groups are read now, while the request is served.
 */
static void view_set_opener(fuse_req_t req, struct fs_ctx *ctx, struct fs_file *f)
{
	struct model_cred who;
	gid_t *groups;

	fs_cred_from_req(req, ctx, &who, &groups);
	pthread_mutex_lock(&f->lock);
	f->who = who;
	f->who_groups = groups;
	f->who_set = true;
	pthread_mutex_unlock(&f->lock);
}

/*
 * A view reader's text, rendered for req's caller: their groups are read
 * only if a node's mode makes them matter (fs_cred_lazy), as nothing is
 * checked for them once the open is answered.
 */
static int view_reader_load(fuse_req_t req, struct fs_ctx *ctx, struct fs_file *f,
			    const char *path)
{
	struct model_cred who;
	struct fs_groups groups;
	int ret;

	fs_cred_lazy(req, ctx, &who, &groups);
	ret = fs_file_take_text(ctx, f, path, &who);
	fs_groups_release(&groups);
	return ret;
}

int fs_file_open(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node, const char *path,
		 struct fuse_file_info *fi, struct fs_file **out)
{
	struct model_error err = { 0 };
	int acc = fi->flags & O_ACCMODE;
	struct model_node n;
	bool direct = false;
	struct fs_file *f;
	uint64_t ino;
	int ret;

	ret = model_stat(ctx->model, path, 0, &n, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	if (fs_kind_is_dir(n.kind))
		return -EISDIR;
	if (acc != O_RDONLY && ctx->read_only)
		return -EROFS;
	if (acc != O_RDONLY && n.kind == MODEL_KIND_VIEW && (fi->flags & O_APPEND)) {
		ret = view_append_check(ctx, path);
		if (ret < 0)
			return ret;
	}
	if (acc != O_RDONLY && n.kind == MODEL_KIND_LEAF)
		f = fs_writer_share(ctx, node, fi->flags);
	else
		f = NULL;
	if (f)
		goto out_opened;
	f = fs_file_new(ctx, node);
	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&ctx->lock);
	ino = fs_node_st_ino_locked(ctx, node, n.ino);
	pthread_mutex_unlock(&ctx->lock);
	/* f is on ctx->files already: fs_cache_open_stat may look at it */
	pthread_mutex_lock(&f->lock);
	f->ino = ino;
	f->open_mtime = n.mtime_ns;
	f->open_size = n.size;
	pthread_mutex_unlock(&f->lock);
	if (acc != O_RDONLY && n.kind == MODEL_KIND_VIEW)
		view_set_opener(req, ctx, f);
	if (acc != O_RDONLY) {
		ret = file_load(ctx, f, path, fi->flags, n.kind == MODEL_KIND_VIEW);
	} else if (n.kind == MODEL_KIND_VIEW) {
		f->kind = FS_FILE_VIEW_READER;
		ret = view_reader_load(req, ctx, f, path);
	}
	else if (n.size > FS_SNAPSHOT_MAX)
		fs_cache_reader_deferred(f, &n, false);
	else if (!(direct = fs_cache_reader_direct(ctx, node, &n)) &&
		 fs_cache_matches(ctx, node, &n))
		fs_cache_reader_deferred(f, &n, true);
	else
		ret = fs_cache_leaf_snapshot(ctx, f, path, &n);
	if (ret == 0 && acc == O_RDONLY && n.kind == MODEL_KIND_LEAF)
		fs_trace(ctx, "open %s: %s, size %llu mtime %lld", path,
			 direct ? "direct" : f->kind == FS_FILE_READER ? "read at open" : "deferred",
			 (unsigned long long)n.size, (long long)n.mtime_ns);
	if (ret == 0 && direct) {
		pthread_mutex_lock(&f->lock);
		f->direct = true;
		pthread_mutex_unlock(&f->lock);
	}
	if (ret < 0) {
		fs_file_put(ctx, f);
		return ret;
	}
	if (f->kind == FS_FILE_WRITER) {
		/* not while the worker pushes the leaf's text into its pages */
		pthread_mutex_lock(&ctx->push_lock);
		f = writer_publish(ctx, f, fi->flags);
		pthread_mutex_unlock(&ctx->push_lock);
	}
out_opened:
	/*
	 * Leaves, read or written, go through the kernel's one page cache
	 * (shared writable mmap needs it): writes reach the shared buffer
	 * at once (no write-back cache), dirty mmap pages before flush and
	 * fsync. Views are rendered per open and never cached, and so are
	 * the readers that fs_cache_reader_direct says must be.
	 */
	if (fs_file_is_view(f) || f->direct)
		fi->direct_io = 1;
	else
		fi->keep_cache = !n.expires_ns && fs_cache_leaf_valid(ctx, node, &n);
	/* a reader that missed the pages (recorded now): cat * sends one read, not one per leaf */
	if (f->kind == FS_FILE_READER && !fi->keep_cache)
		fs_cache_push_siblings(ctx, node);
	fi->noflush = acc == O_RDONLY;	/* nothing to commit: close needs no round trip */
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

void fs_file_onto_held(struct fs_ctx *ctx, struct fs_file *f, struct fs_node *dir,
		       const char *name)
{
	pthread_mutex_lock(&f->lock);
	f->onto_held = f->kind == FS_FILE_WRITER && !f->pending;	/* the held leaf, still stored */
	pthread_mutex_unlock(&f->lock);
	fs_rmhold_end_name(ctx, dir, name);
}

void fs_file_set_opener(fuse_req_t req, struct fs_ctx *ctx, struct fs_file *f)
{
	pthread_mutex_lock(&f->lock);
	if (f->writable && fs_file_is_view(f) && !f->who_set) {
		fs_cred_from_req(req, ctx, &f->who, &f->who_groups);
		f->who_set = true;
	}
	pthread_mutex_unlock(&f->lock);
}
