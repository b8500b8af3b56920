/*
 * tests/unit/test_model_changes.c - the change feed in the model's terms:
 * each operation's commit names the mount paths it touched (escaped names,
 * the root's attributes as "/"), a subtree removal or rename names the
 * subtree, and reading from before the first logged commit is a gap;
 * whether another handle removed a directory since a generation.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "model/model.h"
#include "tests/unit/unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-changes-XXXXXX"
#include "tests/unit/unit_model.h"

/* What one read gave: the paths, "S:" before a subtree, joined by spaces. */
struct seen {
	char text[1024];
	unsigned n, mine;
};

static int collect(void *arg, const struct model_change *c)
{
	struct seen *s = arg;
	size_t len = strlen(s->text);

	snprintf(s->text + len, sizeof(s->text) - len, "%s%s%s", len ? " " : "",
		 (c->flags & MODEL_CHANGE_SUBTREE) ? "S:" : "", c->path);
	s->n++;
	s->mine += c->mine;
	return 0;
}

/* Whether the read named token (a path, "S:" before a subtree); order is the store's. */
static bool has(const struct seen *s, const char *token)
{
	size_t len = strlen(token);

	for (const char *p = s->text; (p = strstr(p, token)); p += len)
		if ((p == s->text || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
			return true;
	return false;
}

/* The changes since *pos, into s; *pos moves on. */
static int read_since(struct model *m, uint64_t *pos, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return model_changes_read(m, *pos, collect, s, pos);
}

static void test_paths_of_operations(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	uint64_t pos;
	struct seen s;

	CHECK(m);
	if (!m)
		return;
	pos = model_generation(m);
	CHECK_EQ_INT(model_mkdir(m, "/a", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	/* the marker of /a, and the root's times (its attr key) */
	CHECK(has(&s, "/a") && has(&s, "/"));
	CHECK_EQ_INT(s.mine, s.n);
	CHECK_EQ_INT(pos, model_generation(m));
	CHECK_EQ_INT(model_write(m, "/a/x.json", "{\"k\": [1]}", 10, 0, 0, &err), 0);
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	/* a view writes the document (not the view's name): the parent's marker
	 * and times, the new leaf */
	CHECK(has(&s, "/a/x/k/0") && has(&s, "/a"));
	CHECK(!has(&s, "/a/%x%2Ejson"));
	CHECK_EQ_INT(model_rename(m, "/a/x", "/a/y", 0, &err), 0);
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	/* the moved leaf, the source's subtree, the target's and parent's times */
	CHECK(has(&s, "S:/a/x") && has(&s, "/a/y/k/0") && has(&s, "/a"));
	CHECK_EQ_INT(model_remove(m, "/a/y", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	CHECK(has(&s, "S:/a/y") && has(&s, "/a"));
	/* nothing since */
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	CHECK_EQ_INT(s.n, 0);
	/* the store's creation wrote no entry: from before it, a gap */
	CHECK_EQ_INT(model_changes_read(m, 0, collect, &s, &pos), -ESTALE);
	close_fresh(m);
}

/* An escaped key shows as its file name; an index as its decimal. */
static void test_escaped_names(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	const char *doc = "{\"a/b\": {\"x.json\": [true]}}";
	uint64_t pos;
	struct seen s;

	CHECK(m);
	if (!m)
		return;
	pos = model_generation(m);
	CHECK_EQ_INT(model_import(m, "/e", doc, strlen(doc), NULL, NULL, &err), 0);
	CHECK_EQ_INT(read_since(m, &pos, &s), 0);
	CHECK(has(&s, "/e/%a%2Fb/%x%2Ejson/0"));
	close_fresh(m);
}

/*
 * model_parent_gone: another handle's removal of a directory (or of an
 * ancestor) since a generation, even when made again; not its changes,
 * not a removal beside it, not this handle's own.
 */
static void test_parent_gone(void)
{
	struct model_error err;
	struct model *m = open_fresh(), *other = NULL;
	const char *doc = "{\"d\": {\"a\": 1}, \"e\": {}, \"x\": {\"y\": [1]}}";
	uint64_t gen;

	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(model_import(m, "/", doc, strlen(doc), NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_open(store_dir, MODEL_OPEN_NOSYNC, &other, &err), 0);
	if (!other) {
		close_fresh(m);
		return;
	}
	gen = model_generation(m);
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", gen), 0);	/* nothing since */
	CHECK_EQ_INT(model_write(other, "/d/b", "2", 1, 0, 0, &err), 0);
	CHECK_EQ_INT(model_remove(other, "/d/a", 0, &err), 0);
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", gen), 0);	/* changed, not removed */
	CHECK_EQ_INT(model_remove(other, "/e", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_mkdir(other, "/e", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_parent_gone(m, "/e/f", gen), 1);	/* an empty one, made again */
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", gen), 0);
	CHECK_EQ_INT(model_parent_gone(m, "/e", gen), 0);	/* /e's own directory is the root */
	gen = model_generation(m);
	CHECK_EQ_INT(model_remove(other, "/x", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_parent_gone(m, "/x/y/.tmp", gen), 1);	/* an ancestor */
	CHECK_EQ_INT(model_parent_gone(m, "/xy/f", gen), 0);	/* a name that continues it */
	gen = model_generation(m);
	CHECK_EQ_INT(model_remove(m, "/d", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", gen), 0);	/* its own: the mount knows */
	model_close(other);
	close_fresh(m);
}

/*
 * model_create_check's as_of: a generation no older than every commit
 * made before the check, by any handle, whatever its outcome, so that a
 * removal before an open is not taken for one after it.
 */
static void test_create_check_as_of(void)
{
	struct model_error err;
	struct model *m = open_fresh(), *other = NULL;
	uint64_t gen, as_of = 0;

	CHECK(m);
	if (!m)
		return;
	CHECK_EQ_INT(model_mkdir(m, "/d", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_open(store_dir, MODEL_OPEN_NOSYNC, &other, &err), 0);
	if (!other) {
		close_fresh(m);
		return;
	}
	gen = model_generation(m);
	CHECK_EQ_INT(model_remove(other, "/d", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_mkdir(other, "/d", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_create_check(m, "/d/f", NULL, NULL, &as_of, &err), 0);
	CHECK(as_of >= model_generation(other));
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", gen), 1);	/* since before the removal */
	CHECK_EQ_INT(model_parent_gone(m, "/d/f", as_of), 0);	/* the open came after it */
	/* a refusal's too (the check of a pending file in an array) */
	CHECK_EQ_INT(model_import(other, "/a", "[1]", 3, NULL, NULL, &err), 0);
	CHECK(model_create_check(m, "/a/.tmp", NULL, NULL, &as_of, &err) < 0);
	CHECK(as_of >= model_generation(other));
	model_close(other);
	close_fresh(m);
}

int main(void)
{
	TEST(test_paths_of_operations);
	TEST(test_escaped_names);
	TEST(test_parent_gone);
	TEST(test_create_check_as_of);
	return UNIT_DONE();
}
