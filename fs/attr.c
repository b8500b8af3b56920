/*
 * fs/attr.c - attributes: a node's stat from the model or from an open
 * file's unsaved content, entry replies (which count lookups), getattr and
 * setattr (truncate, utimens, chmod, chown: kept in the store's attr space).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

void fs_stat_fill(const struct fs_ctx *ctx, const struct model_node *n, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	bool dir = fs_kind_is_dir(n->kind);
	mode_t perm = (n->attr.have & MODEL_ATTR_MODE) ? (mode_t)n->attr.mode : fs_mode_default(dir);

	st->st_uid = (n->attr.have & MODEL_ATTR_UID) ? (uid_t)n->attr.uid : ctx->uid;
	st->st_gid = (n->attr.have & MODEL_ATTR_GID) ? (gid_t)n->attr.gid : ctx->gid;
	st->st_blksize = 4096;
	if (ctx->read_only)
		perm &= ~(mode_t)0222;
	if (dir) {
		st->st_mode = S_IFDIR | perm;
		st->st_nlink = 2 + n->subdirs;
	} else if (n->kind == MODEL_KIND_LINK) {
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
	} else {
		st->st_mode = S_IFREG | perm;
		st->st_nlink = 1;
		st->st_size = (off_t)n->size;
		st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	}
	st->st_mtim = fs_ns_to_ts(n->mtime_ns);
	/* ctime: the last chmod, chown, utimens, rename or entry change, or a
	 * later write; atime = mtime (noatime semantics: reads write nothing)
	 * unless utimens set it apart (then stored) */
	st->st_ctim = fs_ns_to_ts(n->ctime_ns > n->mtime_ns ? n->ctime_ns : n->mtime_ns);
	st->st_atim = (n->attr.have & MODEL_ATTR_ATIME) ? fs_ns_to_ts(n->attr.atime_ns) :
		      st->st_mtim;
}

void fs_attr_for_new(fuse_req_t req, struct fs_ctx *ctx, mode_t mode, bool dir,
		     struct model_attr *out)
{
	const struct fuse_ctx *who = fuse_req_ctx(req);

	memset(out, 0, sizeof(*out));
	if ((mode & 07777) != fs_mode_default(dir)) {
		out->have |= MODEL_ATTR_MODE;
		out->mode = mode & 07777;
	}
	if (who && who->uid != ctx->uid) {
		out->have |= MODEL_ATTR_UID;
		out->uid = who->uid;
	}
	if (who && who->gid != ctx->gid) {
		out->have |= MODEL_ATTR_GID;
		out->gid = who->gid;
	}
}

/* Supplementary groups past this many are not read (the kernel allows 65536). */
#define FS_CRED_GROUPS_MAX 4096

/*
 * The supplementary groups of req's process (heap, *n of them), or NULL
 * when they cannot be read (the process is gone: its primary group only).
 * A read of /proc: tens of microseconds.
 */
static gid_t *req_groups(fuse_req_t req, size_t *n)
{
	gid_t *groups = NULL, *list;
	int cap = 32, got;

	*n = 0;
	for (;;) {
		list = realloc(groups, (size_t)cap * sizeof(*list));
		if (!list)
			break;
		groups = list;
		got = fuse_req_getgroups(req, cap, list);
		if (got < 0)
			break;
		if (got <= cap) {
			*n = (size_t)got;
			return groups;
		}
		if (got > FS_CRED_GROUPS_MAX)
			break;
		cap = got;
	}
	free(groups);
	return NULL;
}

/* Who made req, groups aside. */
static void cred_base(fuse_req_t req, const struct fs_ctx *ctx, struct model_cred *out)
{
	const struct fuse_ctx *who = fuse_req_ctx(req);

	memset(out, 0, sizeof(*out));
	out->uid = who->uid;
	out->gid = who->gid;
	out->owner_uid = ctx->uid;
	out->owner_gid = ctx->gid;
}

