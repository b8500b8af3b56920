/*
 * tests/unit/test_model_attr.c - the attr space through the model: records
 * only where attributes differ, kept by create/mkdir, moved by rename and
 * kind changes, dropped by remove and imports, and checked by model_check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-attr-XXXXXX"
#include "unit_model.h"

/* Lines of the dump that start with "attr ". */
static int attr_records(struct model *m)
{
	size_t len = 0;
	char *text = dump_text(m, &len), *p = text;
	int n = 0;

	while (p && (p = strstr(p, "\nattr ")) != NULL) {
		n++;
		p++;
	}
	free(text);
	return n;
}

static struct model_node stat_of(struct model *m, const char *path)
{
	struct model_error err;
	struct model_node n;

	memset(&n, 0, sizeof(n));
	CHECK_EQ_INT(model_stat(m, path, 0, &n, &err), 0);
	return n;
}

static uint64_t problems_of(struct model *m)
{
	struct model_error err;
	uint64_t problems = 99;

	CHECK_EQ_INT(model_check(m, NULL, &problems, &err), 0);
	return problems;
}

static void test_defaults_cost_nothing(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_attr none = { 0 };

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/", "{\"a\":{\"b\":1},\"c\":[1,2]}", 23, NULL, NULL, &err), 0);
	CHECK_EQ_INT(attr_records(m), 0);
	CHECK_EQ_INT(stat_of(m, "/a/b").attr.have, 0);
	/* a node created with default attributes: only its directory's time */
	CHECK_EQ_INT(model_create_as(m, "/a/new", &none, &err), 0);
	CHECK_EQ_INT(attr_records(m), 1);
	CHECK((stat_of(m, "/a").attr.have & MODEL_ATTR_MTIME) != 0);
	CHECK_EQ_INT(stat_of(m, "/a/new").attr.have, 0);
	CHECK_EQ_INT((int)problems_of(m), 0);
	close_fresh(m);
}

