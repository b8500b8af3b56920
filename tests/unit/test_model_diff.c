/*
 * tests/unit/test_model_diff.c - writing a document onto an existing node
 * applies the difference: unchanged leaves keep their exact records (type,
 * flags, mtime), changed and new ones get the new time, and what the
 * document no longer holds is gone. The result must always equal a fresh
 * import of the same document.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_int.h"
#include "unit.h"
#define UNIT_MODEL_DIR "/tmp/kvfs-diff-XXXXXX"
#include "unit_model.h"

static int write_view(struct model *m, const char *path, const char *json)
{
	struct model_error err;
	int ret = model_write(m, path, json, strlen(json), 0, MODEL_WRITE_TEXT, &err);

	if (ret < 0)
		fprintf(stderr, "#   write %s: %s\n", path, err.msg);
	return ret;
}

static int import(struct model *m, const char *path, const char *json)
{
	struct model_error err;
	int ret = model_import(m, path, json, strlen(json), NULL, NULL, &err);

	if (ret < 0)
		fprintf(stderr, "#   import %s: %s\n", path, err.msg);
	return ret;
}

/* Compact export of path (heap; free()), or NULL. */
static char *export(struct model *m, const char *path)
{
	struct model_error err;
	char *out = NULL;
	size_t len;

	if (model_export(m, path, MODEL_JSON_COMPACT, &out, &len, &err) < 0) {
		fprintf(stderr, "#   export %s: %s\n", path, err.msg);
		return NULL;
	}
	return out;
}

static int64_t mtime_of(struct model *m, const char *path)
{
	struct model_error err;
	struct model_node n;

	if (model_stat(m, path, 0, &n, &err) < 0)
		return -1;
	return n.mtime_ns;
}

/* Old document, then new: the view write must equal a fresh import of new. */
static void expect_transition(const char *from, const char *to)
{
	struct model *m = open_fresh();
	struct model_error err;
	uint64_t problems = 1;
	char *a, *b;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(import(m, "/x", from), 0);
	CHECK_EQ_INT(write_view(m, "/x.json", to), 0);
	CHECK_EQ_INT(import(m, "/y", to), 0);
	a = export(m, "/x");
	b = export(m, "/y");
	CHECK(a && b && strcmp(a, b) == 0);
	if (a && b && strcmp(a, b))
		fprintf(stderr, "#   %s -> %s\n#   got  %s#   want %s", from, to, a, b);
	CHECK_EQ_INT(model_check(m, NULL, &problems, &err), 0);
	CHECK_EQ_INT(problems, 0);
	free(a);
	free(b);
	close_fresh(m);
}

static void test_transitions(void)
{
	static const char *docs[] = {
		"{}", "[]", "1", "\"s\"", "null", "{\"$base64\":\"AAE=\"}",
		"{\"a\":1}", "{\"a\":2,\"b\":[1,2,3]}", "{\"b\":[1],\"c\":{}}",
		"[1,2,3]", "[1,[2,[3]]]", "[{}, [], {\"k\":\"v\"}]", "[[]]",
		"{\"a\":{\"b\":{\"c\":1}},\"z\":[]}", "{\"a\":[{\"b\":1}],\"z\":{}}",
		"{\"a\":\"x\",\"a\\u0000b\":1,\"a\\u0000\":2}", "{\"a\":{\"a\\u0000b\":[1]}}",
		"{\"0\":1,\"1\":2}", "{\"$$base64\":\"AAE=\"}", "{\"a\":{\"$base64\":\"\"}}",
		"{\"n\":123456789012345678901234567890,\"d\":1.5}",
		"{\"a\":{\"x\":1},\"a\":[5]}", "{\"a\":[1,2],\"a\":[3]}", "{\"a\":{\"x\":1},\"a\":{}}",
		"{\"a\":1,\"a\":{\"y\":2}}",
		"{\"\":1,\"a/b\":[2],\"x.json\":{\"%41\":3},\".\":4,\"..\":{}}",
		"{\"\":{\"\":[]},\"a/b\":{\"c\":1},\"x.json\":5,\"%41\":{\"$base64\":\"\"}}",
	};
	size_t n = sizeof(docs) / sizeof(docs[0]);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			expect_transition(docs[i], docs[j]);
}

