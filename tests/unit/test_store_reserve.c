/*
 * tests/unit/test_store_reserve.c - the hints of a big write: store_reserve
 * grows the room once (never shrinks it, refused read-only), and
 * store_txn_trim changes nothing any transaction reads: the writer's own
 * earlier puts, a reader's value borrowed before the trim, the committed
 * result.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "tests/unit/unit.h"

#define KEYS 20000
#define VAL_LEN 200

static char tmp_root[64];

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static size_t key_of(uint8_t *buf, int64_t i)
{
	struct tuple_writer w;

	tuple_writer_init(&w, buf, STORE_KEY_MAX);
	tuple_put_string(&w, "k", 1);
	tuple_put_int(&w, i);
	return w.len;
}

/* The value of key i: VAL_LEN bytes that differ from key to key. */
static void val_of(uint8_t *buf, int64_t i)
{
	for (size_t j = 0; j < VAL_LEN; j++)
		buf[j] = (uint8_t)(i * 31 + (int64_t)j * 7);
}

static struct store *open_at(const char *name, unsigned flags)
{
	char dir[128], why[256] = "";
	struct store *st = NULL;
	int rc;

	snprintf(dir, sizeof(dir), "%s/%s", tmp_root, name);
	rc = store_open(dir, flags, &st, why, sizeof(why));
	if (rc)
		fprintf(stderr, "#   store_open: %d %s\n", rc, why);
	return st;
}

static void test_reserve_grows_once(void)
{
	struct store *st = open_at("r", STORE_OPEN_CREATE), *ro;
	struct store_info a, b;

	if (!st) {
		CHECK(st);
		return;
	}
	CHECK_EQ_INT(store_info(st, &a), 0);
	CHECK_EQ_INT(store_reserve(st, a.map_size * 3), 0);
	CHECK_EQ_INT(store_info(st, &b), 0);
	CHECK(b.map_size >= a.used_bytes + a.map_size * 3);
	/* less than there is: nothing changes (never shrinks) */
	CHECK_EQ_INT(store_reserve(st, 4096), 0);
	CHECK_EQ_INT(store_info(st, &a), 0);
	CHECK_EQ_INT(a.map_size, b.map_size);
	store_close(st);
	ro = open_at("r", STORE_OPEN_READONLY);
	CHECK(ro);
	if (ro) {
		CHECK_EQ_INT(store_reserve(ro, 1 << 20), -EROFS);
		store_close(ro);
	}
}

/* Puts KEYS keys, trimming every 1000, and reads the earlier ones back. */
static int put_trimmed(struct store_txn *txn, void *arg)
{
	uint8_t key[STORE_KEY_MAX], val[VAL_LEN];
	struct store_val got;
	int *bad = arg;
	int rc;

	for (int64_t i = 0; i < KEYS; i++) {
		val_of(val, i);
		rc = store_put(txn, STORE_SPACE_DATA, key, key_of(key, i), val, VAL_LEN);
		if (rc)
			return rc;
		if (i % 1000 != 999)
			continue;
		store_txn_trim(txn);
		for (int64_t j = 0; j <= i; j += 97) {
			val_of(val, j);
			rc = store_get(txn, STORE_SPACE_DATA, key, key_of(key, j), &got);
			*bad += rc != 0 || got.len != VAL_LEN || memcmp(got.data, val, VAL_LEN);
		}
	}
	return 0;
}

static void test_trim_changes_nothing_read(void)
{
	struct store *st = open_at("t", STORE_OPEN_CREATE);
	uint8_t key[STORE_KEY_MAX], val[VAL_LEN];
	struct store_txn *rd, *after;
	struct store_val old, got;
	int bad = 0;

	if (!st) {
		CHECK(st);
		return;
	}
	/* a first commit, read by a reader that keeps a borrowed value */
	CHECK_EQ_INT(store_write(st, put_trimmed, &bad), 0);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(store_read_begin(st, &rd), 0);
	CHECK_EQ_INT(store_get(rd, STORE_SPACE_DATA, key, key_of(key, 4242), &old), 0);
	/* the second write trims the map the reader's value lies in */
	CHECK_EQ_INT(store_write(st, put_trimmed, &bad), 0);
	CHECK_EQ_INT(bad, 0);
	val_of(val, 4242);
	CHECK_MEM(old.data, old.len, val, VAL_LEN);
	store_txn_end(rd);
	CHECK_EQ_INT(store_read_begin(st, &after), 0);
	for (int64_t i = 0; i < KEYS; i++) {
		val_of(val, i);
		bad += store_get(after, STORE_SPACE_DATA, key, key_of(key, i), &got) != 0 ||
		       got.len != VAL_LEN || memcmp(got.data, val, VAL_LEN);
	}
	CHECK_EQ_INT(bad, 0);
	store_txn_end(after);
	store_close(st);
}

int main(void)
{
	int rc;

	snprintf(tmp_root, sizeof(tmp_root), "/tmp/kvfs-reserve-XXXXXX");
	if (!mkdtemp(tmp_root)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_reserve_grows_once);
	TEST(test_trim_changes_nothing_read);
	rc = UNIT_DONE();
	nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
