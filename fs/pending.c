/*
 * fs/pending.c - pending files (struct fs_tmpfile): names that are no index,
 * created in an array (rsync's ".0.XXXXXX", sed -i's "sedXXXXXX"), held only
 * by the daemon until a rename commits them onto an index.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

/* Whether the directory node is an array (an empty array marker included). */
static bool dir_is_array(struct fs_ctx *ctx, struct fs_node *dir)
{
	struct model_node n;
	char *path;
	bool array;

	if (fs_node_path(ctx, dir, NULL, &path) < 0)
		return false;
	array = model_stat(ctx->model, path, 0, &n, NULL) == 0 && n.kind == MODEL_KIND_ARRAY;
	free(path);
	return array;
}

bool fs_node_parent_gone(struct fs_ctx *ctx, struct fs_node *node, uint64_t gen)
{
	char *path;
	bool gone;

	if (fs_node_path(ctx, node, NULL, &path) < 0)
		return false;
	gone = fs_parent_gone(ctx, path, gen);
	free(path);
	return gone;
}

bool fs_parent_gone(struct fs_ctx *ctx, const char *path, uint64_t gen)
{
	int ret = model_parent_gone(ctx->model, path, gen);

	if (ret < 0)
		fs_log(ctx, LOG_WARNING, "%s: cannot read the change feed (%s): its directory "
		       "is taken as the one it was made in", path, strerror(-ret));
	else if (ret)
		fs_trace(ctx, "%s: its directory was removed elsewhere: dropped", path);
	return ret > 0;
}

int fs_parent_gone_error(const char *path, struct model_error *err)
{
	snprintf(err->msg, sizeof(err->msg),
		 "%s: not stored: another process removed its directory (or one above it) "
		 "after it was opened, and the file went with it, even if a directory "
		 "was made again at its path", path);
	return -ESTALE;
}

void fs_tmp_gone_locked(struct fs_ctx *ctx, struct fs_node *node, char *path)
{
	free(node->tmp_gone);
	node->tmp_gone = path ? path : strdup(node->name);
	fs_node_tmp_drop_locked(ctx, node);
}

/*
 * f->lock held. A writer of a pending file another process's removal of
 * its array dropped: -ESTALE, logged for user.kvfs.error; else 0.
 */
static int tmp_flush_gone(struct fs_ctx *ctx, struct fs_file *f)
{
	struct model_error err = { 0 };
	char *path;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	path = f->node->tmp_gone ? strdup(f->node->tmp_gone) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (!path)
		return 0;
	ret = fs_parent_gone_error(path, &err);
	fs_log_model(ctx, ret, &err, path);
	f->gone_told = true;
	free(path);
	return ret;
}

int fs_tmp_flush_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	struct fs_tmpfile *t;
	uint64_t gen = 0;
	char *copy, *path;
	bool tmp;

	pthread_mutex_lock(&ctx->lock);
	tmp = f->node->tmp != NULL;
	if (tmp)
		gen = f->node->tmp->stage_gen;
	pthread_mutex_unlock(&ctx->lock);
	if (!tmp)
		return f->kind == FS_FILE_TMP ? tmp_flush_gone(ctx, f) : 0;
	/* its array removed by another since it was made: gone, though the worker has not seen it */
	if (fs_node_path(ctx, f->node, NULL, &path) == 0) {
		if (fs_parent_gone(ctx, path, gen)) {
			pthread_mutex_lock(&ctx->lock);
			fs_tmp_gone_locked(ctx, f->node, path);	/* the worker forgets its name */
			pthread_mutex_unlock(&ctx->lock);
			return tmp_flush_gone(ctx, f);
		}
		free(path);
	}
	copy = malloc(f->len ? f->len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, f->buf ? f->buf : "", f->len);
	pthread_mutex_lock(&ctx->lock);
	t = f->node->tmp;
	if (t) {
		free(t->buf);
		t->buf = copy;
		t->len = f->len;
		t->mtime_ns = f->wmtime_ns;
		copy = NULL;
	}
	pthread_mutex_unlock(&ctx->lock);
	free(copy);	/* renamed meanwhile: committed by the rename, nothing to keep */
	f->dirty = f->trunc = false;
	fs_file_publish(ctx, f);
	return 1;
}

