/*
 * tests/unit/test_model_reset.c - model_reset_type (what removing the xattr
 * user.kvfs.type does: the type a new node would get) and the messages for
 * invalid names, which the mount hands back through user.kvfs.error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-reset-XXXXXX"
#include "unit_model.h"

static void check_type(struct model *m, const char *path, const char *want)
{
	struct model_error err;
	char type[32] = "";

	CHECK_EQ_INT(model_get_type(m, path, type, sizeof(type), &err), 0);
	CHECK(strcmp(type, want) == 0);
	if (strcmp(type, want) != 0)
		fprintf(stderr, "#   %s: type %s, want %s\n", path, type, want);
}

static void check_json(struct model *m, const char *want)
{
	struct model_error err;
	char *out = NULL;
	size_t len = 0;

	CHECK_EQ_INT(model_export(m, "/", MODEL_JSON_COMPACT, &out, &len, &err), 0);
	if (out) {
		CHECK_MEM(out, len, want, strlen(want));
		if (len != strlen(want) || memcmp(out, want, len) != 0)
			fprintf(stderr, "#   got %.*s\n", (int)len, out);
	}
	free(out);
}

static void test_reset_leaves_and_containers(void)
{
	static const char doc[] = "{\"n\":42,\"d\":1.5,\"t\":true,\"z\":null,\"s\":\"x\","
				  "\"arr\":[1,\"y\"],\"none\":[],\"o\":{\"a\":1},\"e\":{}}";
	struct model_error err;
	struct model *m = open_fresh();
	static const char *paths[] = { "/n", "/d", "/t", "/z", "/s", "/arr", "/none", "/o", "/e", "/" };

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(model_import(m, "/", doc, sizeof(doc) - 1, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_write(m, "/b", "\xff\x00\x01", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		CHECK_EQ_INT(model_reset_type(m, paths[i], &err), 0);
	CHECK_EQ_INT(model_reset_type(m, "/b", &err), 0);
	check_type(m, "/n", "string");
	check_type(m, "/t", "string");
	check_type(m, "/b", "bytes");
	check_type(m, "/arr", "object");
	check_type(m, "/none", "object");
	CHECK_EQ_INT(model_remove(m, "/b", MODEL_REMOVE_LEAF, &err), 0);
	check_json(m, "{\"arr\":{\"0\":1,\"1\":\"y\"},"
		      "\"d\":\"1.5\",\"e\":{},\"n\":\"42\",\"none\":{},\"o\":{\"a\":1},"
		      "\"s\":\"x\",\"t\":\"true\",\"z\":\"null\"}");
	CHECK_EQ_INT(model_reset_type(m, "/missing", &err), -ENOENT);
	{	/* a failed reset changes nothing */
		size_t blen = 0;
		char *before = dump_text(m, &blen);

		CHECK_EQ_INT(model_reset_type(m, "/o.json", &err), -EINVAL);
		check_unchanged(m, before, blen);
	}
	close_fresh(m);
}

static void check_create_msg(struct model *m, const char *path, const char *want)
{
	struct model_error err = { 0 };

	CHECK_EQ_INT(model_create(m, path, &err), -EINVAL);
	CHECK(strstr(err.msg, want) != NULL);
	if (!strstr(err.msg, want))
		fprintf(stderr, "#   %s: message '%s' lacks '%s'\n", path, err.msg, want);
}

static void test_invalid_name_messages(void)
{
	struct model *m = open_fresh();

	CHECK(m != NULL);
	if (!m)
		return;
	check_create_msg(m, "/%zz", "that key's file name is 'zz'");
	check_create_msg(m, "/%a%2", "'%2' is no escape");
	check_create_msg(m, "/%a%2g", "'%2g' is no escape");
	check_create_msg(m, "/%a%2e", "'%2e' is no escape");
	check_create_msg(m, "/\xff", "not UTF-8");
	close_fresh(m);
}

int main(void)
{
	TEST(test_reset_leaves_and_containers);
	TEST(test_invalid_name_messages);
	return UNIT_DONE();
}
