/*
 * fs/names.c - operations on names: create, mkdir, mknod, unlink, rmdir,
 * rename (links and symlinks are refused). Each takes its path inside the
 * write section and moves the node table before the section ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_int.h"

/*
 * Starts an operation that changes name in the directory parent: on success
 * the write section is open (fs_write_path, or _excl) and the caller ends it.
 */
static int name_begin_as(fuse_req_t req, fuse_ino_t parent, const char *name, const char *what,
			 bool excl, struct fs_node **dir, char **path)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	int ret;

	*dir = fs_node_from_ino(ctx, parent);
	ret = fs_name_check(name);
	if (ret < 0)
		return ret;
	if (ctx->read_only)
		return -EROFS;
	ret = excl ? fs_write_path_excl(ctx, *dir, name, path) : fs_write_path(ctx, *dir, name, path);
	if (ret < 0)
		return ret;
	fs_trace(ctx, "%s %s", what, *path);
	return 0;
}

static int name_begin(fuse_req_t req, fuse_ino_t parent, const char *name, const char *what,
		      struct fs_node **dir, char **path)
{
	/* removals and renames move the node table: exclusive */
	bool excl = strcmp(what, "mkdir") != 0 && strcmp(what, "mknod") != 0;

	return name_begin_as(req, parent, name, what, excl, dir, path);
}

/*
 * Ends what name_begin started for an operation that makes a new entry:
 * closes the write section, replies with the entry or the error, frees path.
 */
static void name_end_entry(fuse_req_t req, struct fs_node *dir, const char *name, char *path,
			   int ret, const struct model_error *err)
{
	struct fs_ctx *ctx = fs_req_ctx(req);

	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, err, path);
		fs_reply_err(req, ret);
	} else {
		fs_reply_entry_for(req, ctx, dir, name, path);
	}
	free(path);
}

/*
 * Refuses to make what a store cannot hold: EPERM, which symlink(2),
 * link(2) and mknod(2) document for a filesystem without such things and
 * the VFS gives for one (vfat); ENOTSUP makes cp, tar and rsync do the
 * same with another message, and ENOSYS claims the call is missing (the
 * kernel turns a FUSE link's into EPERM). Alone, EPERM reads as a
 * permission problem: the reason is kept for user.kvfs.error and logged.
 */
static void name_refuse(fuse_req_t req, fuse_ino_t parent, const char *name, const char *what)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { .msg = "" };
	char *path;

	if (fs_node_path(ctx, fs_node_from_ino(ctx, parent), name, &path) == 0) {
		snprintf(err.msg, sizeof(err.msg), "%s: %s cannot be stored: a store holds files "
			 "and directories only", path, what);
		fs_log_model(ctx, -EPERM, &err, path);
		free(path);
	}
	fs_reply_err(req, -EPERM);
}

/* What mknod was asked to make, for its refusal. */
static const char *node_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device node";
	return "a file of this type";
}

void fs_op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { 0 };
	struct fs_node *dir;
	struct model_attr a;
	char *path;
	int ret;

	fs_rmhold_settle_name(ctx, fs_node_from_ino(ctx, parent), name);	/* tried first */
	ret = name_begin(req, parent, name, "mkdir", &dir, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_attr_for_new(req, ctx, mode, true, &a);
	ret = model_mkdir_as(ctx->model, path, MODEL_KIND_OBJECT, &a, &err);
	name_end_entry(req, dir, name, path, ret, &err);
}