int fs_tmp_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		struct fs_file **out)
{
	struct fs_file *f = fs_file_new(ctx, node);
	int ret = 0;

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	f->kind = FS_FILE_TMP;
	f->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
	f->wmtime_ns = fs_now_ns();
	if (f->writable && (fi->flags & O_TRUNC)) {
		f->dirty = true;
		fs_file_publish(ctx, f);
	} else {
		pthread_mutex_lock(&ctx->lock);
		ret = node->tmp ? fs_file_resize(f, node->tmp->len) : -ENOENT;
		if (ret == 0 && f->len)
			memcpy(f->buf, node->tmp->buf, f->len);
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0) {
		fs_file_put(ctx, f);
		return ret;
	}
	fi->direct_io = 1;	/* other opens may change it: no page cache */
	fi->noflush = !f->writable;
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

int fs_tmp_create(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		  struct fuse_file_info *fi, uint64_t as_of, struct fuse_entry_param *e,
		  struct fs_file **out)
{
	uint64_t gen = model_generation(ctx->model);	/* read outside ctx->lock */
	struct fs_node *node;
	bool made = false;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, true);
	if (!node) {
		pthread_mutex_unlock(&ctx->lock);
		return -ENOMEM;
	}
	if (node->tmp && (fi->flags & O_EXCL))
		ret = -EEXIST;
	if (!node->tmp) {
		node->tmp = calloc(1, sizeof(*node->tmp));
		if (node->tmp) {
			node->tmp->mtime_ns = fs_now_ns();
			node->tmp->stage_gen = gen > as_of ? gen : as_of;
			free(node->tmp_gone);	/* a new one, not the one its array took */
			node->tmp_gone = NULL;
			fs_node_ref_locked(node);	/* held while pending */
			made = true;
		} else {
			ret = -ENOMEM;
		}
	}
	fs_node_ref_locked(node);	/* pinned below */
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0)
		ret = fs_tmp_open(ctx, node, fi, out);
	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0) {
		fs_tmp_stat_locked(ctx, node, &e->attr);
		fs_stat_pending_locked(ctx, node, true, &e->attr, NULL);
		node->nlookup++;
		e->ino = fs_node_ino(ctx, node);	/* timeouts 0: asked again each time */
	} else if (made) {
		fs_node_tmp_drop_locked(ctx, node);
	}
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

bool fs_tmp_unlink(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *node;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, false);
	if (!node || !node->tmp) {
		pthread_mutex_unlock(&ctx->lock);
		return false;
	}
	fs_node_ref_locked(node);
	fs_node_tmp_drop_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	fs_node_detach(ctx, dir, name);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	return true;
}

/* ctx->lock held. Drops the pending file newname in newdir that a rename replaces. */
static int tmp_replace_locked(struct fs_ctx *ctx, struct fs_node *newdir, const char *newname,
			      unsigned flags)
{
	struct fs_node *dst = fs_node_child_locked(ctx, newdir, newname, false);

	if (!dst || !dst->tmp)
		return 0;
	if (flags & RENAME_NOREPLACE)
		return -EEXIST;
	fs_node_ref_locked(dst);
	fs_node_tmp_drop_locked(ctx, dst);
	fs_node_unref_locked(ctx, dst);
	return 0;
}

/* ctx->lock held. The node after n in a walk of top's subtree (children lists, depth first). */
static struct fs_node *next_below_locked(struct fs_node *n, const struct fs_node *top)
{
	if (n->children)
		return n->children;
	for (; n && n != top; n = n->parent)
		if (n->sib_next)
			return n->sib_next;
	return NULL;
}

