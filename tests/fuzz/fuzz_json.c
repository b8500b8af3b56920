/*
 * tests/fuzz/fuzz_json.c - libFuzzer target for JSON parse-and-flatten:
 * model_import of the input under /d of a store holding an older document
 * there. A refused input must leave that document exactly as it was; an
 * accepted one must pass `kvfs check`, and its export must import again
 * (under /e) and export to the same text.
 */
#include <errno.h>
#include <stdint.h>

#include "tests/fuzz/fuzz_store.h"

#define FUZZ_JSON_MAX 65536
#define OLD_DOC "{\"old\":[1,\"two\",{}]}"

static struct fuzz_store store;	/* one per process: see fuzz_store.h */

static void fail(const char *what)
{
	fuzz_die("fuzz_json", what);
}

static void remove_store(void)
{
	fuzz_store_remove(&store);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_store_open(&store, "fuzz_json");
	atexit(remove_store);
	return 0;
}

static char *export_compact(const char *path, size_t *len)
{
	struct model_error err = { 0 };
	char *out = NULL;

	if (model_export(store.m, path, MODEL_JSON_COMPACT, &out, len, &err) < 0) {
		fprintf(stderr, "fuzz_json: export %s: %s\n", path, err.msg);
		fail("an imported document cannot be exported");
	}
	return out;
}

static void check_clean(void)
{
	struct model_error err = { 0 };
	uint64_t problems = 0;
	FILE *report = fopen("/dev/null", "w");

	if (!report)
		fail("cannot open /dev/null");
	if (model_check(store.m, report, &problems, &err) < 0 || problems != 0) {
		fclose(report);
		model_check(store.m, stderr, &problems, &err);
		fail("kvfs check finds problems after an import");
	}
	fclose(report);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_error err = { 0 };
	char *first, *second;
	size_t first_len, second_len;

	if (size > FUZZ_JSON_MAX)
		return 0;
	fuzz_store_reset(&store, "fuzz_json");
	if (model_import(store.m, "/d", OLD_DOC, strlen(OLD_DOC), NULL, NULL, &err) < 0)
		fail("the old document does not import");
	if (model_import(store.m, "/d", (const char *)data, size, NULL, NULL, &err) < 0) {
		if (err.msg[0] == '\0')
			fail("a refused import says nothing");
		first = export_compact("/d", &first_len);
		if (first_len != strlen(OLD_DOC) || memcmp(first, OLD_DOC, first_len) != 0)
			fail("a refused import changed the document");
		free(first);
		return 0;
	}
	check_clean();
	first = export_compact("/d", &first_len);
	if (model_import(store.m, "/e", first, first_len, NULL, NULL, &err) < 0) {
		fprintf(stderr, "fuzz_json: re-import: %s\n", err.msg);
		fail("an exported document does not import again");
	}
	second = export_compact("/e", &second_len);
	if (first_len != second_len || memcmp(first, second, first_len) != 0)
		fail("export, import, export changes the document");
	free(second);
	free(first);
	return 0;
}
