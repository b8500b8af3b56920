/*
 * tests/unit/test_model_tview.c - a table's @ views as the model serves
 * them to the mount: distinct values in index order (strings sharing a
 * prefix up to a NUL byte kept apart), listings resumed across fills, link
 * targets, @schema.json written, and '@' names special only inside a table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-tview-XXXXXX"
#include "unit_model.h"

static int put(struct model *m, const char *path, const char *json, struct model_error *err)
{
	return model_write(m, path, json, strlen(json), 0, 0, err);
}

struct names {
	char text[4096];
	int n, stop_every;	/* stop_every: ask to stop after that many per fill */
	int in_fill;
};

static int names_fn(void *arg, const char *name, const struct model_node *node)
{
	struct names *nm = arg;
	size_t len = strlen(nm->text);

	(void)node;
	if (nm->stop_every && nm->in_fill == nm->stop_every)
		return 1;
	snprintf(nm->text + len, sizeof(nm->text) - len, "%s%s", nm->n ? " " : "", name);
	nm->n++;
	nm->in_fill++;
	return 0;
}

/* Lists path, stop_every names per fill (0: all at once), into nm. */
static int list(struct model *m, const char *path, int stop_every, struct names *nm)
{
	struct model_error err;
	struct model_list *l;
	int ret = model_list_open(m, path, &l, &err);

	memset(nm, 0, sizeof(*nm));
	nm->stop_every = stop_every;
	if (ret < 0)
		return ret;
	do {
		nm->in_fill = 0;
		ret = model_list_fill(l, names_fn, nm);
	} while (ret == 1);
	model_list_close(l);
	return ret;
}

