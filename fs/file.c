/*
 * fs/file.c - open files (struct fs_file): open, read, write, flush,
 * release; the one shared write buffer per leaf and its commit in one
 * model_write. What an open makes of a leaf or view is file_open.c's;
 * which pages and snapshots readers get is cache.c's.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/fs_int.h"

struct fs_file *fs_file_new(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->type = FS_HANDLE_FILE;
	f->node = node;
	f->refs = 1;
	f->spill_dir = ctx->store_dir;
	f->spill_fd = -1;
	f->stage_gen = model_generation(ctx->model);
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_lock(&ctx->lock);
	fs_node_ref_locked(node);
	f->next = ctx->files;
	if (ctx->files)
		ctx->files->prev = f;
	ctx->files = f;
	pthread_mutex_unlock(&ctx->lock);
	return f;
}

/* ctx->lock held. Sets f->pend, keeping its node's count of pending files. */
static void file_set_pend_locked(struct fs_file *f, bool pend)
{
	if (pend && !f->pend)
		f->node->npend++;
	else if (!pend && f->pend) {
		assert(f->node->npend > 0);
		f->node->npend--;
	}
	f->pend = pend;
}

/* ctx->lock held. Drops a ref; true when the caller must free f. */
static bool file_unref_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	assert(f->refs > 0);
	if (--f->refs > 0)
		return false;
	if (f->node->wfile == f)
		f->node->wfile = NULL;
	if (f->prev)
		f->prev->next = f->next;
	else
		ctx->files = f->next;
	if (f->next)
		f->next->prev = f->prev;
	file_set_pend_locked(f, false);
	fs_node_unref_locked(ctx, f->node);
	return true;
}

static void file_free(struct fs_file *f)
{
	pthread_mutex_destroy(&f->lock);
	fs_spill_release(f);
	free(f->who_groups);
	free(f->buf);
	free(f);
}

void fs_file_put(struct fs_ctx *ctx, struct fs_file *f)
{
	bool last;

	pthread_mutex_lock(&ctx->lock);
	last = file_unref_locked(ctx, f);
	pthread_mutex_unlock(&ctx->lock);
	if (last)
		file_free(f);
}

void fs_file_handle_add(struct fs_ctx *ctx, struct fs_file *f)
{
	pthread_mutex_lock(&ctx->lock);
	f->handles++;
	pthread_mutex_unlock(&ctx->lock);
}

/* Ends one of f's handles (not its ref): true when it was the last. */
static bool file_handle_end(struct fs_ctx *ctx, struct fs_file *f)
{
	bool last;

	pthread_mutex_lock(&ctx->lock);
	assert(f->handles > 0);
	last = --f->handles == 0;
	pthread_mutex_unlock(&ctx->lock);
	return last;
}

void fs_file_handle_lost(struct fs_ctx *ctx, struct fs_file *f)
{
	file_handle_end(ctx, f);
	fs_file_put(ctx, f);
}

/*
 * f->lock held. The mode and owner getattr shows for a leaf writer: a
 * created leaf's, then the deferred chmod/chown (a dropped field shows the
 * default).
 */
static struct model_attr file_pend_attr(const struct fs_ctx *ctx, const struct fs_file *f)
{
	const unsigned fields = MODEL_ATTR_MODE | MODEL_ATTR_UID | MODEL_ATTR_GID;
	struct model_attr a = { 0 };
	unsigned set = f->want_set.have & fields;

	if (f->kind != FS_FILE_WRITER)
		return a;
	if (f->pending)
		a = f->new_attr;
	a.have &= fields;
	a.have |= f->want_unset | set;
	if (f->want_unset & MODEL_ATTR_MODE)
		a.mode = fs_mode_default(false);
	if (f->want_unset & MODEL_ATTR_UID)
		a.uid = ctx->uid;
	if (f->want_unset & MODEL_ATTR_GID)
		a.gid = ctx->gid;
	if (set & MODEL_ATTR_MODE)
		a.mode = f->want_set.mode;
	if (set & MODEL_ATTR_UID)
		a.uid = f->want_set.uid;
	if (set & MODEL_ATTR_GID)
		a.gid = f->want_set.gid;
	/* utimens: an atime kept apart, or one back to following the mtime */
	if (f->want_set.have & MODEL_ATTR_ATIME) {
		a.have |= MODEL_ATTR_ATIME;
		a.atime_ns = f->want_set.atime_ns;
	} else if (f->want_unset & MODEL_ATTR_ATIME) {
		a.have |= MODEL_ATTR_ATIME;
		a.atime_ns = f->wmtime_ns;
	}
	return a;
}