void fs_cred_from_req(fuse_req_t req, const struct fs_ctx *ctx, struct model_cred *out,
		      gid_t **groups)
{
	cred_base(req, ctx, out);
	*groups = NULL;
	if (out->uid == 0)
		return;	/* may anything: its groups do not matter */
	*groups = req_groups(req, &out->ngroups);
	out->groups = *groups;
}

/* model_cred's groups_fn for fs_cred_lazy: read once, at the first ask. */
static const gid_t *lazy_groups(void *arg, size_t *n)
{
	struct fs_groups *g = arg;

	if (!g->read) {
		g->list = req_groups(g->req, &g->n);
		g->read = true;
	}
	*n = g->n;
	return g->list;
}

void fs_cred_lazy(fuse_req_t req, const struct fs_ctx *ctx, struct model_cred *out,
		  struct fs_groups *g)
{
	memset(g, 0, sizeof(*g));
	g->req = req;
	cred_base(req, ctx, out);
	if (out->uid != 0) {
		out->groups_fn = lazy_groups;
		out->groups_arg = g;
	}
}

void fs_groups_release(struct fs_groups *g)
{
	free(g->list);
	g->list = NULL;
}

const struct model_cred *fs_cred_for_view(fuse_req_t req, const struct fs_ctx *ctx,
					 const char *path, struct model_cred *out,
					 struct fs_groups *g)
{
	const char *name = strrchr(path, '/');

	name = name ? name + 1 : path;
	memset(g, 0, sizeof(*g));
	if (!req || !model_name_is_view(name, strlen(name)))
		return NULL;
	fs_cred_lazy(req, ctx, out, g);
	return out;
}

void fs_tmp_stat_locked(const struct fs_ctx *ctx, const struct fs_node *node,
			struct stat *st)
{
	struct model_node n = { .kind = MODEL_KIND_LEAF, .ino = (uint64_t)(uintptr_t)node,
				.size = node->tmp->len, .mtime_ns = node->tmp->mtime_ns,
				.attr = node->tmp->set };

	fs_stat_fill(ctx, &n, st);
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

bool fs_stat_pending_locked(struct fs_ctx *ctx, const struct fs_node *node, bool exists,
			    struct stat *st, enum model_kind *kind)
{
	struct fs_file *f = pending_file_locked(ctx, node);
	const struct model_attr *a;
	bool follows;

