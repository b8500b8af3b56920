/*
 * fs/ttl.c - time to live through the mount: the user.kvfs.ttl attribute
 * (seconds left; set, cleared) and the background reaper the watcher runs.
 * What expiry means lives in model/ttl/ttl_space.c; here only the kernel's caches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "fs/fs_int.h"

#define FS_TTL_REAP_BATCHES 4	/* reaper transactions per watcher tick, at most */

bool fs_ttl_before(int64_t deadline_ns)
{
	struct timespec ts;

	if (deadline_ns == 0)
		return true;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec < deadline_ns;
}

bool fs_ttl_is_name(const char *name)
{
	return strcmp(name, FS_XATTR_TTL) == 0;
}

/* Replies with the value, its size, or ERANGE (as every getxattr). */
static void reply_value(fuse_req_t req, size_t size, const char *value, size_t len)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fs_reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, value, len);
}

/*
 * Reads one of ino's deadline figures (model_ttl_get: seconds left;
 * model_ttl_get_at: the instant) into *out; 0, or -errno (-ENODATA for a
 * pending file, which has nothing stored yet).
 */
static int node_deadline(struct fs_ctx *ctx, fuse_ino_t ino,
			 int (*get)(struct model *, const char *, int64_t *, struct model_error *),
			 int64_t *out)
{
	struct model_error err = { 0 };
	char *path;
	int ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);

	if (ret == 0) {
		ret = get(ctx->model, path, out, &err);
		free(path);
	}
	return ret == -EINVAL ? -ENODATA : ret;
}

void fs_ttl_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char text[32];
	int64_t left;
	int ret = node_deadline(fs_req_ctx(req), ino, model_ttl_get, &left);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	snprintf(text, sizeof(text), "%lld", (long long)left);
	reply_value(req, size, text, strlen(text));
}

/* "SECONDS" with an optional final newline (echo); false when it is not one. */
static bool parse_seconds(const char *value, size_t size, int64_t *out)
{
	char buf[32], *end;
	long long v;

	if (size > 0 && value[size - 1] == '\n')
		size--;
	if (size == 0 || size >= sizeof(buf))
		return false;
	memcpy(buf, value, size);
	buf[size] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end != '\0' || buf[0] < '0' || buf[0] > '9')
		return false;
	*out = v;
	return true;
}

/*
 * The kernel may hold the node's entry and attributes for entry_timeout and
 * attr_timeout from before the change: dropped now, so that the next lookup
 * gets timeouts bounded by the new deadline (fs_node_stat: none while a
 * node can expire). Below a directory, the kernel reaches a child only
 * through the directory's own entry.
 */
static void ttl_changed(struct fs_ctx *ctx, fuse_ino_t ino, struct fs_node *node)
{
	struct fs_node *dir;
	char *name = NULL;

	pthread_mutex_lock(&ctx->lock);
	dir = node->hashed ? node->parent : NULL;
	if (dir) {
		fs_node_ref_locked(dir);
		name = strdup(node->name);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (dir && name)
		fs_inval_entry(ctx, fs_node_ino(ctx, dir), name, strlen(name));
	free(name);
	if (dir) {
		pthread_mutex_lock(&ctx->lock);
		fs_node_unref_locked(ctx, dir);
		pthread_mutex_unlock(&ctx->lock);
	}
	fs_inval_node(ctx, ino, FS_INVAL_ATTR);
}

/* seconds 0: removexattr, the TTL is cleared. */
static void ttl_write(fuse_req_t req, fuse_ino_t ino, int64_t seconds)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	char *path;
	int ret;

	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	ret = fs_node_commit_files(ctx, node);	/* a file being written: its content first */
	if (ret == 0)
		ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "ttl %s %lld", path, (long long)seconds);
	ret = seconds ? model_ttl_set(ctx->model, path, seconds, &err) :
	      model_ttl_clear(ctx->model, path, &err);
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	else
		ttl_changed(ctx, ino, node);
	free(path);
	fs_reply_err(req, ret);
}

void fs_ttl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size, int flags)
{
	int64_t seconds;

	if (!parse_seconds(value, size, &seconds) || seconds < 1) {
		fs_xattr_refuse(req, ino, FS_XATTR_TTL, "a whole number of seconds, 1 or more");
		return;
	}
	if (flags & XATTR_REPLACE) {
		/* only a node that has a TTL may have it replaced */
		struct model_error err = { 0 };
		struct fs_ctx *ctx = fs_req_ctx(req);
		int64_t left;
		char *path;
		int ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);

		if (ret == 0) {
			ret = model_ttl_get(ctx->model, path, &left, &err);
			free(path);
		}
		if (ret < 0) {
			fs_reply_err(req, ret == -EINVAL ? -ENODATA : ret);
			return;
		}
	}
	ttl_write(req, ino, seconds);
}

void fs_ttl_removexattr(fuse_req_t req, fuse_ino_t ino)
{
	ttl_write(req, ino, 0);
}