void fs_file_publish(struct fs_ctx *ctx, struct fs_file *f)
{
	struct model_attr a = file_pend_attr(ctx, f);
	/* content refused at a close (or no JSON): what getattr shows is the store's */
	bool shown = !f->refused && !f->empty_told;

	pthread_mutex_lock(&ctx->lock);
	file_set_pend_locked(f, shown && (f->pending || ((f->dirty || f->trunc) &&
							 f->kind != FS_FILE_VIEW_APPEND)));
	f->pend_view = f->writable && fs_file_is_view(f) && f->pending;
	f->pend_leaf = shown && f->kind == FS_FILE_WRITER && f->pending;
	f->pend_ino = f->ino;
	f->pend_attr = a;
	f->pend_len = f->len;
	f->pend_mtime = f->wmtime_ns;
	pthread_mutex_unlock(&ctx->lock);
}

/* Room for len bytes in f's buffer: the heap, or past FS_SPILL_MIN a spill file. */
static int file_reserve(struct fs_file *f, size_t len)
{
	size_t cap = f->cap ? f->cap : 4096;
	char *buf;

	if (len <= f->cap)
		return 0;
	while (cap < len)
		cap *= 2;
	if (f->spilled || (cap > FS_SPILL_MIN && !f->heap_only))
		return fs_spill_grow(f, cap);	/* big: on disk, not in memory */
	buf = realloc(f->buf, cap);
	if (!buf)
		return -ENOMEM;
	f->buf = buf;
	f->cap = cap;
	return 0;
}

int fs_file_append(struct fs_file *f, const void *data, size_t size)
{
	size_t start = f->len;
	int ret = file_reserve(f, start + size);

	if (ret == 0 && f->spilled)
		ret = fs_spill_write(f, data, size, start);
	else if (ret == 0)
		memcpy(f->buf + start, data, size);
	if (ret == 0)
		f->len = start + size;
	return ret;
}

int fs_file_resize(struct fs_file *f, size_t len)
{
	int ret;

	if (len > FS_FILE_MAX)
		return -EFBIG;
	f->refused = 0;
	ret = file_reserve(f, len);
	if (ret < 0)
		return ret;
	if (len > f->len && f->spilled) {
		ret = fs_spill_zero_gap(f);
		if (ret < 0)
			return ret;
	} else if (len > f->len) {
		memset(f->buf + f->len, 0, len - f->len);
	}
	f->len = len;
	if (f->spilled && len > f->spill_end)
		f->spill_end = len;	/* callers may write these bytes through buf */
	return 0;
}

/*
 * f->lock held. Whether the leaf f creates went with a directory another
 * process removed since the open. Once found, for good: a rename of its
 * directory after (the rename moves the one made again) gives it a path
 * no removal since the open names.
 */
static bool file_stage_gone(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	if (!f->stage_gone)
		f->stage_gone = fs_parent_gone(ctx, path, f->stage_gen);
	return f->stage_gone;
}

/*
 * f->lock held. A leaf writer's commit: content, type, and what was set on
 * the descriptor (mtime, mode, owner), creating the leaf when it is
 * pending, all in one transaction.
 */
