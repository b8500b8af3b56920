/*
 * tests/unit/test_model_edge.c - the document model at its limits: array
 * indices at INT64_MAX, keys of exactly STORE_KEY_MAX bytes, long names,
 * views of big leaves, and the rule that a failed write changes nothing.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_int.h"
#include "model/tree/tree_int.h"
#include "store/store.h"
#include "unit.h"

#define UNIT_MODEL_DIR "/tmp/kvfs-edge-XXXXXX"
#include "unit_model.h"

static void check_text(struct model *m, const char *path, const char *want, size_t wlen)
{
	struct model_error err;
	char *out = NULL;
	size_t len = 0;
	int ret = model_read_all(m, path, &out, &len, &err);

	CHECK_EQ_INT(ret, 0);
	if (ret == 0)
		CHECK_MEM(out, len, want, wlen);
	else
		fprintf(stderr, "# read %s: %s\n", path, err.msg);
	free(out);
}

static uint64_t problems_of(struct model *m)
{
	struct model_error err;
	uint64_t problems = 99;

	CHECK_EQ_INT(model_check(m, NULL, &problems, &err), 0);
	return problems;
}

/* ---- append at the end of the index space ---- */

static void test_append_at_int64_max(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	size_t blen = 0;
	char *before;

	CHECK_EQ_INT(model_mkdir(m, "/arr", MODEL_KIND_ARRAY, &err), 0);
	CHECK_EQ_INT(model_write(m, "/arr/9223372036854775807", "precious\n", 9, 0,
				 MODEL_WRITE_TEXT, &err), 0);
	before = dump_text(m, &blen);
	CHECK_EQ_INT(model_write(m, "/arr.json", "\"new\"", 5, 0,
				 MODEL_WRITE_TEXT | MODEL_WRITE_APPEND_JSON, &err), -EOVERFLOW);
	CHECK(strstr(err.msg, "/arr.json") != NULL);
	check_unchanged(m, before, blen);
	check_text(m, "/arr/9223372036854775807", "precious\n", 9);
	close_fresh(m);
}

static void test_append_past_int64_max(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	size_t blen = 0;
	char *before;

	CHECK_EQ_INT(model_mkdir(m, "/arr", MODEL_KIND_ARRAY, &err), 0);
	CHECK_EQ_INT(model_write(m, "/arr/9223372036854775806", "x\n", 2, 0,
				 MODEL_WRITE_TEXT, &err), 0);
	before = dump_text(m, &blen);
	/* One value fits (index INT64_MAX), the second has no index left. */
	CHECK_EQ_INT(model_write(m, "/arr.json", "1 2", 3, 0,
				 MODEL_WRITE_TEXT | MODEL_WRITE_APPEND_JSON, &err), -EOVERFLOW);
	CHECK(strstr(err.msg, "/arr.json") != NULL);
	check_unchanged(m, before, blen);
	CHECK_EQ_INT(problems_of(m), 0);
	CHECK_EQ_INT(model_write(m, "/arr.json", "1", 1, 0,
				 MODEL_WRITE_TEXT | MODEL_WRITE_APPEND_JSON, &err), 0);
	check_text(m, "/arr/9223372036854775807", "1\n", 2);
	close_fresh(m);
}

/*
 * A path of three names whose key is `want` bytes long (want in 490..511),
 * with its two parent objects created in m.
 */
static void long_path(struct model *m, char *path, size_t want)
{
	struct model_error err;
	char parent[600];

	size_t n = 0, last = want - 2 * 242 - 2;

	path[n++] = '/';
	memset(path + n, 'a', 240);
	n += 240;
	path[n++] = '/';
	memset(path + n, 'b', 240);
	n += 240;
	path[n++] = '/';
	memset(path + n, 'c', last);
	n += last;
	path[n] = '\0';
	memcpy(parent, path, 241);
	parent[241] = '\0';
	CHECK_EQ_INT(model_mkdir(m, parent, MODEL_KIND_OBJECT, &err), 0);
	memcpy(parent, path, 482);
	parent[482] = '\0';
	CHECK_EQ_INT(model_mkdir(m, parent, MODEL_KIND_OBJECT, &err), 0);
}

