/*
 * tests/unit/test_model_tree.c - the document model against a real store in
 * a temporary directory: flatten/render round trips, views, append, remove,
 * list, rename, types, names, dump/load and check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_int.h"
#include "model/tree/tree_int.h"
#include "store/store.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-model-XXXXXX"
#include "unit_model.h"

static int import(struct model *m, const char *path, const char *json)
{
	struct model_error err;
	int ret = model_import(m, path, json, strlen(json), NULL, NULL, &err);

	if (ret < 0)
		fprintf(stderr, "# import %s: %s\n", path, err.msg);
	return ret;
}

/* Compact export of path, compared with want (which has no final newline). */
static void check_export(struct model *m, const char *path, const char *want)
{
	struct model_error err;
	char *out = NULL;
	size_t len = 0;
	int ret = model_export(m, path, MODEL_JSON_COMPACT, &out, &len, &err);

	CHECK_EQ_INT(ret, 0);
	if (ret < 0) {
		fprintf(stderr, "# export %s: %s\n", path, err.msg);
		return;
	}
	while (len && out[len - 1] == '\n')
		len--;
	if (len != strlen(want) || memcmp(out, want, len) != 0) {
		fprintf(stderr, "#   export %s:\n#     got  %.*s\n#     want %s\n", path,
			(int)len, out, want);
		unit_current_failed = 1;
	}
	free(out);
}

static void roundtrip(struct model *m, const char *json, const char *want)
{
	CHECK_EQ_INT(import(m, "/doc", json), 0);
	check_export(m, "/doc", want ? want : json);
}

static void test_roundtrip_exact(void)
{
	struct model *m = open_fresh();

	roundtrip(m, "{\"a\":{\"b\":[1,2,{\"c\":null}]},\"f\":false,\"t\":true}", NULL);
	roundtrip(m, "{\"a\":[],\"n\":[[],{}],\"o\":{}}", NULL);
	roundtrip(m, "[-9223372036854775808,9223372036854775807,9007199254740993]", NULL);
	roundtrip(m, "[1e308,-0.0,0.1,1.5]", "[1e+308,-0.0,0.1,1.5]");
	roundtrip(m, "[\"\\u00e9\\ud83d\\ude00\",\"a\\u0000b\"]", "[\"é😀\",\"a\\u0000b\"]");
	roundtrip(m, "{\"\":1,\"%\":5,\".\":3,\"a/b\":2,\"x.json\":4}", NULL);
	roundtrip(m, "{\"k\":1,\"k\":{\"z\":2},\"j\":0}", "{\"j\":0,\"k\":{\"z\":2}}");
	roundtrip(m, "\"scalar\"", NULL);
	roundtrip(m, "42", NULL);
	close_fresh(m);
}

static void test_object_key_order(void)
{
	struct model *m = open_fresh();

	/* keys come back in key order; arrays numerically (2 before 10) */
	roundtrip(m, "{\"b\":1,\"a\":2}", "{\"a\":2,\"b\":1}");
	roundtrip(m, "[0,1,2,3,4,5,6,7,8,9,10,11]", NULL);
	close_fresh(m);
}

static void test_invalid_json_changes_nothing(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char *before;
	size_t blen;
	const char *bad = "{\"a\": [1, 2,, 3]}";

	CHECK_EQ_INT(import(m, "/doc", "{\"keep\":[1,2,3]}"), 0);
	before = dump_text(m, &blen);
	CHECK_EQ_INT(model_write(m, "/doc.json", bad, strlen(bad), 0, MODEL_WRITE_TEXT, &err),
		     -EINVAL);
	CHECK(strstr(err.msg, "/doc.json: invalid JSON: line 1") != NULL);
	check_unchanged(m, before, blen);
	close_fresh(m);
}

