/*
 * fs/dir.c - directory reading (struct fs_dir): a streamed listing per
 * open directory, readdir and readdirplus (which counts lookups), seeking;
 * leaves created through the mount and still open are listed after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

/*
 * One open directory (fi->fh): a streamed listing. No lock: the kernel sends
 * one readdir at a time per open directory (it holds the file's position
 * lock), and releasedir after the last.
 */
struct fs_dir {
	enum fs_handle_type type;	/* fixed */
	struct fs_node *node;	/* fixed; holds one ref */
	struct model_list *list;
	off_t pos;		/* offset of the next entry: 0 ".", 1 "..", 2 + i child i */
	/*
	 * Created leaves still open at opendir (not in the store yet, listed
	 * by this mount as ext4 lists an open new file), after the store's
	 * children: pending i is at offset store_end + i.
	 */
	char **pend;
	size_t npend;
	off_t store_end;	/* 0 until the store's children have all been read */
};

static void dir_pend_free(struct fs_dir *d)
{
	for (size_t i = 0; i < d->npend; i++)
		free(d->pend[i]);
	free(d->pend);
	d->pend = NULL;
	d->npend = 0;
}

/* ctx->lock held. The names of dir's created leaves not committed yet. */
static int dir_pend_collect_locked(struct fs_ctx *ctx, struct fs_dir *d)
{
	size_t cap = 0;

	for (struct fs_file *f = ctx->files; f; f = f->next) {
		struct fs_node *n = f->node;
		char **grown;

		if (!f->pend_leaf || n->wfile != f || !n->hashed || n->parent != d->node)
			continue;
		if (d->npend == cap) {
			cap = cap ? cap * 2 : 8;
			grown = realloc(d->pend, cap * sizeof(*grown));
			if (!grown)
				return -ENOMEM;
			d->pend = grown;
		}
		d->pend[d->npend] = strdup(n->name);
		if (!d->pend[d->npend])
			return -ENOMEM;
		d->npend++;
	}
	return 0;
}

void fs_op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	struct fs_dir *d;
	uint64_t gen;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "opendir %s", path);
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto out_free;
	}
	d->type = FS_HANDLE_DIR;
	gen = model_version(ctx->model);
	ret = model_list_open(ctx->model, path, &d->list, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		free(d);
		goto out_free;
	}
	d->node = node;
	pthread_mutex_lock(&ctx->lock);
	ret = dir_pend_collect_locked(ctx, d);
	if (ret < 0) {
		pthread_mutex_unlock(&ctx->lock);
		dir_pend_free(d);
		model_list_close(d->list);
		free(d);
		goto out_free;
	}
	fs_node_ref_locked(node);
	/* The kernel's cached listing is good while nobody has committed since,
	 * and no child it shows has expired. */
	fi->keep_cache = node->dir_gen == gen + 1 && fs_ttl_before(node->dir_until);
	node->dir_gen = gen + 1;
	if (!fi->keep_cache)
		node->dir_until = 0;	/* the new listing sets it */
	/* a listing with open new leaves changes at their close: never cached */
	if (d->npend) {
		fi->keep_cache = 0;
		node->dir_gen = 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	fi->cache_readdir = d->npend == 0;
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) < 0) {
		dir_pend_free(d);
		model_list_close(d->list);
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, node);
		pthread_mutex_unlock(&ctx->lock);
		free(d);
	}
out_free:
	free(path);
	if (ret < 0)
		fs_reply_err(req, ret);
}

struct dir_fill {
	fuse_req_t req;
	struct fs_ctx *ctx;
	struct fs_dir *d;
	bool plus;
	uint64_t gen;		/* the store's generation before the listing was read */
	char *buf;
	size_t size, used;
	off_t skip_to;		/* seeking: children to pass over */
	int err;
	struct fs_node **counted;	/* plus: the lookups counted, undone if the reply fails */
	size_t ncounted, capcounted;
};


/* ctx->lock held. Records a lookup counted for the reply; false: no memory. */
static bool dir_count_lookup(struct dir_fill *s, struct fs_node *child)
{
	if (s->ncounted == s->capcounted) {
		size_t cap = s->capcounted ? s->capcounted * 2 : 64;
		struct fs_node **c = realloc(s->counted, cap * sizeof(*c));

		if (!c)
			return false;
		s->counted = c;
		s->capcounted = cap;
	}
	s->counted[s->ncounted++] = child;
	child->nlookup++;
	return true;
}

static int dir_skip_fn(void *arg, const char *name, const struct model_node *node)
{
	struct dir_fill *s = arg;

	(void)name;
	(void)node;
	if (s->d->pos >= s->skip_to)
		return 1;
	s->d->pos++;
	return 0;
}