/* Regular files only: devices, FIFOs and sockets cannot be stored. */
void fs_op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		 dev_t rdev)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { 0 };
	struct fs_node *dir, *node;
	struct model_attr a;
	uint64_t ino = 0, as_of = 0;
	char *path;
	int ret;

	(void)rdev;
	if (!S_ISREG(mode)) {
		name_refuse(req, parent, name, node_kind(mode));
		return;
	}
	fs_rmhold_settle_name(ctx, fs_node_from_ino(ctx, parent), name);	/* tried first */
	ret = name_begin(req, parent, name, "mknod", &dir, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_attr_for_new(req, ctx, mode, false, &a);
	if (ctx->commit_ms) {
		ret = model_create_as(ctx->model, path, &a, &err);	/* queued: costs no commit */
		if (ret == 0 || err.reason != MODEL_REASON_TABLE_RULE) {
			name_end_entry(req, dir, name, path, ret, &err);
			return;
		}
		/* an empty leaf a table's column refuses: held for its content */
	}
	/*
	 * Only checked, then held until the close of the open that follows
	 * (tar -x: mknod, setxattr, open, write, futimens, close): one commit
	 * per file (fs_leaf_hold). A table row's rules are judged then, on
	 * the content (model_create_check judges its shape only).
	 */
	ret = model_create_check(ctx->model, path, &a, &ino, &as_of, &err);
	fs_write_end(ctx, ret);
	if (ret == 0) {
		pthread_mutex_lock(&ctx->lock);
		node = fs_node_child_locked(ctx, dir, name, true);
		pthread_mutex_unlock(&ctx->lock);
		ret = node ? fs_leaf_hold(ctx, node, &a, ino, as_of) : -ENOMEM;
		if (ret < 0 && node) {
			pthread_mutex_lock(&ctx->lock);
			fs_node_drop_unused_locked(ctx, node);
			pthread_mutex_unlock(&ctx->lock);
		}
	}
	if (ret < 0) {
		if (ret != -EEXIST)
			fs_log_model(ctx, ret, &err, path);
		fs_reply_err(req, ret);
	} else {
		fs_trace(ctx, "held %s", path);
		fs_reply_entry_for(req, ctx, dir, name, path);
	}
	free(path);
}

void fs_op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		  struct fuse_file_info *fi)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *dir = fs_node_from_ino(ctx, parent);
	struct model_error err = { 0 };
	struct fuse_entry_param e;
	struct model_attr a;
	struct fs_file *f = NULL;
	bool view = model_name_is_view(name, strlen(name)), onto_held = false;
	uint64_t ino = 0, as_of = 0;
	char *path;
	int ret = fs_name_check(name);

	if (ret == 0)
		ret = !S_ISREG(mode) ? -EPERM : ctx->read_only ? -EROFS : 0;
	/*
	 * Onto a held removal: the file is new to the caller, its content
	 * replaces the stored; shown while open, held again if refused.
	 */
	if (ret == 0 && !view && fs_rmhold_onto(ctx, dir, name)) {
		fi->flags = (fi->flags & ~O_EXCL) | O_TRUNC;
		onto_held = true;
	}
	if (ret == 0)
		ret = fs_write_path(ctx, dir, name, &path);
	if (ret < 0)
		goto out_reply;
	fs_trace(ctx, "create %s", path);
	fs_attr_for_new(req, ctx, mode, false, &a);
	/*
	 * A leaf is only checked: it is committed at close with its content,
	 * type, mode and mtime, one commit per file (fs_leaf_pending_open).
	 * That commit judges the name again (O_EXCL: refused if another
	 * writer made it meanwhile). With O_TRUNC and without O_EXCL (the
	 * shell's >) the check's success is not confirmed at etcd's newest
	 * revision (its guards are not sent; the open's as_of, the cluster's
	 * revision, costs a count_only read instead, docs/ETCD.md 8a): a name
	 * made meanwhile is written over at close, as the O_TRUNC open of it
	 * would have. Else
	 * it is: an O_EXCL open's answer is what a lock file taken from two
	 * hosts relies on, and an append (>>) must not replace what another
	 * host made.
	 */
	if (view)
		ret = model_create_as(ctx->model, path, &a, &err);
	else if ((fi->flags & (O_TRUNC | O_EXCL)) == O_TRUNC)
		ret = model_create_check_unconfirmed(ctx->model, path, &a, &ino, &as_of, &err);
	else
		ret = model_create_check(ctx->model, path, &a, &ino, &as_of, &err);
	fs_write_end(ctx, ret);
	if (ret < 0 && !view && err.reason == MODEL_REASON_NOT_AN_INDEX) {
		/* a name that is no index in an array: a pending temporary file */
		ret = fs_tmp_create(ctx, dir, name, fi, as_of, &e, &f);
		if (ret == 0) {
			fs_trace(ctx, "pending file %s", path);
			goto out_reply_create;
		}
	}
	if (ret == -EEXIST && !(fi->flags & O_EXCL))
		view = false;	/* made meanwhile (by the CLI): open what is there */
	else if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		goto out_free;
	}
	if (view || ret == 0) {
		/* A view is only checked: it exists once its first content is committed. */
		struct fs_node *node;

		pthread_mutex_lock(&ctx->lock);
		node = fs_node_child_locked(ctx, dir, name, true);
		pthread_mutex_unlock(&ctx->lock);
		if (!node) {
			ret = -ENOMEM;
			goto out_free;
		}
		ret = view ? fs_view_pending_open(ctx, node, fi, &f) :
		      fs_leaf_pending_open(ctx, node, fi, &a, ino, as_of, &f);
		if (ret < 0) {
			pthread_mutex_lock(&ctx->lock);
			fs_node_drop_unused_locked(ctx, node);
			pthread_mutex_unlock(&ctx->lock);
			goto out_free;
		}
	}
	ret = fs_entry_make(req, ctx, dir, name, path, &e);
	if (ret < 0)
		goto out_file;
	if (!f) {
		ret = fs_file_open(req, ctx, fs_node_from_ino(ctx, e.ino), path, fi, &f);
		if (ret < 0) {
			fs_node_forget(ctx, e.ino, 1);
			goto out_free;
		}
	}
	if (onto_held)
		fs_file_onto_held(ctx, f, dir, name);
	fs_file_set_opener(req, ctx, f);
