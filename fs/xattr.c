/*
 * fs/xattr.c - extended attributes (user.kvfs.type, user.kvfs.error,
 * user.kvfs.stale, user.kvfs.pid; user.kvfs.ttl and user.kvfs.expires handed to ttl.c,
 * user.kvfs.schema to table.c; the refusal of every other name), a type
 * kept for the
 * next commit of an empty leaf, and statfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs_int.h"

#define FS_XATTR_TYPE "user.kvfs.type"

/* Not listed, so that cp -a and rsync -X never copy them: */
#define FS_XATTR_ERROR "user.kvfs.error"	/* the last refusal for a path (below a directory) */
#define FS_XATTR_STALE "user.kvfs.stale"	/* any path: since when reads may miss commits */

#define FS_XATTR_PID "user.kvfs.pid"		/* the root: the daemon's pid, for kvfs umount */
#define FS_XATTR_STATS "user.kvfs.stats"	/* the root: requests by opcode (stats.c) */

/*
 * The room of a store in local files: what it uses, and what the file
 * system holding its directory has left.
 */
static int local_room(struct fs_ctx *ctx, uint64_t *total, uint64_t *free_bytes, uint64_t *entries)
{
	struct statvfs host;
	struct model_info info;
	int ret = model_info(ctx->model, &info);

	if (ret < 0)
		return ret;
	*free_bytes = 0;
	if (statvfs(ctx->store_dir, &host) == 0)
		*free_bytes = (uint64_t)host.f_bavail * host.f_frsize;
	*total = info.used_bytes + *free_bytes;
	*entries = info.entries;
	return 0;
}

/* statfs: the store's room, the servers' (etcd: its quota, docs/ETCD.md) or the local disk's. */
void fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_room sp;
	struct statvfs sv;
	uint64_t total, free_bytes, entries, files_free;
	int ret = model_room(ctx->model, &sp);

	(void)ino;
	total = sp.total_bytes;
	free_bytes = sp.free_bytes;
	entries = sp.entries;
	if (ret == -ENOTSUP)
		ret = local_room(ctx, &total, &free_bytes, &entries);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = 4096;
	sv.f_blocks = total / 4096;
	sv.f_bfree = sv.f_bavail = free_bytes / 4096;
	files_free = free_bytes / 64;	/* a small leaf takes some tens of bytes */
	sv.f_files = entries + files_free;
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
		fs_reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