/* Gallop probes longer than the key limit mean "no such index", not an error. */
static void test_append_probe_past_key_limit(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char path[600], view[620], elem[620];

	long_path(m, path, 505);	/* index 2^39: 511 bytes; probe 2^40: 512 */
	CHECK_EQ_INT(model_mkdir(m, path, MODEL_KIND_ARRAY, &err), 0);
	snprintf(elem, sizeof(elem), "%s/0", path);
	CHECK_EQ_INT(model_write(m, elem, "first\n", 6, 0, MODEL_WRITE_TEXT, &err), 0);
	snprintf(elem, sizeof(elem), "%s/549755813888", path);
	CHECK_EQ_INT(model_write(m, elem, "far\n", 4, 0, MODEL_WRITE_TEXT, &err), 0);
	snprintf(view, sizeof(view), "%s.json", path);
	CHECK_EQ_INT(model_write(m, view, "2 3", 3, 0,
				 MODEL_WRITE_TEXT | MODEL_WRITE_APPEND_JSON, &err), 0);
	snprintf(elem, sizeof(elem), "%s/549755813890", path);
	check_text(m, elem, "3\n", 2);
	close_fresh(m);
}

/*
 * Big string values live on overflow pages; the byte after such a key in
 * its LMDB node is the page number's low byte, sometimes 0xFF. Rendering a
 * leaf must not read it: every view exists.
 */
static void test_views_of_big_leaves(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;
	char path[32], *big = malloc(2999);
	int failed = 0;

	memset(big, 'x', 2999);
	for (int i = 0; i < 600; i++) {
		snprintf(path, sizeof(path), "/k%04d", i);
		CHECK_EQ_INT(model_write(m, path, big, 2999, 0, MODEL_WRITE_TEXT, &err), 0);
	}
	for (int i = 0; i < 600; i++) {
		snprintf(path, sizeof(path), "/k%04d.json", i);
		if (model_stat(m, path, 0, &node, &err) != 0 || node.size != 2999 + 3) {
			if (!failed++)
				fprintf(stderr, "# stat %s: %s\n", path, err.msg);
		}
	}
	CHECK_EQ_INT(failed, 0);
	free(big);
	close_fresh(m);
}

