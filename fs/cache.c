/*
 * fs/cache.c - the page-cache and reader rules: which version of a leaf a
 * read that reaches the daemon serves, when the kernel keeps its pages,
 * and what an open descriptor answers once its name is gone.
 *
 * The kernel's page cache is one per node and shared by every open of it,
 * readers and writers alike, as on a local filesystem. A read that misses
 * it is served from the leaf's newest version: the shared write buffer
 * when a writer is open (what the pages already hold), else the text in
 * the store, kept in the reader's buffer while the leaf is unchanged. Each
 * read call is served from one buffer under one lock, so it never mixes
 * two versions. Once the name is unlinked or renamed over, the reader
 * keeps the version it last held, as an open inode keeps its content.
 *
 * On etcd the size the kernel holds (a getattr or lookup answer) and the
 * text a read is served can be two versions: the kernel copies up to its
 * size, so a reader got a value cut short, or NULs up to an older, longer
 * size (docs/ETCD.md, section 8c). A reader of a leaf that changed lately
 * reads past the page cache there (fs_cache_reader_direct), each pass
 * from offset 0 one version (pass_goes_on).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

/* node->changed_ns's clock: a change of the wall clock moves no change. */
static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void fs_cache_forget(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	node->cache_known = false;
	node->changed_ns = node->committed_ns = mono_ns();
	pthread_mutex_unlock(&ctx->lock);
	fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_DATA);
}

void fs_cache_changed(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	node->changed_ns = mono_ns();
	pthread_mutex_unlock(&ctx->lock);
}

void fs_cache_committed(struct fs_ctx *ctx, struct fs_node *node, bool created)
{
	bool filled;

	pthread_mutex_lock(&ctx->lock);
	filled = node->cache_known;
	pthread_mutex_unlock(&ctx->lock);
	if (created && !filled)
		return;	/* the pages hold what was written, which is what was committed */
	fs_cache_forget(ctx, node);
}

/*
 * ctx->push_lock and the write section held. Reads the leaf at path and
 * stores its text in the kernel's pages; *n gets the version stored (the
 * stat comes first: text read after it is never older). 0 when stored.
 */
static int push_store(struct fs_ctx *ctx, struct fs_node *node, const char *path,
		      struct model_node *n)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);
	char *buf = NULL;
	size_t len = 0;
	int ret = model_stat(ctx->model, path, 0, n, NULL);

	if (ret < 0)
		return ret;
	if (n->kind != MODEL_KIND_LEAF || n->derived || n->size > FS_PUSH_SIZE_MAX)
		return -EAGAIN;
	ret = model_read_all(ctx->model, path, &buf, &len, NULL);
	if (ret < 0)
		return ret;
	if (len != n->size) {
		free(buf);
		return -EAGAIN;
	}
	bv.buf[0].size = len;
	bv.buf[0].mem = buf;
	ret = len ? fuse_lowlevel_notify_store(ctx->se, fs_node_ino(ctx, node), 0, &bv, 0) : 0;
	free(buf);
	return ret;
}

/* One leaf of a push (node pinned by the caller): see fs_cache_push_dir. */
static void push_leaf(struct fs_ctx *ctx, struct fs_node *node)
{
	struct model_node n;
	char *path = NULL;
	bool go;
	int ret;

	pthread_mutex_lock(&ctx->push_lock);
	/* exclusive: no commit of ours runs while the text is read and stored */
	ret = fs_write_path_excl(ctx, node, NULL, &path);
	if (ret < 0)
		goto out_unlock;
	pthread_mutex_lock(&ctx->lock);
	go = node->hashed && node->nlookup > 0 && !node->wfile && !node->npend && !node->tmp &&
	     !node->want_type && !node->cache_known;
	pthread_mutex_unlock(&ctx->lock);
	ret = go ? push_store(ctx, node, path, &n) : -EAGAIN;
	if (ret == 0) {
		/* the pages hold this version now: the next open keeps them */
		pthread_mutex_lock(&ctx->lock);
		node->cache_known = true;
		node->cache_mtime = n.mtime_ns;
		node->cache_size = n.size;
		pthread_mutex_unlock(&ctx->lock);
		/* counted once recorded: a test that saw the count may open it */
		fs_stat_add(ctx, FS_STAT_STORE_BYTES, n.size);
		fs_stat_add(ctx, FS_STAT_STORE, 1);
	}
	fs_write_end(ctx, -1);	/* nothing committed: any move of the store was someone else */
	free(path);
out_unlock:
	pthread_mutex_unlock(&ctx->push_lock);
	if (ret < 0 && ret != -EAGAIN && ret != -ENOENT)
		fs_trace(ctx, "push %lu: %s", (unsigned long)fs_node_ino(ctx, node), strerror(-ret));
}

