/*
 * tests/unit/test_model_stream.c - big inputs read from a file mapping
 * (model_import_mapped, MODEL_WRITE_MAPPED) store exactly what the same
 * bytes in heap memory store: numbers, escapes, big integers, $base64 and
 * big string and bytes leaves (their records built in the store's page)
 * round-trip without changing one byte, and their pages are given back.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_int.h"
#include "unit.h"
#define UNIT_MODEL_DIR "/tmp/kvfs-stream-XXXXXX"
#include "unit_model.h"

/* A read-only private mapping of a temporary file holding data (munmap len). */
static char *map_copy(const void *data, size_t len)
{
	char name[] = "/tmp/kvfs-stream-map-XXXXXX";
	int fd = mkstemp(name);
	void *p = MAP_FAILED;

	if (fd < 0)
		return NULL;
	unlink(name);
	if (write(fd, data, len) == (ssize_t)len)
		p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static char *export(struct model *m, const char *path, size_t *len)
{
	struct model_error err;
	char *out = NULL;

	if (model_export(m, path, MODEL_JSON_COMPACT, &out, len, &err) < 0)
		fprintf(stderr, "#   export %s: %s\n", path, err.msg);
	return out;
}

/* A document of every kind of value, with a big string and big bytes. */
static char *make_doc(size_t big, size_t *len)
{
	struct strbuf sb;

	strbuf_init(&sb);
	strbuf_addf(&sb, "{\"z\":[1,-0,0.1,1e300,-9223372036854775808,18446744073709551616,"
		    "123456789012345678901234567890,-0.0,true,false,null],"
		    "\"esc\":\"a\\u0000b\\\"\\\\\\n\\ud83d\\ude00\\u00e9\","
		    "\"b\":{\"$base64\":\"AAEC/w==\"},\"$$base64\":\"kept\",\"big\":\"");
	for (size_t i = 0; i < big; i++)
		strbuf_addc(&sb, (char)('a' + i % 26));
	strbuf_addf(&sb, "\\n\",\"raw\":{\"$base64\":\"");
	for (size_t i = 0; i < big / 3; i++)
		strbuf_add(&sb, "/wBh", 4);
	strbuf_addf(&sb, "\"},\"e\":{},\"a\":[]}");
	if (sb.failed) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, len);
}

