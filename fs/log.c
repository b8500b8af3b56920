/*
 * fs/log.c - the daemon's messages (to the -o log= file, the kept stderr,
 * or syslog: mount.c chooses at the start) and the kept refusals that
 * user.kvfs.error shows (xattr.c), with whose request each was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs_int.h"

/* One line to the log file or the kept stderr, in one write (O_APPEND keeps lines whole). */
static void log_line(struct fs_ctx *ctx, int prio, const char *msg)
{
	char line[1200], stamp[32] = "";
	struct tm tm;
	time_t now;
	int n;

	if (ctx->log_path) {	/* a file read later: when, and which daemon */
		now = time(NULL);
		if (gmtime_r(&now, &tm))
			strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ ", &tm);
	}
	n = snprintf(line, sizeof(line), "%skvfs[%ld]: %s%s\n", stamp, (long)getpid(),
		     prio == LOG_DEBUG ? "debug: " : "", msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (write(ctx->log_fd, line, (size_t)n) < 0)
		return;	/* nowhere left to say it */
}

void fs_log(struct fs_ctx *ctx, int prio, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (ctx->log_path && ctx->log_fd >= 0)
		log_line(ctx, prio, line);
	else if (ctx->foreground)
		fprintf(stderr, "kvfs: %s%s\n", prio == LOG_DEBUG ? "debug: " : "", line);
	else if (ctx->log_fd >= 0)
		log_line(ctx, prio, line);
	else
		syslog(prio, "%s", line);
}

/*
 * The caller of the request this thread serves (fs_caller_set): whose the
 * refusals it keeps are. Per thread, so no lock; (uid_t)-1 on threads that
 * serve no requests (the worker, the watcher).
 */
static _Thread_local uid_t caller_uid = (uid_t)-1;

void fs_caller_set(fuse_req_t req)
{
	caller_uid = fuse_req_ctx(req)->uid;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool fs_servers_silent(struct fs_ctx *ctx)
{
	int64_t at = atomic_load(&ctx->err.silent_ns);

	return at && mono_ns() - at < (int64_t)FS_OP_MS * 1000000;
}

/* Keeps uid's refusal for user.kvfs.error, overwriting the oldest. */
static void error_keep(struct fs_ctx *ctx, uid_t uid, const char *path, const char *msg)
{
	char *copy = strdup(path);
	struct fs_error *e;

	if (!copy)
		return;	/* only the log has it */
	pthread_mutex_lock(&ctx->err.lock);
	e = &ctx->err.ring[ctx->err.next];
	ctx->err.next = (ctx->err.next + 1) % FS_ERRORS_MAX;
	free(e->path);
	e->path = copy;
	e->uid = uid;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	pthread_mutex_unlock(&ctx->err.lock);
}

/* Length of path without trailing slashes ("/" and "" are the root: 0). */
static size_t path_len(const char *path)
{
	size_t len = strlen(path);

	while (len > 0 && path[len - 1] == '/')
		len--;
	return len;
}

/* Whether a refusal kept for entry concerns path (or, below, anything under it). */
static bool error_matches(const char *entry, const char *path, bool below)
{
	size_t len = path_len(path), elen = path_len(entry);
	const char *rest = entry + len;

	if (elen < len || memcmp(entry, path, len) != 0)
		return false;
	if (elen == len || model_name_view_base(entry, elen) == len)
		return true;	/* path itself, or its view */
	return below && (len == 0 || *rest == '/');
}

/*
 * The kept refusals for path, newest first, copied out (paths heap): which
 * of them who may see is asked of the model, never under err.lock.
 * Returns how many; *out is heap, each path too (the caller frees them).
 */
static size_t error_copies(struct fs_ctx *ctx, const char *path, bool below,
			   struct fs_error **out)
{
	struct fs_error *v = calloc(FS_ERRORS_MAX, sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	pthread_mutex_lock(&ctx->err.lock);
	for (unsigned k = 1; k <= FS_ERRORS_MAX; k++) {
		const struct fs_error *e =
			&ctx->err.ring[(ctx->err.next + FS_ERRORS_MAX - k) % FS_ERRORS_MAX];

		if (!e->path || !error_matches(e->path, path, below))
			continue;
		v[n] = *e;
		v[n].path = strdup(e->path);
		if (v[n].path)
			n++;
	}
	pthread_mutex_unlock(&ctx->err.lock);
	return n;
}

bool fs_error_find(struct fs_ctx *ctx, const struct model_cred *who, const char *path,
		   bool below, char *buf, size_t cap)
{
	struct fs_error *v;
	size_t n = error_copies(ctx, path, below, &v), i;
	bool found = false;

	for (i = 0; i < n && !found; i++) {
		/* the caller's own, or about what the caller may read anyway */
		if (who->uid == 0 || v[i].uid == who->uid ||
		    model_may_read(ctx->model, v[i].path, who) == 0) {
			snprintf(buf, cap, "%s", v[i].msg);
			found = true;
		}
	}
	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return found;
}

void fs_log_model(struct fs_ctx *ctx, int ret, const struct model_error *err, const char *what)
{
	fs_log_model_as(ctx, caller_uid, ret, err, what);
}

void fs_log_model_as(struct fs_ctx *ctx, uid_t uid, int ret, const struct model_error *err,
		     const char *what)
{
	char msg[sizeof(((struct fs_error *)0)->msg)];
	int prio = LOG_ERR;

	if (fs_errno_is_transport(ret))	/* the caller gets EIO (fs_reply_err) */
		snprintf(msg, sizeof(msg), "%s: the store's servers did not answer (%.200s)", what,
			 err && err->msg[0] ? err->msg : strerror(-ret));
	else if (err && err->msg[0])
		memcpy(msg, err->msg, sizeof(msg));	/* the same size */
	else if (ret == -EIO)	/* a scan that found keys out of order says no more */
		snprintf(msg, sizeof(msg), "%s: %s (the store may be damaged here; run kvfs "
			 "check)", what, strerror(EIO));
	else
		snprintf(msg, sizeof(msg), "%s: %s", what, strerror(-ret));
	if (fs_errno_is_unanswered(ret))	/* the root's getattr answers without them a while (attr.c) */
		atomic_store(&ctx->err.silent_ns, mono_ns());
	/* A unique index's EEXIST is a refusal too, unlike mkdir -p's. */
	if ((ret != -ENOENT && ret != -EEXIST) || model_error_is_unique_clash(err))
		error_keep(ctx, uid, what, msg);
	/* Refusals a user asked for are not the daemon's errors. */
	if (ret == -ENOENT || ret == -EEXIST || ret == -ENOTEMPTY || ret == -EISDIR ||
	    ret == -ENOTDIR || ret == -EXDEV || ret == -EROFS) {
		if (!ctx->debug)
			return;
		prio = LOG_DEBUG;
	}
	fs_log(ctx, prio, "%s", msg);
}