	if (!f)
		return false;
	if (!exists) {
		struct model_node n = { .kind = f->pend_leaf ? MODEL_KIND_LEAF : MODEL_KIND_VIEW,
					.ino = f->pend_leaf ? f->pend_ino :
					       (uint64_t)(uintptr_t)node };

		fs_stat_fill(ctx, &n, st);
		if (kind)
			*kind = n.kind;
	}
	a = &f->pend_attr;	/* a created leaf's mode and owner, or a deferred chmod */
	if (a->have & MODEL_ATTR_MODE)
		st->st_mode = (st->st_mode & S_IFMT) | (a->mode & 07777);
	if (a->have & MODEL_ATTR_UID)
		st->st_uid = a->uid;
	if (a->have & MODEL_ATTR_GID)
		st->st_gid = a->gid;
	st->st_size = (off_t)f->pend_len;
	st->st_blocks = (blkcnt_t)((f->pend_len + 511) / 512);
	follows = st->st_atim.tv_sec == st->st_mtim.tv_sec &&
		  st->st_atim.tv_nsec == st->st_mtim.tv_nsec;	/* no atime of its own */
	st->st_mtim = fs_ns_to_ts(f->pend_mtime);
	st->st_ctim = st->st_mtim;
	if (a->have & MODEL_ATTR_ATIME)
		st->st_atim = fs_ns_to_ts(a->atime_ns);
	else if (follows || !exists)
		st->st_atim = st->st_mtim;
	return true;
}

/* node_stat's looks at the store for a name that a commit may have just made */
#define FS_STAT_RETRIES 4
#define FS_ROOT_MS 2000	/* the root's getattr waits this long for the store's servers' answer */

/*
 * Attributes of node at path: the model's, or an open file's unsaved ones.
 * *kind (may be NULL) gets the kind; *volatile_ is set when the kernel
 * should not cache the entry. *pend_leaf (may be NULL) is set when that is
 * only because they are a leaf's unsaved ones: the kernel may cache those
 * attributes (writes through the mount refresh them, and the commit
 * invalidates them before close returns: fs_inval_attr_now), which spares
 * a getattr round trip at each stat, permission check and fsetxattr of a
 * file being written. A view's size is the one req's caller may read
 * (model_stat_as; req NULL where the size is not replied: unchecked).
 */
static int node_stat(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node, const char *path,
		     struct stat *st, enum model_kind *kind, bool *volatile_, bool *pend_leaf)
{
	uint64_t gen = model_version(ctx->model), now;
	struct model_error err = { 0 };
	const struct model_cred *who;
	struct model_cred cred;
	struct fs_groups groups;
	struct model_node n;
	enum model_kind pend_kind = MODEL_KIND_VIEW;
	bool pending, cached;
	uint32_t nlink;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	if (node->wfile && node->wfile->pend_leaf) {
		/* a created leaf not committed yet: all it has is its writer's (no store look) */
		fs_stat_pending_locked(ctx, node, false, st, NULL);
		pthread_mutex_unlock(&ctx->lock);
		if (kind)
			*kind = MODEL_KIND_LEAF;
		if (volatile_)
			*volatile_ = true;
		if (pend_leaf)
			*pend_leaf = true;
		return 0;
	}
	if (node->tmp) {
		fs_tmp_stat_locked(ctx, node, st);
		fs_stat_pending_locked(ctx, node, true, st, NULL);
		pthread_mutex_unlock(&ctx->lock);
		if (kind)
			*kind = MODEL_KIND_LEAF;
		if (volatile_)
			*volatile_ = true;
		return 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	who = fs_cred_for_view(req, ctx, path, &cred, &groups);
	for (int tries = 1;; tries++) {
		pthread_mutex_lock(&ctx->lock);
		/* nlink costs a seek per child: counted once per store generation */
		cached = node->nlink_gen == gen + 1;
		nlink = node->nlink;
		pthread_mutex_unlock(&ctx->lock);
		ret = fs_ahead_stat(ctx, node, path, gen, &n) ? 0 :
		      model_stat_as(ctx->model, path, cached ? 0 : MODEL_STAT_SUBDIRS, &n, who,
				    &err);
		if (ret == 0)
			fs_stat_fill(ctx, &n, st);
		if (ret == 0 && cached && fs_kind_is_dir(n.kind))
			st->st_nlink = nlink;
		pthread_mutex_lock(&ctx->lock);
		if (ret == 0) {
			st->st_ino = fs_node_st_ino_locked(ctx, node, st->st_ino);
			node->kind_known = true;
			node->is_dir = fs_kind_is_dir(n.kind);
			node->seen_type = n.kind == MODEL_KIND_LEAF ? n.type : 0;
		}
		if (ret == 0 && fs_kind_is_dir(n.kind)) {
			node->nlink = (uint32_t)st->st_nlink;	/* for readdirplus, while gen holds */
			node->nlink_gen = gen + 1;
		}
		pending = fs_stat_pending_locked(ctx, node, ret == 0, st, &pend_kind);
		pthread_mutex_unlock(&ctx->lock);
		/*
		 * Absent from the store and no longer pending: a view that a
		 * writer committed between the two looks (parallel >> x.json)
		 * is in the store now. When anyone committed since the stat,
		 * ask again, or that getattr or lookup fails a racing open
		 * with ENOENT. Each retry needs another commit; bounded all
		 * the same.
		 */
		if (ret != -ENOENT || pending || tries == FS_STAT_RETRIES)
			break;
		now = model_version(ctx->model);
		if (now == gen)
			break;
		gen = now;
	}
	fs_groups_release(&groups);
	if (pending) {
		n.kind = ret == 0 ? n.kind : pend_kind;
		ret = 0;
	}
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		return ret;
	}
	if (kind)
		*kind = n.kind;
	if (volatile_)
		*volatile_ = pending || n.kind == MODEL_KIND_VIEW || n.derived ||
			     n.expires_ns != 0;	/* may expire: never cached (fs/ttl.c) */
	if (pend_leaf)
		*pend_leaf = pending && n.kind == MODEL_KIND_LEAF && !n.derived &&
			     n.expires_ns == 0;
	return 0;
}

double fs_attr_timeout_for(const struct fs_ctx *ctx, bool volatile_)
{
	return volatile_ ? 0.0 : ctx->attr_timeout;
}

int fs_entry_make(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir, const char *name,
		  const char *path, struct fuse_entry_param *e)
{
	struct fs_node *child;
	bool vol = false, pend = false, held;
	int ret;

	memset(e, 0, sizeof(*e));
	pthread_mutex_lock(&ctx->lock);
	child = fs_node_child_locked(ctx, dir, name, true);
	if (child)
		fs_node_ref_locked(child);	/* pinned while the model is asked */
	pthread_mutex_unlock(&ctx->lock);
	if (!child)
		return -ENOMEM;
	ret = node_stat(req, ctx, child, path, &e->attr, NULL, &vol, &pend);
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0)
		child->nlookup++;
	/*
	 * A leaf made by mknod keeps its name (tar looks it up twice before
	 * opening it): when it is dropped uncommitted, fs_file_hold_forget
	 * makes the kernel forget it.
	 */
	held = child->wfile && child->wfile->held;
	fs_node_unref_locked(ctx, child);
	pthread_mutex_unlock(&ctx->lock);
	if (ret < 0)
		return ret;
	e->ino = fs_node_ino(ctx, child);
	e->attr_timeout = fs_attr_timeout_for(ctx, vol && !pend);
	e->entry_timeout = vol && !held ? 0.0 : ctx->entry_timeout;
	return 0;
}