/* Moves the listing to offset off (a seekdir or a rewind). */
static int dir_seek(struct dir_fill *s, off_t off)
{
	int ret;

	model_list_rewind(s->d->list);
	s->d->store_end = 0;	/* counted again: the store may have changed */
	s->d->pos = off < 2 ? off : 2;
	if (off <= 2)
		return 0;
	s->skip_to = off;
	model_list_want_subdirs(s->d->list, false);	/* names passed over */
	ret = model_list_fill(s->d->list, dir_skip_fn, s);
	if (ret == 0) {		/* past the store's children: into the open new leaves */
		s->d->store_end = s->d->pos;
		s->d->pos = off;
	}
	return ret < 0 ? ret : 0;
}

/* Adds one entry; false when the buffer is full. ctx->lock held in plus mode. */
static bool dir_add(struct dir_fill *s, const char *name, struct fuse_entry_param *e)
{
	size_t room = s->size - s->used, need;

	if (s->plus)
		need = fuse_add_direntry_plus(s->req, s->buf + s->used, room, name, e,
					      s->d->pos + 1);
	else
		need = fuse_add_direntry(s->req, s->buf + s->used, room, name, &e->attr,
					 s->d->pos + 1);
	if (need > room)
		return false;
	s->used += need;
	s->d->pos++;
	return true;
}

/*
 * ctx->lock held, released. A removal held in a row (rmhold.c): still
 * stored, not listed; its offset is kept, so that seeking counts as the
 * store's listing does.
 */
static int dir_pass_held(struct dir_fill *s)
{
	pthread_mutex_unlock(&s->ctx->lock);
	s->d->pos++;
	return 0;
}