/* Remembers a leaf's type name as read (directories' kinds are not kept). */
static void seen_type_set(struct fs_ctx *ctx, struct fs_node *node, const char *name)
{
	enum model_type type;

	if (model_type_parse(name, &type) < 0)
		return;
	pthread_mutex_lock(&ctx->lock);
	node->seen_type = type;
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * The node's type name, and whether it is the one its content would get
 * anyway (*inferred: model_get_type_inferred), which is then not listed.
 */
static int node_type(struct fs_ctx *ctx, fuse_ino_t ino, char *buf, size_t cap, bool *inferred)
{
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	char *path;
	bool tmp;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL || node->want_type;
	if (node->tmp) {	/* a pending file: the type it will have (string unless set) */
		snprintf(buf, cap, "%s", model_type_name(node->tmp->type ? node->tmp->type
									 : MODEL_TYPE_STRING));
		*inferred = node->tmp->type == 0;
	} else if (node->want_type) {
		snprintf(buf, cap, "%s", model_type_name(node->want_type));
		*inferred = false;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (tmp)
		return 0;
	ret = fs_node_path(ctx, node, NULL, &path);
	if (ret < 0)
		return ret;
	ret = model_get_type_inferred(ctx->model, path, buf, cap, inferred, &err);
	free(path);
	if (ret == 0)
		seen_type_set(ctx, node, buf);
	return ret;
}

/*
 * The type a leaf had when last read, for a node whose name is gone since
 * the path was resolved (fs_node.seen_type); -ENOENT when none was read.
 */
static int seen_type(struct fs_ctx *ctx, fuse_ino_t ino, char *buf, size_t cap)
{
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	enum model_type type;

	pthread_mutex_lock(&ctx->lock);
	type = node->seen_type;
	pthread_mutex_unlock(&ctx->lock);
	if (!type)
		return -ENOENT;
	snprintf(buf, cap, "%s", model_type_name(type));
	return 0;
}

/* user.kvfs.error: a leaf's own last refusal; a directory's, of anything below it. */
static void reply_error_xattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	char msg[sizeof(ctx->err.ring[0].msg)], *path;
	struct model_cred who;
	gid_t *groups;
	bool dir, found;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	dir = node == &ctx->inodes.root || (node->kind_known && node->is_dir);
	pthread_mutex_unlock(&ctx->lock);
	fs_cred_from_req(req, ctx, &who, &groups);	/* sees what is theirs or readable */
	found = fs_error_find(ctx, &who, path, dir, msg, sizeof(msg));
	free(groups);
	free(path);
	if (!found)
		fs_reply_err(req, -ENODATA);
	else
		reply_xattr_value(req, size, msg, strlen(msg));
}

/*
 * user.kvfs.stale, the same on every path: ENODATA while the mount knows of
 * every commit made up to a moment ago, else "since TIME (N s ago): why".
 * Asks no server, so it answers on a host cut off from them.
 */
static void reply_stale_xattr(fuse_req_t req, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_stale st;
	struct timespec now;
	struct tm tm;
	char when[32], line[sizeof(st.why) + 96];
	time_t secs;

	if (model_stale(ctx->model, &st) <= 0) {
		fs_reply_err(req, -ENODATA);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	secs = (time_t)(st.since_ns / 1000000000);
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(line, sizeof(line), "since %s.%03dZ (%.1f s ago): %s", when,
		 (int)(st.since_ns / 1000000 % 1000),
		 (double)((int64_t)now.tv_sec * 1000000000 + now.tv_nsec - st.since_ns) / 1e9,
		 st.why);
	reply_xattr_value(req, size, line, strlen(line));
}

void fs_op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	char type[64];
	bool inferred;
	int ret;

	if (strcmp(name, FS_XATTR_ERROR) == 0) {
		reply_error_xattr(req, ino, size);
		return;
	}
	if (strcmp(name, FS_XATTR_STALE) == 0) {
		reply_stale_xattr(req, size);
		return;
	}
	if (fs_ttl_is_name(name)) {
		fs_ttl_getxattr(req, ino, size);
		return;
	}
	if (fs_expires_is_name(name)) {
		fs_expires_getxattr(req, ino, size);
		return;
	}
	if (fs_table_is_name(name)) {
		fs_table_getxattr(req, ino, size);
		return;
	}
	if (strcmp(name, FS_XATTR_PID) == 0 && ino == FUSE_ROOT_ID) {
		snprintf(type, sizeof(type), "%ld", (long)getpid());
		reply_xattr_value(req, size, type, strlen(type));
		return;
	}
	if (strcmp(name, FS_XATTR_STATS) == 0 && ino == FUSE_ROOT_ID) {
		char stats[2048 + PATH_MAX];	/* the counters, then the log's path */
		size_t len = fs_stats_format(ctx, stats, sizeof(stats));

		reply_xattr_value(req, size, stats, len);
		return;
	}
	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		/*
		 * Only the user namespace exists here. ENOTSUP for security.* and
		 * system.* (SELinux labels, POSIX ACLs) lets ls -l, cp -a and
		 * rsync remember that the filesystem has none, instead of asking
		 * for every file (three round trips per file for ls -l).
		 */
		fs_reply_err(req, strncmp(name, "user.", 5) == 0 ? -ENODATA : -ENOTSUP);
		return;
	}
	ret = node_type(ctx, ino, type, sizeof(type), &inferred);
	if (ret == -ENOENT)	/* renamed over or unlinked since the path was resolved */
		ret = seen_type(ctx, ino, type, sizeof(type));
	if (ret == -ENOENT || ret == -EINVAL)
		ret = -ENODATA;	/* views and unsaved files have no type yet */
	if (ret < 0)
		fs_reply_err(req, ret);
	else
		reply_xattr_value(req, size, type, strlen(type));
}

