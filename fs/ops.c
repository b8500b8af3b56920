/*
 * fs/ops.c - the FUSE operations: each maps its node to a path, calls the
 * model and replies 0 or -errno. File contents written through the mount
 * are buffered in one buffer per leaf, shared by all its writable opens
 * (per open for views and pending files), and committed in one model_write
 * at flush (close), fsync or release, so readers see old or new, never
 * half. A commit takes its path inside the write section (fs_write_path),
 * and renames and unlinks move the node table before theirs ends.
 *
 * Readers of leaves read a snapshot of the text taken at open (or at the
 * first read, when the kernel's pages already hold the text): an open fd
 * keeps its content after an unlink or a rename over its name. Leaves above
 * FS_SNAPSHOT_MAX are read per call and answer EIO once they changed.
 *
 * Caching: names and attributes are trusted for entry_timeout/attr_timeout
 * (a day by default: the watcher in mount.c has the worker revalidate what
 * the kernel knows within FS_WATCH_MS of a commit by another process);
 * views (NAME.json) never, and they are read with direct I/O from a
 * snapshot rendered at open. Read-only opens skip the flush at close
 * (noflush). Leaves keep their page cache across opens while their mtime
 * and size are unchanged; writers use direct I/O and a commit drops the
 * pages. Directory listings are cached by the kernel while the store's
 * generation is unchanged. Whatever a commit changes behind the kernel's
 * back (a subtree replaced through NAME.json, a rename onto a view, a type
 * change) is revalidated by the worker in mount.c.
 *
 * Pending files: a name that is no index, created in an array, is held by
 * the daemon only (struct fs_tmpfile), so that tools writing a temporary
 * file beside their target and renaming it (rsync, sed -i) work in arrays.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs_int.h"

#define FS_FILE_MAX ((size_t)1 << 30)	/* largest content buffered for one file */
/*
 * Readers of leaves up to this size get the text of the moment they opened
 * (kept after an unlink or a rename over it, never half of a later commit).
 * Above it they read per call and get EIO once the leaf has changed.
 */
#define FS_SNAPSHOT_MAX ((uint64_t)64 << 20)
#define FS_XATTR_TYPE "user.kvfs.type"
/* Not listed, so that cp -a and rsync -X never copy them: */
#define FS_XATTR_ERROR "user.kvfs.error"	/* the last refusal for a path (below a directory) */
#define FS_XATTR_PID "user.kvfs.pid"		/* the root: the daemon's pid, for kvfs umount */

static struct fs_ctx *req_ctx(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	if (ts.tv_nsec < 0) {
		ts.tv_nsec += 1000000000;
		ts.tv_sec--;
	}
	return ts;
}

static void reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : ret);
}

/* ---- attributes ---- */

static bool kind_is_dir(enum model_kind kind)
{
	return kind == MODEL_KIND_OBJECT || kind == MODEL_KIND_ARRAY;
}

static void stat_fill(const struct fs_ctx *ctx, const struct model_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_uid = ctx->uid;
	st->st_gid = ctx->gid;
	st->st_blksize = 4096;
	if (kind_is_dir(n->kind)) {
		st->st_mode = S_IFDIR | (ctx->read_only ? 0555 : 0755);
		st->st_nlink = 2 + n->subdirs;
	} else {
		st->st_mode = S_IFREG | (ctx->read_only ? 0444 : 0644);
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	}
	st->st_mtim = ns_to_ts(n->mtime_ns);
	st->st_ctim = st->st_mtim;	/* ctime = mtime: tar does not see "changed as we read it" */
	st->st_atim = st->st_mtim;
}

/* ctx->lock held. The attributes of a pending file as last flushed. */
static void tmp_stat_locked(const struct fs_ctx *ctx, const struct fs_node *node,
			    struct stat *st)
{
	struct model_node n = { .kind = MODEL_KIND_LEAF, .ino = (uint64_t)(uintptr_t)node,
				.size = node->tmp->len, .mtime_ns = node->tmp->mtime_ns };

	stat_fill(ctx, &n, st);
}

/* ctx->lock held. An open file whose unsaved content getattr must show. */
static struct fs_file *pending_file_locked(struct fs_ctx *ctx, const struct fs_node *node)
{
	if (node->npend == 0)
		return NULL;	/* the common case: no walk over the open files */
	for (struct fs_file *f = ctx->files; f; f = f->next)
		if (f->node == node && f->pend)
			return f;
	return NULL;
}

/* ctx->lock held. Overrides st with a pending file's content; false when none. */
static bool stat_pending_locked(struct fs_ctx *ctx, const struct fs_node *node, bool exists,
				struct stat *st)
{
	struct fs_file *f = pending_file_locked(ctx, node);

	if (!f)
		return false;
	if (!exists) {
		struct model_node n = { .kind = MODEL_KIND_VIEW, .ino = (uint64_t)(uintptr_t)node };

		stat_fill(ctx, &n, st);
	}
	st->st_size = (off_t)f->pend_len;
	st->st_blocks = (blkcnt_t)((f->pend_len + 511) / 512);
	st->st_mtim = ns_to_ts(f->pend_mtime);
	st->st_ctim = st->st_mtim;
	return true;
}

/*
 * Attributes of node at path: the model's, or an open file's unsaved ones.
 * *kind (may be NULL) gets the kind; *volatile_ is set when the kernel
 * should not cache them.
 */
static int node_stat(struct fs_ctx *ctx, struct fs_node *node, const char *path,
		     struct stat *st, enum model_kind *kind, bool *volatile_)
{
	uint64_t gen = model_generation(ctx->model);
	struct model_error err = { { 0 } };
	struct model_node n;
	bool pending, cached;
	uint32_t nlink;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (node->tmp) {
		tmp_stat_locked(ctx, node, st);
		stat_pending_locked(ctx, node, true, st);
		pthread_mutex_unlock(&ctx->lock);
		if (kind)
			*kind = MODEL_KIND_LEAF;
		if (volatile_)
			*volatile_ = true;
		return 0;
	}
	/* nlink costs a seek per child: counted once per store generation */
	cached = node->nlink_gen == gen + 1;
	nlink = node->nlink;
	pthread_mutex_unlock(&ctx->lock);
	ret = model_stat(ctx->model, path, cached ? 0 : MODEL_STAT_SUBDIRS, &n, &err);
	if (ret == 0)
		stat_fill(ctx, &n, st);
	if (ret == 0 && cached && kind_is_dir(n.kind))
		st->st_nlink = nlink;
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0) {
		node->kind_known = true;
		node->is_dir = kind_is_dir(n.kind);
	}
	if (ret == 0 && kind_is_dir(n.kind)) {
		node->nlink = (uint32_t)st->st_nlink;	/* for readdirplus, while gen holds */
		node->nlink_gen = gen + 1;
	}
	pending = stat_pending_locked(ctx, node, ret == 0, st);
	pthread_mutex_unlock(&ctx->lock);
	if (pending) {
		n.kind = ret == 0 ? n.kind : MODEL_KIND_VIEW;
		ret = 0;
	}
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	if (kind)
		*kind = n.kind;
	if (volatile_)
		*volatile_ = pending || n.kind == MODEL_KIND_VIEW;
	return 0;
}

static double attr_timeout_for(const struct fs_ctx *ctx, bool volatile_)
{
	return volatile_ ? 0.0 : ctx->attr_timeout;
}

/*
 * Fills e for the child name of dir (at path) and counts one kernel lookup
 * on its node. 0 or -errno.
 */