void fs_reply_entry_for(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *dir,
			const char *name, const char *path)
{
	struct fuse_entry_param e;
	int ret = fs_entry_make(req, ctx, dir, name, path, &e);

	if (ret < 0)
		fs_reply_err(req, ret);
	else if (fuse_reply_entry(req, &e) < 0)
		fs_node_forget(ctx, e.ino, 1);
}

/*
 * The root's getattr, which the kernel asks before any xattr of the root
 * (default_permissions), user.kvfs.error and user.kvfs.stats too: those
 * must answer while the store's servers do not. So while a refusal says
 * they are silent (fs_servers_silent), the attributes last read answer at
 * once, uncached, without asking; otherwise the store is asked, for
 * FS_ROOT_MS at most, and they answer when it could not tell.
 */
static void root_getattr(fuse_req_t req, struct fs_ctx *ctx, const char *path)
{
	struct fs_node *root = &ctx->inodes.root;
	struct stat st;
	bool vol = false, pend = false;
	int ret = -ETIMEDOUT;

	if (!fs_servers_silent(ctx)) {
		model_deadline(ctx->model, FS_ROOT_MS);
		ret = node_stat(req, ctx, root, path, &st, NULL, &vol, &pend);
	}
	pthread_mutex_lock(&ctx->lock);
	if (ret == 0 && !vol) {
		ctx->root_st = st;
		ctx->root_known = true;
	} else if (ret < 0 && fs_errno_is_unanswered(ret) && ctx->root_known) {
		st = ctx->root_st;
		ret = 0;
		vol = true;	/* asked again next time */
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret < 0)
		fs_reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, fs_attr_timeout_for(ctx, vol));
}