static int file_commit_leaf(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			    enum model_type type, struct model_error *err)
{
	struct model_file_commit c = { .type = type, .create = f->pending,
				       .excl = f->pending && f->excl,
				       .new_attr = f->new_attr, .mtime_set = f->want_mtime,
				       .mtime_ns = f->wmtime_ns, .set = f->want_set,
				       .unset = f->want_unset,
				       .deadline_ns = f->want_deadline_ns,
				       .flags = f->spilled ? MODEL_WRITE_MAPPED : 0 };

	int ret;

	/*
	 * A leaf this writer makes: not in a directory another process
	 * removed since the open, even if one was made again at its path
	 * (the file went with the old one, as on unlink).
	 */
	if (c.create && file_stage_gone(ctx, f, path))
		return fs_parent_gone_error(path, err);
	ret = model_write_file(ctx->model, path, f->len ? f->buf : "", f->len, &c, err);
	/*
	 * Removed by another process after this mount last saw it (an etcd
	 * mount sees that once its watch does): a writer that holds only
	 * what it was given (`echo c > f`, an editor's O_TRUNC save) says
	 * what f is from its close on, and puts it back, with the defaults
	 * of a new leaf. One that started from the stored text is dropped
	 * by the caller, as on unlink. Its directory removed by another
	 * since the open: dropped with it, ESTALE.
	 */
	if (ret == -ENOENT && !c.create && !f->loaded) {
		if (file_stage_gone(ctx, f, path))
			return fs_parent_gone_error(path, err);
		c.create = true;
		memset(err, 0, sizeof(*err));
		ret = model_write_file(ctx->model, path, f->len ? f->buf : "", f->len, &c, err);
	}
	return ret;
}

/*
 * f->lock held. On whose behalf a view writer commits: its opener. A view
 * writer opened without one (none is: fs_file_set_opener) is checked as
 * nobody's, so that a missed open fails closed.
 */
static const struct model_cred *file_who(const struct fs_file *f)
{
	static const struct model_cred nobody = { .uid = (uid_t)-1, .gid = (gid_t)-1,
						  .owner_uid = (uid_t)-2,
						  .owner_gid = (gid_t)-2 };

	return f->who_set ? &f->who : &nobody;
}

/*
 * f->lock held. A leaf created with O_TRUNC and not written (`: > f`) is
 * committed empty at release, when nobody hears a refusal: its flush asks
 * whether the model would take the empty value, so that close reports
 * what release will refuse (an integer column: nothing is stored).
 */
static int file_check_empty_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	struct model_file_commit c = { .create = true, .new_attr = f->new_attr };
	struct model_error err = { 0 };
	char *path;
	int ret;

	if (f->gone_told)
		return -ESTALE;
	ret = fs_write_path_leaf(ctx, f->node, &path);
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	pthread_mutex_lock(&ctx->lock);
	c.type = f->node->want_type;
	pthread_mutex_unlock(&ctx->lock);
	if (file_stage_gone(ctx, f, path)) {
		/* gone with its directory: release drops it, and close says so */
		ret = fs_parent_gone_error(path, &err);
	} else {
		ret = model_write_file_check(ctx->model, path, "", 0, &c, &err);
		if (ret < 0 && c.type && err.reason == MODEL_REASON_TYPE_MISMATCH) {
			c.type = 0;	/* as the commit: the type set does not fit, inferred instead */
			ret = model_write_file_check(ctx->model, path, "", 0, &c, &err);
		}
	}
	fs_write_end_leaf(ctx);
	if (ret < 0 && ret != -ENOENT)
		fs_log_model(ctx, ret, &err, path);
	f->gone_told = ret == -ESTALE && f->stage_gone;
	free(path);
	return ret == -ENOENT ? 0 : ret;
}

/*
 * f->lock held. Commits a dirty buffer in one model_write. A file whose name
 * was removed meanwhile is dropped, as on a local filesystem. 0 or -errno
 * (logged: an invalid document's parser message names the path).
 */