static int entry_make(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		      const char *path, struct fuse_entry_param *e)
{
	struct fs_node *child;
	bool vol = false;
	int ret;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ctx->lock);
	child = fs_node_child_locked(ctx, dir, name, true);
	if (child)
		fs_node_ref_locked(child);	/* pinned while the model is asked */
	pthread_mutex_unlock(&ctx->lock);
	if (!child)
		return -ENOMEM;
	ret = node_stat(ctx, child, path, &e->attr, NULL, &vol);
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0)
		child->nlookup++;
	fs_node_unref_locked(ctx, child);
	pthread_mutex_unlock(&ctx->lock);
	if (ret < 0)
		return ret;
	e->ino = fs_node_ino(ctx, child);
	e->attr_timeout = attr_timeout_for(ctx, vol);
	e->entry_timeout = vol ? 0.0 : ctx->entry_timeout;
	return 0;
}

/* Replies with a fresh entry for name in dir (mkdir, mknod). */
static void reply_entry_for(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir,
			    const char *name, const char *path)
{
	struct fuse_entry_param e;
	int ret = entry_make(ctx, dir, name, path, &e);

	if (ret < 0)
		reply_err(req, ret);
	else if (fuse_reply_entry(req, &e) < 0)
		fs_node_forget(ctx, e.ino, 1);
}

/* ---- invalidation after commits ---- */

/*
 * The node a view NAME.json in dir stands for: NAME in dir, or dir itself
 * for ".json"; NULL when the kernel knows no such node. Pinned (a ref).
 */
static struct fs_node *view_target(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	size_t len = strlen(name);
	struct fs_node *target = NULL;
	char *base;

	if (!fs_name_is_view(name, len))
		return NULL;
	base = strndup(name, len - 5);
	if (!base)
		return NULL;
	pthread_mutex_lock(&ctx->lock);
	if (len == 5)
		target = dir;
	else if (dir->hashed)
		target = fs_node_child_locked(ctx, dir, base, false);
	if (target)
		fs_node_ref_locked(target);
	pthread_mutex_unlock(&ctx->lock);
	free(base);
	return target;
}

/*
 * The subtree a view NAME.json in dir stands for changed behind the kernel:
 * revalidated by the worker (fs_inval_subtree), so that only names gone or
 * changed between file and directory lose their dentries.
 */
static void inval_name(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
{
	struct fs_node *target = view_target(ctx, dir, name);

	if (!target)
		return;
	fs_inval_subtree(ctx, target);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, target);
	pthread_mutex_unlock(&ctx->lock);
}

/* After node was committed: its attributes, or for a view the subtree it stands for. */
static void inval_after_change(struct fs_ctx *ctx, struct fs_node *node, bool view)
{
	struct fs_node *dir;
	char *name;

	if (node == &ctx->root)
		return;
	if (!view) {
		fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_ATTR);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	dir = node->hashed ? node->parent : NULL;
	if (dir)
		fs_node_ref_locked(dir);
	name = dir ? strdup(node->name) : NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (name)
		inval_name(ctx, dir, name);
	free(name);
	if (dir) {
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, dir);
		pthread_mutex_unlock(&ctx->lock);
	}
}

/* ---- open files ---- */

static struct fs_file *file_new(struct fs_ctx *ctx, struct fs_node *node)
{
	struct fs_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->type = FS_HANDLE_FILE;
	f->node = node;
	f->refs = 1;
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
	else if (!pend && f->pend)
		f->node->npend--;
	f->pend = pend;
}

/* ctx->lock held. Drops a ref; true when the caller must free f. */
static bool file_unref_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	if (--f->refs > 0)
		return false;
	if (f->node->wfile == f)
		f->node->wfile = NULL;
	if (f->cached_reader)
		f->node->nreaders--;
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
	free(f->buf);
	free(f);
}

static void file_put(struct fs_ctx *ctx, struct fs_file *f)
{
	bool last;

	pthread_mutex_lock(&ctx->lock);
	last = file_unref_locked(ctx, f);
	pthread_mutex_unlock(&ctx->lock);
	if (last)
		file_free(f);
}

/* f->lock held. Shows getattr what f holds now. */
static void file_publish(struct fs_ctx *ctx, struct fs_file *f)
{
	pthread_mutex_lock(&ctx->lock);
	file_set_pend_locked(f, f->pending || ((f->dirty || f->trunc) && !f->append_json));
	f->pend_len = f->len;
	f->pend_mtime = f->wmtime_ns;
	pthread_mutex_unlock(&ctx->lock);
}

/* f->lock held. Makes buf hold len bytes, zero-filling a gap. */
static int file_resize(struct fs_file *f, size_t len)
{
	if (len > FS_FILE_MAX)
		return -EFBIG;
	if (len > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;
		char *buf;

		while (cap < len)
			cap *= 2;
		buf = realloc(f->buf, cap);
		if (!buf)
			return -ENOMEM;
		f->buf = buf;
		f->cap = cap;
	}
	if (len > f->len)
		memset(f->buf + f->len, 0, len - f->len);
	f->len = len;
	return 0;
}

/*
 * After a commit of a leaf: the kernel's pages (filled by readers of the old
 * text) are dropped, and the next reader does not keep them.
 */
static void forget_cache(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	node->cache_known = false;
	pthread_mutex_unlock(&ctx->lock);
	fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_DATA);
}

/*
 * f->lock held. Commits a dirty buffer in one model_write. A file whose name
 * was removed meanwhile is dropped, as on a local filesystem. 0 or -errno
 * (logged: an invalid document's parser message names the path).
 */
static int tmp_flush_locked(struct fs_ctx *ctx, struct fs_file *f);

/* Ends a type kept for the next commit, and the ref on node it held. */
static void want_type_clear(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	if (node->want_type) {
		node->want_type = 0;
		fs_node_unref_locked(ctx, node);
	}
	pthread_mutex_unlock(&ctx->lock);
}

static int file_commit_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	unsigned flags = MODEL_WRITE_TEXT | (f->append_json ? MODEL_WRITE_APPEND_JSON : 0) |
			 (f->view ? 0 : MODEL_WRITE_NO_CREATE);
	struct model_error err = { { 0 } };
	enum model_type type;
	char *path;
	int ret;

	if (!f->dirty)
		return 0;
	ret = tmp_flush_locked(ctx, f);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	pthread_mutex_lock(&ctx->lock);
	type = f->view ? 0 : f->node->want_type;
	pthread_mutex_unlock(&ctx->lock);
	/*
	 * The path is taken inside the write section: a rename or unlink
	 * moves the node table before it ends, so the content never lands
	 * under a name the file no longer has.
	 */
	ret = fs_write_path(ctx, f->node, NULL, &path);
	if (ret < 0) {
		if (ret == -ENOENT) {
			f->dirty = f->trunc = false;
			file_publish(ctx, f);
			return 0;
		}
		return ret;
	}
	ret = model_write(ctx->model, path, f->len ? f->buf : "", f->len, type, flags, &err);
	if (ret == -EINVAL && type) {
		/* the type set on the empty leaf does not fit the text: inferred instead */
		fs_log_model(ctx, ret, &err, path);
		err.msg[0] = '\0';
		ret = model_write(ctx->model, path, f->len ? f->buf : "", f->len, 0, flags, &err);
	}
	fs_write_end(ctx, ret);
	if (type)
		want_type_clear(ctx, f->node);	/* one attempt, whatever came of it */
	if (ret == -ENOENT && !f->view) {
		/* removed by another process since it was opened: dropped, as on unlink */
		f->dirty = f->trunc = false;
		file_publish(ctx, f);
		free(path);
		return 0;
	}
	if (ret < 0) {
		/* still dirty: the next flush or close tries again and reports it */
		fs_log_model(ctx, ret, &err, path);
		free(path);
		return ret;
	}
	fs_trace(ctx, "commit %s (%zu bytes)", path, f->len);
	f->dirty = f->trunc = false;
	if (f->append_json)
		f->len = 0;
	f->pending = false;
	if (!f->view)
		forget_cache(ctx, f->node);
	file_publish(ctx, f);
	inval_after_change(ctx, f->node, f->view);
	free(path);
	return 0;
}

