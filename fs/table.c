/*
 * fs/table.c - the mount side of tables: readlink of an index's row links
 * (PATH/@NAME/VALUE/KEY), and user.kvfs.schema, the attribute that carries
 * a table's schema through cp -a, rsync -aX and tar --xattrs. The model
 * decides what every @ name is and what a schema means; here is only what
 * the order of a restore needs: a schema set before its rows are all in
 * waits, held by the mount, and is declared once they obey it.
 *
 * Why it waits. File tools restore a directory in an order of their own:
 * cp -a and tar set a directory's attributes after its children (a table's
 * rows are in; a table it references, later in the walk, may not be),
 * rsync -aX before its files (the rows are empty directories). A schema is
 * therefore tried when it is set, unless nothing is stored under the
 * directory yet, and when it is refused for what is missing (a row breaks
 * a rule, a referenced directory is not a table yet) it waits: every
 * waiting schema is tried again, all together in one transaction (tables
 * that reference each other), then one by one, rounds while one declares
 * something, when another schema is set
 * over stored rows (cp -a and tar: the tables before it in the walk are
 * in), at fsync and fsyncdir (`sync MNT`), by the watcher once the mount
 * has been idle for a tick (rsync: after its files), and at unmount. Until
 * then the directory is a plain one: no rule, no index; the rows are
 * checked, all of them, when it is declared. A schema that is wrong in
 * itself is refused at once (EINVAL), and one still waiting at unmount is
 * logged and forgotten.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/fs_int.h"

struct fs_schema_wait {
	struct fs_schema_wait *next;
	char *path;
	char *json;
	size_t len;
};

void fs_op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	char *path, *target = NULL;
	int ret = fs_node_path(ctx, node, NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "readlink %s", path);
	ret = model_readlink(ctx->model, path, &target, &err);
	if (ret < 0) {
		fs_log_model(ctx, ret, &err, path);
		fs_reply_err(req, ret);
	} else {
		fuse_reply_readlink(req, target);
	}
	free(target);
	free(path);
}

bool fs_table_is_name(const char *name)
{
	return strcmp(name, FS_XATTR_SCHEMA) == 0;
}

static void wait_free(struct fs_schema_wait *w)
{
	if (w) {
		free(w->path);
		free(w->json);
		free(w);
	}
}

/* Unlinks and returns the wait for path (NULL: none); schema.lock held. */
static struct fs_schema_wait *wait_take_locked(struct fs_ctx *ctx, const char *path)
{
	for (struct fs_schema_wait **pp = &ctx->schema.waits; *pp; pp = &(*pp)->next) {
		struct fs_schema_wait *w = *pp;

		if (strcmp(w->path, path) == 0) {
			*pp = w->next;
			return w;
		}
	}
	return NULL;
}

/* A copy of the JSON waiting for path, or NULL; heap (free()). */
static char *wait_json(struct fs_ctx *ctx, const char *path, size_t *len)
{
	char *copy = NULL;

	pthread_mutex_lock(&ctx->schema.lock);
	for (struct fs_schema_wait *w = ctx->schema.waits; w; w = w->next) {
		if (strcmp(w->path, path) == 0) {
			copy = malloc(w->len ? w->len : 1);
			if (copy) {
				memcpy(copy, w->json, w->len);
				*len = w->len;
			}
			break;
		}
	}
	pthread_mutex_unlock(&ctx->schema.lock);
	return copy;
}

/* One declaration of n schemas in one transaction, in the write section. */
static int declare(struct fs_ctx *ctx, size_t n, const char *const *paths,
		   const char *const *jsons, const size_t *lens, struct model_error *err)
{
	int ret;

	fs_write_begin(ctx);
	ret = model_table_declare(ctx->model, n, paths, jsons, lens, err);
	fs_write_end(ctx, ret);
	return ret;
}

/* Declares the n waits of list together, in one transaction. */
static int declare_list(struct fs_ctx *ctx, struct fs_schema_wait *list, size_t n,
			struct model_error *err)
{
	const char **paths = calloc(n, sizeof(*paths)), **jsons = calloc(n, sizeof(*jsons));
	size_t i = 0, *lens = calloc(n, sizeof(*lens));
	int ret = -ENOMEM;

	if (!paths || !jsons || !lens)
		goto out_free;
	for (struct fs_schema_wait *w = list; w; w = w->next, i++) {
		paths[i] = w->path;
		jsons[i] = w->json;
		lens[i] = w->len;
	}
	ret = declare(ctx, n, paths, jsons, lens, err);
out_free:
	free(paths);
	free(jsons);
	free(lens);
	return ret;
}

/*
 * w was refused (ret): true when it waits on for what is missing; else it
 * is forgotten, logged unless its directory is gone. last: unmount.
 */