static int file_commit_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	bool view = fs_file_is_view(f), leaf = f->kind == FS_FILE_WRITER, type_waits = false;
	struct fs_shape_mark mark;
	unsigned flags = MODEL_WRITE_TEXT |
			 (f->kind == FS_FILE_VIEW_APPEND ? MODEL_WRITE_APPEND_JSON : 0) |
			 (view ? 0 : MODEL_WRITE_NO_CREATE);
	struct model_error err = { 0 };
	enum model_type type;
	char *path;
	int ret;

	if (!f->dirty)
		return 0;
	if (f->refused)
		return f->refused;	/* the same content again: refused without trying it twice */
	if (f->gone_told)
		return -ESTALE;
	if (f->spilled)
		flags |= MODEL_WRITE_MAPPED;
	ret = fs_tmp_flush_locked(ctx, f);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	pthread_mutex_lock(&ctx->lock);
	type = view ? 0 : f->node->want_type;
	pthread_mutex_unlock(&ctx->lock);
	/*
	 * The path is taken inside the write section: a rename or unlink
	 * moves the node table before it ends, so the content never lands
	 * under a name the file no longer has.
	 */
	ret = leaf ? fs_write_path_leaf(ctx, f->node, &path) : fs_write_path(ctx, f->node, NULL, &path);
	if (ret < 0) {
		if (ret == -ENOENT) {
			f->dirty = f->trunc = false;
			fs_file_publish(ctx, f);
			return 0;
		}
		return ret;
	}
	if (leaf) {
		fs_shape_mark(ctx, &mark);
		ret = file_commit_leaf(ctx, f, path, type, &err);
	} else {
		/* a document: each node it changes, on behalf of the view's opener */
		ret = model_write_as(ctx->model, path, f->len ? f->buf : "", f->len, type, flags,
				     file_who(f), &err);
	}
	if (ret < 0 && type && err.reason == MODEL_REASON_TYPE_MISMATCH) {
		/*
		 * The type set on the empty leaf does not fit the text: inferred
		 * instead. Text that is empty waits for content, as a type set
		 * on a stored empty leaf does (xattr.c's want_type_later): the
		 * commit of `: > f` may come after `setfattr` (its release is
		 * the kernel's, in the background).
		 */
		type_waits = f->len == 0;
		if (!type_waits)
			fs_log_model(ctx, ret, &err, path);
		err.msg[0] = '\0';
		ret = leaf ? file_commit_leaf(ctx, f, path, 0, &err) :
		      model_write_as(ctx->model, path, f->len ? f->buf : "", f->len, 0, flags,
				     file_who(f), &err);
	}
	if (leaf && ret == 0)
		fs_shape_carry(ctx, f->node, &mark);
	if (leaf && f->onto_held && ret != -ENOENT && ret != -ESTALE) {
		f->onto_held = false;	/* created onto a held removal: it stands if refused */
		if (ret < 0)
			fs_rmhold_again(ctx, f->node);
	}
	if (!leaf && ret == 0)	/* a document replaced what removals held in it */
		fs_rmhold_view_node_written(ctx, f->node);
	if (leaf)
		fs_write_end_leaf(ctx);	/* after the carry: no rename may move the node meanwhile */
	else
		fs_write_end(ctx, ret);
	if (type && !type_waits)
		fs_want_type_clear(ctx, f->node);	/* one attempt, whatever came of it */
	if (ret == -ENOENT && !view) {
		/* removed by another process since it was opened: dropped, as on unlink */
		f->dirty = f->trunc = false;
		fs_file_publish(ctx, f);
		free(path);
		return 0;
	}
	if (ret < 0) {
		/* still dirty: the next flush or close tries again and reports it */
		if (f->who_set)
			fs_log_model_as(ctx, f->who.uid, ret, &err, path);	/* the opener's */
		else
			fs_log_model(ctx, ret, &err, path);
		/* the text itself is refused: the same text is not parsed again */
		f->refused = view && err.reason == MODEL_REASON_BAD_JSON ? ret : 0;
		f->gone_told = ret == -ESTALE && f->stage_gone;
		free(path);
		return ret;
	}
	fs_trace(ctx, "commit %s (%zu bytes)", path, f->len);
	f->dirty = f->trunc = false;
	f->want_mtime = false;
	f->want_deadline_ns = 0;
	memset(&f->want_set, 0, sizeof(f->want_set));
	f->want_unset = 0;
	if (f->kind == FS_FILE_VIEW_APPEND)
		f->len = 0;
	if (!view)
		fs_cache_committed(ctx, f->node, f->pending);
	f->pending = false;
	if (f->kind == FS_FILE_WRITER)
		fs_node_fresh_set(ctx, f->node, f->writer_pid);
	fs_file_publish(ctx, f);
	fs_inval_after_change(ctx, f->node, view);
	free(path);
	return 0;
}