static int dir_fill_fn(void *arg, const char *name, const struct model_node *node)
{
	struct dir_fill *s = arg;
	struct fs_ctx *ctx = s->ctx;
	struct fuse_entry_param e;
	struct fs_node *child;
	bool vol;

	memset(&e, 0, sizeof(e));
	fs_stat_fill(ctx, node, &e.attr);
	if (node->expires_ns) {
		pthread_mutex_lock(&ctx->lock);
		if (!s->d->node->dir_until || node->expires_ns < s->d->node->dir_until)
			s->d->node->dir_until = node->expires_ns;
		pthread_mutex_unlock(&ctx->lock);
	}
	if (!s->plus) {
		/* d_ino as stat shows it: a renamed node keeps its number */
		pthread_mutex_lock(&ctx->lock);
		child = fs_node_child_locked(ctx, s->d->node, name, false);
		if (child && child->rm_held)
			return dir_pass_held(s);
		if (child)
			e.attr.st_ino = fs_node_st_ino_locked(ctx, child, e.attr.st_ino);
		pthread_mutex_unlock(&ctx->lock);
		return dir_add(s, name, &e) ? 0 : 1;
	}
	pthread_mutex_lock(&ctx->lock);
	child = fs_node_child_locked(ctx, s->d->node, name, true);
	if (!child) {
		pthread_mutex_unlock(&ctx->lock);
		s->err = -ENOMEM;
		return 1;
	}
	if (child->rm_held)
		return dir_pass_held(s);
	e.attr.st_ino = fs_node_st_ino_locked(ctx, child, e.attr.st_ino);
	vol = fs_stat_pending_locked(ctx, child, true, &e.attr, NULL);
	child->kind_known = true;
	child->is_dir = fs_kind_is_dir(node->kind);
	child->seen_type = node->kind == MODEL_KIND_LEAF ? node->type : 0;
	vol = vol || node->derived || node->expires_ns;	/* @ views, expiring nodes */
	e.ino = fs_node_ino(ctx, child);
	e.entry_timeout = vol ? 0.0 : ctx->entry_timeout;
	/*
	 * A directory's nlink is known when a stat counted it at this
	 * generation, or when the listing knew it (an empty one; on etcd, from
	 * the children space; on LMDB, counted within the listing's budget),
	 * which spares `ls -l` a getattr per directory; else stat asks.
	 */
	if (fs_kind_is_dir(node->kind) && child->nlink_gen == s->gen + 1) {
		e.attr.st_nlink = child->nlink;
	} else if (fs_kind_is_dir(node->kind) && node->subdirs_known) {
		child->nlink = (uint32_t)e.attr.st_nlink;	/* stat need not count it again */
		child->nlink_gen = s->gen + 1;
	} else if (fs_kind_is_dir(node->kind)) {
		vol = true;
	}
	e.attr_timeout = fs_attr_timeout_for(ctx, vol);
	if (!dir_count_lookup(s, child)) {
		fs_node_drop_unused_locked(ctx, child);
		pthread_mutex_unlock(&ctx->lock);
		s->err = -ENOMEM;
		return 1;
	}
	if (!dir_add(s, name, &e)) {
		s->ncounted--;
		child->nlookup--;
		fs_node_drop_unused_locked(ctx, child);
		pthread_mutex_unlock(&ctx->lock);
		return 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

/*
 * The open new leaves after the store's children. One committed or gone
 * since opendir is passed over (its offset kept): it is in the store's
 * children now, which the listing may or may not have shown, as for any
 * file made while a directory is read.
 */
static void dir_fill_pending(struct dir_fill *s)
{
	struct fs_ctx *ctx = s->ctx;
	struct fs_dir *d = s->d;

	pthread_mutex_lock(&ctx->lock);
	while (d->pos >= d->store_end && (size_t)(d->pos - d->store_end) < d->npend) {
		const char *name = d->pend[d->pos - d->store_end];
		struct fs_node *child = fs_node_child_locked(ctx, d->node, name, false);
		struct fuse_entry_param e;

		if (!child || !child->wfile || !child->wfile->pend_leaf) {
			d->pos++;
			continue;
		}
		memset(&e, 0, sizeof(e));
		fs_stat_pending_locked(ctx, child, false, &e.attr, NULL);
		e.ino = fs_node_ino(ctx, child);	/* timeouts 0: asked again each time */
		if (s->plus && !dir_count_lookup(s, child)) {
			s->err = -ENOMEM;
			break;
		}
		if (!dir_add(s, name, &e)) {
			if (s->plus) {
				s->ncounted--;
				child->nlookup--;
			}
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
}

/* "." and "..": no lookup is counted for them (ino 0 in readdirplus). */
static bool dir_add_dot(struct dir_fill *s, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.attr.st_mode = S_IFDIR;
	e.attr.st_ino = (ino_t)fs_node_ino(s->ctx, s->d->node);
	return dir_add(s, name, &e);
}

/* A listing the store's damage stopped: said in the log and user.kvfs.error, with the path. */
static void dir_log_damage(struct fs_ctx *ctx, struct fs_dir *d)
{
	struct model_error err = { .msg = "" };
	char *path;

	if (fs_node_path(ctx, d->node, NULL, &path) < 0)
		return;
	snprintf(err.msg, sizeof(err.msg), "%s: cannot list: the store is damaged here: %s; run "
		 "kvfs check", path, model_list_damage(d->list) ? model_list_damage(d->list) :
		 strerror(EIO));
	fs_log_model(ctx, -EIO, &err, path);
	free(path);
}

static void dir_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
		     bool plus)
{
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	struct dir_fill s = { .req = req, .ctx = fs_req_ctx(req), .d = d, .plus = plus,
			      .size = size };
	int ret = 0;

	s.buf = malloc(size ? size : 1);
	if (!s.buf) {
		fs_reply_err(req, -ENOMEM);
		return;
	}
	if (plus)
		s.gen = model_version(s.ctx->model);
	if (off != d->pos)
		ret = dir_seek(&s, off);
	if (ret == 0 && d->pos == 0 && !dir_add_dot(&s, "."))
		goto out_reply;
	if (ret == 0 && d->pos == 1 && !dir_add_dot(&s, ".."))
		goto out_reply;
	if (ret == 0 && (!d->store_end || d->pos < d->store_end)) {
		model_list_want_subdirs(d->list, plus);	/* nlink goes out with attributes only */
		ret = model_list_fill(d->list, dir_fill_fn, &s);
		if (ret == 0)
			d->store_end = d->pos;
	}
	if (ret == 0 && s.err == 0 && d->store_end)
		dir_fill_pending(&s);
	if (ret >= 0 && s.err < 0)
		ret = s.err;
	if (ret == -EIO)
		dir_log_damage(s.ctx, d);
out_reply:
	if (plus && s.ncounted) {
		/*
		 * The kernel learns these leaves from the reply: the first open of
		 * one that misses the page cache pushes the others. Marked before
		 * replying: once replied, a releasedir may free d.
		 */
		pthread_mutex_lock(&s.ctx->lock);
		if (d->node->push_state == FS_PUSH_NONE)
			d->node->push_state = FS_PUSH_LISTED;
		pthread_mutex_unlock(&s.ctx->lock);
	}
	if (ret < 0 && s.used == 0) {
		fs_reply_err(req, ret);
	} else if (fuse_reply_buf(req, s.buf, s.used) < 0) {
		/* the kernel never saw these entries: it will not forget them */
		for (size_t i = 0; i < s.ncounted; i++)
			fs_node_forget(s.ctx, fs_node_ino(s.ctx, s.counted[i]), 1);
	}
	free(s.counted);
	free(s.buf);
}

void fs_op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	(void)ino;
	dir_read(req, size, off, fi, false);
}

void fs_op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	dir_read(req, size, off, fi, true);
}

void fs_op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;

	(void)ino;
	dir_pend_free(d);
	model_list_close(d->list);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, d->node);
	pthread_mutex_unlock(&ctx->lock);
	free(d);
	fs_reply_err(req, 0);
}

void fs_op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	int ret;

	(void)datasync;
	(void)fi;
	if (!ctx->read_only)
		fs_held_commit(ctx, true);	/* leaves made by mknod: in the store, then synced */
	ret = fs_rmhold_settle_at(ctx, fs_node_from_ino(ctx, ino), true);	/* held below */
	fs_table_settle(ctx, FS_SETTLE_NOW);	/* `sync MNT`: schemas waiting for rows */
	if (ret == 0 && !ctx->read_only)
		ret = model_sync(ctx->model);
	fs_reply_err(req, ret);
}