static void test_set_rename_remove(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_attr mode = { .have = MODEL_ATTR_MODE, .mode = 0600 };
	struct model_attr owner = { .have = MODEL_ATTR_UID | MODEL_ATTR_GID, .uid = 7, .gid = 8 };
	struct model_node n;

	CHECK(m != NULL);
	CHECK_EQ_INT(model_mkdir_as(m, "/d", MODEL_KIND_OBJECT, &owner, &err), 0);
	CHECK_EQ_INT(model_create_as(m, "/d/f", &mode, &err), 0);
	n = stat_of(m, "/d/f");
	CHECK_EQ_INT((int)n.attr.mode, 0600);
	CHECK(n.ctime_ns >= n.mtime_ns);
	n = stat_of(m, "/d");
	CHECK_EQ_INT((int)n.attr.uid, 7);
	CHECK_EQ_INT((int)n.attr.gid, 8);
	/* back to the default: the field goes, the ctime stays */
	CHECK_EQ_INT(model_set_attr(m, "/d/f", &(struct model_attr){ 0 }, MODEL_ATTR_MODE, &err), 0);
	CHECK_EQ_INT(stat_of(m, "/d/f").attr.have & MODEL_ATTR_MODE, 0);
	CHECK_EQ_INT(model_set_attr(m, "/d/f", &mode, 0, &err), 0);
	/* rename carries the subtree's records; the old names have none */
	CHECK_EQ_INT(model_rename(m, "/d", "/e", 0, &err), 0);
	CHECK_EQ_INT((int)stat_of(m, "/e/f").attr.mode, 0600);
	CHECK_EQ_INT((int)stat_of(m, "/e").attr.uid, 7);
	CHECK_EQ_INT(model_mkdir(m, "/d", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_create(m, "/d/f", &err), 0);
	CHECK_EQ_INT(stat_of(m, "/d/f").attr.have & MODEL_ATTR_MODE, 0);
	CHECK_EQ_INT(stat_of(m, "/d").attr.have & MODEL_ATTR_UID, 0);
	/* a view of the node carries its mode, without execute bits */
	CHECK_EQ_INT((int)stat_of(m, "/e/f.json").attr.mode, 0600);
	/* rm -r drops them */
	CHECK_EQ_INT(model_remove(m, "/e", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_mkdir(m, "/e", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_write(m, "/e/f", "x", 1, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(stat_of(m, "/e/f").attr.have & MODEL_ATTR_MODE, 0);
	CHECK_EQ_INT((int)problems_of(m), 0);
	close_fresh(m);
}

static void test_imports_and_kinds_prune(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_attr mode = { .have = MODEL_ATTR_MODE, .mode = 0640 };

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/", "{\"a\":{\"b\":1,\"c\":2}}", 19, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_set_attr(m, "/a/b", &mode, 0, &err), 0);
	CHECK_EQ_INT(model_set_attr(m, "/a/c", &mode, 0, &err), 0);
	/* the document keeps b, drops c */
	CHECK_EQ_INT(model_write(m, "/a.json", "{\"b\":5}", 7, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT((int)stat_of(m, "/a/b").attr.mode, 0640);
	CHECK_EQ_INT(attr_records(m), 1);
	CHECK_EQ_INT(model_import(m, "/a", "{\"x\":1}", 7, NULL, NULL, &err), 0);
	CHECK_EQ_INT(attr_records(m), 0);
	CHECK_EQ_INT((int)problems_of(m), 0);
	close_fresh(m);
}

/* The children of a container whose kind changes ("0" <-> 0) keep their records and deadlines. */
static void check_kept(struct model *m, int64_t deadline_ns)
{
	struct model_error err;
	struct model_node n = stat_of(m, "/o/0");
	int64_t d = 0;

	CHECK_EQ_INT((int)n.attr.mode, 0700);
	CHECK_EQ_INT((int)n.attr.uid, 1000);
	CHECK_EQ_INT(n.mtime_ns, 946684800000000000LL);
	CHECK_EQ_INT((int)stat_of(m, "/o/0/g").attr.mode, 0600);
	CHECK_EQ_INT((int)stat_of(m, "/o/10").attr.mode, 0640);
	CHECK_EQ_INT(stat_of(m, "/o/1").attr.have, 0);
	CHECK_EQ_INT(model_ttl_get_at(m, "/o/1", &d, &err), 0);
	CHECK_EQ_INT(d, deadline_ns);
	CHECK_EQ_INT(attr_records(m), 3);
	CHECK_EQ_INT((int)problems_of(m), 0);
}

static void test_kinds_carry(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_attr priv = { .have = MODEL_ATTR_MODE | MODEL_ATTR_UID, .mode = 0700,
				   .uid = 1000 };
	struct model_attr leaf = { .have = MODEL_ATTR_MODE, .mode = 0600 };
	struct model_attr ten = { .have = MODEL_ATTR_MODE, .mode = 0640 };
	int64_t deadline = 4070908800000000000LL;	/* 2099-01-01 */

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/o", "{\"0\":{\"g\":1},\"1\":2,\"10\":3}", 26, NULL, NULL,
				  &err), 0);
	CHECK_EQ_INT(model_set_attr(m, "/o/0", &priv, 0, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/o/0", 946684800000000000LL, &err), 0);	/* 2000-01-01 */
	CHECK_EQ_INT(model_set_attr(m, "/o/0/g", &leaf, 0, &err), 0);
	CHECK_EQ_INT(model_set_attr(m, "/o/10", &ten, 0, &err), 0);
	CHECK_EQ_INT(model_ttl_set_at(m, "/o/1", deadline, &err), 0);
	check_kept(m, deadline);
	CHECK_EQ_INT(model_set_type(m, "/o", "array", &err), 0);
	CHECK_EQ_INT(stat_of(m, "/o").kind, MODEL_KIND_ARRAY);
	check_kept(m, deadline);
	CHECK_EQ_INT(model_set_type(m, "/o", "object", &err), 0);
	check_kept(m, deadline);
	CHECK_EQ_INT(model_set_type(m, "/o", "array", &err), 0);
	CHECK_EQ_INT(model_reset_type(m, "/o", &err), 0);	/* back to an object */
	CHECK_EQ_INT(stat_of(m, "/o").kind, MODEL_KIND_OBJECT);
	check_kept(m, deadline);
	/* a refused change keeps everything where it was */
	CHECK_EQ_INT(model_write(m, "/o/x", "y", 1, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/o", "array", &err), -EINVAL);
	CHECK_EQ_INT(model_remove(m, "/o/x", 0, &err), 0);
	CHECK_EQ_INT((int)stat_of(m, "/o/0").attr.mode, 0700);
	close_fresh(m);
}

/* utimens: the atime is stored (a version 2 record) only while it differs from the mtime */
static void test_times(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_attr atime = { .have = MODEL_ATTR_ATIME, .atime_ns = 1100000000123456789 };
	struct model_attr none = { 0 };
	int64_t mtime = 1000000000000000000;
	struct model_node n;

	CHECK(m != NULL);
	CHECK_EQ_INT(model_import(m, "/", "{\"a\":1}", 7, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_set_times(m, "/a", &mtime, &atime, 0, &err), 0);
	n = stat_of(m, "/a");
	CHECK(n.mtime_ns == mtime);
	CHECK((n.attr.have & MODEL_ATTR_ATIME) && n.attr.atime_ns == atime.atime_ns);
	CHECK(n.ctime_ns > mtime);	/* utimens sets the ctime */
	CHECK_EQ_INT((int)problems_of(m), 0);
	/* the atime alone (UTIME_OMIT on the mtime) keeps the mtime */
	atime.atime_ns = 5;
	CHECK_EQ_INT(model_set_times(m, "/a", NULL, &atime, 0, &err), 0);
	n = stat_of(m, "/a");
	CHECK(n.mtime_ns == mtime && n.attr.atime_ns == 5);
	/* back to following the mtime: the field is gone */
	CHECK_EQ_INT(model_set_times(m, "/a", &mtime, &none, MODEL_ATTR_ATIME, &err), 0);
	CHECK_EQ_INT(stat_of(m, "/a").attr.have & MODEL_ATTR_ATIME, 0);
	/* a view accepts and keeps nothing; a new directory has its own mtime */
	CHECK_EQ_INT(model_set_times(m, "/a.json", &mtime, &atime, 0, &err), 0);
	CHECK_EQ_INT(model_mkdir_as(m, "/d", MODEL_KIND_OBJECT, &none, &err), 0);
	CHECK((stat_of(m, "/d").attr.have & MODEL_ATTR_MTIME) != 0);
	CHECK_EQ_INT((int)problems_of(m), 0);
	close_fresh(m);
}

int main(void)
{
	TEST(test_defaults_cost_nothing);
	TEST(test_set_rename_remove);
	TEST(test_imports_and_kinds_prune);
	TEST(test_kinds_carry);
	TEST(test_times);
	return UNIT_DONE();
}