int fs_node_commit_files(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_file **todo = NULL, *f;
	size_t n = 0, i;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	if (node->npend) {
		todo = calloc(node->npend, sizeof(*todo));
		for (f = ctx->files; todo && f && n < node->npend; f = f->next) {
			if (f->node == node && f->pend) {
				f->refs++;
				todo[n++] = f;
			}
		}
		if (!todo)
			ret = -ENOMEM;
	}
	pthread_mutex_unlock(&ctx->lock);
	for (i = 0; i < n; i++) {
		bool last;
		int r;

		f = todo[i];
		pthread_mutex_lock(&f->lock);
		if (f->trunc)
			f->dirty = true;
		r = file_commit_locked(ctx, f);
		if (f->pending && fs_file_is_view(f)) {	/* a created view never written: nothing to save */
			f->pending = false;
			fs_file_publish(ctx, f);
		}
		fs_file_hold_done(ctx, f);
		pthread_mutex_unlock(&f->lock);
		if (r < 0)
			ret = r;
		pthread_mutex_lock(&ctx->lock);
		last = file_unref_locked(ctx, f);
		pthread_mutex_unlock(&ctx->lock);
		if (last)
			file_free(f);
	}
	free(todo);
	return ret;
}

void fs_files_commit_all(struct fs_ctx *ctx)
{
	struct fs_file *f, *next;

	/* The loop has ended: no operation runs concurrently any more. */
	for (f = ctx->files; f; f = next) {
		next = f->next;
		pthread_mutex_lock(&f->lock);
		if (f->trunc)
			f->dirty = true;
		file_commit_locked(ctx, f);
		pthread_mutex_unlock(&f->lock);
	}
	pthread_mutex_lock(&ctx->lock);
	for (f = ctx->files; f; f = next) {
		next = f->next;
		fs_node_unref_locked(ctx, f->node);
		file_free(f);
	}
	ctx->files = NULL;
	pthread_mutex_unlock(&ctx->lock);
}

struct fs_file *fs_fi_file(const struct fuse_file_info *fi)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;

	return f && f->type == FS_HANDLE_FILE ? f : NULL;
}

/*
 * Whether node is a view that an open writer created and has not committed
 * yet: a hint, rechecked by the model. Reads pend_view, not f->pending or
 * f->kind, which f->lock guards and this thread cannot take under ctx->lock.
 */
static bool view_is_pending(struct fs_ctx *ctx, const struct fs_node *node)
{
	bool pending = false;

	pthread_mutex_lock(&ctx->lock);
	for (const struct fs_file *f = ctx->files; f && !pending; f = f->next)
		pending = f->node == node && f->pend_view;
	pthread_mutex_unlock(&ctx->lock);
	return pending;
}

void fs_op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct fs_file *f;
	char *path;
	bool tmp;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "open %s 0%o", path, (unsigned)fi->flags);
	if (fs_held_join(ctx, node, fi, &f)) {	/* made by mknod: committed at this close */
		free(path);
		fs_file_handle_add(ctx, f);
		if (fuse_reply_open(req, fi) < 0)
			fs_file_handle_lost(ctx, f);
		return;
	}
	fs_node_settle(ctx, node);	/* a created leaf another handle has open: in the store now */
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	pthread_mutex_unlock(&ctx->lock);
	/* HANDLE_KILLPRIV_V2: an O_TRUNC open without CAP_FSETID clears set-ID bits */
	if (!tmp && (fi->flags & O_TRUNC) && fs_req_kills_suidgid(ino) &&
	    (ret = fs_attr_kill_suidgid(ctx, node)) < 0) {
		free(path);
		fs_reply_err(req, ret);
		return;
	}
	ret = tmp ? fs_tmp_open(ctx, node, fi, &f) : fs_file_open(req, ctx, node, path, fi, &f);
	if (ret == -ENOENT && !tmp && (fi->flags & O_ACCMODE) != O_RDONLY) {
		/*
		 * Another writer created it and has not closed yet (parallel
		 * >> x.json): share its pending state. When it committed between
		 * our stat and this check, the view is in the store now.
		 */
		if (view_is_pending(ctx, node))
			ret = fs_view_pending_open(ctx, node, fi, &f);
		else
			ret = fs_file_open(req, ctx, node, path, fi, &f);
	}
	free(path);
	if (ret == 0)
		fs_file_set_opener(req, ctx, f);
	if (ret < 0) {
		fs_reply_err(req, fs_gone_name(ret));
		return;
	}
	fs_file_handle_add(ctx, f);
	if (fuse_reply_open(req, fi) < 0)
		fs_file_handle_lost(ctx, f);
}