/*
 * Commits the unsaved content of every open file of node, so that a change
 * of mtime or type applies to the new content (cp -a sets both on its open
 * descriptor before closing it). A truncation not yet written (O_TRUNC,
 * nothing written: cp -a of an empty file) is committed too. One pass: a
 * commit that fails is reported, not retried.
 */
static int node_commit_files(struct fs_ctx *ctx, struct fs_node *node)
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
		if (f->pending) {	/* a created view never written: nothing to save */
			f->pending = false;
			file_publish(ctx, f);
		}
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

static struct fs_file *fi_file(const struct fuse_file_info *fi)
{
	struct fs_file *f = fi ? (struct fs_file *)(uintptr_t)fi->fh : NULL;

	return f && f->type == FS_HANDLE_FILE ? f : NULL;
}

/* ---- pending files in arrays (struct fs_tmpfile in fs_int.h) ---- */

/* A canonical array index: "0", or decimal digits without a leading zero (docs/FORMAT.md). */
static bool name_is_index(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 19 || (name[0] == '0' && len > 1))
		return false;
	for (size_t i = 0; i < len; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

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

/*
 * f->lock held. When f's node is a pending file, its content becomes f's
 * (the flush of a pending file): 1. 0 when the node is no pending file.
 */
static int tmp_flush_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	struct fs_tmpfile *t;
	char *copy;
	bool tmp;

	pthread_mutex_lock(&ctx->lock);
	tmp = f->node->tmp != NULL;
	pthread_mutex_unlock(&ctx->lock);
	if (!tmp)
		return 0;
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
	file_publish(ctx, f);
	return 1;
}

/* Opens a pending file: the content as last flushed (none with O_TRUNC). */
static int tmp_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
		    struct fs_file **out)
{
	struct fs_file *f = file_new(ctx, node);
	int ret = 0;

	if (!f)
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	f->buffered = true;
	f->writable = (fi->flags & O_ACCMODE) != O_RDONLY;
	f->append = f->writable && (fi->flags & O_APPEND);
	f->wmtime_ns = now_ns();
	if (f->writable && (fi->flags & O_TRUNC)) {
		f->dirty = true;
		file_publish(ctx, f);
	} else {
		pthread_mutex_lock(&ctx->lock);
		ret = node->tmp ? file_resize(f, node->tmp->len) : -ENOENT;
		if (ret == 0 && f->len)
			memcpy(f->buf, node->tmp->buf, f->len);
		pthread_mutex_unlock(&ctx->lock);
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0) {
		file_put(ctx, f);
		return ret;
	}
	fi->direct_io = 1;	/* other opens may change it: no page cache */
	fi->noflush = !f->writable;
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

/*
 * create of a name that is no index in an array (or -EINVAL when dir is
 * no array): makes or opens the pending file, fills e and counts a lookup.
 */
static int tmp_create(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		      struct fuse_file_info *fi, struct fuse_entry_param *e, struct fs_file **out)
{
	struct fs_node *node;
	bool made = false;
	int ret = 0;

	if (!dir_is_array(ctx, dir))
		return -EINVAL;
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
			node->tmp->mtime_ns = now_ns();
			fs_node_ref_locked(node);	/* held while pending */
			made = true;
		} else {
			ret = -ENOMEM;
		}
	}
	fs_node_ref_locked(node);	/* pinned below */
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0)
		ret = tmp_open(ctx, node, fi, out);
	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0) {
		tmp_stat_locked(ctx, node, &e->attr);
		stat_pending_locked(ctx, node, true, &e->attr);
		node->nlookup++;
		e->ino = fs_node_ino(ctx, node);	/* timeouts 0: asked again each time */
	} else if (made) {
		fs_node_tmp_drop_locked(ctx, node);
	}
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* unlink of a pending file: true when name in dir was one (and is gone now). */
static bool tmp_unlink(struct fs_ctx *ctx, struct fs_node *dir, const char *name)
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

/*
 * Commits the pending file node (name in dir) as newname in newdir, with its
 * type and mtime, in one transaction, and moves it there in the table
 * before the write section ends.
 */
static int tmp_commit(struct fs_ctx *ctx, struct fs_node *node, struct fs_node *dir,
		      const char *name, struct fs_node *newdir, const char *newname,
		      unsigned flags)
{
	bool view = fs_name_is_view(newname, strlen(newname));
	struct model_error err = { { 0 } };
	enum model_type type = 0;
	struct model_node n;
	int64_t mtime = 0;
	char *copy = NULL, *to;
	size_t len = 0;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (node->tmp) {
		len = node->tmp->len;
		type = view ? 0 : node->tmp->type;
		mtime = node->tmp->mtime_ns;
		copy = malloc(len ? len : 1);
		if (copy && len)
			memcpy(copy, node->tmp->buf, len);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (!copy)
		return -ENOMEM;
	ret = fs_write_path(ctx, newdir, newname, &to);
	if (ret < 0)
		goto out_free;
	if ((flags & RENAME_NOREPLACE) && model_stat(ctx->model, to, 0, &n, NULL) == 0)
		ret = -EEXIST;
	else
		ret = model_write_at(ctx->model, to, copy, len, type, MODEL_WRITE_TEXT, mtime,
				     &err);
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

/*
 * rename of a pending file: onto an index (or any name outside an array, or
 * a view) it is committed there; onto another name that is no index in an
 * array it stays pending under the new name. 1 when name in dir is no
 * pending file (the caller renames in the store), else 0 or -errno.
 */
static int tmp_rename(struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		      struct fs_node *newdir, const char *newname, unsigned flags)
{
	bool view = fs_name_is_view(newname, strlen(newname));
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
	ret = flags & RENAME_EXCHANGE ? -EINVAL : node_commit_files(ctx, node);
	if (ret < 0)
		goto out_unref;
	if (!view && !name_is_index(newname) && dir_is_array(ctx, newdir)) {
		pthread_mutex_lock(&ctx->lock);
		ret = tmp_replace_locked(ctx, newdir, newname, flags);
		pthread_mutex_unlock(&ctx->lock);
		if (ret == 0)
			fs_node_move(ctx, dir, name, newdir, newname, false);
		goto out_unref;
	}
	ret = tmp_commit(ctx, node, dir, name, newdir, newname, flags);
	if (ret < 0)
		goto out_unref;
	fs_inval_node(ctx, fs_node_ino(ctx, node), FS_INVAL_ATTR);	/* the store's attributes now */
	inval_name(ctx, newdir, newname);
	if (view)
		fs_inval_entry(ctx, fs_node_ino(ctx, newdir), newname, strlen(newname));
out_unref:
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, node);
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ---- lookup, forget, getattr ---- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *dir = fs_node_from_ino(ctx, parent);
	char *path;
	int ret = fs_node_path(ctx, dir, name, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "lookup %s", path);
	reply_entry_for(req, ctx, dir, name, path);
	free(path);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_node_forget(req_ctx(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs_ctx *ctx = req_ctx(req);

	for (size_t i = 0; i < count; i++)
		fs_node_forget(ctx, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct stat st;
	bool vol = false;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	(void)fi;
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "getattr %s", path);
	ret = node_stat(ctx, node, path, &st, NULL, &vol);
	free(path);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, attr_timeout_for(ctx, vol));
}

/* truncate(2) of node without an open file: read, resize, commit at once. */
static int truncate_path(struct fs_ctx *ctx, struct fs_node *node, off_t size)
{
	struct model_error err = { { 0 } };
	size_t len = 0;
	char *text = NULL, *grown, *path;
	int ret;

	if ((uint64_t)size > FS_FILE_MAX)
		return -EFBIG;
	ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	ret = model_read_all(ctx->model, path, &text, &len, &err);
	if (ret < 0)
		goto out_end;
	grown = realloc(text, (size_t)size + 1);
	if (!grown) {
		ret = -ENOMEM;
		goto out_end;
	}
	text = grown;
	if ((size_t)size > len)
		memset(text + len, 0, (size_t)size - len);
	ret = model_write(ctx->model, path, text, (size_t)size, 0,
			  MODEL_WRITE_TEXT | MODEL_WRITE_NO_CREATE, &err);
out_end:
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	free(text);
	free(path);
	return ret;
}

/* truncate(2) of a pending file without an open file. */
static int tmp_truncate(struct fs_ctx *ctx, struct fs_node *node, off_t size)
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
		t->mtime_ns = now_ns();
	}
	pthread_mutex_unlock(&ctx->lock);
	return t ? ret : 1;
}