/* A node whose key is exactly STORE_KEY_MAX bytes can be removed, replaced and moved. */
static void test_full_length_key(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char path[600], view[620];

	long_path(m, path, STORE_KEY_MAX);
	snprintf(view, sizeof(view), "%s.json", path);
	CHECK_EQ_INT(model_write(m, path, "v\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_remove(m, path, MODEL_REMOVE_LEAF, &err), 0);
	CHECK_EQ_INT(model_write(m, path, "v\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_write(m, view, "1", 1, 0, MODEL_WRITE_TEXT, &err), 0);
	check_text(m, path, "1\n", 2);
	CHECK_EQ_INT(model_write(m, "/b", "w\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_rename(m, "/b", path, 0, &err), 0);
	check_text(m, path, "w\n", 2);
	CHECK_EQ_INT(model_rename(m, path, "/b", 0, &err), 0);
	check_text(m, "/b", "w\n", 2);
	CHECK_EQ_INT(problems_of(m), 0);
	close_fresh(m);
}

/* Saving over NAME.json with NOREPLACE: EEXIST when NAME exists, nothing changed. */
static void test_rename_noreplace_onto_view(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	size_t blen = 0;
	char *before;

	CHECK_EQ_INT(model_import(m, "/doc", "{\"a\":1}", 7, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_write(m, "/tmp", "{\"b\":2}\n", 8, 0, MODEL_WRITE_TEXT, &err), 0);
	before = dump_text(m, &blen);
	CHECK_EQ_INT(model_rename(m, "/tmp", "/doc.json", MODEL_RENAME_NOREPLACE, &err),
		     -EEXIST);
	CHECK(strstr(err.msg, "/doc.json") != NULL);
	check_unchanged(m, before, blen);
	CHECK_EQ_INT(model_rename(m, "/tmp", "/new.json", MODEL_RENAME_NOREPLACE, &err), 0);
	check_text(m, "/new/b", "2\n", 2);
	close_fresh(m);
}

/* A view is not moved (EPERM, not mv's "subdirectory of itself" EINVAL); nothing changes. */
static void test_rename_view_source(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	size_t blen = 0;
	char *before;

	CHECK_EQ_INT(model_import(m, "/doc", "{\"a\":1}", 7, NULL, NULL, &err), 0);
	before = dump_text(m, &blen);
	CHECK_EQ_INT(model_rename(m, "/doc.json", "/other.json", 0, &err), -EPERM);
	CHECK(strstr(err.msg, "without .json") != NULL);
	CHECK_EQ_INT(model_rename(m, "/doc.json", "/x", 0, &err), -EPERM);
	check_unchanged(m, before, blen);
	CHECK_EQ_INT(model_rename(m, "/doc", "/other", 0, &err), 0);
	check_text(m, "/other/a", "1\n", 2);
	close_fresh(m);
}

/* The name "9223372036854775807" is an index, but 0..n-1 it is not (no overflow). */
static void test_object_to_array_at_int64_max(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	const char *doc = "{\"9223372036854775807\":1}";

	CHECK_EQ_INT(model_import(m, "/o", doc, strlen(doc), NULL, NULL, &err), 0);
	/* the largest index is an index: a sparse array may hold it (appends past it are refused) */
	CHECK_EQ_INT(model_set_type(m, "/o", "array", &err), 0);
	CHECK_EQ_INT(model_import(m, "/q", "{\"9223372036854775808\":1}", 25, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/q", "array", &err), -EINVAL);
	CHECK(strstr(err.msg, "not an array index") != NULL);	/* past the largest index */
	CHECK_EQ_INT(model_import(m, "/p", "{\"1\":1,\"0\":0}", 13, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_set_type(m, "/p", "array", &err), 0);
	close_fresh(m);
}

struct raw_put {
	const uint8_t *key;
	size_t key_len;
	const uint8_t *val;
	size_t val_len;
};

/* Puts a record body as given, sealed with its checksum (format 2). */
static int raw_put_fn(struct store_txn *txn, void *arg)
{
	struct raw_put *r = arg;
	struct strbuf sb;
	int ret;

	strbuf_init(&sb);
	leaf_record_seal(r->key, r->key_len, r->val, r->val_len, &sb);
	ret = sb.failed ? -ENOMEM : store_put(txn, STORE_SPACE_DATA, r->key, r->key_len, sb.buf,
					      sb.len);
	strbuf_release(&sb);
	return ret;
}

/* Reads do not validate a string's bytes (they are checked when written); check does. */
static void test_check_finds_bad_utf8(void)
{
	static const uint8_t key[] = { 0x02, 's', 0x00 };
	static const uint8_t rec[] = { LEAF_STRING, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'a', 0xc0, 0x80 };
	struct raw_put r = { key, sizeof(key), rec, sizeof(rec) };
	struct model *m = open_fresh();
	struct model_error err;
	struct model_node node;
	char *report = NULL;
	size_t rlen = 0;
	FILE *f = open_memstream(&report, &rlen);
	uint64_t problems = 0;

	CHECK_EQ_INT(store_write(m->st, raw_put_fn, &r), 0);
	CHECK_EQ_INT(model_stat(m, "/s", 0, &node, &err), 0);
	CHECK_EQ_INT(node.size, 3);
	CHECK_EQ_INT(model_check(m, f, &problems, &err), 0);
	fclose(f);
	CHECK_EQ_INT(problems, 1);
	CHECK(report && strstr(report, "check: 027300: string is not valid UTF-8") != NULL);
	free(report);
	close_fresh(m);
}

/* expect_inferred: the type at path is want, and inferred (not listed) as said. */
static void expect_inferred(struct model *m, const char *path, const char *want, bool inferred)
{
	struct model_error err;
	bool got = !inferred;
	char type[16] = "";

	CHECK_EQ_INT(model_get_type_inferred(m, path, type, sizeof(type), &got, &err), 0);
	CHECK(strcmp(type, want) == 0);
	CHECK(got == inferred);
}

/*
 * Whether a node's type is the one its content alone would give it (what
 * a copy without xattrs restores): objects, strings without NUL, bytes
 * that are not UTF-8 text. Everything else must be carried by the xattr.
 */
static void test_type_inferred(void)
{
	static const char doc[] = "{\"s\":\"x\",\"nul\":\"a\\u0000b\",\"i\":1,"
		"\"t\":true,\"z\":null,\"a\":[],\"o\":{},\"txt\":{\"$base64\":\"aGk=\"},"
		"\"raw\":{\"$base64\":\"/w==\"}}";
	struct model *m = open_fresh();
	struct model_error err;
	size_t big = LEAF_INFER_READ_MAX + 1;
	char *text = malloc(big);

	CHECK_EQ_INT(model_import(m, "/d", doc, sizeof(doc) - 1, NULL, NULL, &err), 0);
	expect_inferred(m, "/d", "object", true);
	expect_inferred(m, "/d/o", "object", true);
	expect_inferred(m, "/d/s", "string", true);
	expect_inferred(m, "/d/raw", "bytes", true);
	expect_inferred(m, "/d/nul", "string", false);
	expect_inferred(m, "/d/txt", "bytes", false);
	expect_inferred(m, "/d/i", "integer", false);
	expect_inferred(m, "/d/t", "boolean", false);
	expect_inferred(m, "/d/z", "null", false);
	expect_inferred(m, "/d/a", "array", false);
	/* past the bound the text is not read: listed, whatever it holds */
	CHECK(text != NULL);
	if (text) {
		memset(text, 'x', big);
		CHECK_EQ_INT(model_write(m, "/big", text, big, 0, MODEL_WRITE_TEXT, &err), 0);
		expect_inferred(m, "/big", "string", false);
		CHECK_EQ_INT(model_write(m, "/big", text, big - 2, 0, MODEL_WRITE_TEXT, &err), 0);
		expect_inferred(m, "/big", "string", true);
	}
	free(text);
	close_fresh(m);
}

static ssize_t refuse_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	(void)buf;
	(void)size;
	errno = ENOSPC;
	return -1;
}

/* read_to_mem: model_read_to into a memory stream; *out heap. */
static int read_to_mem(struct model *m, const char *path, char **out, size_t *len)
{
	struct model_error err;
	FILE *f = open_memstream(out, len);
	int ret;

	if (!f)
		return -ENOMEM;
	ret = model_read_to(m, path, f, &err);
	fclose(f);
	return ret;
}

/*
 * model_read_to streams the same text model_read_all gives (a view rendered
 * straight into the stream), and a stream that fails is an error, not a
 * short text.
 */
static void test_read_to(void)
{
	static const char doc[] = "{\"a\":[1,\"x\",{\"b\":null}],\"s\":\"t\\u00e9\"}";
	const char *paths[] = { "/d.json", "/d/a.json", "/d/s", "/d/a/1" };
	struct model *m = open_fresh();
	struct model_error err;
	FILE *bad;

	CHECK_EQ_INT(model_import(m, "/d", doc, sizeof(doc) - 1, NULL, NULL, &err), 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *whole = NULL, *streamed = NULL;
		size_t wl = 0, sl = 0;

		CHECK_EQ_INT(model_read_all(m, paths[i], &whole, &wl, &err), 0);
		CHECK_EQ_INT(read_to_mem(m, paths[i], &streamed, &sl), 0);
		if (whole && streamed)
			CHECK_MEM(streamed, sl, whole, wl);
		free(whole);
		free(streamed);
	}
	bad = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = refuse_write });
	CHECK(bad != NULL);
	if (bad) {
		CHECK_EQ_INT(model_read_to(m, "/d.json", bad, &err), -EIO);
		CHECK(strstr(err.msg, "/d.json") != NULL);
		fclose(bad);
	}
	close_fresh(m);
}

/*
 * A JSON string may hold NUL. Its text written to a new file becomes bytes
 * (inference), and setting the type back to string restores it: what
 * `cp -a` does with the type in user.kvfs.type.
 */
static void test_string_with_nul_restored(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char *s_json = NULL, *c_json = NULL, *text = NULL, type[16];
	size_t s_len = 0, c_len = 0, len = 0;

	CHECK_EQ_INT(model_import(m, "/d", "{\"s\":\"a\\u0000b\"}", 16, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_read_all(m, "/d/s", &text, &len, &err), 0);
	CHECK_MEM(text, len, "a\0b\n", 4);
	CHECK_EQ_INT(model_write(m, "/d/c", text, len, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_get_type(m, "/d/c", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "bytes") == 0);
	CHECK_EQ_INT(model_set_type(m, "/d/c", "string", &err), 0);
	CHECK_EQ_INT(model_export(m, "/d/s", MODEL_JSON_COMPACT, &s_json, &s_len, &err), 0);
	CHECK_EQ_INT(model_export(m, "/d/c", MODEL_JSON_COMPACT, &c_json, &c_len, &err), 0);
	if (s_json && c_json)
		CHECK_MEM(c_json, c_len, s_json, s_len);
	check_text(m, "/d/c", "a\0b\n", 4);
	/* An explicit type accepts NUL too; inference does not. */
	CHECK_EQ_INT(model_write(m, "/d/e", "x\0", 2, MODEL_TYPE_STRING, 0, &err), 0);
	CHECK_EQ_INT(model_get_type(m, "/d/e", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "string") == 0);
	CHECK_EQ_INT(model_write(m, "/d/e", "y\0\n", 3, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_get_type(m, "/d/e", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "bytes") == 0);
	free(text);
	free(s_json);
	free(c_json);
	close_fresh(m);
}

/*
 * Each attempt of a write starts with a clean message: neither an attempt
 * aborted for growth nor an expected "no such file" leaves one behind.
 */
static void test_no_stale_message(void)
{
	struct model *m;
	struct model_error err;
	struct strbuf doc;

	setenv("KVFS_MAPSIZE", "1m", 1);
	m = open_fresh();
	unsetenv("KVFS_MAPSIZE");
	strbuf_init(&doc);
	strbuf_addc(&doc, '[');
	for (int i = 0; i < 40000; i++)
		strbuf_addf(&doc, "%s\"value number %d\"", i ? "," : "", i);
	strbuf_addc(&doc, ']');
	CHECK_EQ_INT(model_write(m, "/big.json", doc.buf, doc.len, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(err.msg[0], 0);
	if (err.msg[0])
		fprintf(stderr, "# stale: %s\n", err.msg);
	CHECK_EQ_INT(model_write(m, "/new.json", "{}", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(err.msg[0], 0);
	CHECK_EQ_INT(model_write(m, "/new/x", "1", 1, 0, 0, &err), 0);
	CHECK_EQ_INT(err.msg[0], 0);
	strbuf_release(&doc);
	close_fresh(m);
}

/* Every way to create a key refuses a name longer than a file name, escaped. */
static void test_long_names_refused(void)
{
	struct model *m = open_fresh();
	struct model_error err;
	char ok[300], dots[300], json[400];
	size_t blen = 0;
	char *before;

	ok[0] = '/';
	memset(ok + 1, 'a', 255);
	ok[256] = '\0';
	strcpy(dots, "/%");	/* the key "//..." (86 bytes) escapes to 259 */
	for (int i = 0; i < 86; i++)
		strcat(dots, "%2F");
	CHECK_EQ_INT(model_write(m, ok, "v\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	CHECK_EQ_INT(model_write(m, "/src", "v\n", 2, 0, MODEL_WRITE_TEXT, &err), 0);
	before = dump_text(m, &blen);
	ok[256] = 'a';
	ok[257] = '\0';
	CHECK_EQ_INT(model_write(m, ok, "v\n", 2, 0, MODEL_WRITE_TEXT, &err), -ENAMETOOLONG);
	CHECK(strstr(err.msg, "name longer than 255 bytes as a file name") != NULL);
	CHECK(strstr(err.msg, "/aaaa") != NULL);
	CHECK_EQ_INT(model_create(m, ok, &err), -ENAMETOOLONG);
	CHECK_EQ_INT(model_mkdir(m, ok, MODEL_KIND_OBJECT, &err), -ENAMETOOLONG);
	CHECK_EQ_INT(model_rename(m, "/src", ok, 0, &err), -ENAMETOOLONG);
	CHECK_EQ_INT(model_import(m, ok, "{}", 2, NULL, NULL, &err), -ENAMETOOLONG);
	CHECK_EQ_INT(model_write(m, dots, "v\n", 2, 0, MODEL_WRITE_TEXT, &err), -ENAMETOOLONG);
	snprintf(json, sizeof(json), "{\"x\":{\"%s\":1}}", ok + 1);
	CHECK_EQ_INT(model_import(m, "/doc", json, strlen(json), NULL, NULL, &err),
		     -ENAMETOOLONG);
	CHECK(strstr(err.msg, "/doc/x/aaaa") != NULL);
	snprintf(json, sizeof(json), "[{\"%s\":1}]", ok + 1);
	CHECK_EQ_INT(model_write(m, "/arr.json", json, strlen(json), 0,
				 MODEL_WRITE_TEXT | MODEL_WRITE_APPEND_JSON, &err), -ENAMETOOLONG);
	check_unchanged(m, before, blen);
	close_fresh(m);
}

/* load keeps such names (old dumps stay loadable); check reports them. */
static void test_long_names_loaded_and_reported(void)
{
	uint8_t key[300], rec[LEAF_HEADER_SIZE] = { LEAF_NULL };
	struct raw_put r = { key, 0, rec, sizeof(rec) };
	struct model *m = open_fresh(), *m2;
	struct model_error err;
	char *dump, dir2[64];
	size_t len = 0;
	FILE *f;

	key[0] = 0x02;
	memset(key + 1, 'n', 256);
	key[257] = 0x00;
	r.key_len = 258;
	CHECK_EQ_INT(store_write(m->st, raw_put_fn, &r), 0);
	CHECK_EQ_INT(problems_of(m), 1);
	dump = dump_text(m, &len);
	strcpy(dir2, store_dir);
	m2 = open_fresh();
	f = fmemopen(dump, len, "r");
	CHECK_EQ_INT(model_load(m2, f, &err), 0);
	fclose(f);
	CHECK_EQ_INT(problems_of(m2), 1);
	close_fresh(m2);
	strcpy(store_dir, dir2);
	close_fresh(m);
	free(dump);
}

int main(void)
{
	TEST(test_append_at_int64_max);
	TEST(test_append_past_int64_max);
	TEST(test_append_probe_past_key_limit);
	TEST(test_views_of_big_leaves);
	TEST(test_full_length_key);
	TEST(test_rename_noreplace_onto_view);
	TEST(test_rename_view_source);
	TEST(test_object_to_array_at_int64_max);
	TEST(test_check_finds_bad_utf8);
	TEST(test_string_with_nul_restored);
	TEST(test_type_inferred);
	TEST(test_read_to);
	TEST(test_no_stale_message);
	TEST(test_long_names_refused);
	TEST(test_long_names_loaded_and_reported);
	return UNIT_DONE();
}
