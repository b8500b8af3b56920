/*
 * fs/defer.c - what a tool sets on a leaf it holds open for writing
 * (chmod, chown, utimens, user.kvfs.type), kept on the shared writer for
 * its commit at close; leaves made by mknod, held until the close of the
 * open that follows; and settling a created leaf early when a name
 * operation from elsewhere needs it in the store. Locks as file.c.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_int.h"

/* f->lock held. Merges a chmod/chown/atime into what f keeps for its commit. */
static void defer_owner_mode(struct fs_file *f, const struct fs_defer *d)
{
	static const unsigned bits[] = { MODEL_ATTR_MODE, MODEL_ATTR_UID, MODEL_ATTR_GID,
					 MODEL_ATTR_ATIME };

	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		unsigned b = bits[i];

		if (d->set.have & b) {
			f->want_set.have |= b;
			f->want_unset &= ~b;
		} else if (d->unset & b) {
			f->want_unset |= b;
			f->want_set.have &= ~b;
		}
	}
	if (d->set.have & MODEL_ATTR_MODE)
		f->want_set.mode = d->set.mode;
	if (d->set.have & MODEL_ATTR_UID)
		f->want_set.uid = d->set.uid;
	if (d->set.have & MODEL_ATTR_GID)
		f->want_set.gid = d->set.gid;
	if (d->set.have & MODEL_ATTR_ATIME)
		f->want_set.atime_ns = d->set.atime_ns;
}

/*
 * f->lock held. A type for f's next commit: refused now when the text
 * written so far does not parse as it; on an empty leaf kept as the type
 * tar sets before writing (inferred instead when the text does not fit).
 */
static int defer_type(struct fs_ctx *ctx, struct fs_file *f, const char *name)
{
	struct model_error err = { 0 };
	enum model_type type;
	char *path = NULL;

	if (model_type_parse(name, &type) < 0 ||
	    (f->len && model_type_check(name, f->buf, f->len) < 0)) {
		snprintf(err.msg, sizeof(err.msg), "the text is not a valid %s", name);
		if (fs_node_path(ctx, f->node, NULL, &path) == 0)
			snprintf(err.msg, sizeof(err.msg), "%s: not a valid %s", path, name);
		fs_log_model(ctx, -EINVAL, &err, path ? path : name);
		free(path);
		return -EINVAL;
	}
	pthread_mutex_lock(&ctx->lock);
	if (!f->node->want_type)
		fs_node_ref_locked(f->node);	/* as xattr.c's want_type_later */
	f->node->want_type = type;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

bool fs_writer_defer(struct fs_ctx *ctx, struct fs_node *node, const struct fs_defer *d,
		     int *ret)
{
	struct fs_file *f;

	pthread_mutex_lock(&ctx->lock);
	f = node->wfile;
	if (f)
		f->refs++;
	pthread_mutex_unlock(&ctx->lock);
	if (!f)
		return false;
	pthread_mutex_lock(&f->lock);
	/*
	 * Nothing left to commit (close's flush took it all): no commit of
	 * this writer is sure to follow, and its release may be letting go of
	 * it now, so what were kept on it would go with it (rsync's utimensat
	 * right after close). The change goes to the store as for a closed file.
	 */
	if (!f->dirty && !f->pending && !f->trunc) {
		pthread_mutex_unlock(&f->lock);
		fs_file_put(ctx, f);
		return false;
	}
	*ret = d->type ? defer_type(ctx, f, d->type) : 0;
	if (*ret == 0) {
		if (d->mtime) {
			f->want_mtime = true;
			f->wmtime_ns = d->mtime_ns;
		}
		if (d->deadline_ns)
			f->want_deadline_ns = d->deadline_ns;
		defer_owner_mode(f, d);
		f->dirty = true;	/* the next flush commits it, content and all */
		fs_file_publish(ctx, f);
	}
	pthread_mutex_unlock(&f->lock);
	fs_file_put(ctx, f);
	return true;
}

bool fs_node_settle(struct fs_ctx *ctx, struct fs_node *node)
{
	bool pending;

	pthread_mutex_lock(&ctx->lock);
	pending = node->wfile && node->wfile->pend_leaf;
	pthread_mutex_unlock(&ctx->lock);
	if (pending)
		fs_node_commit_files(ctx, node);	/* a failure is logged; close reports it */
	return pending;
}

void fs_name_settle(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *node;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, false);
	if (node)
		fs_node_ref_locked(node);
	pthread_mutex_unlock(&ctx->lock);
	if (!node)
		return;
	fs_node_settle(ctx, node);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
}

/* ctx->lock held. Whether node is top or lies beneath it. */
static bool node_under_locked(const struct fs_node *node, const struct fs_node *top)
{
	for (; node; node = node->parent)
		if (node == top)
			return true;
	return false;
}