static int setattr_size(struct fs_ctx *ctx, struct fs_node *node, struct fs_file *f,
			off_t size)
{
	int ret;

	if (!f || !f->writable) {
		pthread_mutex_lock(&ctx->lock);
		f = node->wfile;	/* a writer is open: truncate its buffer */
		if (f)
			f->refs++;
		pthread_mutex_unlock(&ctx->lock);
		if (!f) {
			ret = tmp_truncate(ctx, node, size);
			return ret == 1 ? truncate_path(ctx, node, size) : ret;
		}
		ret = setattr_size(ctx, node, f, size);
		if (ret == 0)
			ret = node_commit_files(ctx, node);	/* truncate(2) takes effect at once */
		file_put(ctx, f);
		return ret;
	}
	pthread_mutex_lock(&f->lock);
	if (f->append_json) {
		ret = size == 0 ? 0 : -EINVAL;	/* only the bytes appended are held */
		if (ret == 0)
			f->len = 0;
	} else {
		ret = file_resize(f, (size_t)size);
		if (ret == 0) {
			f->dirty = true;
			f->wmtime_ns = now_ns();
			file_publish(ctx, f);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int setattr_mtime(struct fs_ctx *ctx, struct fs_node *node, const struct stat *attr,
			 int to_set)
{
	struct model_error err = { { 0 } };
	int64_t ns = (to_set & FUSE_SET_ATTR_MTIME_NOW) ? now_ns() :
		     (int64_t)attr->st_mtim.tv_sec * 1000000000 + attr->st_mtim.tv_nsec;
	struct model_node n;
	int ret = node_commit_files(ctx, node);
	char *path;
	bool tmp;

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp)
		node->tmp->mtime_ns = ns;	/* kept for the commit */
	pthread_mutex_unlock(&ctx->lock);
	if (tmp)
		return 0;
	ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	ret = model_stat(ctx->model, path, 0, &n, &err);
	/* directories and views: accepted, not kept */
	if (ret == 0 && n.kind == MODEL_KIND_LEAF)
		ret = model_set_mtime(ctx->model, path, ns, &err);
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	free(path);
	return ret;
}

/*
 * chmod and chown are accepted and ignored: every file shows the mounting
 * user and fixed modes, and cp -a / rsync -a would fail on EPERM.
 */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct stat st;
	bool vol = false;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "setattr %s 0x%x", path, (unsigned)to_set);
	if (ctx->read_only && (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME |
					 FUSE_SET_ATTR_MTIME_NOW))) {
		ret = -EROFS;
		goto out_reply;
	}
	if (to_set & FUSE_SET_ATTR_SIZE)
		ret = setattr_size(ctx, node, fi_file(fi), attr->st_size);
	if (ret == 0 && (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
		ret = setattr_mtime(ctx, node, attr, to_set);
	if (ret == 0)
		ret = node_stat(ctx, node, path, &st, NULL, &vol);
out_reply:
	free(path);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, attr_timeout_for(ctx, vol));
}

/* ---- open, read, write, flush, release ---- */

/* A writer's starting content: empty (O_TRUNC, appends to a view) or the current text. */
static int file_load(struct fs_ctx *ctx, struct fs_file *f, const char *path, int flags)
{
	struct model_error err = { { 0 } };
	int ret;

	f->writable = true;
	f->buffered = true;
	f->append = f->view && (flags & O_APPEND);	/* a leaf's handles: per write */
	f->wmtime_ns = now_ns();
	if (f->append) {
		f->append_json = true;
		return 0;
	}
	if (flags & O_TRUNC) {
		/*
		 * Not dirty: the shell's `> FILE` closes a dup of the descriptor
		 * (a flush) before anything is written, and committing "" then
		 * would lose a leaf's type. An empty leaf is committed at release;
		 * an empty view too, where the model refuses it (not JSON).
		 */
		f->trunc = true;
		file_publish(ctx, f);
		return 0;
	}
	ret = model_read_all(ctx->model, path, &f->buf, &f->len, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	f->cap = f->len + 1;
	return 0;
}

/* A reader of a view gets the rendering of the moment it opened. */
static int file_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	struct model_error err = { { 0 } };
	int ret = model_read_all(ctx->model, path, &f->buf, &f->len, &err);

	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	f->cap = f->len + 1;
	f->buffered = true;
	return 0;
}

/*
 * A reader of a leaf gets its text of the moment it opened, as one
 * snapshot: it keeps reading it after an unlink or a rename over the name,
 * and never sees half of a later commit. *n is brought in line with the
 * text (a commit between the stat and the read).
 */
static int leaf_snapshot(struct fs_ctx *ctx, struct fs_file *f, const char *path,
			 struct model_node *n)
{
	int ret = file_snapshot(ctx, f, path);

	if (ret == 0 && f->len != n->size && model_stat(ctx->model, path, 0, n, NULL) < 0)
		n->size = f->len;
	return ret;
}

/*
 * Whether the kernel's pages hold n's text: then reads will mostly not
 * come here (cat a second time), and the snapshot waits for the first read
 * that does (lazy_snapshot). Such a reader is not protected against an
 * unlink or a commit before that read: it then fails with ENOENT or reads
 * the newer text.
 */
static bool cache_matches(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n)
{
	bool match;

	pthread_mutex_lock(&ctx->lock);
	match = node->cache_known && node->cache_mtime == n->mtime_ns &&
		node->cache_size == n->size;
	pthread_mutex_unlock(&ctx->lock);
	return match;
}

/*
 * A reader that takes no snapshot at open: a big leaf reads per call, a
 * lazy one snapshots at its first read; both are checked against n.
 */
static void reader_deferred(struct fs_file *f, const struct model_node *n, bool lazy)
{
	f->big = !lazy;
	f->lazy = lazy;
	f->open_mtime = n->mtime_ns;
	f->open_size = n->size;
}