void fs_op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct stat st;
	bool vol = false, pend = false;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret == 0 && node == &ctx->inodes.root) {
		root_getattr(req, ctx, path);
		free(path);
		return;
	}
	if (ret == 0) {
		ret = node_stat(req, ctx, node, path, &st, NULL, &vol, &pend);
		fs_trace(ctx, "getattr %s: %d size %lld mtime %lld.%09ld", path, ret,
			 ret == 0 ? (long long)st.st_size : -1LL,
			 ret == 0 ? (long long)st.st_mtim.tv_sec : 0LL, ret == 0 ? st.st_mtim.tv_nsec : 0L);
		free(path);
	}
	if (ret == -ENOENT) {	/* unlinked or renamed over: an open descriptor answers */
		ret = fs_cache_open_stat(ctx, node, fi, &st);
		vol = true;
		pend = false;
	}
	if (!fi)
		ret = fs_gone_name(ret);
	if (ret < 0)
		fs_reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, fs_attr_timeout_for(ctx, vol && !pend));
}

/*
 * truncate(2) of node without an open file: read, resize, commit at once.
 * A view is read and written on behalf of req's caller, as an open would.
 */
static int truncate_path(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node, off_t size)
{
	struct model_error err = { 0 };
	const struct model_cred *who;
	struct model_cred cred;
	size_t len = 0;
	char *text = NULL, *grown, *path;
	struct fs_groups groups;
	int ret;

	if ((uint64_t)size > FS_FILE_MAX)
		return -EFBIG;
	ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	who = fs_cred_for_view(req, ctx, path, &cred, &groups);
	ret = model_read_all_as(ctx->model, path, &text, &len, who, &err);
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
	ret = model_write_as(ctx->model, path, text, (size_t)size, 0,
			     MODEL_WRITE_TEXT | MODEL_WRITE_NO_CREATE, who, &err);
out_end:
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	fs_groups_release(&groups);
	free(text);
	free(path);
	return ret;
}

static int setattr_size(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node,
			struct fs_file *f, off_t size)
{
	int ret;

	if (!f || !f->writable) {
		pthread_mutex_lock(&ctx->lock);
		f = node->wfile;	/* a writer is open: truncate its buffer */
		if (f)
			f->refs++;
		pthread_mutex_unlock(&ctx->lock);
		if (!f) {
			ret = fs_tmp_truncate(ctx, node, size);
			return ret == 1 ? truncate_path(req, ctx, node, size) : ret;
		}
		ret = setattr_size(req, ctx, node, f, size);
		if (ret == 0)
			ret = fs_node_commit_files(ctx, node);	/* truncate(2) takes effect at once */
		fs_file_put(ctx, f);
		return ret;
	}
	pthread_mutex_lock(&f->lock);
	if (f->kind == FS_FILE_VIEW_APPEND) {
		ret = size == 0 ? 0 : -EINVAL;	/* only the bytes appended are held */
		if (ret == 0)
			f->len = 0;
	} else {
		ret = fs_file_resize(f, (size_t)size);
		if (ret == 0 && size == 0)
			f->loaded = false;	/* what follows is wholly the writer's */
		if (ret == 0) {
			f->dirty = true;
			f->wmtime_ns = fs_now_ns();
			fs_file_publish(ctx, f);
		}
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/*
 * utimens: the mtime where leaves and directories keep it; the atime is
 * the mtime unless set apart, and only then stored (an attr field), so
 * `touch` and imports cost nothing. Setting one time keeps the other as
 * shown (UTIME_OMIT), so an atime that followed the old mtime is stored.
 */
static int setattr_times(struct fs_ctx *ctx, struct fs_node *node, const char *path,
			 const struct stat *attr, int to_set, bool later)
{
	bool set_m = to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW);
	bool set_a = to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW);
	int64_t now = fs_now_ns(), m, a, cur_m, cur_a;
	struct model_error err = { 0 };
	struct fs_defer d = { 0 };
	struct stat cur;
	char *wpath;
	bool tmp;
	int ret = node_stat(NULL, ctx, node, path, &cur, NULL, NULL, NULL);