static void test_mapped_import_same_as_heap(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	size_t len = 0, alen = 0, blen = 0;
	char *doc = make_doc(300000, &len), *map = doc ? map_copy(doc, len) : NULL;
	char *a, *b;
	uint64_t problems = 1;

	CHECK(m && doc && map);
	if (!m || !doc || !map)
		return;
	CHECK_EQ_INT(model_import(m, "/heap", doc, len, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_import_mapped(m, "/map", map, len, NULL, NULL, &err), 0);
	/* the mapping still reads the same after its pages were given back */
	CHECK_MEM(map, len, doc, len);
	a = export(m, "/heap", &alen);
	b = export(m, "/map", &blen);
	CHECK(a && b);
	if (a && b)
		CHECK_MEM(a, alen, b, blen);
	/* the exact values, not only the same ones on both sides */
	free(b);
	b = export(m, "/map/z", &blen);
	CHECK(b && strcmp(b, "[1,-0.0,0.1,1e+300,-9223372036854775808,18446744073709551616,"
			  "123456789012345678901234567890,-0.0,true,false,null]") == 0);
	free(b);
	b = NULL;
	CHECK_EQ_INT(model_read_all(m, "/map/big", &b, &blen, &err), 0);
	/* the value ends in "\n", and its text form adds the usual newline */
	CHECK_EQ_INT((int)blen, 300000 + 2);
	CHECK(b && b[0] == 'a' && b[25] == 'z' && b[299999] == (char)('a' + 299999 % 26) &&
	      b[300000] == '\n' && b[300001] == '\n');
	free(b);
	b = NULL;
	CHECK_EQ_INT(model_read_all(m, "/map/raw", &b, &blen, &err), 0);
	CHECK_EQ_INT((int)blen, 300000);
	CHECK(b && memcmp(b, "\xff\x00" "a\xff\x00" "a", 6) == 0);
	free(b);
	/* exported again, it imports to the same text */
	CHECK_EQ_INT(model_import(m, "/again", a ? a : "", alen, NULL, NULL, &err), 0);
	b = export(m, "/again", &blen);
	CHECK(a && b);
	if (a && b)
		CHECK_MEM(a, alen, b, blen);
	CHECK_EQ_INT(model_check(m, NULL, &problems, &err), 0);
	CHECK_EQ_INT((int)problems, 0);
	free(a);
	free(b);
	munmap(map, len);
	free(doc);
	close_fresh(m);
}

static void test_mapped_leaf_exact(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	size_t len = (1 << 20) * 3 + 7, got = 0;
	char *text = malloc(len), *map, *back = NULL;
	uint64_t problems = 1;
	char type[16];

	CHECK(m && text);
	if (!m || !text)
		return;
	for (size_t i = 0; i < len; i++)
		text[i] = (char)('0' + i % 10);
	text[len - 1] = '\n';
	map = map_copy(text, len);
	CHECK(map != NULL);
	if (!map)
		return;
	CHECK_EQ_INT(model_write(m, "/s", map, len, 0, MODEL_WRITE_TEXT | MODEL_WRITE_MAPPED, &err),
		     0);
	CHECK_EQ_INT(model_read_all(m, "/s", &back, &got, &err), 0);
	CHECK(back != NULL);
	if (back)
		CHECK_MEM(back, got, text, len);
	CHECK_EQ_INT(model_get_type(m, "/s", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "string") == 0);
	free(back);
	/* not UTF-8: bytes, exactly */
	text[5] = (char)0xff;
	munmap(map, len);
	map = map_copy(text, len);
	CHECK(map != NULL);
	CHECK_EQ_INT(model_write(m, "/b", map, len, 0, MODEL_WRITE_TEXT | MODEL_WRITE_MAPPED, &err),
		     0);
	back = NULL;
	CHECK_EQ_INT(model_read_all(m, "/b", &back, &got, &err), 0);
	if (back)
		CHECK_MEM(back, got, text, len);
	CHECK_EQ_INT(model_get_type(m, "/b", type, sizeof(type), &err), 0);
	CHECK(strcmp(type, "bytes") == 0);
	/* the checksums of records built in place verify */
	CHECK_EQ_INT(model_check(m, NULL, &problems, &err), 0);
	CHECK_EQ_INT((int)problems, 0);
	free(back);
	if (map)
		munmap(map, len);
	free(text);
	close_fresh(m);
}

static void test_mapped_refusal_names_place(void)
{
	struct model_error err;
	struct model *m = open_fresh();
	const char *bad = "{\"a\":1,\n\"b\":[1,2,\n3,]}";
	char *map = map_copy(bad, strlen(bad)), *out;
	size_t len;

	CHECK(m && map);
	if (!m || !map)
		return;
	CHECK_EQ_INT(model_import(m, "/d", "{\"keep\":1}", 10, NULL, NULL, &err), 0);
	CHECK_EQ_INT(model_import_mapped(m, "/d", map, strlen(bad), NULL, NULL, &err), -EINVAL);
	CHECK(strstr(err.msg, "line 3") != NULL);
	out = export(m, "/d", &len);
	CHECK(out && strcmp(out, "{\"keep\":1}") == 0);
	free(out);
	munmap(map, strlen(bad));
	close_fresh(m);
}

int main(void)
{
	TEST(test_mapped_import_same_as_heap);
	TEST(test_mapped_leaf_exact);
	TEST(test_mapped_refusal_names_place);
	return UNIT_DONE();
}