/* The names of a directory's small leaves (model_list_fill callback). */
struct push_names {
	char **v;
	size_t n, cap;
};

static int push_collect_fn(void *arg, const char *name, const struct model_node *node)
{
	struct push_names *l = arg;

	if (node->kind != MODEL_KIND_LEAF || node->derived || node->size > FS_PUSH_SIZE_MAX)
		return 0;
	if (l->n == FS_PUSH_ENTRIES_MAX)
		return 1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strdup(name);
	return l->v[l->n] ? (l->n++, 0) : 1;
}

void fs_cache_push_dir(struct fs_ctx *ctx, struct fs_node *dir)
{
	struct push_names names = { NULL, 0, 0 };
	struct model_list *list;
	char *path;
	int ret = fs_node_path(ctx, dir, NULL, &path);

	if (ret == 0) {
		ret = model_list_open(ctx->model, path, &list, NULL);
		free(path);
	}
	if (ret == 0) {
		model_list_fill(list, push_collect_fn, &names);	/* what it found before a failure */
		model_list_close(list);
	}
	for (size_t i = 0; i < names.n; i++) {
		struct fs_node *child;

		if (fs_inval_waiting(ctx)) {
			/* an invalidation first: the rest of dir (the pushed are skipped) later */
			while (i < names.n)
				free(names.v[i++]);
			free(names.v);
			fs_inval_push(ctx, dir);	/* takes over the ref; QUEUED stays */
			return;
		}
		pthread_mutex_lock(&ctx->lock);
		child = dir->hashed || dir == &ctx->inodes.root ?
			fs_node_child_locked(ctx, dir, names.v[i], false) : NULL;
		if (child && child->nlookup > 0 && !child->cache_known)
			fs_node_ref_locked(child);
		else
			child = NULL;
		pthread_mutex_unlock(&ctx->lock);
		free(names.v[i]);
		if (!child)
			continue;	/* not known to the kernel, or its pages were filled */
		push_leaf(ctx, child);
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, child);
		pthread_mutex_unlock(&ctx->lock);
	}
	free(names.v);
	pthread_mutex_lock(&ctx->lock);
	if (dir->push_state == FS_PUSH_QUEUED)
		dir->push_state = FS_PUSH_NONE;	/* until the next listing */
	fs_node_unref_locked(ctx, dir);
	pthread_mutex_unlock(&ctx->lock);
	fs_stat_add(ctx, FS_STAT_STORE_DIRS, 1);
}

void fs_cache_push_siblings(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_node *dir;

	pthread_mutex_lock(&ctx->lock);
	dir = node->hashed ? node->parent : NULL;
	if (dir && dir->push_state == FS_PUSH_LISTED) {
		dir->push_state = FS_PUSH_QUEUED;
		fs_node_ref_locked(dir);
	} else {
		dir = NULL;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (dir)
		fs_inval_push(ctx, dir);
}

int fs_file_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	struct model_error err = { 0 };
	char *buf = NULL;
	size_t len = 0;
	int ret = model_read_all(ctx->model, path, &buf, &len, &err);

	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	free(f->buf);
	f->buf = buf;
	f->len = len;
	f->cap = len + 1;
	return 0;
}

/* fs_file_take_text's stream: what the model writes goes to the end of f's buffer. */
struct take_text {
	struct fs_file *f;
	int err;	/* the first append that failed (a full disk for a spill file) */
};

static ssize_t take_text_write(void *cookie, const char *buf, size_t size)
{
	struct take_text *tt = cookie;
	int ret = fs_file_append(tt->f, buf, size);

	if (ret < 0) {
		if (!tt->err)
			tt->err = ret;
		errno = -ret;
		return -1;
	}
	return (ssize_t)size;
}

/* f->lock held. Empties f's buffer (a spill file too). */
static void take_text_drop(struct fs_file *f)
{
	fs_spill_release(f);
	free(f->buf);
	f->buf = NULL;
	f->len = f->cap = 0;
}