static void test_values_and_links(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	struct model_node n;
	struct names nm;
	char *target = NULL;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(put(m, "/t.json", "{\"r1\":{\"s\":\"a\",\"n\":30},\"r2\":{\"s\":\"a\\u0000b\","
			 "\"n\":-4.5},\"r3\":{\"s\":\"ab\",\"n\":30.5},\"r4\":{\"s\":\"a\",\"n\":100}}",
			 &err), 0);
	CHECK_EQ_INT(model_table_create(m, "/t", 1, NULL, &err), 0);
	CHECK_EQ_INT(model_index_create(m, "/t", "by_s", "s", false, &err), 0);
	CHECK_EQ_INT(model_index_create(m, "/t", "by_n", "n", false, &err), 0);
	CHECK_EQ_INT(list(m, "/t/@by_s", 0, &nm), 0);
	CHECK(strcmp(nm.text, "a %a%00b ab") == 0);
	CHECK_EQ_INT(list(m, "/t/@by_s/a", 0, &nm), 0);
	CHECK(strcmp(nm.text, "r1 r4") == 0);	/* not r2, whose value only begins "a\0" */
	CHECK_EQ_INT(list(m, "/t/@by_s/%a%00b", 0, &nm), 0);
	CHECK(strcmp(nm.text, "r2") == 0);
	/* one name per fill: each fill resumes after the last one */
	CHECK_EQ_INT(list(m, "/t/@by_n", 1, &nm), 0);
	CHECK(strcmp(nm.text, "-4.5 30 30.5 100") == 0);
	CHECK_EQ_INT(list(m, "/t/@by_n/@range/0/100", 1, &nm), 0);
	CHECK(strcmp(nm.text, "r1 r3 r4") == 0);
	CHECK_EQ_INT(model_stat(m, "/t/@by_n/30/r1", 0, &n, &err), 0);
	CHECK_EQ_INT(n.kind, MODEL_KIND_LINK);
	CHECK(n.derived);
	CHECK_EQ_INT(model_readlink(m, "/t/@by_n/30/r1", &target, &err), 0);
	CHECK(target && strcmp(target, "../../r1") == 0);
	free(target);
	CHECK_EQ_INT(model_stat(m, "/t/@by_n/30/r3", 0, &n, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/t/@by_n/@range/31/100/r1", 0, &n, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/t/@nosuch", 0, &n, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/t/r1/@by_n", 0, &n, &err), -ENOENT);
	/* writes through @ names: EROFS, nothing changed */
	CHECK_EQ_INT(model_create(m, "/t/@by_n/30/x", &err), -EROFS);
	CHECK_EQ_INT(model_mkdir(m, "/t/@x", MODEL_KIND_OBJECT, &err), -EROFS);
	/* a row key beginning with @ could not be browsed: refused, nothing changed */
	CHECK_EQ_INT(put(m, "/t.json", "{\"@z\":{\"s\":\"z\"}}", &err), -EINVAL);
	CHECK(strstr(err.msg, "cannot begin with @") != NULL);
	CHECK_EQ_INT(list(m, "/t", 0, &nm), 0);
	CHECK(strcmp(nm.text, "r1 r2 r3 r4") == 0);
	/* outside a table '@' names are ordinary, shown verbatim */
	CHECK_EQ_INT(put(m, "/doc.json", "{\"@ts\":{\"@s\":1}}", &err), 0);
	CHECK_EQ_INT(list(m, "/doc", 0, &nm), 0);
	CHECK(strcmp(nm.text, "@ts") == 0);
	CHECK_EQ_INT(list(m, "/doc/@ts", 0, &nm), 0);
	CHECK(strcmp(nm.text, "@s") == 0);
	CHECK_EQ_INT(model_stat(m, "/doc/@ts/@s", 0, &n, &err), 0);
	CHECK_EQ_INT(n.kind, MODEL_KIND_LEAF);
	close_fresh(m);
}

static void test_schema_view(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	char *text = NULL, *again = NULL;
	const char *decl = "{\"key_depth\":1,\"columns\":{\"n\":{\"type\":\"integer\"}},"
			   "\"indexes\":{\"by_n\":{\"fields\":[\"n\"],\"unique\":true}}}";

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(put(m, "/t.json", "{\"a\":{\"n\":1},\"b\":{\"n\":1}}", &err), 0);
	/* unique over two equal values: refused, no table */
	CHECK_EQ_INT(put(m, "/t/@schema.json", decl, &err), -EEXIST);
	CHECK(model_error_is_unique_clash(&err));
	CHECK_EQ_INT(model_table_show(m, "/t", &text, NULL, &err), -ENOENT);
	CHECK_EQ_INT(put(m, "/t/b/n", "2", &err), 0);
	CHECK_EQ_INT(put(m, "/t/@schema.json", decl, &err), 0);
	CHECK_EQ_INT(model_table_show(m, "/t", &text, NULL, &err), 0);
	CHECK_EQ_INT(model_read_all(m, "/t/@schema.json", &again, NULL, &err), 0);
	CHECK(text && again && strcmp(text, again) == 0);
	/* writing back what was read changes nothing */
	CHECK_EQ_INT(put(m, "/t/@schema.json", again, &err), 0);
	free(text);
	CHECK_EQ_INT(model_table_show(m, "/t", &text, NULL, &err), 0);
	CHECK(text && strcmp(text, again) == 0);
	free(text);
	free(again);
	CHECK_EQ_INT(put(m, "/t/@schema.json", "{\"key_depth\":2}", &err), -EINVAL);
	CHECK(strstr(err.msg, "key_depth") != NULL);
	CHECK_EQ_INT(put(m, "/t/@schema.json", "{\"key_depth\":1,\"columns\":{}}", &err), -EINVAL);
	CHECK(strstr(err.msg, "column n cannot be removed") != NULL);
	CHECK_EQ_INT(put(m, "/t/@schema.json", "{\"key_depth\":", &err), -EINVAL);
	close_fresh(m);
}

int main(void)
{
	TEST(test_values_and_links);
	TEST(test_schema_view);
	return UNIT_DONE();
}