/* Arrays whose index keys grow or shrink in length, in place and nested. */
static void test_long_array_transitions(void)
{
	static const int sizes[] = { 0, 2, 255, 256, 300 };
	struct strbuf docs[5];
	size_t n = sizeof(sizes) / sizeof(sizes[0]);

	for (size_t i = 0; i < n; i++) {
		strbuf_init(&docs[i]);
		strbuf_addf(&docs[i], "{\"a\":[");
		for (int k = 0; k < sizes[i]; k++)
			strbuf_addf(&docs[i], "%s%d", k ? "," : "", k % 7 ? k : -k);
		strbuf_addf(&docs[i], "],\"b\":[[%d],{\"k\":%d}]}", sizes[i], sizes[i]);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			expect_transition(docs[i].buf, docs[j].buf);
	for (size_t i = 0; i < n; i++)
		strbuf_release(&docs[i]);
}

/* The same document again changes no byte of the store. */
static void test_same_document_keeps_everything(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char *before, *doc;
	size_t blen;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(import(m, "/d", "{\"s\":\"abc\",\"n\":42,\"big\":-99999999999999999999999,"
			    "\"b\":{\"$base64\":\"AP8=\"},\"l\":[true,false,null,1.5],\"e\":{},"
			    "\"ea\":[]}"), 0);
	/* a string without a newline flag, as `printf abc > s` makes it */
	CHECK_EQ_INT(model_write(m, "/d/s", "abc", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/n", 1000, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/s", 2000, &err), 0);
	before = dump_text(m, &blen);
	doc = export(m, "/d");
	CHECK(doc != NULL);
	CHECK_EQ_INT(write_view(m, "/d.json", doc ? doc : ""), 0);
	check_unchanged(m, before, blen);
	/* the root, written with its own rendering, changes nothing either */
	free(doc);
	before = dump_text(m, &blen);
	doc = export(m, "/");
	CHECK_EQ_INT(write_view(m, "/.json", doc ? doc : ""), 0);
	check_unchanged(m, before, blen);
	free(doc);
	close_fresh(m);
}

/* Only changed and new leaves get the new time; a changed one keeps its flag. */
static void test_changed_leaves_only(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char buf[16];
	ssize_t n;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(import(m, "/d", "{\"a\":1,\"b\":2,\"c\":[1,2,3]}"), 0);
	CHECK_EQ_INT(model_write(m, "/d/b", "2", 1, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/a", 1000, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/b", 1000, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/c/0", 1000, &err), 0);
	CHECK_EQ_INT(model_set_mtime(m, "/d/c/1", 1000, &err), 0);
	CHECK_EQ_INT(write_view(m, "/d.json", "{\"a\":1,\"b\":3,\"c\":[1,5],\"new\":\"x\"}"), 0);
	CHECK_EQ_INT(mtime_of(m, "/d/a"), 1000);
	CHECK_EQ_INT(mtime_of(m, "/d/c/0"), 1000);
	CHECK(mtime_of(m, "/d/b") > 1000);
	CHECK(mtime_of(m, "/d/c/1") > 1000);
	CHECK(mtime_of(m, "/d/new") > 1000);
	CHECK_EQ_INT(mtime_of(m, "/d/c/2"), -1);
	n = model_read(m, "/d/b", buf, sizeof(buf), 0, &err);
	CHECK_MEM(buf, n, "3", 1);	/* no newline, as before */
	n = model_read(m, "/d/new", buf, sizeof(buf), 0, &err);
	CHECK_MEM(buf, n, "x\n", 2);
	close_fresh(m);
}

/* A refused document changes nothing, even half-way through the diff. */
static void test_refused_changes_nothing(void)
{
	struct model *m = open_fresh();
	char *before;
	size_t blen;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(import(m, "/d", "{\"a\":1,\"b\":[1,2],\"c\":{\"d\":1}}"), 0);
	before = dump_text(m, &blen);
	CHECK_EQ_INT(write_view(m, "/d.json", "{\"a\":2,\"b\":[3],\"c\":1e999}"), -EINVAL);
	CHECK_EQ_INT(write_view(m, "/d.json", ""), -EINVAL);
	CHECK_EQ_INT(write_view(m, "/d.json", "{\"a\":2,\"b\":[3],\"c\":"), -EINVAL);
	check_unchanged(m, before, blen);
	close_fresh(m);
}

/* Bytes render as $base64 and read back as bytes; a real such object escapes. */
static void test_base64_round_trip(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char type[16], *out;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK_EQ_INT(model_write(m, "/b", "\xff\x00" "a\n", 4, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_write(m, "/u", "plain\n", 6, MODEL_TYPE_BYTES, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(import(m, "/o", "{\"$$base64\":\"AAE=\",\"k\":{\"$$$base64\":{}}}"), 0);
	out = export(m, "/");
	CHECK(out && strcmp(out, "{\"b\":{\"$base64\":\"/wBhCg==\"},"
			    "\"o\":{\"$$base64\":\"AAE=\",\"k\":{\"$$$base64\":{}}},"
			    "\"u\":{\"$base64\":\"cGxhaW4K\"}}") == 0);
	CHECK_EQ_INT(write_view(m, "/.json", out ? out : ""), 0);
	CHECK_EQ_INT(model_get_type(m, "/u", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "bytes") == 0);
	CHECK_EQ_INT(model_get_type(m, "/o/$base64", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "string") == 0);
	free(out);
	/* non-canonical base64 (bits under the padding) stays an object */
	CHECK_EQ_INT(import(m, "/n", "{\"x\":{\"$base64\":\"AAF=\"}}"), 0);
	CHECK_EQ_INT(model_get_type(m, "/n/x", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "object") == 0);
	close_fresh(m);
}

int main(void)
{
	TEST(test_transitions);
	TEST(test_long_array_transitions);
	TEST(test_same_document_keeps_everything);
	TEST(test_changed_leaves_only);
	TEST(test_refused_changes_nothing);
	TEST(test_base64_round_trip);
	return UNIT_DONE();
}
