/*
 * fs/defer.c - what a tool sets on a leaf it holds open for writing
 * (chmod, chown, utimens, user.kvfs.type), kept on the shared writer for
 * its commit at close; and settling a created leaf early when a name
 * operation from elsewhere needs it in the store. Locks as file.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
	*ret = d->type ? defer_type(ctx, f, d->type) : 0;
	if (*ret == 0) {
		if (d->mtime) {
			f->want_mtime = true;
			f->wmtime_ns = d->mtime_ns;
		}
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