/* f->lock held. One rendering of path into f's empty buffer, for who. */
static int take_text_once(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			  const struct model_cred *who, struct model_error *err)
{
	struct take_text tt = { .f = f };
	FILE *out = fopencookie(&tt, "w", (cookie_io_functions_t){ .write = take_text_write });
	int ret;

	if (!out)
		return -ENOMEM;
	ret = model_read_to_as(ctx->model, path, out, who, err);
	if (fclose(out) != 0 && ret == 0)
		ret = -EIO;
	if (ret < 0 && tt.err)
		ret = tt.err;	/* what the buffer could not take, not the stream's EIO */
	if (ret < 0)
		take_text_drop(f);
	return ret;
}

int fs_file_take_text(struct fs_ctx *ctx, struct fs_file *f, const char *path,
		      const struct model_cred *who)
{
	struct model_error err = { 0 };
	int ret;

	pthread_mutex_lock(&f->lock);
	ret = take_text_once(ctx, f, path, who, &err);
	if (ret == -ENOSPC || ret == -EDQUOT) {
		/* no room for a spill file: held in memory, as a read needs no disk */
		fs_log(ctx, LOG_WARNING, "%s: no room on the store's disk for a spill file; "
		       "the text is held in memory", path);
		f->heap_only = true;
		ret = take_text_once(ctx, f, path, who, &err);
	}
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

int fs_cache_leaf_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			   struct model_node *n)
{
	int ret = fs_file_snapshot(ctx, f, path);

	if (ret == 0 && f->len != n->size && model_stat(ctx->model, path, 0, n, NULL) < 0)
		n->size = f->len;
	if (ret == 0) {
		f->kind = FS_FILE_READER;
		f->open_mtime = n->mtime_ns;
		f->open_size = n->size;
	}
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

bool fs_cache_reader_direct(struct fs_ctx *ctx, struct fs_node *node,
			    const struct model_node *n)
{
	int64_t now = mono_ns();
	bool direct;

	if (ctx->reads_locally)
		return false;
	pthread_mutex_lock(&ctx->lock);
	direct = (node->changed_ns && now - node->changed_ns < FS_DIRECT_HOT_NS) ||
		 (node->cache_known && (node->cache_mtime != n->mtime_ns ||
					node->cache_size != n->size));
	if (direct)
		node->cache_known = false;	/* opened without keep_cache: the pages go */
	pthread_mutex_unlock(&ctx->lock);
	return direct;
}

void fs_cache_reader_deferred(struct fs_file *f, const struct model_node *n, bool lazy)
{
	f->kind = lazy ? FS_FILE_READER_LAZY : FS_FILE_READER_BIG;
	f->open_mtime = n->mtime_ns;
	f->open_size = n->size;
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

/* Replies with the part of buf (len bytes) at off, at most size bytes. */
static void reply_slice(fuse_req_t req, const char *buf, size_t len, size_t size, off_t off)
{
	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, buf + off, len - (size_t)off < size ? len - (size_t)off : size);
}

/* The leaf's shared writer, with one more ref; NULL when none is open. */
static struct fs_file *writer_get(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_file *w;

	pthread_mutex_lock(&ctx->lock);
	w = node->wfile;
	if (w)
		w->refs++;
	pthread_mutex_unlock(&ctx->lock);
	return w;
}

/*
 * f->lock held. Whether a direct reader's read past offset 0 continues the
 * pass its last read at 0 began (FS_PASS_NS): not once a commit through
 * this mount came since, which a read after it must see, as on a local
 * filesystem; another host's commits have no such order with our reads.
 */
static bool pass_goes_on(struct fs_ctx *ctx, struct fs_file *f)
{
	int64_t now = mono_ns();
	bool on;

	if (f->kind != FS_FILE_READER || now - f->pass_ns >= FS_PASS_NS)
		return false;
	pthread_mutex_lock(&ctx->lock);
	on = f->node->committed_ns < f->pass_ns;
	pthread_mutex_unlock(&ctx->lock);
	return on;
}

/*
 * f->lock held. Serves a read of the leaf at path from the store's newest
 * version: from f's buffer while the leaf is unchanged, else from a new
 * one (or, above FS_SNAPSHOT_MAX, by one model_read: one transaction).
 * 1 when the leaf is gone (the caller serves what f holds), 0 when replied.
 */
static int reader_serve_store(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			      fuse_req_t req, size_t size, off_t off)
{
	struct model_error err = { 0 };
	struct model_node n;
	char *buf;
	ssize_t got;
	int ret;

	if (f->direct && off == 0)
		f->pass_ns = mono_ns();
	else if (f->direct && pass_goes_on(ctx, f)) {
		/* the rest of a pass begun at 0: the version it began with */
		reply_slice(req, f->buf, f->len, size, off);
		return 0;
	}
	ret = model_stat(ctx->model, path, 0, &n, &err);
	if (ret == -ENOENT || (ret == 0 && n.kind != MODEL_KIND_LEAF))
		return 1;	/* removed (or replaced by a directory) behind us */
	if (ret < 0)
		goto out_err;
	if (n.size <= FS_SNAPSHOT_MAX) {
		if (f->kind != FS_FILE_READER || f->open_mtime != n.mtime_ns ||
		    f->open_size != n.size) {
			ret = fs_cache_leaf_snapshot(ctx, f, path, &n);
			if (ret == -ENOENT)
				return 1;
			if (ret < 0)
				return ret;
		}
		fs_trace(ctx, "read %s at %lld: %zu bytes of mtime %lld%s", path, (long long)off,
			 (uint64_t)off < f->len ? f->len - (size_t)off : 0, (long long)f->open_mtime,
			 f->direct ? " (direct)" : "");
		reply_slice(req, f->buf, f->len, size, off);
		return 0;
	}
	/* a big leaf: one version per call, nothing kept */
	free(f->buf);
	f->buf = NULL;
	f->len = f->cap = 0;
	fs_cache_reader_deferred(f, &n, false);
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	got = model_read(ctx->model, path, buf, size, (uint64_t)off, &err);
	if (got >= 0)
		fuse_reply_buf(req, buf, (size_t)got);
	free(buf);
	if (got >= 0)
		return 0;
	ret = (int)got;
out_err:
	fs_log_model(ctx, ret, &err, path);
	return ret;
}

int fs_cache_read(struct fs_ctx *ctx, struct fs_file *f, fuse_req_t req, size_t size,
		  off_t off)
{
	struct fs_file *w = writer_get(ctx, f->node);
	bool unsaved = false;
	char *path;
	int ret;

	if (w) {
		/*
		 * What the kernel's pages hold already: the unsaved content.
		 * Content committed already, or refused by a close, is the
		 * store's business (another commit may have followed: a view's
		 * while this writer's release was still to come).
		 */
		pthread_mutex_lock(&w->lock);
		unsaved = !w->refused && (w->dirty || w->trunc || w->pending);
		if (unsaved)
			reply_slice(req, w->buf, w->len, size, off);
		pthread_mutex_unlock(&w->lock);
		fs_file_put(ctx, w);
		if (unsaved)
			return 0;
	}
	ret = fs_node_path(ctx, f->node, NULL, &path);
	pthread_mutex_lock(&f->lock);
	if (ret == 0) {
		ret = reader_serve_store(ctx, f, path, req, size, off);
		free(path);
	} else if (ret == -ENOENT) {
		ret = 1;
	}
	if (ret == 1) {
		/* unlinked or renamed over: the version this descriptor last held */
		ret = f->kind == FS_FILE_READER ? 0 : -ENOENT;
		if (ret == 0)
			reply_slice(req, f->buf, f->len, size, off);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* ctx->lock held. Any open file of node, with one more ref; the writer first. */
static struct fs_file *open_file_get_locked(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_file *f = node->wfile;

	for (struct fs_file *g = ctx->files; g && !f; g = g->next)
		if (g->node == node)
			f = g;
	if (f)
		f->refs++;
	return f;
}

int fs_cache_open_stat(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		       struct stat *st)
{
	struct model_node n = { .kind = MODEL_KIND_LEAF };
	struct fs_file *f = fs_fi_file(fi);

	pthread_mutex_lock(&ctx->lock);
	if (f && f->node == node)
		f->refs++;
	else
		f = open_file_get_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	if (!f)
		return -ENOENT;
	pthread_mutex_lock(&f->lock);
	n.ino = f->ino;
	if (f->kind == FS_FILE_WRITER || f->kind == FS_FILE_READER || fs_file_is_view(f) ||
	    f->kind == FS_FILE_TMP) {
		n.size = f->len;
		n.mtime_ns = f->dirty || f->trunc || fs_file_is_view(f) ||
			     f->kind == FS_FILE_TMP ? f->wmtime_ns : f->open_mtime;
	} else {
		n.size = f->open_size;
		n.mtime_ns = f->open_mtime;
	}
	pthread_mutex_unlock(&f->lock);
	fs_file_put(ctx, f);
	fs_stat_fill(ctx, &n, st);
	st->st_nlink = 0;	/* no name leads to it any more */
	return 0;
}