static void test_too_long_and_too_deep(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char name[600], path[700], json[800];
	char *deep, *before;
	size_t blen, n = 0;

	memset(name, 'x', 520);
	name[520] = '\0';
	snprintf(path, sizeof(path), "/%s", name);
	CHECK_EQ_INT(model_write(m, path, "v", 1, 0, 0, &err), -ENAMETOOLONG);
	CHECK(strncmp(err.msg, "path too long for a key: /xxx", 29) == 0);
	CHECK_EQ_INT(import(m, "/doc", "{\"a\":1}"), 0);
	before = dump_text(m, &blen);
	snprintf(json, sizeof(json), "{\"a\":2,\"%s\":1}", name);
	CHECK_EQ_INT(model_import(m, "/doc", json, strlen(json), NULL, NULL, &err),
		     -ENAMETOOLONG);
	/* Nesting is limited by the key: 600 levels need at least 600 key bytes. */
	deep = malloc(2 * 600 + 1);
	for (int i = 0; i < 600; i++)
		deep[n++] = '[';
	for (int i = 0; i < 600; i++)
		deep[n++] = ']';
	CHECK_EQ_INT(model_import(m, "/doc", deep, n, NULL, NULL, &err), -ENAMETOOLONG);
	CHECK(strstr(err.msg, "path too long for a key") != NULL);
	check_unchanged(m, before, blen);
	free(deep);
	close_fresh(m);
}