void fs_ttl_reap(struct fs_ctx *ctx)
{
	struct model_error err = { 0 };
	uint64_t reaped = 0, before, after, hi;
	int ret;

	if (ctx->read_only)
		return;
	before = model_generation(ctx->model);
	hi = fs_watch_reap_begin(ctx, before);	/* the feed reads these commits of ours as another's */
	ret = model_ttl_reap(ctx->model, FS_TTL_REAP_BATCHES, &reaped, &err);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, "ttl reaper");
	/* -o commit: the reaped nodes are queued; committed now, to be told apart */
	if (reaped && ctx->commit_ms && model_sync(ctx->model) < 0)
		fs_log(ctx, LOG_ERR, "ttl reaper: cannot commit the queued changes");
	after = model_generation(ctx->model);
	fs_watch_reap_end(ctx, reaped && after > before ? after : 0, hi);
	/* No invalidation here: the reaper commits outside the write section,
	 * so the change feed names what it removed to the watcher as if
	 * another process had (and nodes that may expire are never cached). */
	if (reaped)
		fs_trace(ctx, "ttl reaper removed %llu nodes", (unsigned long long)reaped);
}

/* ---- user.kvfs.expires: the deadline as an absolute time ---- */

bool fs_expires_is_name(const char *name)
{
	return strcmp(name, FS_XATTR_EXPIRES) == 0;
}

/* "2026-11-30T03:01:32.568588152Z": UTC, always nine digits (exact, and one text a deadline). */
static size_t format_deadline(int64_t ns, char *buf, size_t cap)
{
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(buf + n, cap - n, ".%09lldZ", (long long)(ns % 1000000000));
	return n;
}

/*
 * RFC 3339: YYYY-MM-DDTHH:MM:SS, an optional fraction of up to nine
 * digits, then Z or +HH:MM / -HH:MM; an optional final newline (echo).
 * false when it is not one, or not after the epoch.
 */
static bool parse_deadline(const char *value, size_t size, int64_t *out)
{
	char buf[64], *p;
	struct tm tm = { 0 };
	int64_t frac = 0, scale = 100000000, secs;
	int oh, om;

	if (size > 0 && value[size - 1] == '\n')
		size--;
	if (size == 0 || size >= sizeof(buf))
		return false;
	memcpy(buf, value, size);
	buf[size] = '\0';
	p = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return false;
	if (*p == '.') {
		if (p[1] < '0' || p[1] > '9')
			return false;
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10) {
			if (scale == 0)
				return false;	/* finer than a nanosecond */
			frac += (*p - '0') * scale;
		}
	}
	secs = (int64_t)timegm(&tm);
	if (strcmp(p, "Z") == 0 || strcmp(p, "z") == 0) {
		oh = om = 0;
	} else if ((p[0] == '+' || p[0] == '-') && strlen(p) == 6 && p[3] == ':' &&
		   sscanf(p + 1, "%2d:%2d", &oh, &om) == 2) {
		if (p[0] == '-') {
			oh = -oh;
			om = -om;
		}
	} else {
		return false;
	}
	secs -= (int64_t)oh * 3600 + (int64_t)om * 60;
	if (secs < 0 || secs > INT64_MAX / 1000000000 - 1)
		return false;
	*out = secs * 1000000000 + frac;
	return *out > 0;
}

bool fs_expires_listed(struct fs_ctx *ctx, const char *path)
{
	struct model_error err = { 0 };
	int64_t d;

	return model_ttl_get_at(ctx->model, path, &d, &err) == 0;
}

void fs_expires_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char text[64];
	int64_t d = 0;
	int ret = node_deadline(fs_req_ctx(req), ino, model_ttl_get_at, &d);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	reply_value(req, size, text, format_deadline(d, text, sizeof(text)));
}

void fs_expires_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size,
			 int flags)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct fs_defer d = { 0 };
	struct model_error err = { 0 };
	char *path;
	int ret;

	if (!parse_deadline(value, size, &d.deadline_ns)) {
		fs_xattr_refuse(req, ino, FS_XATTR_EXPIRES, "an RFC 3339 time after 1970, such as "
				"2030-01-02T03:04:05Z");
		return;
	}
	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	(void)flags;
	fs_trace(ctx, "expires (ino %llu) %lld", (unsigned long long)ino, (long long)d.deadline_ns);
	/* a pending file in an array (rsync -aX's temporary file) takes it at its
	 * commit; a leaf being written (cp -a; tar: mknod, the attributes, then
	 * the text) with its content, which would otherwise drop it */
	if (fs_tmp_set_deadline(ctx, node, d.deadline_ns)) {
		fs_reply_err(req, 0);
		return;
	}
	if (fs_writer_defer(ctx, node, &d, &ret)) {
		fs_reply_err(req, ret);
		return;
	}
	ret = fs_write_path(ctx, node, NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "expires %s %lld", path, (long long)d.deadline_ns);
	ret = model_ttl_set_at(ctx->model, path, d.deadline_ns, &err);
	fs_write_end(ctx, ret);
	if (ret < 0)
		fs_log_model(ctx, ret, &err, path);
	else
		ttl_changed(ctx, ino, node);
	free(path);
	fs_reply_err(req, ret);
}