out_reply_create:
	free(path);
	fs_file_handle_add(ctx, f);
	if (fuse_reply_create(req, &e, fi) < 0) {
		fs_file_handle_lost(ctx, f);
		fs_node_forget(ctx, e.ino, 1);
	}
	return;

out_file:
	if (f)
		fs_file_put(ctx, f);
out_free:
	free(path);
out_reply:
	fs_reply_err(req, ret);
}

static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name, unsigned flags,
			const char *what)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { 0 };
	struct fs_shape_mark mark;
	struct fs_node *dir, *node;
	bool whole = false;
	char *path;
	int ret;

	fs_name_settle(ctx, fs_node_from_ino(ctx, parent), name);	/* a created leaf, still open */
	/*
	 * A leaf made by mknod is not in the store yet, so the model would find
	 * its directory empty and remove it with the leaf: land such leaves first.
	 */
	if (flags & MODEL_REMOVE_DIR)
		fs_held_commit(ctx, true);
	ret = name_begin(req, parent, name, what, &dir, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_shape_mark_dirs(ctx, &mark, dir, NULL);
	ret = model_remove(ctx->model, path, flags | MODEL_REMOVE_ROW_WHOLE, &err);
	fs_rmhold_touch(ctx);	/* an rm -r still going: its holds wait */
	/* inside a table row: held for the row's removal (rmhold.c), or that removal */
	if (ret < 0 && fs_rmhold_removal(ctx, dir, name, path, flags, &ret, &err, &whole)) {
		fs_write_end(ctx, ret);
		free(path);
		fs_reply_err(req, ret);
		return;
	}
	if (whole)	/* the row went whole, or stays whole: its names held end */
		fs_rmhold_end_below(ctx, dir, name, ret < 0);
	if (ret == 0 && model_name_is_view(name, strlen(name)))
		fs_rmhold_view_written(ctx, dir, name);
	/*
	 * The kernel's getattr of dir after each removal need not count its
	 * children: an unlink removes a leaf (the model refuses a container),
	 * an rmdir one directory; NAME.json removes its node, whatever it is.
	 */
	if (ret == 0 && !model_name_is_view(name, strlen(name)))
		fs_shape_adjust(ctx, &mark, flags == MODEL_REMOVE_DIR ? -1 : 0, 0);
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
		fs_inval_name(ctx, dir, name);
	if (node) {
		fs_want_type_clear(ctx, node);
		fs_node_drop_pending_below(ctx, node);	/* pending files in a removed array */
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, node);
		pthread_mutex_unlock(&ctx->lock);
	}
	free(path);
	fs_reply_err(req, ret);
}

void fs_op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_ctx *ctx = fs_req_ctx(req);

	if (!ctx->read_only && fs_tmp_unlink(ctx, fs_node_from_ino(ctx, parent), name)) {
		fs_trace(ctx, "unlink pending file %s", name);
		fs_reply_err(req, 0);
		return;
	}
	remove_name(req, parent, name, MODEL_REMOVE_LEAF, "unlink");
}