void fs_tmp_move_begin(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		       struct fs_tmp_moving *mv)
{
	struct fs_node *top, *n;
	size_t max = 0, kept = 0;

	mv->v = NULL;
	mv->n = 0;
	pthread_mutex_lock(&ctx->lock);
	top = fs_node_child_locked(ctx, dir, name, false);
	/* top itself is fs_tmp_rename's; only a directory has pending files beneath */
	for (n = top ? top->children : NULL; n; n = next_below_locked(n, top))
		max += n->tmp != NULL;
	if (max)
		mv->v = calloc(max, sizeof(*mv->v));
	for (n = top && mv->v ? top->children : NULL; n && mv->n < max;
	     n = next_below_locked(n, top)) {
		if (n->tmp) {
			fs_node_ref_locked(n);
			mv->v[mv->n++] = n;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
	if (max && !mv->v)
		fs_log(ctx, LOG_WARNING, "%s: cannot keep %zu pending files across its rename: "
		       "no memory", name, max);
	for (size_t i = 0; i < mv->n; i++) {
		uint64_t gen = 0;
		bool tmp;

		n = mv->v[i];
		pthread_mutex_lock(&ctx->lock);
		tmp = n->tmp != NULL;
		if (tmp)
			gen = n->tmp->stage_gen;
		pthread_mutex_unlock(&ctx->lock);
		if (tmp && fs_node_parent_gone(ctx, n, gen)) {
			char *path;

			if (fs_node_path(ctx, n, NULL, &path) < 0)
				path = NULL;
			pthread_mutex_lock(&ctx->lock);
			fs_tmp_gone_locked(ctx, n, path);
			fs_node_unref_locked(ctx, n);
			pthread_mutex_unlock(&ctx->lock);
			continue;
		}
		mv->v[kept++] = n;
	}
	mv->n = kept;
}

void fs_tmp_move_end(struct fs_ctx *ctx, struct fs_tmp_moving *mv, bool moved)
{
	uint64_t now = moved && mv->n ? model_generation(ctx->model) : 0;

	pthread_mutex_lock(&ctx->lock);
	for (size_t i = 0; i < mv->n; i++) {
		struct fs_tmpfile *t = mv->v[i]->tmp;

		if (t && t->stage_gen < now)
			t->stage_gen = now;
		fs_node_unref_locked(ctx, mv->v[i]);
	}
	pthread_mutex_unlock(&ctx->lock);
	free(mv->v);
	mv->v = NULL;
	mv->n = 0;
}

/*
 * Commits the pending file node (name in dir) as newname in newdir, with its
 * type, mtime, mode, owner and deadline, in one transaction, and moves it
 * there in the table before the write section ends. Onto a view (a
 * document: its nodes keep their times and attributes), on behalf of who.
 */
static int tmp_commit(struct fs_ctx *ctx, const struct model_cred *who, struct fs_node *node,
		      struct fs_node *dir, const char *name, struct fs_node *newdir,
		      const char *newname, unsigned flags)
{
	bool view = model_name_is_view(newname, strlen(newname));
	struct model_file_commit c = { .create = true, .mtime_set = true };
	struct model_error err = { 0 };
	struct model_node n;
	uint64_t gen = 0;
	char *copy = NULL, *to;
	size_t len = 0;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (node->tmp) {
		gen = node->tmp->stage_gen;
		len = node->tmp->len;
		c.type = node->tmp->type;
		c.mtime_ns = node->tmp->mtime_ns;
		c.set = node->tmp->set;
		c.unset = node->tmp->unset;
		c.deadline_ns = node->tmp->deadline_ns;
		copy = malloc(len ? len : 1);
		if (copy && len)
			memcpy(copy, node->tmp->buf, len);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!copy)
		return -ENOMEM;
	if (fs_node_parent_gone(ctx, node, gen)) {
		char *path;

		/* gone with its array, as the worker drops it: its writers' closes say so */
		if (fs_node_path(ctx, node, NULL, &path) < 0)
			path = NULL;
		pthread_mutex_lock(&ctx->lock);
		fs_tmp_gone_locked(ctx, node, path);
		pthread_mutex_unlock(&ctx->lock);
		fs_node_detach(ctx, dir, name);
		ret = -ENOENT;
		goto out_free;
	}
	ret = fs_write_path_excl(ctx, newdir, newname, &to);
	if (ret < 0)
		goto out_free;
	if ((flags & RENAME_NOREPLACE) && model_stat(ctx->model, to, 0, &n, NULL) == 0)
		ret = -EEXIST;
	else if (view)	/* a document: its nodes keep their times */
		ret = model_write_as(ctx->model, to, copy, len, 0, MODEL_WRITE_TEXT, who, &err);
	else
		ret = model_write_file(ctx->model, to, copy, len, &c, &err);
	if (ret == 0) {
		pthread_mutex_lock(&ctx->lock);
		fs_node_tmp_drop_locked(ctx, node);
		pthread_mutex_unlock(&ctx->lock);
		fs_node_move(ctx, dir, name, newdir, newname, false);
	}
	fs_write_end(ctx, ret);
	if (ret < 0 && ret != -EEXIST)
		fs_log_model(ctx, ret, &err, to);
	free(to);
out_free:
	free(copy);
	return ret;
}

int fs_tmp_rename(struct fs_ctx *ctx, const struct model_cred *who, struct fs_node *dir,
		  const char *name, struct fs_node *newdir, const char *newname, unsigned flags)
{
	bool view = model_name_is_view(newname, strlen(newname));
	struct fs_node *node;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	node = fs_node_child_locked(ctx, dir, name, false);
	if (!node || !node->tmp) {
		pthread_mutex_unlock(&ctx->lock);
		return 1;
	}
	fs_node_ref_locked(node);
	pthread_mutex_unlock(&ctx->lock);
	ret = flags & RENAME_EXCHANGE ? -EINVAL : fs_node_commit_files(ctx, node);
	if (ret < 0)
		goto out_unref;
	if (!view && !model_name_is_index(newname, strlen(newname)) && dir_is_array(ctx, newdir)) {
		pthread_mutex_lock(&ctx->lock);
		ret = tmp_replace_locked(ctx, newdir, newname, flags);
		pthread_mutex_unlock(&ctx->lock);
		if (ret == 0)
			fs_node_move(ctx, dir, name, newdir, newname, false);
		goto out_unref;
	}
	ret = tmp_commit(ctx, who, node, dir, name, newdir, newname, flags);
	if (ret < 0)
		goto out_unref;
	fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_ATTR);	/* the store's attributes now */
	fs_inval_name(ctx, newdir, newname);
	if (view)
		fs_inval_entry(ctx, fs_node_ino(ctx, newdir), newname, strlen(newname));
out_unref:
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int fs_tmp_truncate(struct fs_ctx *ctx, struct fs_node *node, off_t size)
{
	struct fs_tmpfile *t;
	int ret = 0;

	if ((uint64_t)size > FS_FILE_MAX)
		return -EFBIG;
	pthread_mutex_lock(&ctx->lock);
	t = node->tmp;
	if (t && (size_t)size > t->len) {
		char *buf = realloc(t->buf, (size_t)size);

		if (buf) {
			memset(buf + t->len, 0, (size_t)size - t->len);
			t->buf = buf;
		} else {
			ret = -ENOMEM;
		}
	}
	if (t && ret == 0) {
		t->len = (size_t)size;
		t->mtime_ns = fs_now_ns();
	}
	pthread_mutex_unlock(&ctx->lock);
	return t ? ret : 1;
}

bool fs_tmp_set_type(struct fs_ctx *ctx, struct fs_node *node, const char *name, int *ret)
{
	enum model_type type;
	bool tmp;

	*ret = model_type_parse(name, &type) < 0 ? -EINVAL : 0;
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp && *ret == 0)
		node->tmp->type = type;
	pthread_mutex_unlock(&ctx->lock);
	if (!tmp)
		*ret = 0;
	return tmp;
}

bool fs_tmp_set_attr(struct fs_ctx *ctx, struct fs_node *node, const struct model_attr *set,
		     unsigned unset)
{
	struct fs_tmpfile *t;
	unsigned fields = MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID;

	pthread_mutex_lock(&ctx->lock);
	t = node->tmp;
	if (t) {
		if (set->have & MODEL_ATTR_MODE)
			t->set.mode = set->mode;
		if (set->have & MODEL_ATTR_UID)
			t->set.uid = set->uid;
		if (set->have & MODEL_ATTR_GID)
			t->set.gid = set->gid;
		t->set.have = (t->set.have & ~unset) | (set->have & fields);
		t->unset = (t->unset & ~set->have) | (unset & fields);
	}
	pthread_mutex_unlock(&ctx->lock);
	return t != NULL;
}

bool fs_tmp_set_deadline(struct fs_ctx *ctx, struct fs_node *node, int64_t deadline_ns)
{
	bool tmp;

	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp)
		node->tmp->deadline_ns = deadline_ns;
	pthread_mutex_unlock(&ctx->lock);
	return tmp;
}