	if (ret < 0)
		return ret;
	cur_m = ts_ns(&cur.st_mtim);
	cur_a = ts_ns(&cur.st_atim);
	m = !set_m ? cur_m : (to_set & FUSE_SET_ATTR_MTIME_NOW) ? now : ts_ns(&attr->st_mtim);
	a = !set_a ? cur_a : (to_set & FUSE_SET_ATTR_ATIME_NOW) ? now : ts_ns(&attr->st_atim);
	/* an open writer commits at close: the mtime shown now, unless set */
	d.mtime = true;
	d.mtime_ns = m;
	if (a != m) {
		d.set.have = MODEL_ATTR_ATIME;
		d.set.atime_ns = a;
	} else if (cur_a != cur_m) {
		d.unset = MODEL_ATTR_ATIME;	/* follows the mtime again */
	}
	if (fs_writer_defer(ctx, node, &d, &ret))
		return ret;	/* committed with the content at close */
	ret = fs_node_commit_files(ctx, node);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp && set_m)
		node->tmp->mtime_ns = m;	/* kept for the commit; it has no atime */
	pthread_mutex_unlock(&ctx->lock);
	if (tmp)
		return 0;
	ret = fs_write_path(ctx, node, NULL, &wpath);
	if (ret < 0)
		return ret;
	/* views: accepted, not kept (they show their node's time) */
	ret = later ? model_set_times_later(ctx->model, wpath, set_m ? &m : NULL, &d.set, d.unset,
					   &err) :
	      model_set_times(ctx->model, wpath, set_m ? &m : NULL, &d.set, d.unset, &err);
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, wpath);
	free(wpath);
	return ret;
}

/*
 * One field a chmod/chown sets: stored only where it differs from the
 * default, so setting the default back removes it from the node's record.
 */
static void attr_choose(struct model_attr *set, unsigned *unset, unsigned bit, bool is_default)
{
	if (is_default)
		*unset |= bit;
	else
		set->have |= bit;
}

/*
 * chmod/chown on a leaf open for writing, or on a pending file in an
 * array: kept for its commit (at close; at the rename onto an index).
 */
static bool owner_mode_defer(struct fs_ctx *ctx, struct fs_node *node, const struct stat *attr,
			     int to_set, int *ret)
{
	struct fs_defer d = { 0 };

	if (to_set & FUSE_SET_ATTR_MODE) {
		d.set.mode = attr->st_mode & 07777;
		attr_choose(&d.set, &d.unset, MODEL_ATTR_MODE, d.set.mode == fs_mode_default(false));
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		d.set.uid = attr->st_uid;
		attr_choose(&d.set, &d.unset, MODEL_ATTR_UID, d.set.uid == ctx->uid);
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		d.set.gid = attr->st_gid;
		attr_choose(&d.set, &d.unset, MODEL_ATTR_GID, d.set.gid == ctx->gid);
	}
	*ret = 0;
	if (fs_tmp_set_attr(ctx, node, &d.set, d.unset))
		return true;
	return fs_writer_defer(ctx, node, &d, ret);
}

/*
 * chmod and chown: kept in the attr space, a value equal to the default
 * (0644/0755, the mounting user) drops the field. The kernel checked who
 * may (default_permissions). A pending file in an array keeps them for its
 * commit (rsync sets them on its temporary file); a view accepts and
 * forgets them: it has no node of its own to keep them.
 */