void fs_op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, MODEL_REMOVE_DIR, "rmdir");
}

void fs_op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		  fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { 0 };
	struct fs_node *dir, *newdir = fs_node_from_ino(ctx, newparent);
	struct model_moved moved = { 0 };
	struct fs_tmp_moving tmps;
	struct fs_shape_mark mark;
	struct model_cred who;
	const struct model_cred *whop = NULL;
	gid_t *groups = NULL;
	unsigned mflags = 0;
	bool onto_held;
	char *from, *to = NULL;
	int ret;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fs_reply_err(req, -EINVAL);	/* RENAME_WHITEOUT: no overlay upper layers here */
		return;
	}
	ret = fs_name_check(newname);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	if (flags & RENAME_NOREPLACE)
		mflags |= MODEL_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		mflags |= MODEL_RENAME_EXCHANGE;
	/* created leaves still open are committed first: the store moves them */
	fs_name_settle(ctx, fs_node_from_ino(ctx, parent), name);
	fs_subtree_settle(ctx, fs_node_from_ino(ctx, parent), name);
	fs_name_settle(ctx, newdir, newname);
	fs_held_commit(ctx, true);	/* a directory replaced must not hide a leaf made by mknod */
	/* onto a held name: the target is new to the caller; the hold ends if the rename succeeds */
	onto_held = !ctx->read_only && fs_rmhold_onto(ctx, newdir, newname);
	if (onto_held)
		mflags &= ~(unsigned)MODEL_RENAME_NOREPLACE;
	/* onto a view, a document is written: on behalf of the caller */
	if (model_name_is_view(newname, strlen(newname))) {
		fs_cred_from_req(req, ctx, &who, &groups);
		whop = &who;
	}
	ret = ctx->read_only ? -EROFS :
	      fs_tmp_rename(ctx, whop, fs_node_from_ino(ctx, parent), name, newdir, newname,
			    flags);
	if (ret != 1) {
		free(groups);
		fs_reply_err(req, ret);	/* a pending file: committed or moved */
		return;
	}
	ret = name_begin(req, parent, name, "rename", &dir, &from);
	if (ret < 0) {
		free(groups);
		fs_reply_err(req, ret);
		return;
	}
	fs_tmp_move_begin(ctx, dir, name, &tmps);
	/* a tool's file just written, moved into place (rsync): with its next commit */
	if (!model_name_is_view(newname, strlen(newname)) &&
	    fs_node_fresh_child(ctx, dir, name, fuse_req_ctx(req)->pid))
		mflags |= MODEL_RENAME_LATER;
	ret = fs_node_path(ctx, newdir, newname, &to);
	fs_shape_mark_dirs(ctx, &mark, dir, newdir);
	if (ret == 0)
		ret = model_rename_as(ctx->model, from, to, mflags, whop, &moved, &err);
	if (ret == 0 && moved.known)	/* both directories' nlink, without counting */
		fs_shape_adjust(ctx, &mark, moved.from_dirs, moved.to_dirs);
	if (ret == 0 && onto_held)	/* before the move: the held node is the target's */
		fs_rmhold_end_name(ctx, newdir, newname);
	/* The table moves before the section ends: committers then take the new path. */
	if (ret == 0)
		fs_node_move(ctx, dir, name, newdir, newname, flags & RENAME_EXCHANGE);
	if (ret == 0)	/* a document written onto a view: what it replaced is held no more */
		fs_rmhold_view_written(ctx, newdir, newname);
	fs_write_end(ctx, ret);
	fs_tmp_move_end(ctx, &tmps, ret == 0);	/* past the rename's commit */
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, to ? to : from);
		goto out_free;
	}
	fs_inval_name(ctx, dir, name);
	fs_inval_name(ctx, newdir, newname);
	if (model_name_is_view(newname, strlen(newname)))	/* the moved file is a view now */
		fs_inval_entry(ctx, newparent, newname, strlen(newname));
out_free:
	free(from);
	free(to);
	free(groups);
	fs_reply_err(req, ret);
}

void fs_op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link;
	name_refuse(req, parent, name, "a symbolic link");
}

void fs_op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino;
	name_refuse(req, newparent, newname, "a hard link");
}