void fs_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_file *f = fs_fi_file(fi);
	bool leaf_reader;
	int ret;

	(void)ino;
	if (!f) {
		fs_reply_err(req, -EBADF);
		return;
	}
	pthread_mutex_lock(&f->lock);
	leaf_reader = f->kind == FS_FILE_READER || f->kind == FS_FILE_READER_LAZY ||
		      f->kind == FS_FILE_READER_BIG;
	if (!leaf_reader && f->spilled) {
		fs_spill_reply(req, f, size, off);	/* from the file: nothing mapped in */
		pthread_mutex_unlock(&f->lock);
		return;
	}
	if (!leaf_reader) {
		/* writers, views and pending files read their own buffer */
		if ((uint64_t)off >= f->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, f->buf + off,
				       f->len - (size_t)off < size ? f->len - (size_t)off : size);
		pthread_mutex_unlock(&f->lock);
		return;
	}
	pthread_mutex_unlock(&f->lock);
	ret = fs_cache_read(ctx, f, req, size, off);
	if (ret < 0)
		fs_reply_err(req, ret);
}

void fs_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_file *f = fs_fi_file(fi);
	size_t end, start;
	int ret;

	if (!f || !f->writable) {
		fs_reply_err(req, -EBADF);
		return;
	}
	/*
	 * HANDLE_KILLPRIV_V2: a writer without CAP_FSETID clears set-ID bits
	 * (transport.c). Not a view's: it keeps no mode of its own, and its
	 * stat would render the document at every write.
	 */
	if (!fs_file_is_view(f) && fs_req_kills_suidgid(ino) &&
	    (ret = fs_attr_kill_suidgid(ctx, f->node)) < 0) {
		fs_reply_err(req, ret);
		return;
	}
	pthread_mutex_lock(&f->lock);
	/* the kernel passes each handle's flags with its writes */
	start = f->kind == FS_FILE_VIEW_APPEND || (fi->flags & O_APPEND) ? f->len : (size_t)off;
	end = start + size;
	ret = end > f->len ? fs_file_resize(f, end) : 0;
	if (ret == 0 && f->spilled)
		ret = fs_spill_write(f, buf, size, start);
	else if (ret == 0)
		memcpy(f->buf + start, buf, size);
	if (ret == 0) {
		f->refused = 0;
		f->empty_told = false;
		f->dirty = true;
		f->trunc = false;
		f->wmtime_ns = fs_now_ns();
		f->want_mtime = false;	/* a write after utimens sets the time again */
		f->writer_pid = fuse_req_ctx(req)->pid;
		fs_file_publish(ctx, f);
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0)
		fs_reply_err(req, ret);
	else
		fuse_reply_write(req, size);
}

void fs_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_file *f = fs_fi_file(fi);
	bool refused = false;
	int ret = 0;

	if (f && f->writable) {
		pthread_mutex_lock(&f->lock);
		if (f->kind == FS_FILE_WRITER && f->pending && !f->new_trunc)
			f->dirty = true;	/* touch: the empty leaf is there when close returns */
		ret = file_commit_locked(ctx, f);
		/*
		 * Refused at a close: the release after it (the kernel's, in
		 * the background, maybe after the next open and close) does
		 * not try the same content again, nor report it again over
		 * what came since (user.kvfs.error); close said it.
		 */
		if (ret < 0) {
			f->refused = ret;
			refused = true;
			fs_file_publish(ctx, f);	/* getattr: the store's again */
			if (f->kind == FS_FILE_WRITER)	/* the kernel's pages hold the writes */
				fs_cache_forget(ctx, f->node);
		}
		if (ret == 0 && f->kind == FS_FILE_WRITER && f->pending && f->trunc && !f->dirty) {
			ret = file_check_empty_locked(ctx, f);
			if (ret < 0 && ret != -ESTALE)	/* for a >> that follows */
				fs_file_hold_empty(ctx, f);
		}
		/* A view emptied and not written: close reports the refusal release makes. */
		if (ret == 0 && fs_file_is_view(f) && f->trunc && !f->dirty) {
			ret = -EINVAL;
			f->empty_told = refused = true;
			fs_file_publish(ctx, f);
		}
		fs_file_hold_done(ctx, f);	/* a leaf made by mknod: committed by its close */
		if (refused && f->kind == FS_FILE_WRITER && f->pending)
			fs_file_hold_forget(ctx, f);	/* a created leaf refused: no name now */
		pthread_mutex_unlock(&f->lock);
		/* a view's commit may change kinds below it: names follow before close returns */
		if (ret == 0 && fs_file_is_view(f))
			fs_inval_wait(ctx);
		/* the kernel keeps the size the writes gave it: the store's now */
		if (refused)
			fs_inval_attr_now(ctx, ino);
	}
	fs_reply_err(req, ret);
}

