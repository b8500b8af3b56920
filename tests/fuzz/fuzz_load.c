/*
 * tests/fuzz/fuzz_load.c - libFuzzer target for the dump loader: model_load
 * of the input (through fmemopen) into a fresh store. A refused dump must
 * leave the store fresh; an accepted one must hold exactly the dump's data
 * lines, survive `kvfs check` and export (whatever they report), and dump,
 * load (into a second fresh store), dump must give the same text.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "tests/fuzz/fuzz_store.h"

#define FUZZ_LOAD_MAX 65536

static struct fuzz_store first, second;	/* one pair per process: see fuzz_store.h */
static char *fresh_dump;	/* the dump of a fresh store */
static size_t fresh_len;

static void fail(const char *what)
{
	fuzz_die("fuzz_load", what);
}

static void remove_stores(void)
{
	fuzz_store_remove(&first);
	fuzz_store_remove(&second);
	free(fresh_dump);
}

/* The whole store as dump text (heap; the caller frees it). */
static char *dump_text(struct model *m, size_t *len)
{
	struct model_error err = { 0 };
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		fail("open_memstream failed");
	if (model_dump(m, f, &err) < 0) {
		fprintf(stderr, "fuzz_load: dump: %s\n", err.msg);
		fail("a loaded store cannot be dumped");
	}
	if (fclose(f) != 0)
		fail("open_memstream failed");
	return buf;
}

static int load_text(struct model *m, const void *text, size_t len, struct model_error *err)
{
	FILE *f = fmemopen((void *)text, len, "r");
	int ret;

	if (!f)
		fail("fmemopen failed");
	ret = model_load(m, f, err);
	fclose(f);
	return ret;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_store_open(&first, "fuzz_load");
	fuzz_store_open(&second, "fuzz_load");
	atexit(remove_stores);
	fresh_dump = dump_text(first.m, &fresh_len);
	return 0;
}

/* The data lines of a dump, in order, as one string (heap). */
static char *data_lines(const char *text, size_t len, size_t *out_len)
{
	char *out = malloc(len + 1);
	size_t n = 0, i = 0;

	if (!out)
		fail("out of memory");
	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t line = nl ? (size_t)(nl - (text + i)) + 1 : len - i;

		if (line >= 5 && memcmp(text + i, "data ", 5) == 0) {
			memcpy(out + n, text + i, line);
			n += line;
		}
		i += line;
	}
	*out_len = n;
	return out;
}

/*
 * A format-1 dump holds record bodies; the store seals each one with its
 * 4-byte checksum (docs/FORMAT.md), which the store's own dump shows as 8
 * more hex digits at the end of each value. Takes them off again, in place,
 * so the data lines can be compared with the format-1 input.
 */
static void unseal_lines(char *lines, size_t *len)
{
	size_t i = 0, n = 0;

	while (i < *len) {
		char *nl = memchr(lines + i, '\n', *len - i);
		size_t line = (size_t)(nl - (lines + i));	/* a dump line always ends in \n */
		size_t keep = line - 8;

		if (line < 8 + 8)
			fail("a sealed data line is too short for its checksum");
		memmove(lines + n, lines + i, keep);
		if (lines[n + keep - 1] == ' ')
			lines[n + keep++] = '-';	/* an empty body */
		lines[n + keep] = '\n';
		n += keep + 1;
		i += line + 1;
	}
	*len = n;
}

static bool is_format_1(const uint8_t *data, size_t size)
{
	static const char line[] = "\nmeta 666f726d6174 00000001\n";

	return memmem(data, size, line, sizeof(line) - 1) != NULL;
}

/*
 * load takes any key and value bytes, so a loaded store may hold what no
 * kvfs writes: check must report it and export refuse or render it, neither
 * may crash (their results are not asserted here).
 */
static void check_survives(struct model *m)
{
	struct model_error err = { 0 };
	uint64_t problems = 0;
	FILE *report = fopen("/dev/null", "w");
	char *json = NULL;
	size_t len;

	if (!report)
		fail("cannot open /dev/null");
	model_check(m, report, &problems, &err);
	fclose(report);
	if (model_export(m, "/", 0, &json, &len, &err) == 0)
		free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_error err = { 0 };
	char *d1, *d2, *want, *got;
	size_t d1_len, d2_len, want_len, got_len;

	if (size == 0 || size > FUZZ_LOAD_MAX)	/* fmemopen refuses an empty buffer */
		return 0;
	fuzz_store_reset(&first, "fuzz_load");
	fuzz_store_reset(&second, "fuzz_load");
	if (load_text(first.m, data, size, &err) < 0) {
		if (err.msg[0] == '\0')
			fail("a refused load says nothing");
		d1 = dump_text(first.m, &d1_len);
		if (d1_len != fresh_len || memcmp(d1, fresh_dump, d1_len) != 0)
			fail("a refused load changed the store");
		free(d1);
		return 0;
	}
	check_survives(first.m);
	d1 = dump_text(first.m, &d1_len);
	want = data_lines((const char *)data, size, &want_len);
	got = data_lines(d1, d1_len, &got_len);
	if (is_format_1(data, size))
		unseal_lines(got, &got_len);
	if (want_len != got_len || memcmp(want, got, want_len) != 0)
		fail("the store does not hold exactly the dump's data lines");
	if (load_text(second.m, d1, d1_len, &err) < 0) {
		fprintf(stderr, "fuzz_load: reload: %s\n", err.msg);
		fail("a store's own dump does not load");
	}
	d2 = dump_text(second.m, &d2_len);
	if (d1_len != d2_len || memcmp(d1, d2, d1_len) != 0)
		fail("dump, load, dump changes the text");
	free(got);
	free(want);
	free(d2);
	free(d1);
	return 0;
}