/*
 * user.kvfs.type is listed only where the content alone would not give the
 * node its type (an integer, an array, bytes that read as text): a tree
 * copied in without xattrs then has none to differ in (rsync -aX finds
 * nothing to do on its next run), and a copy out carries exactly the types
 * a copy back needs. getxattr answers for every node. user.kvfs.schema
 * (a table) and user.kvfs.expires (a deadline of its own) are listed where
 * they exist, after the type: tar and cp -a set them in list order, so a
 * leaf has its type before its deadline.
 */
void fs_op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	char type[64], list[sizeof(FS_XATTR_TYPE) + sizeof(FS_XATTR_SCHEMA) +
			   sizeof(FS_XATTR_EXPIRES)];
	bool inferred = true, dir, view;
	size_t len = 0;
	char *path = NULL;
	int ret = node_type(ctx, ino, type, sizeof(type), &inferred);

	if (ret == 0 && !inferred) {
		memcpy(list, FS_XATTR_TYPE, sizeof(FS_XATTR_TYPE));
		len += sizeof(FS_XATTR_TYPE);
	}
	pthread_mutex_lock(&ctx->lock);
	dir = node == &ctx->inodes.root || (node->kind_known && node->is_dir);
	view = node != &ctx->inodes.root && model_name_is_view(node->name, strlen(node->name));
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0 && !view && fs_node_path(ctx, node, NULL, &path) == 0) {
		if (dir && fs_table_listed(ctx, path)) {
			memcpy(list + len, FS_XATTR_SCHEMA, sizeof(FS_XATTR_SCHEMA));
			len += sizeof(FS_XATTR_SCHEMA);
		}
		if (node != &ctx->inodes.root && fs_expires_listed(ctx, path)) {
			memcpy(list + len, FS_XATTR_EXPIRES, sizeof(FS_XATTR_EXPIRES));
			len += sizeof(FS_XATTR_EXPIRES);
		}
		free(path);
	}
	reply_xattr_value(req, size, list, len);
}

void fs_want_type_clear(struct fs_ctx *ctx, struct fs_node *node)
{
	pthread_mutex_lock(&ctx->lock);
	if (node->want_type) {
		node->want_type = 0;
		fs_node_unref_locked(ctx, node);
	}
	pthread_mutex_unlock(&ctx->lock);
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

/*
 * Ends a type change begun with fs_write_path: logs a refusal, or drops
 * what the kernel cached of the node and its subtree (the text or the
 * children's names may read differently now); frees path and replies.
 */
static void type_change_end(fuse_req_t req, struct fs_ctx *ctx, fuse_ino_t ino,
			    struct fs_node *node, char *path, int ret,
			    const struct model_error *err)
{
	fs_write_end(ctx, ret);
	if (ret < 0) {
		fs_log_model(ctx, ret, err, path);
	} else {
		fs_inval_node(ctx, ino, FS_INVAL_DATA);
		fs_inval_subtree(ctx, node);
	}
	free(path);
	fs_reply_err(req, ret);
}

/* Names what the attribute takes, never the value: a newline in it would forge a log line. */
void fs_xattr_refuse(fuse_req_t req, fuse_ino_t ino, const char *name, const char *takes)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { .msg = "" };
	char *path;

	if (fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path) == 0) {
		snprintf(err.msg, sizeof(err.msg), "%s: %s takes %s", path, name, takes);
		fs_log_model(ctx, -EINVAL, &err, path);
		free(path);
	}
	fs_reply_err(req, -EINVAL);
}