static bool refused_waits(struct fs_ctx *ctx, const struct fs_schema_wait *w, int ret,
			  const struct model_error *err, bool last)
{
	fs_trace(ctx, "%s: schema still waits: %s", w->path, err->msg);
	if (ret == -ENOENT)
		return false;
	if (err->reason == MODEL_REASON_TABLE_RULE && !last)
		return true;
	fs_log(ctx, LOG_ERR, "%s: user.kvfs.schema not declared: %s", w->path,
	       err->msg[0] ? err->msg : strerror(-ret));
	fs_log_model(ctx, ret, err, w->path);
	return false;
}

/*
 * schema.try_lock held. Declares each wait of *list alone, in order; frees
 * the declared ones and the ones refused for good, keeps the others in
 * *list (same order). Returns how many were declared: each may make the
 * ones after it (and, in the next round, before it) declarable.
 */
static size_t try_each_locked(struct fs_ctx *ctx, struct fs_schema_wait **list, bool last)
{
	struct fs_schema_wait *w, *keep = NULL, **tail = &keep;
	struct model_error err = { 0 };
	size_t declared = 0;
	int ret;

	while ((w = *list)) {
		*list = w->next;
		w->next = NULL;
		ret = declare(ctx, 1, (const char *const *)&w->path,
			      (const char *const *)&w->json, &w->len, &err);
		if (ret == 0) {
			fs_trace(ctx, "declared %s from user.kvfs.schema", w->path);
			declared++;
		} else if (refused_waits(ctx, w, ret, &err, last)) {
			*tail = w;
			tail = &w->next;
			continue;
		}
		wait_free(w);
	}
	*list = keep;
	return declared;
}

/* Frees the waits of list, all declared together. */
static void declared_all(struct fs_ctx *ctx, struct fs_schema_wait *list)
{
	struct fs_schema_wait *w;

	while ((w = list)) {
		list = w->next;
		fs_trace(ctx, "declared %s from user.kvfs.schema", w->path);
		wait_free(w);
	}
}

/*
 * schema.try_lock held. Tries every waiting schema: all together (tables
 * that reference each other), then each alone, and again while a round
 * declares one (what it declared may be what the others missed); drops
 * the declared ones and the ones refused for what they say (logged).
 * last: unmount, the ones left are logged as forgotten.
 */
static void try_waiting_locked(struct fs_ctx *ctx, bool last)
{
	struct fs_schema_wait *list, *w, *back = NULL, **tail = &back;
	struct model_error err = { 0 };
	size_t n;

	pthread_mutex_lock(&ctx->schema.lock);
	list = ctx->schema.waits;
	ctx->schema.waits = NULL;
	ctx->schema.gen = model_generation(ctx->model);
	pthread_mutex_unlock(&ctx->schema.lock);
	do {
		n = 0;
		for (w = list; w; w = w->next)
			n++;
		if (n > 1 && declare_list(ctx, list, n, &err) == 0) {
			declared_all(ctx, list);
			list = NULL;
		}
	} while (list && try_each_locked(ctx, &list, last) > 0 && list && list->next);
	pthread_mutex_lock(&ctx->schema.lock);
	while ((w = list)) {	/* back, unless set again meanwhile */
		struct fs_schema_wait *newer = wait_take_locked(ctx, w->path);

		list = w->next;
		if (newer) {
			wait_free(w);
			w = newer;
		}
		*tail = w;
		tail = &w->next;
	}
	*tail = ctx->schema.waits;	/* in their order, before the ones set meanwhile */
	ctx->schema.waits = back;
	pthread_mutex_unlock(&ctx->schema.lock);
}

void fs_table_settle(struct fs_ctx *ctx, enum fs_settle why)
{
	bool any = false;

	if (ctx->read_only)
		return;
	pthread_mutex_lock(&ctx->schema.lock);
	any = ctx->schema.waits != NULL;
	if (any && why == FS_SETTLE_IDLE) {
		/* the watcher: only once writes have stopped for a tick, and not twice */
		uint64_t gen = model_generation(ctx->model);

		any = gen == ctx->schema.idle_gen && gen != ctx->schema.gen;
		ctx->schema.idle_gen = gen;
	}
	pthread_mutex_unlock(&ctx->schema.lock);
	if (!any)
		return;
	pthread_mutex_lock(&ctx->schema.try_lock);
	try_waiting_locked(ctx, why == FS_SETTLE_LAST);
	pthread_mutex_unlock(&ctx->schema.try_lock);
}

void fs_table_release(struct fs_ctx *ctx)
{
	struct fs_schema_wait *w;

	while ((w = ctx->schema.waits)) {
		ctx->schema.waits = w->next;
		wait_free(w);
	}
}

bool fs_table_listed(struct fs_ctx *ctx, const char *path)
{
	struct model_error err = { 0 };
	size_t len = 0;
	char *json = wait_json(ctx, path, &len);

	if (!json && model_table_show(ctx->model, path, &json, &len, &err) < 0)
		return false;
	free(json);
	return true;
}