/*
 * The page cache is one per node, the snapshots are one per reader: a reader
 * may read through it only while every reader doing so opened the same
 * version. Others (a reader of a newer version while an older one is still
 * open) read with direct I/O from their own snapshot. Writers and views
 * always use direct I/O and never fill it; a commit drops it.
 */
static bool reader_share_cache(struct fs_ctx *ctx, struct fs_file *f, const struct model_node *n)
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

/* keep_cache while the leaf's mtime and size are what the page cache was filled from. */
static bool leaf_cache_valid(struct fs_ctx *ctx, struct fs_node *node, const struct model_node *n)
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

/* f->lock held. O_TRUNC on the shared buffer: empty now, committed at the latest at release. */
static void writer_trunc_locked(struct fs_ctx *ctx, struct fs_file *f)
{
	f->len = 0;
	f->trunc = true;
	f->wmtime_ns = now_ns();
	file_publish(ctx, f);
}

/* The leaf's shared writer with one more handle, truncated for O_TRUNC; NULL when none. */
static struct fs_file *writer_share(struct fs_ctx *ctx, struct fs_node *node, int flags)
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
	struct fs_file *other;

	pthread_mutex_lock(&ctx->lock);
	other = f->node->wfile;
	if (!other)
		f->node->wfile = f;
	pthread_mutex_unlock(&ctx->lock);
	if (!other)
		return f;
	file_put(ctx, f);
	other = writer_share(ctx, other->node, flags);
	return other;
}

/*
 * A writer of a view whose node is not in the store yet (created, or opened
 * while another created one is pending): its content is committed at close.
 */
static int view_pending_open(struct fs_ctx *ctx, struct fs_node *node, struct fuse_file_info *fi,
			     struct fs_file **out)
{
	struct fs_file *f = file_new(ctx, node);

	if (!f)
		return -ENOMEM;
	f->view = true;
	f->writable = f->buffered = true;
	f->pending = true;
	f->append = f->append_json = fi->flags & O_APPEND;
	f->wmtime_ns = now_ns();
	pthread_mutex_lock(&f->lock);
	file_publish(ctx, f);
	pthread_mutex_unlock(&f->lock);
	fi->direct_io = 1;
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
	struct model_error err = { { 0 } };
	size_t len = strlen(path);
	struct model_node n;
	char *target;
	int ret;

	target = strndup(path, len - 5);
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

/* Opens node (at path) for fi->flags; the reply is sent by the caller. */
static int file_open(struct fs_ctx *ctx, struct fs_node *node, const char *path,
		     struct fuse_file_info *fi, struct fs_file **out)
{
	struct model_error err = { { 0 } };
	int acc = fi->flags & O_ACCMODE;
	struct model_node n;
	struct fs_file *f;
	int ret;

	ret = model_stat(ctx->model, path, 0, &n, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	if (kind_is_dir(n.kind))
		return -EISDIR;
	if (acc != O_RDONLY && ctx->read_only)
		return -EROFS;
	if (acc != O_RDONLY && n.kind == MODEL_KIND_VIEW && (fi->flags & O_APPEND)) {
		ret = view_append_check(ctx, path);
		if (ret < 0)
			return ret;
	}
	if (acc != O_RDONLY && n.kind == MODEL_KIND_LEAF)
		f = writer_share(ctx, node, fi->flags);
	else
		f = NULL;
	if (f)
		goto out_opened;
	f = file_new(ctx, node);
	if (!f)
		return -ENOMEM;
	f->view = n.kind == MODEL_KIND_VIEW;
	if (acc != O_RDONLY)
		ret = file_load(ctx, f, path, fi->flags);
	else if (f->view)
		ret = file_snapshot(ctx, f, path);
	else if (n.size > FS_SNAPSHOT_MAX)
		reader_deferred(f, &n, false);
	else if (cache_matches(ctx, node, &n))
		reader_deferred(f, &n, true);
	else
		ret = leaf_snapshot(ctx, f, path, &n);
	if (ret < 0) {
		file_put(ctx, f);
		return ret;
	}
	if (acc != O_RDONLY && !f->view)
		f = writer_publish(ctx, f, fi->flags);
out_opened:
	if (f->view || f->writable || !reader_share_cache(ctx, f, &n))
		fi->direct_io = 1;	/* see reader_share_cache */
	else
		fi->keep_cache = leaf_cache_valid(ctx, node, &n);
	fi->noflush = acc == O_RDONLY;	/* nothing to commit: close needs no round trip */
	fi->fh = (uintptr_t)f;
	*out = f;
	return 0;
}

/* Whether node is a view that an open writer created and has not committed yet. */
static bool view_is_pending(struct fs_ctx *ctx, const struct fs_node *node)
{
	bool pending = false;

	pthread_mutex_lock(&ctx->lock);
	for (const struct fs_file *f = ctx->files; f && !pending; f = f->next)
		pending = f->node == node && f->view && f->pending;
	pthread_mutex_unlock(&ctx->lock);
	return pending;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct fs_file *f;
	char *path;
	bool tmp;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "open %s 0%o", path, (unsigned)fi->flags);
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	pthread_mutex_unlock(&ctx->lock);
	ret = tmp ? tmp_open(ctx, node, fi, &f) : file_open(ctx, node, path, fi, &f);
	if (ret == -ENOENT && (fi->flags & O_ACCMODE) != O_RDONLY && view_is_pending(ctx, node)) {
		/* another writer created it and has not closed yet (parallel >> x.json) */
		ret = view_pending_open(ctx, node, fi, &f);
	}
	free(path);
	if (ret < 0)
		reply_err(req, ret);
	else if (fuse_reply_open(req, fi) < 0)
		file_put(ctx, f);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *dir = fs_node_from_ino(ctx, parent);
	struct model_error err = { { 0 } };
	struct fuse_entry_param e;
	struct fs_file *f = NULL;
	bool view = fs_name_is_view(name, strlen(name));
	char *path;
	int ret = !S_ISREG(mode) ? -EPERM : ctx->read_only ? -EROFS : 0;

	if (ret == 0)
		ret = fs_write_path(ctx, dir, name, &path);
	if (ret < 0)
		goto out_reply;
	fs_trace(ctx, "create %s", path);
	ret = model_create(ctx->model, path, &err);
	fs_write_end(ctx, ret);
	if (ret == -EINVAL && !view) {
		/* a name that is no index in an array; -EINVAL: dir is no array */
		int r = tmp_create(ctx, dir, name, fi, &e, &f);

		if (r == 0) {
			fs_trace(ctx, "pending file %s", path);
			goto out_reply_create;
		}
		if (r != -EINVAL)
			ret = r;
	}
	if (ret == -EEXIST && !(fi->flags & O_EXCL))
		view = false;	/* made meanwhile (by the CLI): open what is there */
	else if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		goto out_free;
	}
	if (view) {
		/* A view is only checked: it exists once its first content is committed. */
		struct fs_node *node;

		pthread_mutex_lock(&ctx->lock);
		node = fs_node_child_locked(ctx, dir, name, true);
		pthread_mutex_unlock(&ctx->lock);
		if (!node) {
			ret = -ENOMEM;
			goto out_free;
		}
		ret = view_pending_open(ctx, node, fi, &f);
		if (ret < 0) {
			pthread_mutex_lock(&ctx->lock);
			fs_node_drop_unused_locked(ctx, node);
			pthread_mutex_unlock(&ctx->lock);
			goto out_free;
		}
	}
	ret = entry_make(ctx, dir, name, path, &e);
	if (ret < 0)
		goto out_file;
	if (!f) {
		ret = file_open(ctx, fs_node_from_ino(ctx, e.ino), path, fi, &f);
		if (ret < 0) {
			fs_node_forget(ctx, e.ino, 1);
			goto out_free;
		}
	}
out_reply_create:
	free(path);
	if (fuse_reply_create(req, &e, fi) < 0) {
		file_put(ctx, f);
		fs_node_forget(ctx, e.ino, 1);
	}
	return;

out_file:
	if (f)
		file_put(ctx, f);
out_free:
	free(path);
out_reply:
	reply_err(req, ret);
}

