/*
 * tests/unit/unit_model.h - the fresh-store fixture of the model unit
 * tests: open_fresh makes an empty store in a new temporary directory,
 * close_fresh closes it and removes the directory, dump_text gives the
 * whole store as text to compare. A test file defines
 * UNIT_MODEL_DIR (a mkdtemp template) and includes this after unit.h and
 * model/model.h; one store is open at a time.
 */
#ifndef KVFS_UNIT_MODEL_H
#define KVFS_UNIT_MODEL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef UNIT_MODEL_DIR
#error "define UNIT_MODEL_DIR, e.g. \"/tmp/kvfs-model-XXXXXX\", before including unit_model.h"
#endif

static char store_dir[256];

/*
 * A new empty store (heap; end it with close_fresh), or NULL when it cannot
 * be made. Its directory is UNIT_MODEL_DIR's last part under $TMPDIR when
 * that is set (the suites point it at /dev/shm), else the template as given.
 */
static struct model *open_fresh(void)
{
	struct model_error err;
	struct model *m = NULL;
	const char *tmp = getenv("TMPDIR");
	const char *name = strrchr(UNIT_MODEL_DIR, '/');
	int n;

	if (tmp && *tmp && name)
		n = snprintf(store_dir, sizeof(store_dir), "%s%s", tmp, name);
	else
		n = snprintf(store_dir, sizeof(store_dir), "%s", UNIT_MODEL_DIR);
	if (n < 0 || (size_t)n >= sizeof(store_dir) || !mkdtemp(store_dir))
		return NULL;
	if (model_open(store_dir, MODEL_OPEN_CREATE | MODEL_OPEN_NOSYNC, &m, &err) < 0) {
		fprintf(stderr, "# open: %s\n", err.msg);
		return NULL;
	}
	return m;
}

static void close_fresh(struct model *m)
{
	char cmd[sizeof(store_dir) + 16];

	model_close(m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# could not remove %s\n", store_dir);
}

/* The whole store as dump text (heap; the caller frees it), or NULL. */
static char *dump_text(struct model *m, size_t *len)
{
	struct model_error err;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	if (model_dump(m, f, &err) < 0)
		fprintf(stderr, "# dump: %s\n", err.msg);
	fclose(f);
	return buf;
}

/* Compares the dump now with `before` (from dump_text; may be NULL) and frees it. */
static inline void check_unchanged(struct model *m, char *before, size_t blen)
{
	size_t alen = 0;
	char *after = dump_text(m, &alen);

	CHECK(before && after);
	if (before && after)
		CHECK_MEM(after, alen, before, blen);
	free(after);
	free(before);
}

#endif