void fs_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_file *f = fs_fi_file(fi);
	int ret = 0;

	(void)datasync;
	if (f && f->writable) {
		pthread_mutex_lock(&f->lock);
		if (f->kind == FS_FILE_WRITER && f->pending)
			f->dirty = true;	/* a created leaf, even empty, is in the store after fsync */
		ret = file_commit_locked(ctx, f);
		fs_file_hold_done(ctx, f);
		pthread_mutex_unlock(&f->lock);
	}
	if (ret == 0 && !ctx->read_only)
		fs_held_commit(ctx, true);	/* fsync syncs everything: leaves made by mknod too */
	if (ret == 0)	/* and removals held beside it, not an rm -r's elsewhere */
		ret = fs_rmhold_settle_at(ctx, fs_node_from_ino(ctx, ino), false);
	if (ret == 0 && !ctx->read_only)
		ret = model_sync(ctx->model);
	fs_reply_err(req, ret);
}

/*
 * f->lock held. The last handle of an existing leaf's writer that holds
 * only a truncation (`: > f` on an integer field): its empty value was
 * refused, and a `>> f` that follows must append to the emptied file
 * whether it opens before this release or after it, so the writer is held
 * for it (fs_file_hold_empty) as a created leaf's is.
 */
static bool truncation_only(struct fs_ctx *ctx, struct fs_file *f)
{
	bool last;

	if (f->kind != FS_FILE_WRITER || f->pending || !f->trunc || f->len != 0)
		return false;
	pthread_mutex_lock(&ctx->lock);
	last = f->refs == 1 && !f->held;
	pthread_mutex_unlock(&ctx->lock);
	return last;
}

void fs_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_file *f = fs_fi_file(fi);

	bool dropped = false, refused, waits;

	/*
	 * The test hook KVFS_TEST_RELEASE_LATE_MS: the kernel sends release
	 * after close has returned, and a loaded daemon may take it up after
	 * the next open of the name (tests/75).
	 */
	if (ctx->release_late_us)
		usleep(ctx->release_late_us);
	if (f && !file_handle_end(ctx, f)) {
		/*
		 * Another open shares this writer (the kernel sends release
		 * in the background: the next `echo >` may have joined it):
		 * its content and its fate are theirs now. Each close's flush
		 * committed what it wrote.
		 */
		fs_file_put(ctx, f);
		f = NULL;
	}
	if (f) {
		pthread_mutex_lock(&f->lock);
		if (f->trunc)
			f->dirty = true;
		/* a failure is logged: nobody can see it now */
		refused = file_commit_locked(ctx, f) < 0;
		dropped = refused || f->pending;
		if (refused && truncation_only(ctx, f))
			fs_file_hold_empty(ctx, f);
		pthread_mutex_lock(&ctx->lock);
		waits = dropped && f->held_empty && f->len == 0;	/* its hold ends it */
		pthread_mutex_unlock(&ctx->lock);
		if (waits)
			dropped = false;
		else if (dropped && f->pending)
			fs_file_hold_forget(ctx, f);
		if (!waits)
			f->pending = false;
		fs_file_publish(ctx, f);
		fs_file_hold_done(ctx, f);
		pthread_mutex_unlock(&f->lock);
		/*
		 * The test hook KVFS_TEST_RELEASE_LAG_MS: a wait between the
		 * commit and letting go of the file, where a tool's touch right
		 * after close may come (fs/defer.c; tests/35).
		 */
		if (ctx->release_lag_us)
			usleep(ctx->release_lag_us);
		fs_file_put(ctx, f);
	}
	/* the kernel may hold the unsaved attributes (fs/attr.c): the store's now */
	if (dropped)
		fs_inval_attr_now(ctx, ino);
	fs_reply_err(req, 0);
}