void fs_op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
		    size_t size, int flags)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	char type[64], *path;
	int ret;

	if (fs_ttl_is_name(name)) {
		fs_ttl_setxattr(req, ino, value, size, flags);
		return;
	}
	if (fs_expires_is_name(name)) {
		fs_expires_setxattr(req, ino, value, size, flags);
		return;
	}
	if (fs_table_is_name(name)) {
		fs_table_setxattr(req, ino, value, size, flags);
		return;
	}
	if (strcmp(name, "system.posix_acl_access") == 0) {
		fs_op_setxattr_acl(req, ino, value, size);
		return;
	}
	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		fs_reply_err(req, -ENOTSUP);	/* cp -a, rsync -X: skipped quietly */
		return;
	}
	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	if (flags & XATTR_CREATE) {
		fs_reply_err(req, -EEXIST);	/* every node has a type */
		return;
	}
	if (size >= sizeof(type)) {
		fs_xattr_refuse(req, ino, FS_XATTR_TYPE, "a type's name: string, integer, double, "
				"boolean, null, bytes, object or array");
		return;
	}
	memcpy(type, value, size);
	type[size] = '\0';
	{
		struct fs_defer d = { .type = type };

		/* a leaf open for writing takes its type with its content at close */
		if (fs_writer_defer(ctx, node, &d, &ret)) {
			fs_reply_err(req, ret);
			return;
		}
	}
	ret = fs_node_commit_files(ctx, node);
	if (ret == 0 && fs_tmp_set_type(ctx, node, type, &ret)) {
		fs_reply_err(req, ret);
		return;
	}
	if (ret == 0)
		ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "set type %s %s", path, type);
	{
		char now[64];

		/* the type it has already (rsync -X sets every file's): no commit */
		if (model_get_type(ctx->model, path, now, sizeof(now), NULL) == 0 &&
		    strcmp(now, type) == 0) {
			fs_want_type_clear(ctx, node);
			type_change_end(req, ctx, ino, node, path, 0, &err);
			return;
		}
	}
	/* a tool's type for the file it just wrote (rsync -X): with its next commit */
	if (fs_node_fresh(ctx, node, fuse_req_ctx(req)->pid))
		ret = model_set_type_later(ctx->model, path, type, &err);
	else
		ret = model_set_type(ctx->model, path, type, &err);
	if (ret == 0)
		fs_want_type_clear(ctx, node);	/* applied now: nothing kept for later */
	else if (err.reason == MODEL_REASON_TYPE_MISMATCH && want_type_later(ctx, node, path, type))
		ret = 0;
	type_change_end(req, ctx, ino, node, path, ret, &err);
}

/*
 * Removing the type gives the node the type a new one would get (rsync -X
 * from a tree without xattrs removes every name it does not have): a
 * directory becomes an object, a leaf's text is inferred as a new file's.
 */
void fs_op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	bool tmp, view;
	char *path;
	int ret;

	if (fs_ttl_is_name(name) || fs_expires_is_name(name)) {
		fs_ttl_removexattr(req, ino);	/* the node's deadline is dropped */
		return;
	}
	if (fs_table_is_name(name)) {
		fs_table_removexattr(req, ino);
		return;
	}
	if (strcmp(name, FS_XATTR_TYPE) != 0) {
		/* no ACL is kept (a mode-only one is the mode: fs_op_setxattr_acl):
		 * none to remove, as cp -a does for a directory's default ACL */
		fs_reply_err(req, strncmp(name, "user.", 5) == 0 ||
					  strncmp(name, "system.posix_acl_", 17) == 0 ? -ENODATA : -ENOTSUP);
		return;
	}
	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	ret = fs_node_commit_files(ctx, node);
	pthread_mutex_lock(&ctx->lock);
	tmp = node->tmp != NULL;
	if (tmp)
		node->tmp->type = 0;	/* a pending file: typed as unset at its commit */
	view = node != &ctx->inodes.root && model_name_is_view(node->name, strlen(node->name));
	pthread_mutex_unlock(&ctx->lock);
	if (ret == 0 && (tmp || view)) {
		fs_reply_err(req, tmp ? 0 : -ENODATA);	/* a view has no type */
		return;
	}
	if (ret == 0)
		ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "reset type %s", path);
	fs_want_type_clear(ctx, node);
	{
		bool inferred;
		char now[64];

		/* the type its content gives it already (not listed): no commit */
		if (model_get_type_inferred(ctx->model, path, now, sizeof(now), &inferred,
					    NULL) == 0 && inferred) {
			type_change_end(req, ctx, ino, node, path, 0, &err);
			return;
		}
	}
	ret = model_reset_type(ctx->model, path, &err);
	type_change_end(req, ctx, ino, node, path, ret, &err);
}