static void test_views(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;
	char *text;
	size_t len;

	CHECK_EQ_INT(import(m, "/users", "{\"42\":{\"name\":\"Bob\",\"age\":42}}"), 0);
	CHECK_EQ_INT(model_stat(m, "/users/42.json", 0, &node, &err), 0);
	CHECK_EQ_INT(node.kind, MODEL_KIND_VIEW);
	CHECK_EQ_INT(model_read_all(m, "/users/42.json", &text, &len, &err), 0);
	CHECK_EQ_INT(node.size, len);
	CHECK(strcmp(text, "{\n  \"age\": 42,\n  \"name\": \"Bob\"\n}\n") == 0);
	free(text);
	CHECK_EQ_INT(model_stat(m, "/.json", 0, &node, &err), 0);
	CHECK_EQ_INT(model_read_all(m, "/users/42/age", &text, &len, &err), 0);
	CHECK(strcmp(text, "42\n") == 0);
	free(text);
	/* a view write replaces the subtree; a scalar makes a leaf */
	CHECK_EQ_INT(model_write(m, "/users/42.json", "[1]", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	check_export(m, "/users", "{\"42\":[1]}");
	CHECK_EQ_INT(model_write(m, "/users/42.json", "\"x\"", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/users/42", 0, &node, &err), 0);
	CHECK_EQ_INT(node.kind, MODEL_KIND_LEAF);
	CHECK_EQ_INT(model_stat(m, "/nope.json", 0, &node, &err), -ENOENT);
	CHECK_EQ_INT(model_write(m, "/.json", "[1]", 3, 0, MODEL_WRITE_TEXT, &err), -EINVAL);
	close_fresh(m);
}

static void test_append(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	const char *two = "{\"e\":1}\n{\"e\":2}\n";

	CHECK_EQ_INT(model_write(m, "/log.json", two, strlen(two), 0,
				 MODEL_WRITE_APPEND_JSON, &err), 0);
	CHECK_EQ_INT(model_write(m, "/log.json", "3 4", 3, 0, MODEL_WRITE_APPEND_JSON, &err), 0);
	check_export(m, "/log", "[{\"e\":1},{\"e\":2},3,4]");
	CHECK_EQ_INT(model_write(m, "/log.json", "5 [", 3, 0, MODEL_WRITE_APPEND_JSON, &err),
		     -EINVAL);
	check_export(m, "/log", "[{\"e\":1},{\"e\":2},3,4]");
	CHECK_EQ_INT(model_mkdir(m, "/empty", MODEL_KIND_ARRAY, &err), 0);
	CHECK_EQ_INT(model_write(m, "/empty.json", "7", 1, 0, MODEL_WRITE_APPEND_JSON, &err), 0);
	check_export(m, "/empty", "[7]");
	CHECK_EQ_INT(import(m, "/obj", "{\"a\":1}"), 0);
	CHECK_EQ_INT(model_write(m, "/obj.json", "7", 1, 0, MODEL_WRITE_APPEND_JSON, &err),
		     -EINVAL);
	CHECK_EQ_INT(model_write(m, "/obj/a.json", "7", 1, 0, MODEL_WRITE_APPEND_JSON, &err),
		     -ENOTDIR);
	close_fresh(m);
}

static void test_remove_keeps_parent(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;

	CHECK_EQ_INT(import(m, "/d", "{\"x\":1,\"arr\":[5]}"), 0);
	CHECK_EQ_INT(model_remove(m, "/d/x", MODEL_REMOVE_LEAF, &err), 0);
	CHECK_EQ_INT(model_remove(m, "/d/arr/0", MODEL_REMOVE_LEAF, &err), 0);
	check_export(m, "/d", "{\"arr\":[]}");
	CHECK_EQ_INT(model_remove(m, "/d/arr", MODEL_REMOVE_LEAF, &err), -EISDIR);
	CHECK_EQ_INT(model_remove(m, "/d", MODEL_REMOVE_DIR, &err), -ENOTEMPTY);
	CHECK_EQ_INT(model_remove(m, "/d/arr", MODEL_REMOVE_DIR, &err), 0);
	check_export(m, "/d", "{}");
	CHECK_EQ_INT(model_stat(m, "/d", 0, &node, &err), 0);
	CHECK(node.empty);
	CHECK_EQ_INT(model_remove(m, "/d", MODEL_REMOVE_RECURSIVE, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/d", 0, &node, &err), -ENOENT);
	close_fresh(m);
}

struct names {
	char buf[512];
	int count;
	int stop_at;
};

static int collect(void *arg, const char *name, const struct model_node *node)
{
	struct names *n = arg;

	(void)node;
	if (n->count == n->stop_at)
		return 1;
	strcat(n->buf, name);
	strcat(n->buf, ",");
	n->count++;
	return 0;
}

static void test_list(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_list *l;
	struct names n = { "", 0, 3 };
	struct model_node node;

	CHECK_EQ_INT(import(m, "/a", "[0,1,2,3,4,5,6,7,8,9,10,{\"x\":1}]"), 0);
	CHECK_EQ_INT(import(m, "/o", "{\"\":1,\"a/b\":2,\"x.json\":3,\"b\":{\"c\":[]}}"), 0);
	CHECK_EQ_INT(model_list_open(m, "/a", &l, &err), 0);
	CHECK_EQ_INT(model_list_fill(l, collect, &n), 1);
	n.stop_at = -1;
	CHECK_EQ_INT(model_list_fill(l, collect, &n), 0);
	CHECK(strcmp(n.buf, "0,1,2,3,4,5,6,7,8,9,10,11,") == 0);
	model_list_close(l);
	n.buf[0] = '\0';
	CHECK_EQ_INT(model_list_open(m, "/o", &l, &err), 0);
	CHECK_EQ_INT(model_list_fill(l, collect, &n), 0);
	CHECK(strcmp(n.buf, "%,%a%2Fb,b,%x%2Ejson,") == 0);
	model_list_close(l);
	CHECK_EQ_INT(model_stat(m, "/o/%a%2Fb", 0, &node, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/o/%x%2Ejson", 0, &node, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/o/%", 0, &node, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/o/%b", 0, &node, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/o/%a%2fb", 0, &node, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/o", MODEL_STAT_SUBDIRS, &node, &err), 0);
	CHECK_EQ_INT(node.subdirs, 1);
	CHECK_EQ_INT(model_stat(m, "/a/11/x", 0, &node, &err), 0);
	CHECK_EQ_INT(model_stat(m, "/a/011", 0, &node, &err), -ENOENT);
	CHECK_EQ_INT(model_stat(m, "/a/0/x", 0, &node, &err), -ENOTDIR);
	CHECK_EQ_INT(model_stat(m, "/a/0/7", 0, &node, &err), -ENOTDIR);
	close_fresh(m);
}

/* ("a") is a byte prefix of ("a\0b"): neither may be taken for the other's subtree. */
static void test_nul_sibling(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_list *l;
	struct names n = { "", 0, -1 };

	CHECK_EQ_INT(import(m, "/", "{\"a\":{\"x\":1},\"a\\u0000b\":2}"), 0);
	check_export(m, "/", "{\"a\":{\"x\":1},\"a\\u0000b\":2}");
	check_export(m, "/a", "{\"x\":1}");
	CHECK_EQ_INT(model_list_open(m, "/", &l, &err), 0);
	CHECK_EQ_INT(model_list_fill(l, collect, &n), 0);
	CHECK(strcmp(n.buf, "a,%a%00b,") == 0);
	model_list_close(l);
	CHECK_EQ_INT(model_remove(m, "/a", MODEL_REMOVE_RECURSIVE, &err), 0);
	check_export(m, "/", "{\"a\\u0000b\":2}");
	close_fresh(m);
}

/* Whether a subtree is empty, with a sibling continuing the name beside it. */
static bool subtree_empty(struct model *m, const char *path)
{
	struct store_txn *txn;
	struct tree_path p;
	struct model_error err;
	bool empty = false;

	if (store_read_begin(m->st, &txn) < 0)
		return false;
	if (tree_resolve(txn, path, 0, &p, &err) == 0)
		empty = tree_subtree_empty(txn, STORE_SPACE_DATA, p.key, p.len);
	store_txn_end(txn);
	return empty;
}

static void test_subtree_empty(void)
{
	struct model *m = open_fresh();
	struct model_error err;

	/* "a" sorts right before "a\0b" and "a\0b"'s subtree: neither is under it */
	CHECK_EQ_INT(import(m, "/", "{\"a\":1,\"a\\u0000b\":{\"c\":[1,2]},\"d\":[[3]]}"), 0);
	CHECK(subtree_empty(m, "/a"));
	CHECK(!subtree_empty(m, "/%a%00b"));
	CHECK(!subtree_empty(m, "/d"));
	CHECK(!subtree_empty(m, "/d/0"));
	CHECK(subtree_empty(m, "/d/0/0"));
	CHECK(!subtree_empty(m, "/"));
	/* removing the leaf takes nothing of its sibling's subtree */
	CHECK_EQ_INT(model_remove(m, "/a", 0, &err), 0);
	check_export(m, "/", "{\"a\\u0000b\":{\"c\":[1,2]},\"d\":[[3]]}");
	/* and a container made where the leaf was, then removed, takes its own */
	CHECK_EQ_INT(import(m, "/a", "{\"x\":{\"y\":1}}"), 0);
	CHECK(!subtree_empty(m, "/a"));
	CHECK_EQ_INT(model_remove(m, "/a", MODEL_REMOVE_RECURSIVE, &err), 0);
	check_export(m, "/", "{\"a\\u0000b\":{\"c\":[1,2]},\"d\":[[3]]}");
	close_fresh(m);
}

static void test_leaf_write_and_create(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;
	char *text;
	size_t len;

	CHECK_EQ_INT(model_create(m, "/f", &err), 0);
	CHECK_EQ_INT(model_stat(m, "/f", 0, &node, &err), 0);
	CHECK_EQ_INT(node.size, 0);
	CHECK_EQ_INT(model_create(m, "/f", &err), -EEXIST);
	CHECK_EQ_INT(model_write(m, "/n", "42\n", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(import(m, "/i", "{\"v\":7}"), 0);
	CHECK_EQ_INT(model_write(m, "/i/v", "8\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	check_export(m, "/i", "{\"v\":8}");
	CHECK_EQ_INT(model_write(m, "/i", "8\n", 2, 0, MODEL_WRITE_TEXT, &err), -EISDIR);
	CHECK_EQ_INT(model_write(m, "/no/x", "1", 1, 0, MODEL_WRITE_TEXT, &err), -ENOENT);
	CHECK_EQ_INT(model_write(m, "/i/v/x", "1", 1, 0, MODEL_WRITE_TEXT, &err), -ENOTDIR);
	CHECK_EQ_INT(model_write(m, "/zz", "1", 1, 0, MODEL_WRITE_NO_CREATE, &err), -ENOENT);
	CHECK_EQ_INT(model_read_all(m, "/n", &text, &len, &err), 0);
	CHECK_MEM(text, len, "42\n", 3);
	free(text);
	CHECK_EQ_INT(model_mkdir(m, "/arr", MODEL_KIND_ARRAY, &err), 0);
	CHECK_EQ_INT(model_mkdir(m, "/arr/x", MODEL_KIND_OBJECT, &err), -EINVAL);
	CHECK_EQ_INT(model_mkdir(m, "/arr/0", MODEL_KIND_OBJECT, &err), 0);
	CHECK_EQ_INT(model_mkdir(m, "/arr/0", MODEL_KIND_OBJECT, &err), -EEXIST);
	check_export(m, "/arr", "[{}]");
	CHECK_EQ_INT(model_mkdir(m, "/%zz", MODEL_KIND_OBJECT, &err), -EINVAL);
	close_fresh(m);
}

static void test_rename(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char type[16];
	const char *doc = "{\"new\":1}\n";

	CHECK_EQ_INT(import(m, "/d", "{\"a\":{\"x\":1},\"b\":{},\"c\":{\"y\":2},\"n\":5,\"s\":\"t\"}"),
		     0);
	CHECK_EQ_INT(model_rename(m, "/d/a", "/d/b", 0, &err), 0);
	check_export(m, "/d", "{\"b\":{\"x\":1},\"c\":{\"y\":2},\"n\":5,\"s\":\"t\"}");
	CHECK_EQ_INT(model_rename(m, "/d/b", "/d/c", 0, &err), -ENOTEMPTY);
	CHECK_EQ_INT(model_rename(m, "/d/b", "/d/n", 0, &err), -ENOTDIR);
	CHECK_EQ_INT(model_rename(m, "/d/n", "/d/b", 0, &err), -EISDIR);
	CHECK_EQ_INT(model_rename(m, "/d/b", "/d/b/x/z", 0, &err), -EINVAL);
	CHECK_EQ_INT(model_rename(m, "/d/s", "/d/n", MODEL_RENAME_NOREPLACE, &err), -EEXIST);
	/* a string that parses as the target's type keeps the type (sed -i) */
	CHECK_EQ_INT(model_write(m, "/d/tmp", "6\n", 2, MODEL_TYPE_STRING, MODEL_WRITE_TEXT,
				 &err), 0);
	CHECK_EQ_INT(model_rename(m, "/d/tmp", "/d/n", 0, &err), 0);
	CHECK_EQ_INT(model_get_type(m, "/d/n", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "integer") == 0);
	/* the last child moves away: the parent stays */
	CHECK_EQ_INT(model_rename(m, "/d/c/y", "/d/y", 0, &err), 0);
	check_export(m, "/d", "{\"b\":{\"x\":1},\"c\":{},\"n\":6,\"s\":\"t\",\"y\":2}");
	/* an editor saves a view: write a temp file, rename it over NAME.json */
	CHECK_EQ_INT(model_write(m, "/d/.b.json.swp", doc, strlen(doc), 0, MODEL_WRITE_TEXT,
				 &err), 0);
	CHECK_EQ_INT(model_rename(m, "/d/.b.json.swp", "/d/b.json", 0, &err), 0);
	check_export(m, "/d", "{\"b\":{\"new\":1},\"c\":{},\"n\":6,\"s\":\"t\",\"y\":2}");
	/* into an array the name must be an index */
	CHECK_EQ_INT(model_mkdir(m, "/arr", MODEL_KIND_ARRAY, &err), 0);
	CHECK_EQ_INT(model_rename(m, "/d/s", "/arr/s", 0, &err), -EINVAL);
	CHECK_EQ_INT(model_rename(m, "/d/s", "/arr/0", 0, &err), 0);
	check_export(m, "/arr", "[\"t\"]");
	close_fresh(m);
}

static void test_set_type(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char type[16];

	CHECK_EQ_INT(import(m, "/d", "{\"s\":\"12\",\"w\":\"x\",\"a\":[1,{\"k\":2}],"
			       "\"o\":{\"1\":\"b\",\"0\":\"a\"},\"gap\":{\"0\":1,\"2\":2},"
			       "\"bad\":{\"0\":1,\"x\":2}}"), 0);
	CHECK_EQ_INT(model_set_type(m, "/d/s", "integer", &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/d/w", "integer", &err), -EINVAL);
	CHECK_EQ_INT(model_set_type(m, "/d/w", "bytes", &err), 0);
	CHECK_EQ_INT(model_get_type(m, "/d/w", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "bytes") == 0);
	CHECK_EQ_INT(model_set_type(m, "/d/a", "object", &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/d/o", "array", &err), 0);
	/* names that are all indices make an array, gaps kept (a sparse one restored) */
	CHECK_EQ_INT(model_set_type(m, "/d/gap", "array", &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/d/bad", "array", &err), -EINVAL);
	check_export(m, "/d", "{\"a\":{\"0\":1,\"1\":{\"k\":2}},\"bad\":{\"0\":1,\"x\":2},"
		     "\"gap\":[1,2],\"o\":[\"a\",\"b\"],\"s\":12,\"w\":{\"$base64\":\"eAo=\"}}");
	CHECK_EQ_INT(model_set_type(m, "/d/a", "array", &err), 0);
	check_export(m, "/d/a", "[1,{\"k\":2}]");
	close_fresh(m);
}

static void test_dump_load(void)
{
	struct model *m = open_fresh(), *m2;
	struct model_error err;
	char *one, *two;
	size_t len1, len2;
	FILE *f;

	CHECK_EQ_INT(import(m, "/", "{\"a\":[1,2.5,\"x\",null,true,{}],\"b\":{\"\":[]}}"), 0);
	one = dump_text(m, &len1);
	CHECK(strncmp(one, "kvfs-dump 1\n", 12) == 0);
	m2 = m;
	close_fresh(m);
	m2 = open_fresh();
	f = fmemopen(one, len1, "r");
	CHECK_EQ_INT(model_load(m2, f, &err), 0);
	fclose(f);
	two = dump_text(m2, &len2);
	CHECK_MEM(two, len2, one, len1);
	f = fmemopen(one, len1, "r");
	CHECK_EQ_INT(model_load(m2, f, &err), -EEXIST);
	fclose(f);
	check_export(m2, "/", "{\"a\":[1,2.5,\"x\",null,true,{}],\"b\":{\"\":[]}}");
	free(two);
	close_fresh(m2);
	m2 = open_fresh();
	one[len1 - 2] = one[len1 - 2] == '9' ? '8' : '9';	/* wrong count */
	f = fmemopen(one, len1, "r");
	CHECK_EQ_INT(model_load(m2, f, &err), -EINVAL);
	fclose(f);
	close_fresh(m2);
	free(one);
}

static int put_bad(struct store_txn *txn, void *arg)
{
	struct tuple_writer w;
	uint8_t key[64];

	struct strbuf sb;
	int ret;

	(void)arg;
	tuple_writer_init(&w, key, sizeof(key));
	tuple_put_string(&w, "bad", 3);
	/* A one-byte body with a valid checksum: the body itself is bad. */
	strbuf_init(&sb);
	leaf_record_seal(key, w.len, "\x42", 1, &sb);
	ret = sb.failed ? -ENOMEM : store_put(txn, STORE_SPACE_DATA, key, w.len, sb.buf, sb.len);
	strbuf_release(&sb);
	return ret;
}

static void test_check(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	uint64_t problems = 99;
	char *report = NULL;
	size_t rlen;
	FILE *f;

	CHECK_EQ_INT(import(m, "/", "{\"a\":[1,2],\"b\":{\"c\":\"d\"}}"), 0);
	CHECK_EQ_INT(model_check(m, stderr, &problems, &err), 0);
	CHECK_EQ_INT(problems, 0);
	CHECK_EQ_INT(store_write(m->st, put_bad, NULL), 0);
	f = open_memstream(&report, &rlen);
	CHECK_EQ_INT(model_check(m, f, &problems, &err), 0);
	fclose(f);
	CHECK_EQ_INT(problems, 1);
	CHECK(report && strcmp(report, "check: 0262616400: record does not decode\n") == 0);
	free(report);
	close_fresh(m);
}

int main(void)
{
	TEST(test_roundtrip_exact);
	TEST(test_object_key_order);
	TEST(test_invalid_json_changes_nothing);
	TEST(test_too_long_and_too_deep);
	TEST(test_views);
	TEST(test_append);
	TEST(test_remove_keeps_parent);
	TEST(test_list);
	TEST(test_nul_sibling);
	TEST(test_subtree_empty);
	TEST(test_leaf_write_and_create);
	TEST(test_rename);
	TEST(test_set_type);
	TEST(test_dump_load);
	TEST(test_check);
	return UNIT_DONE();
}