void fs_table_getxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct model_error err = { 0 };
	char *path, *json = NULL;
	size_t len = 0;
	int ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);

	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	json = wait_json(ctx, path, &len);
	if (!json && model_table_show(ctx->model, path, &json, &len, &err) < 0)
		ret = -ENODATA;	/* not a table (nor one waiting) */
	free(path);
	if (ret < 0)
		fs_reply_err(req, ret);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fs_reply_err(req, -ERANGE);
	else
		fuse_reply_buf(req, json, len);
	free(json);
}

/* Keeps {path, value} waiting (a newer value replaces an older one). */
static int wait_add(struct fs_ctx *ctx, const char *path, const char *value, size_t size)
{
	struct fs_schema_wait *w = calloc(1, sizeof(*w)), *old;

	if (!w || !(w->path = strdup(path)) || !(w->json = malloc(size ? size : 1))) {
		wait_free(w);
		return -ENOMEM;
	}
	memcpy(w->json, value, size);
	w->len = size;
	pthread_mutex_lock(&ctx->schema.lock);
	old = wait_take_locked(ctx, path);
	w->next = ctx->schema.waits;
	ctx->schema.waits = w;
	pthread_mutex_unlock(&ctx->schema.lock);
	wait_free(old);
	return 0;
}

/* The schema already is value (rsync -X sets it again): nothing to do. */
static bool schema_is(struct fs_ctx *ctx, const char *path, const char *value, size_t size)
{
	struct model_error err = { 0 };
	char *json = NULL;
	size_t len = 0;
	bool same = model_table_show(ctx->model, path, &json, &len, &err) == 0 && len == size &&
		    memcmp(json, value, size) == 0;

	free(json);
	return same;
}

void fs_table_setxattr(fuse_req_t req, fuse_ino_t ino, const char *value, size_t size,
		       int flags)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_node *node = fs_node_from_ino(ctx, ino);
	struct model_error err = { 0 };
	bool stored = false;
	char *path;
	int ret;

	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	ret = fs_node_path(ctx, node, NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	fs_trace(ctx, "set schema %s", path);
	if (schema_is(ctx, path, value, size)) {
		ret = flags & XATTR_CREATE ? -EEXIST : 0;
		goto out;
	}
	if (flags & XATTR_REPLACE) {
		size_t len;
		char *json = wait_json(ctx, path, &len);

		if (!json && !fs_table_listed(ctx, path)) {
			ret = -ENODATA;
			goto out;
		}
		free(json);
	}
	pthread_mutex_lock(&ctx->schema.try_lock);
	ret = model_has_leaf(ctx->model, path, &stored, &err);
	if (ret == 0 && stored)
		ret = declare(ctx, 1, (const char *const *)&path, &value, &size, &err);
	if (ret < 0 && err.reason != MODEL_REASON_TABLE_RULE) {
		fs_log_model(ctx, ret, &err, path);	/* wrong in itself: refused */
		if (ret != -ENOMEM && ret != -EIO && ret != -ENOENT)
			ret = -EINVAL;
	} else if (ret == 0 && stored) {
		struct fs_schema_wait *old;

		pthread_mutex_lock(&ctx->schema.lock);
		old = wait_take_locked(ctx, path);
		pthread_mutex_unlock(&ctx->schema.lock);
		wait_free(old);
	} else {
		fs_trace(ctx, "%s: schema waits: %s", path, err.msg[0] ? err.msg : "no rows yet");
		ret = wait_add(ctx, path, value, size);
	}
	/* its rows are in (cp -a, tar): the others may be declarable now */
	if (ret == 0 && stored)
		try_waiting_locked(ctx, false);
	pthread_mutex_unlock(&ctx->schema.try_lock);
out:
	free(path);
	fs_reply_err(req, ret);
}

/* Removing it (rsync -X from a copy where the directory is no table) drops the table. */
void fs_table_removexattr(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_ctx *ctx = fs_req_ctx(req);
	struct fs_schema_wait *w;
	struct model_error err = { 0 };
	char *path;
	int ret;

	if (ctx->read_only) {
		fs_reply_err(req, -EROFS);
		return;
	}
	ret = fs_node_path(ctx, fs_node_from_ino(ctx, ino), NULL, &path);
	if (ret < 0) {
		fs_reply_err(req, ret);
		return;
	}
	pthread_mutex_lock(&ctx->schema.lock);
	w = wait_take_locked(ctx, path);
	pthread_mutex_unlock(&ctx->schema.lock);
	if (w) {
		wait_free(w);
	} else {
		fs_write_begin(ctx);
		ret = model_table_drop(ctx->model, path, &err);
		fs_write_end(ctx, ret);
		if (ret == -ENOENT)
			ret = -ENODATA;
		else if (ret < 0)
			fs_log_model(ctx, ret, &err, path);
	}
	free(path);
	fs_reply_err(req, ret);
}