static int setattr_owner_mode(struct fs_ctx *ctx, struct fs_node *node, const struct stat *attr,
			      int to_set, bool later)
{
	struct model_error err = { 0 };
	struct model_attr set = { 0 };
	unsigned unset = 0;
	struct model_node n;
	char *path;
	int ret;

	if (owner_mode_defer(ctx, node, attr, to_set, &ret))
		return ret;	/* committed with the content at close, or at the rename */
	ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	ret = model_stat(ctx->model, path, 0, &n, &err);
	if (ret == 0 && n.kind == MODEL_KIND_VIEW)
		goto out_end;
	if (ret == 0 && (to_set & FUSE_SET_ATTR_MODE)) {
		set.mode = attr->st_mode & 07777;
		attr_choose(&set, &unset, MODEL_ATTR_MODE,
			    set.mode == fs_mode_default(fs_kind_is_dir(n.kind)));
	}
	if (ret == 0 && (to_set & FUSE_SET_ATTR_UID)) {
		set.uid = attr->st_uid;
		attr_choose(&set, &unset, MODEL_ATTR_UID, set.uid == ctx->uid);
	}
	if (ret == 0 && (to_set & FUSE_SET_ATTR_GID)) {
		set.gid = attr->st_gid;
		attr_choose(&set, &unset, MODEL_ATTR_GID, set.gid == ctx->gid);
	}
	if (ret == 0 && later)
		ret = model_set_attr_later(ctx->model, path, &set, unset, &err);
	else if (ret == 0)
		ret = model_set_attr(ctx->model, path, &set, unset, &err);
out_end:
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	free(path);
	return ret;
}

/*
 * The mode left once set-ID bits are cleared for a write, a truncation or a
 * chown: set-user-ID always, set-group-ID where the group may execute (the
 * kernel's rule for FUSE_HANDLE_KILLPRIV_V2, which is the VFS's own).
 */
static mode_t mode_killed(mode_t mode)
{
	mode &= ~(mode_t)S_ISUID;
	if (mode & S_IXGRP)
		mode &= ~(mode_t)S_ISGID;
	return mode;
}

int fs_attr_kill_suidgid(struct fs_ctx *ctx, struct fs_node *node)
{
	struct stat cur, want = { 0 };
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret == 0) {
		ret = node_stat(NULL, ctx, node, path, &cur, NULL, NULL, NULL);
		free(path);
	}
	if (ret < 0 || !S_ISREG(cur.st_mode) || mode_killed(cur.st_mode) == cur.st_mode)
		return ret == -ENOENT ? 0 : ret;	/* gone: the write goes to the descriptor */
	want.st_mode = mode_killed(cur.st_mode);
	ret = setattr_owner_mode(ctx, node, &want, FUSE_SET_ATTR_MODE, false);
	if (ret == 0)	/* the kernel asked nothing: its cached mode is the old one */
		fs_inval_attr_now(ctx, fs_node_ino(ctx, node));
	return ret;
}

/*
 * A setattr with FATTR_KILL_SUIDGID (libfuse 3.14 passes it as
 * FUSE_SET_ATTR_KILL_SUID: the same bit): a chown of a file, or a
 * truncation by a caller without CAP_FSETID. The mode to set, the one the
 * request gives or the node's, loses its set-ID bits in *attr and to_set.
 */
static int setattr_kill(fuse_req_t req, struct fs_ctx *ctx, struct fs_node *node,
			const char *path, struct stat *attr, int *to_set)
{
	struct stat cur;
	int ret = 0;

	if (!(*to_set & FUSE_SET_ATTR_MODE)) {
		ret = node_stat(req, ctx, node, path, &cur, NULL, NULL, NULL);
		if (ret < 0 || !S_ISREG(cur.st_mode))
			return ret;
		attr->st_mode = cur.st_mode;
	}
	if (mode_killed(attr->st_mode) != attr->st_mode) {
		attr->st_mode = mode_killed(attr->st_mode);
		*to_set |= FUSE_SET_ATTR_MODE;
	}
	return 0;
}

/*
 * The mode an access ACL in the xattr format (a version word, then tag,
 * permission and id per entry) stands for, when it holds nothing beyond
 * one: the owner, group and others entries only. -1 for any other ACL.
 */