/* Whether a big leaf changed since f opened it (read after the data: a commit in between shows). */
static bool big_changed(struct fs_ctx *ctx, struct fs_file *f, const char *path)
{
	struct model_node n;

	return model_stat(ctx->model, path, 0, &n, NULL) < 0 || n.mtime_ns != f->open_mtime ||
	       n.size != f->open_size;
}

/*
 * f->lock held. The first read of a lazy reader that reaches the daemon
 * takes its snapshot. The leaf may have changed since open: a commit drops
 * the node's pages, so every read of this reader comes here from now on and
 * sees the new text whole.
 */
static int lazy_snapshot_locked(struct fs_ctx *ctx, struct fs_file *f, fuse_ino_t ino)
{
	char *path;
	int ret;

	ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);
	if (ret < 0)
		return ret;
	ret = file_snapshot(ctx, f, path);
	if (ret == 0)
		f->lazy = false;
	free(path);
	return ret;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_file *f = fi_file(fi);
	struct model_error err = { { 0 } };
	char *path, *buf;
	bool big;
	ssize_t n;
	int ret;

	if (!f) {
		reply_err(req, -EBADF);
		return;
	}
	/* lazy, buffered and buf change under f->lock (a concurrent first read) */
	pthread_mutex_lock(&f->lock);
	ret = f->lazy ? lazy_snapshot_locked(ctx, f, ino) : 0;
	if (ret < 0) {
		pthread_mutex_unlock(&f->lock);
		reply_err(req, ret);
		return;
	}
	if (f->buffered) {
		if ((uint64_t)off >= f->len)
			fuse_reply_buf(req, NULL, 0);
		else
			fuse_reply_buf(req, f->buf + off,
				       f->len - (size_t)off < size ? f->len - (size_t)off : size);
		pthread_mutex_unlock(&f->lock);
		return;
	}
	big = f->big;
	pthread_mutex_unlock(&f->lock);
	ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		free(path);
		reply_err(req, -ENOMEM);
		return;
	}
	n = model_read(ctx->model, path, buf, size, (uint64_t)off, &err);
	if (n >= 0 && big && big_changed(ctx, f, path))
		n = -EIO;	/* changed since open: part old, part new would be worse */
	if (n < 0) {
		fs_log_model(ctx, (int)n, &err, path);
		reply_err(req, (int)n);
	} else {
		fuse_reply_buf(req, buf, (size_t)n);
	}
	free(buf);
	free(path);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_file *f = fi_file(fi);
	size_t end, start;
	int ret;

	(void)ino;
	if (!f || !f->writable) {
		reply_err(req, -EBADF);
		return;
	}
	pthread_mutex_lock(&f->lock);
	/* the kernel passes each handle's flags with its writes */
	start = f->append || (fi->flags & O_APPEND) ? f->len : (size_t)off;
	end = start + size;
	ret = end > f->len ? file_resize(f, end) : 0;
	if (ret == 0) {
		memcpy(f->buf + start, buf, size);
		f->dirty = true;
		f->trunc = false;
		f->wmtime_ns = now_ns();
		file_publish(ctx, f);
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_file *f = fi_file(fi);
	int ret = 0;

	(void)ino;
	if (f && f->writable) {
		pthread_mutex_lock(&f->lock);
		ret = file_commit_locked(ctx, f);
		/* A view emptied and not written: close reports the refusal release makes. */
		if (ret == 0 && f->view && f->trunc && !f->dirty)
			ret = -EINVAL;
		pthread_mutex_unlock(&f->lock);
	}
	reply_err(req, ret);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_file *f = fi_file(fi);
	int ret = 0;

	(void)ino;
	(void)datasync;
	if (f && f->writable) {
		pthread_mutex_lock(&f->lock);
		ret = file_commit_locked(ctx, f);
		pthread_mutex_unlock(&f->lock);
	}
	if (ret == 0 && !ctx->read_only)
		ret = model_sync(ctx->model);
	reply_err(req, ret);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_file *f = fi_file(fi);

	(void)ino;
	if (f) {
		pthread_mutex_lock(&f->lock);
		if (f->trunc)
			f->dirty = true;
		file_commit_locked(ctx, f);	/* a failure is logged: nobody can see it now */
		f->pending = false;
		file_publish(ctx, f);
		pthread_mutex_unlock(&f->lock);
		file_put(ctx, f);
	}
	reply_err(req, 0);
}

/* ---- directories ---- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { { 0 } };
	struct fs_dir *d;
	uint64_t gen;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "opendir %s", path);
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto out_free;
	}
	d->type = FS_HANDLE_DIR;
	gen = model_generation(ctx->model);
	ret = model_list_open(ctx->model, path, &d->list, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		free(d);
		goto out_free;
	}
	d->node = node;
	pthread_mutex_lock(&ctx->lock);
	fs_node_ref_locked(node);
	/* The kernel's cached listing is good while nobody has committed since. */
	fi->keep_cache = node->dir_gen == gen + 1;
	node->dir_gen = gen + 1;
	pthread_mutex_unlock(&ctx->lock);
	fi->cache_readdir = 1;
	fi->fh = (uintptr_t)d;
	if (fuse_reply_open(req, fi) < 0) {
		model_list_close(d->list);
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, node);
		pthread_mutex_unlock(&ctx->lock);
		free(d);
	}
out_free:
	free(path);
	if (ret < 0)
		reply_err(req, ret);
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
	s->d->pos = off < 2 ? off : 2;
	if (off <= 2)
		return 0;
	s->skip_to = off;
	ret = model_list_fill(s->d->list, dir_skip_fn, s);
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

static int dir_fill_fn(void *arg, const char *name, const struct model_node *node)
{
	struct dir_fill *s = arg;
	struct fs_ctx *ctx = s->ctx;
	struct fuse_entry_param e;
	struct fs_node *child;
	bool vol;

	memset(&e, 0, sizeof(e));
	stat_fill(ctx, node, &e.attr);
	if (!s->plus)
		return dir_add(s, name, &e) ? 0 : 1;
	pthread_mutex_lock(&ctx->lock);
	child = fs_node_child_locked(ctx, s->d->node, name, true);
	if (!child) {
		pthread_mutex_unlock(&ctx->lock);
		s->err = -ENOMEM;
		return 1;
	}
	vol = stat_pending_locked(ctx, child, true, &e.attr);
	child->kind_known = true;
	child->is_dir = kind_is_dir(node->kind);
	e.ino = fs_node_ino(ctx, child);
	e.entry_timeout = vol ? 0.0 : ctx->entry_timeout;
	/*
	 * The listing does not count subdirectories (that would cost a scan of
	 * every child): a directory's nlink is known only when a stat counted
	 * it at this generation; otherwise let stat ask for it.
	 */
	if (kind_is_dir(node->kind) && child->nlink_gen == s->gen + 1)
		e.attr.st_nlink = child->nlink;
	else if (kind_is_dir(node->kind))
		vol = true;
	e.attr_timeout = attr_timeout_for(ctx, vol);
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

/* "." and "..": no lookup is counted for them (ino 0 in readdirplus). */
static bool dir_add_dot(struct dir_fill *s, const char *name)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.attr.st_mode = S_IFDIR;
	e.attr.st_ino = (ino_t)fs_node_ino(s->ctx, s->d->node);
	return dir_add(s, name, &e);
}