void fs_subtree_settle(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *top, **todo = NULL;
	struct fs_file *f;
	size_t n = 0, max = 0;

	pthread_mutex_lock(&ctx->lock);
	top = fs_node_child_locked(ctx, dir, name, false);
	/* the leaf itself is fs_name_settle's; only a directory has leaves beneath */
	for (f = ctx->files; top && f; f = f->next)
		max += f->pend_leaf && f->node != top && node_under_locked(f->node, top);
	if (max)
		todo = calloc(max, sizeof(*todo));
	for (f = ctx->files; todo && f && n < max; f = f->next) {
		if (f->pend_leaf && f->node != top && node_under_locked(f->node, top)) {
			fs_node_ref_locked(f->node);
			todo[n++] = f->node;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	if (max && !todo)
		fs_log(ctx, LOG_WARNING, "%s: cannot commit %zu created leaves before its rename: "
		       "no memory", name, max);
	for (size_t i = 0; i < n; i++)
		fs_node_settle(ctx, todo[i]);	/* a failure is logged; close reports it */
	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < n; i++)
		fs_node_unref_locked(ctx, todo[i]);
	pthread_mutex_unlock(&ctx->lock);
	free(todo);
}

int fs_leaf_hold(struct fs_ctx *ctx, struct fs_node *node, const struct model_attr *attr,
		 uint64_t ino, uint64_t as_of)
{
	struct fuse_file_info fi = { .flags = O_WRONLY };
	struct fs_file *f;
	bool ours;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ours = node->wfile == NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (!ours)
		return -EEXIST;	/* created by an open not closed yet */
	ret = fs_leaf_pending_open(ctx, node, &fi, attr, ino, as_of, &f);
	if (ret < 0)
		return ret;
	if (!f)
		return -EEXIST;	/* another open's writer won, and is closed already */
	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&ctx->lock);
	/* another create won the race: f is its writer, shared (refs > 1) */
	ours = f->refs == 1 && !f->held;
	if (ours) {
		f->held = true;
		f->held_ns = fs_now_ns();
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ours) {
		f->dirty = true;	/* committed as it is when nothing else comes */
		fs_file_publish(ctx, f);
	}
	pthread_mutex_unlock(&f->lock);
	if (!ours) {
		fs_file_put(ctx, f);
		return -EEXIST;
	}
	return 0;	/* the ref fs_leaf_pending_open gave is the hold */
}

bool fs_held_join(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		  struct fs_file **out)
{
	bool held;

	pthread_mutex_lock(&ctx->lock);
	held = node->wfile && node->wfile->held;
	pthread_mutex_unlock(&ctx->lock);
	if (!held || (fi->flags & O_ACCMODE) == O_RDONLY)
		return false;
	/* NULL: committed and closed meanwhile; the caller opens what is stored */
	*out = fs_writer_share(ctx, node, fi->flags);
	if (!*out)
		return false;
	fi->keep_cache = 0;
	fi->fh = (uintptr_t)*out;
	return true;
}

void fs_file_hold_empty(struct fs_ctx *ctx, struct fs_file *f)
{
	pthread_mutex_lock(&ctx->lock);
	if (!f->held) {
		f->held = f->held_empty = true;
		f->held_ns = fs_now_ns();
		f->refs++;	/* the hold's, as fs_leaf_hold's */
	}
	pthread_mutex_unlock(&ctx->lock);
}

void fs_file_hold_done(struct fs_ctx *ctx, struct fs_file *f)
{
	/*
	 * A created leaf, or a truncation alone not committed yet, waits for
	 * its open. Once that open has written into the writer, the hold has
	 * done its work whatever its close made of the content: a refused
	 * append must not leave its text held for the open after it, which
	 * would join a leaf never created and commit nothing (ENOENT).
	 */
	if (f->pending || (f->held_empty && f->len == 0 && (f->trunc || f->dirty)))
		return;
	pthread_mutex_lock(&ctx->lock);
	if (f->held) {
		assert(f->refs > 1);	/* the caller's own ref keeps f */
		f->held = f->held_empty = false;
		f->refs--;
	}
	pthread_mutex_unlock(&ctx->lock);
}

void fs_file_hold_forget(struct fs_ctx *ctx, struct fs_file *f)
{
	fuse_ino_t parent = 0;
	char *name = NULL;

	pthread_mutex_lock(&ctx->lock);
	if ((f->held || (f->kind == FS_FILE_WRITER && f->pending)) && f->node->parent) {
		parent = fs_node_ino(ctx, f->node->parent);
		name = strdup(f->node->name);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (name)
		fs_inval_entry(ctx, parent, name, strlen(name));
	free(name);
}

void fs_held_commit(struct fs_ctx *ctx, bool all)
{
	int64_t before = fs_now_ns() - (int64_t)FS_HOLD_MS * 1000000;
	struct fs_file **todo = NULL, *f;
	size_t n = 0, max = 0, i;

	/* the watcher leaves one that an open joined to that open's close */
#define HELD_DUE(f) ((f)->held && (all || ((f)->held_ns <= before && (f)->refs == 1)))
	pthread_mutex_lock(&ctx->lock);
	for (f = ctx->files; f; f = f->next)
		max += HELD_DUE(f);
	if (max)
		todo = calloc(max, sizeof(*todo));
	for (f = ctx->files; todo && f && n < max; f = f->next) {
		if (HELD_DUE(f)) {
			f->refs++;
			todo[n++] = f;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	if (max && !todo)
		fs_log(ctx, LOG_WARNING, "cannot commit %zu leaves made by mknod: no memory", max);
#undef HELD_DUE
	for (i = 0; i < n; i++) {
		bool alone;

		f = todo[i];
		fs_node_commit_files(ctx, f->node);	/* ends the hold; a failure is logged */
		pthread_mutex_lock(&f->lock);
		pthread_mutex_lock(&ctx->lock);
		alone = f->held && f->refs == 2;	/* the hold and todo's */
		pthread_mutex_unlock(&ctx->lock);
		if (alone) {
			fs_file_hold_forget(ctx, f);
			f->pending = false;	/* refused: one attempt, dropped as at a close */
			f->dirty = f->trunc = false;	/* an existing leaf keeps its stored value */
			fs_file_publish(ctx, f);
			fs_file_hold_done(ctx, f);
		}
		pthread_mutex_unlock(&f->lock);
		fs_file_put(ctx, f);
	}
	free(todo);
}