static int acl_minimal_mode(const char *value, size_t size)
{
	static const uint16_t tags[3] = { 0x01, 0x04, 0x20 };	/* USER_OBJ, GROUP_OBJ, OTHER */
	const unsigned char *v = (const unsigned char *)value;
	int mode = 0;

	if (size != 4 + 3 * 8 || (v[0] | v[1] << 8 | v[2] << 16 | (uint32_t)v[3] << 24) != 2)
		return -1;
	for (int i = 0; i < 3; i++) {
		const unsigned char *e = v + 4 + 8 * i;
		unsigned tag = e[0] | e[1] << 8, perm = e[2] | e[3] << 8;

		if (tag != tags[i] || perm > 7)
			return -1;
		mode = mode << 3 | (int)perm;
	}
	return mode;
}

void fs_op_setxattr_acl(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	int mode = acl_minimal_mode(value, size);
	struct stat cur, want = { 0 };
	char *path;
	int ret;

	if (mode < 0) {
		fs_reply_err(req, -ENOTSUP);	/* cp -a: falls back to chmod, quietly */
		return;
	}
	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	ret = fs_node_path(ctx, node, NULL, &path);
	if (ret == 0) {
		ret = node_stat(NULL, ctx, node, path, &cur, NULL, NULL, NULL);
		free(path);
	}
	/* set-id and sticky bits follow chmod's own rules: left to chmod */
	if (ret == 0 && (cur.st_mode & 07000))
		ret = -ENOTSUP;
	/* the kernel passes this name through unchecked: chmod's rule */
	if (ret == 0 && fuse_req_ctx(req)->uid != 0 && fuse_req_ctx(req)->uid != cur.st_uid)
		ret = -EPERM;
	if (ret == 0) {
		want.st_mode = (cur.st_mode & S_IFMT) | (mode_t)mode;
		ret = setattr_owner_mode(ctx, node, &want, FUSE_SET_ATTR_MODE, false);
	}
	if (ret == 0)
		fs_inval_attr_now(ctx, ino);	/* the kernel keeps the old mode otherwise */
	fs_reply_err(req, ret);
}

void fs_op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		   struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	/* a tool's touches to the file it just wrote (rsync): with its next commit */
	bool later = fs_node_fresh(ctx, node, fuse_req_ctx(req)->pid);
	struct stat st;
	bool vol = false, pend = false;
	char *path;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret == -ENOENT && fs_fi_file(fi)) {
		/* the name is gone: ftruncate works on the descriptor, times are not kept */
		if (to_set & FUSE_SET_ATTR_SIZE)
			ret = setattr_size(req, ctx, node, fs_fi_file(fi), attr->st_size);
		else
			ret = 0;
		if (ret == 0)
			ret = fs_cache_open_stat(ctx, node, fi, &st);
		if (ret < 0)
			fs_reply_err(req, ret);
		else
			fuse_reply_attr(req, &st, 0.0);
		return;
	}
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "setattr %s 0x%x", path, (unsigned)to_set);
	if (ctx->read_only && (to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME |
					 FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_ATIME |
					 FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MODE |
					 FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
		ret = -EROFS;
		goto out_reply;
	}
	if (to_set & FUSE_SET_ATTR_KILL_SUID)
		ret = setattr_kill(req, ctx, node, path, attr, &to_set);
	if (ret == 0 && (to_set & FUSE_SET_ATTR_SIZE))
		ret = setattr_size(req, ctx, node, fs_fi_file(fi), attr->st_size);
	if (ret == 0 && (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		ret = setattr_owner_mode(ctx, node, attr, to_set, later);
	if (ret == 0 && (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW |
				   FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)))
		ret = setattr_times(ctx, node, path, attr, to_set, later);
	if (ret == 0)
		ret = node_stat(req, ctx, node, path, &st, NULL, &vol, &pend);
out_reply:
	free(path);
	if (ret < 0)
		fs_reply_err(req, ret);
	else
		fuse_reply_attr(req, &st, fs_attr_timeout_for(ctx, vol && !pend));
}
