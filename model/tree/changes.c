/*
 * model/tree/changes.c - the store's change feed in the model's terms: the
 * keys a commit touched become the mount paths of their nodes, for a
 * daemon that re-checks only those (fs/watcher.c), and whether another
 * process removed the directory a mount staged a file in (model_parent_gone).
 */
#include <errno.h>
#include <string.h>

#include "model/tree/tree_int.h"

struct changes_read {
	model_change_fn fn;
	void *arg;
	struct strbuf path;
};

/* Node keys are tuples of strings and indices; anything else is the root's (attr 00). */
static bool key_names_node(const uint8_t *key, size_t len)
{
	struct tuple_reader r;
	struct tuple_elem e;
	int rc;

	tuple_reader_init(&r, key, len);
	while ((rc = tuple_next(&r, &e)) == 1)
		if (e.type != TUPLE_TYPE_STRING && e.type != TUPLE_TYPE_INT)
			return false;
	return rc == 0;
}

static int changes_one(void *arg, const struct store_change *c)
{
	struct changes_read *cr = arg;
	struct model_change mc = { .generation = c->pos, .mine = c->mine };
	bool node = c->kind != STORE_CHANGE_ALL && key_names_node(c->key, c->len);

	strbuf_reset(&cr->path);
	if (node)
		tree_key_to_path(c->key, c->len, &cr->path);
	else
		strbuf_addc(&cr->path, '/');
	if (cr->path.failed)
		return -ENOMEM;
	mc.path = cr->path.buf;
	/* a key that names no node: the root's attributes; a subtree of one: all */
	if (c->kind != STORE_CHANGE_KEY)
		mc.flags = MODEL_CHANGE_SUBTREE;
	if (c->kind == STORE_CHANGE_SUBTREE && c->gone && node)
		mc.flags |= MODEL_CHANGE_GONE;
	return cr->fn(cr->arg, &mc);
}

int model_changes_read(struct model *m, uint64_t after, model_change_fn fn, void *arg,
		       uint64_t *upto)
{
	struct changes_read cr = { fn, arg, { 0 } };
	int ret;

	strbuf_init(&cr.path);
	ret = store_feed_read(m->st, after, changes_one, &cr, upto);
	strbuf_release(&cr.path);
	return ret;
}

struct parent_gone {
	const char *path;	/* the staged node's */
	size_t dir_len;		/* of its directory: path[0..dir_len] ("" for the root) */
	bool gone;
};

/* A removal by another of the directory of pg->path or of an ancestor ends the read. */
static int parent_gone_one(void *arg, const struct model_change *c)
{
	struct parent_gone *pg = arg;
	size_t len = strlen(c->path);

	if (c->mine || !(c->flags & MODEL_CHANGE_GONE) || strcmp(c->path, "/") == 0)
		return 0;
	if (len > pg->dir_len || memcmp(c->path, pg->path, len) != 0 ||
	    (len < pg->dir_len && pg->path[len] != '/'))
		return 0;
	pg->gone = true;
	return -ECANCELED;	/* found: the rest need not be read */
}

int model_parent_gone(struct model *m, const char *path, uint64_t after)
{
	const char *slash = strrchr(path, '/');
	struct parent_gone pg = { path, slash ? (size_t)(slash - path) : 0, false };
	uint64_t upto;
	int ret;

	if (model_generation(m) <= after)
		return 0;
	ret = model_changes_read(m, after, parent_gone_one, &pg, &upto);
	if (pg.gone)
		return 1;
	return ret == -ESTALE ? 0 : ret;
}
