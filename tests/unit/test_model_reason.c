/*
 * tests/unit/test_model_reason.c - the reasons model/ gives with a refusal
 * (struct model_error's reason), which fs/ acts on instead of guessing from
 * -EINVAL, and the name rules fs/ asks model/ about (views, indices).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-reason-XXXXXX"
#include "unit_model.h"

/* A refusal of path by create_check: its errno and reason. */
static void check_create(struct model *m, const char *path, int want_ret,
			 enum model_reason want)
{
	struct model_error err = { 0 };
	int ret = model_create_check(m, path, NULL, NULL, NULL, &err);

	CHECK_EQ_INT(ret, want_ret);
	CHECK_EQ_INT(err.reason, want);
	if (ret != want_ret || err.reason != want)
		fprintf(stderr, "#   %s: %d reason %d (%s)\n", path, ret, err.reason, err.msg);
}

static void test_reason_array_names(void)
{
	static const char doc[] = "{\"arr\":[1,2],\"o\":{\"a\":1}}";
	struct model_error err = { 0 };
	struct model *m = open_fresh();

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(model_import(m, "/", doc, sizeof(doc) - 1, NULL, NULL, &err), 0);
	check_create(m, "/arr/name", -EINVAL, MODEL_REASON_NOT_AN_INDEX);
	check_create(m, "/arr/007", -EINVAL, MODEL_REASON_NOT_AN_INDEX);	/* no leading 0 */
	check_create(m, "/arr/2", 0, MODEL_REASON_NONE);
	check_create(m, "/arr/0", -EEXIST, MODEL_REASON_NONE);
	check_create(m, "/o/b", 0, MODEL_REASON_NONE);
	check_create(m, "/o/%zz", -EINVAL, MODEL_REASON_BAD_NAME);
	/* an array marker with no elements yet is an array too */
	CHECK_EQ_INT(model_mkdir(m, "/empty", MODEL_KIND_ARRAY, &err), 0);
	check_create(m, "/empty/x", -EINVAL, MODEL_REASON_NOT_AN_INDEX);
	/* the write of such a name says the same */
	err.reason = MODEL_REASON_NONE;
	CHECK_EQ_INT(model_write(m, "/arr/x", "1\n", 2, 0, MODEL_WRITE_TEXT, &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_NOT_AN_INDEX);
	close_fresh(m);
}

static void test_reason_type_mismatch(void)
{
	struct model_file_commit c = { .type = MODEL_TYPE_INTEGER, .create = true };
	struct model_error err = { 0 };
	struct model *m = open_fresh();

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(model_write(m, "/n", "abc\n", 4, MODEL_TYPE_INTEGER, MODEL_WRITE_TEXT, &err),
		     -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_TYPE_MISMATCH);
	/* the commit of a file written through the mount */
	err.reason = MODEL_REASON_NONE;
	CHECK_EQ_INT(model_write_file(m, "/f", "x\n", 2, &c, &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_TYPE_MISMATCH);
	/* a type set on a leaf whose text does not fit (the empty leaf of a new file) */
	CHECK_EQ_INT(model_create(m, "/e", &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/e", "integer", &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_TYPE_MISMATCH);
	/* a success clears the reason of an earlier refusal */
	CHECK_EQ_INT(model_write(m, "/n", "12\n", 3, MODEL_TYPE_INTEGER, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(err.reason, MODEL_REASON_NONE);
	/* a view's text that is no JSON */
	CHECK_EQ_INT(model_write(m, "/n.json", "{", 1, 0, MODEL_WRITE_TEXT, &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_BAD_JSON);
	CHECK_EQ_INT(model_write(m, "/arr.json", "[1] x", 5, 0, MODEL_WRITE_TEXT, &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_BAD_JSON);
	CHECK_EQ_INT(model_write(m, "/arr.json", "[1]", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(err.reason, MODEL_REASON_NONE);
	/* refusals for other reasons carry none */
	CHECK_EQ_INT(model_set_type(m, "/n", "nosuchtype", &err), -EINVAL);
	CHECK_EQ_INT(err.reason, MODEL_REASON_NONE);
	close_fresh(m);
}

static void test_name_rules(void)
{
	CHECK(model_name_is_view("x.json", 6));
	CHECK(model_name_is_view(".json", 5));
	CHECK(model_name_is_view("a.b.json", 8));
	CHECK(!model_name_is_view("x.jso", 5));
	CHECK(!model_name_is_view("json", 4));
	CHECK(!model_name_is_view("x.JSON", 6));
	CHECK(!model_name_is_view("x.json.bak", 10));
	CHECK(model_name_is_view("x.json.bak", 6));	/* len counts: "x.json" */
	CHECK_EQ_INT(model_name_view_base("x.json", 6), 1);
	CHECK_EQ_INT(model_name_view_base(".json", 5), 0);
	CHECK_EQ_INT(model_name_view_base("plain", 5), 5);
	CHECK(model_name_is_index("0", 1));
	CHECK(model_name_is_index("42", 2));
	CHECK(!model_name_is_index("042", 3));
	CHECK(!model_name_is_index("", 0));
	CHECK(!model_name_is_index("-1", 2));
	CHECK(!model_name_is_index("1a", 2));
	CHECK(!model_name_is_index("99999999999999999999", 20));	/* above int64 */
}

int main(void)
{
	TEST(test_reason_array_names);
	TEST(test_reason_type_mismatch);
	TEST(test_name_rules);
	return UNIT_DONE();
}
