/*
 * tests/fuzz/fuzz_store.h - the store fixture of the libFuzzer targets that
 * need one: a store in a temporary directory made once per process (opening
 * LMDB per input would dominate the run), reset to exactly its fresh state
 * between inputs, and removed at exit. A target includes this once.
 */
#ifndef KVFS_FUZZ_STORE_H
#define KVFS_FUZZ_STORE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/tree/tree_int.h"

struct fuzz_store {
	char dir[64];
	struct model *m;
	char meta_format[16], meta_created[16];	/* the fresh store's meta values */
	size_t format_len, created_len;
};

static void fuzz_die(const char *target, const char *what)
{
	fprintf(stderr, "%s: %s\n", target, what);
	abort();
}

static int fuzz_copy_meta(struct store_txn *txn, const char *key, char *dst, size_t *len)
{
	struct store_val v;
	int ret = store_get(txn, STORE_SPACE_META, key, strlen(key), &v);

	if (ret < 0 || v.len > 16)
		return ret < 0 ? ret : -1;
	memcpy(dst, v.data, v.len);
	*len = v.len;
	return 0;
}

/* Opens a new empty store in a new temporary directory; aborts when it cannot. */
static void fuzz_store_open(struct fuzz_store *fs, const char *target)
{
	struct model_error err = { 0 };
	struct store_txn *txn;
	const char *tmp = getenv("TMPDIR");

	snprintf(fs->dir, sizeof(fs->dir), "%s/kvfs-fuzz.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(fs->dir))
		fuzz_die(target, "cannot make a temporary directory");
	if (model_open(fs->dir, MODEL_OPEN_CREATE | MODEL_OPEN_NOSYNC, &fs->m, &err) < 0) {
		fprintf(stderr, "%s: %s\n", target, err.msg);
		fuzz_die(target, "cannot create a store");
	}
	if (store_read_begin(fs->m->st, &txn) < 0)
		fuzz_die(target, "cannot read the new store");
	if (fuzz_copy_meta(txn, "format", fs->meta_format, &fs->format_len) < 0 ||
	    fuzz_copy_meta(txn, "created", fs->meta_created, &fs->created_len) < 0)
		fuzz_die(target, "the new store has no format or created value");
	store_txn_end(txn);
}

static int fuzz_reset_txn(struct store_txn *txn, void *arg)
{
	struct fuzz_store *fs = arg;
	int ret;

	ret = store_del_prefix(txn, STORE_SPACE_DATA, NULL, 0, NULL);
	if (ret == 0)
		ret = store_del_prefix(txn, STORE_SPACE_META, NULL, 0, NULL);
	if (ret == 0)
		ret = store_put(txn, STORE_SPACE_META, "format", 6, fs->meta_format, fs->format_len);
	if (ret == 0)
		ret = store_put(txn, STORE_SPACE_META, "created", 7, fs->meta_created,
				fs->created_len);
	return ret;
}

/* Back to the fresh store: no data, the meta values it was created with. */
static void fuzz_store_reset(struct fuzz_store *fs, const char *target)
{
	if (store_write(fs->m->st, fuzz_reset_txn, fs) < 0)
		fuzz_die(target, "cannot reset the store");
}

static void fuzz_store_remove(struct fuzz_store *fs)
{
	char path[96];

	if (!fs->m)
		return;
	model_close(fs->m);
	fs->m = NULL;
	snprintf(path, sizeof(path), "%s/data.mdb", fs->dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", fs->dir);
	unlink(path);
	rmdir(fs->dir);
}

#endif