static void dir_read(fuse_req_t req, size_t size, off_t off, struct fuse_file_info *fi,
		     bool plus)
{
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;
	struct dir_fill s = { .req = req, .ctx = req_ctx(req), .d = d, .plus = plus,
			      .size = size };
	int ret = 0;

	s.buf = malloc(size ? size : 1);
	if (!s.buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	if (plus)
		s.gen = model_generation(s.ctx->model);
	if (off != d->pos)
		ret = dir_seek(&s, off);
	if (ret == 0 && d->pos == 0 && !dir_add_dot(&s, "."))
		goto out_reply;
	if (ret == 0 && d->pos == 1 && !dir_add_dot(&s, ".."))
		goto out_reply;
	if (ret == 0)
		ret = model_list_fill(d->list, dir_fill_fn, &s);
	if (ret >= 0 && s.err < 0)
		ret = s.err;
out_reply:
	if (ret < 0 && s.used == 0) {
		reply_err(req, ret);
	} else if (fuse_reply_buf(req, s.buf, s.used) < 0) {
		/* the kernel never saw these entries: it will not forget them */
		for (size_t i = 0; i < s.ncounted; i++)
			fs_node_forget(s.ctx, fs_node_ino(s.ctx, s.counted[i]), 1);
	}
	free(s.counted);
	free(s.buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	dir_read(req, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)ino;
	dir_read(req, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_dir *d = (struct fs_dir *)(uintptr_t)fi->fh;

	(void)ino;
	model_list_close(d->list);
	pthread_mutex_lock(&ctx->lock);
	fs_node_unref_locked(ctx, d->node);
	pthread_mutex_unlock(&ctx->lock);
	free(d);
	reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = req_ctx(req);

	(void)ino;
	(void)datasync;
	(void)fi;
	reply_err(req, ctx->read_only ? 0 : model_sync(ctx->model));
}

/* ---- names: mkdir, mknod, unlink, rmdir, rename ---- */

/*
 * Starts an operation that changes name in the directory parent: on success
 * the write section is open (fs_write_path) and the caller ends it.
 */
static int name_begin(fuse_req_t req, fuse_ino_t parent, const char *name, const char *what,
		      struct fs_node **dir, char **path)
{
	struct fs_ctx *ctx = req_ctx(req);
	int ret;

	*dir = fs_node_from_ino(ctx, parent);
	if (ctx->read_only)
		return -EROFS;
	ret = fs_write_path(ctx, *dir, name, path);
	if (ret < 0)
		return ret;
	fs_trace(ctx, "%s %s", what, *path);
	return 0;
}

/*
 * Ends what name_begin started for an operation that makes a new entry:
 * closes the write section, replies with the entry or the error, frees path.
 */
static void name_end_entry(fuse_req_t req, struct fs_node *dir, const char *name, char *path,
			   int ret, const struct model_error *err)
{
	struct fs_ctx *ctx = req_ctx(req);

	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, err, path);
		reply_err(req, ret);
	} else {
		reply_entry_for(req, ctx, dir, name, path);
	}
	free(path);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct model_error err = { { 0 } };
	struct fs_node *dir;
	char *path;
	int ret = name_begin(req, parent, name, "mkdir", &dir, &path);

	(void)mode;
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	ret = model_mkdir(ctx->model, path, MODEL_KIND_OBJECT, &err);
	name_end_entry(req, dir, name, path, ret, &err);
}

/* Regular files only: devices, FIFOs and sockets cannot be stored. */
static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct model_error err = { { 0 } };
	struct fs_node *dir;
	char *path;
	int ret;

	(void)rdev;
	if (!S_ISREG(mode)) {
		reply_err(req, -EPERM);
		return;
	}
	ret = name_begin(req, parent, name, "mknod", &dir, &path);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	ret = model_create(ctx->model, path, &err);
	name_end_entry(req, dir, name, path, ret, &err);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, unsigned flags,
			const char *what)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct model_error err = { { 0 } };
	struct fs_node *dir, *node;
	char *path;
	int ret = name_begin(req, parent, name, what, &dir, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	ret = model_remove(ctx->model, path, flags, &err);
	pthread_mutex_lock(&ctx->lock);
	node = ret == 0 ? fs_node_child_locked(ctx, dir, name, false) : NULL;
	if (node)
		fs_node_ref_locked(node);
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0)
		fs_node_detach(ctx, dir, name);	/* before a committer can take the path */
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	else
		inval_name(ctx, dir, name);
	if (node) {
		want_type_clear(ctx, node);
		fs_node_drop_pending_below(ctx, node);	/* pending files in a removed array */
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, node);
		pthread_mutex_unlock(&ctx->lock);
	}
	free(path);
	reply_err(req, ret);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ctx *ctx = req_ctx(req);

	if (!ctx->read_only && tmp_unlink(ctx, fs_node_from_ino(ctx, parent), name)) {
		fs_trace(ctx, "unlink pending file %s", name);
		reply_err(req, 0);
		return;
	}
	remove_name(req, parent, name, MODEL_REMOVE_LEAF, "unlink");
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, MODEL_REMOVE_DIR, "rmdir");
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct model_error err = { { 0 } };
	struct fs_node *dir, *newdir = fs_node_from_ino(ctx, newparent);
	unsigned mflags = 0;
	char *from, *to = NULL;
	int ret;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		reply_err(req, -EINVAL);	/* RENAME_WHITEOUT: no overlay upper layers here */
		return;
	}
	if (flags & RENAME_NOREPLACE)
		mflags |= MODEL_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		mflags |= MODEL_RENAME_EXCHANGE;
	ret = ctx->read_only ? -EROFS :
	      tmp_rename(ctx, fs_node_from_ino(ctx, parent), name, newdir, newname, flags);
	if (ret != 1) {
		reply_err(req, ret);	/* a pending file: committed or moved */
		return;
	}
	ret = name_begin(req, parent, name, "rename", &dir, &from);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	ret = fs_node_path(ctx, newdir, newname, &to);
	if (ret == 0)
		ret = model_rename(ctx->model, from, to, mflags, &err);
	/* The table moves before the section ends: committers then take the new path. */
	if (ret == 0)
		fs_node_move(ctx, dir, name, newdir, newname, flags & RENAME_EXCHANGE);
	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, to ? to : from);
		goto out_free;
	}
	inval_name(ctx, dir, name);
	inval_name(ctx, newdir, newname);
	if (fs_name_is_view(newname, strlen(newname)))	/* the moved file is a view now */
		fs_inval_entry(ctx, newparent, newname, strlen(newname));
out_free:
	free(from);
	free(to);
	reply_err(req, ret);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	(void)parent;
	(void)name;
	reply_err(req, -EPERM);	/* a store holds no links */
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	reply_err(req, -EPERM);
}

/* ---- statfs and xattrs ---- */

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct statvfs sv, host;
	struct model_info info;
	uint64_t free_bytes = 0, files_free;
	int ret = model_info(ctx->model, &info);

	(void)ino;
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	if (statvfs(ctx->store_dir, &host) == 0)
		free_bytes = (uint64_t)host.f_bavail * host.f_frsize;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = (info.used_bytes + free_bytes) / 4096;
	sv.f_bfree = sv.f_bavail = free_bytes / 4096;
	files_free = free_bytes / 64;	/* a small leaf takes some tens of bytes */
	sv.f_files = info.entries + files_free;
	sv.f_ffree = sv.f_favail = files_free;
	sv.f_namemax = 255;
	if (ctx->read_only)
		sv.f_flag |= ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* Replies to a get/list xattr request with value (len bytes) or its size. */
static void reply_xattr_value(fuse_req_t req, size_t size, const char *value, size_t len)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

static int node_type(struct fs_ctx *ctx, fuse_ino_t ino, char *buf, size_t cap)
{
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { { 0 } };
	char *path;
	bool tmp;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL || node->want_type;
	if (node->tmp)	/* a pending file: the type it will have (string unless set) */
		snprintf(buf, cap, "%s", model_type_name(node->tmp->type ? node->tmp->type
									 : MODEL_TYPE_STRING));
	else if (node->want_type)
		snprintf(buf, cap, "%s", model_type_name(node->want_type));
	pthread_mutex_unlock(&ctx->lock);
	if (tmp)
		return 0;
	ret = fs_node_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	ret = model_get_type(ctx->model, path, buf, cap, &err);
	free(path);
	return ret;
}

/* user.kvfs.error: a leaf's own last refusal; a directory's, of anything below it. */
static void reply_error_xattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	char msg[sizeof(ctx->errors[0].msg)], *path;
	bool dir, found;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	dir = node == &ctx->root || (node->kind_known && node->is_dir);
	pthread_mutex_unlock(&ctx->lock);
	found = fs_error_find(ctx, path, dir, msg, sizeof(msg));
	free(path);
	if (!found)
		reply_err(req, -ENODATA);
	else
		reply_xattr_value(req, size, msg, strlen(msg));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs_ctx *ctx = req_ctx(req);
	char type[64];
	int ret;

	if (strcmp(name, FS_XATTR_ERROR) == 0) {
		reply_error_xattr(req, ino, size);
		return;
	}
	if (strcmp(name, FS_XATTR_PID) == 0 && ino == FUSE_ROOT_ID) {
		snprintf(type, sizeof(type), "%ld", (long)getpid());
		reply_xattr_value(req, size, type, strlen(type));
		return;
	}
	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		/*
		 * Only the user namespace exists here. ENOTSUP for security.* and
		 * system.* (SELinux labels, POSIX ACLs) lets ls -l, cp -a and
		 * rsync remember that the filesystem has none, instead of asking
		 * for every file (three round trips per file for ls -l).
		 */
		reply_err(req, strncmp(name, "user.", 5) == 0 ? -ENODATA : -ENOTSUP);
		return;
	}
	ret = node_type(ctx, ino, type, sizeof(type));
	if (ret == -ENOENT || ret == -EINVAL)
		ret = -ENODATA;	/* views and unsaved files have no type yet */
	if (ret < 0)
		reply_err(req, ret);
	else
		reply_xattr_value(req, size, type, strlen(type));
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	static const char list[] = FS_XATTR_TYPE;	/* one name and its NUL */
	struct fs_ctx *ctx = req_ctx(req);
	char type[64];
	int ret = node_type(ctx, ino, type, sizeof(type));

	if (ret < 0)
		reply_xattr_value(req, size, "", 0);
	else
		reply_xattr_value(req, size, list, sizeof(list));
}

/*
 * A type that an empty leaf's text cannot take yet (tar --xattrs sets it
 * before writing the content): kept for the next commit. true when kept.
 */
static bool want_type_later(struct fs_ctx *ctx, struct fs_node *node, const char *path,
			    const char *name)
{
	enum model_type type;
	struct model_node n;

	if (model_type_parse(name, &type) < 0 ||
	    model_stat(ctx->model, path, 0, &n, NULL) < 0 ||
	    n.kind != MODEL_KIND_LEAF || n.size != 0)
		return false;
	pthread_mutex_lock(&ctx->lock);
	if (!node->want_type)
		fs_node_ref_locked(node);	/* kept while the kernel may forget the node */
	node->want_type = type;
	pthread_mutex_unlock(&ctx->lock);
	return true;
}

/* Sets the type a pending file will have; false when node is no pending file. */
static bool tmp_set_type(struct fs_ctx *ctx, struct fs_node *node, const char *name, int *ret)
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

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { { 0 } };
	char type[64], *path;
	int ret;

	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		reply_err(req, -ENOTSUP);	/* cp -a, rsync -X: skipped quietly */
		return;
	}
	if (ctx->read_only) {
		reply_err(req, -EROFS);
		return;
	}
	if (flags & XATTR_CREATE) {
		reply_err(req, -EEXIST);	/* every node has a type */
		return;
	}
	if (size >= sizeof(type)) {
		reply_err(req, -EINVAL);
		return;
	}
	memcpy(type, value, size);
	type[size] = '\0';
	ret = node_commit_files(ctx, node);
	if (ret == 0 && tmp_set_type(ctx, node, type, &ret)) {
		reply_err(req, ret);
		return;
	}
	if (ret == 0)
		ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "set type %s %s", path, type);
	ret = model_set_type(ctx->model, path, type, &err);
	if (ret == 0)
		want_type_clear(ctx, node);	/* applied now: nothing kept for later */
	else if (ret == -EINVAL && want_type_later(ctx, node, path, type))
		ret = 0;
	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
	} else {
		/* The text or the children's names may read differently now. */
		fs_inval_node(ctx, ino, FS_INVAL_DATA);
		fs_inval_subtree(ctx, node);
	}
	free(path);
	reply_err(req, ret);
}

/*
 * Removing the type gives the node the type a new one would get (rsync -X
 * from a tree without xattrs removes every name it does not have): a
 * directory becomes an object, a leaf's text is inferred as a new file's.
 */
static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs_ctx *ctx = req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { { 0 } };
	bool tmp, view;
	char *path;
	int ret;

	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		reply_err(req, strncmp(name, "user.", 5) == 0 ? -ENODATA : -ENOTSUP);
		return;
	}
	if (ctx->read_only) {
		reply_err(req, -EROFS);
		return;
	}
	ret = node_commit_files(ctx, node);
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp)
		node->tmp->type = 0;	/* a pending file: typed as unset at its commit */
	view = node != &ctx->root && fs_name_is_view(node->name, strlen(node->name));
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0 && (tmp || view)) {
		reply_err(req, tmp ? 0 : -ENODATA);	/* a view has no type */
		return;
	}
	if (ret == 0)
		ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "reset type %s", path);
	want_type_clear(ctx, node);
	ret = model_reset_type(ctx->model, path, &err);
	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
	} else {
		fs_inval_node(ctx, ino, FS_INVAL_DATA);
		fs_inval_subtree(ctx, node);
	}
	free(path);
	reply_err(req, ret);
}

/* ---- init and destroy ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs_ctx *ctx = userdata;
	unsigned want = FUSE_CAP_ATOMIC_O_TRUNC | FUSE_CAP_READDIRPLUS |
			FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS |
			FUSE_CAP_AUTO_INVAL_DATA;

	conn->want |= want & conn->capable;
	/* Writes must reach the per-open buffer at once: no kernel write-back. */
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	conn->max_write = 1U << 20;
	conn->time_gran = 1;
	fs_trace(ctx, "init: capable 0x%x want 0x%x", conn->capable, conn->want);
}

static void op_destroy(void *userdata)
{
	fs_files_commit_all(userdata);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.link = op_link,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.release = op_release,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
};
