/*
 * tests/unit/test_store_lmdb_growth.c - LMDB's map growth: in one write, over
 * many with readers, and a writer that must grow it while readers never pause.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_store_lmdb.h"

/* ---- map growth ---- */

#define BLOB 1024

struct bulk {
	int first, count;	/* keys ("bulk", first .. first+count-1) */
	int attempts;
};

static void blob_for(int i, uint8_t *blob)
{
	for (int j = 0; j < BLOB; j++)
		blob[j] = (uint8_t)(i * 31 + j);
}

static int bulk_fn(struct store_txn *txn, void *arg)
{
	struct bulk *b = arg;
	uint8_t k[STORE_KEY_MAX], blob[BLOB];
	int rc = 0;

	b->attempts++;
	for (int i = b->first; i < b->first + b->count && rc == 0; i++) {
		blob_for(i, blob);
		rc = store_put(txn, STORE_SPACE_DATA, k, key2(k, "bulk", i), blob, BLOB);
	}
	return rc;
}

static int verify_bulk(struct store *st, int n)
{
	uint8_t k[STORE_KEY_MAX], blob[BLOB], got[BLOB];
	int bad = 0;

	for (int i = 0; i < n; i++) {
		blob_for(i, blob);
		if (get_kv(st, STORE_SPACE_DATA, k, key2(k, "bulk", i), got, BLOB) != BLOB ||
		    memcmp(got, blob, BLOB) != 0)
			bad++;
	}
	return bad;
}

static struct store *open_small(char *dir, size_t len)
{
	struct store *st;

	setenv("KVFS_MAPSIZE", "1M", 1);
	st = open_new(dir, len);
	unsetenv("KVFS_MAPSIZE");
	return st;
}

void test_growth_one_txn(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct bulk b = { 0, 50 * 1024, 0 };
	struct store_info info;

	CHECK_EQ_INT(store_info(st, &info), 0);
	CHECK_EQ_INT(info.map_size, 1 << 20);
	CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
	CHECK_EQ_INT(store_info(st, &info), 0);
	printf("# 50 MiB in one txn: %d attempts, map %llu MiB, used %llu MiB\n", b.attempts,
	       (unsigned long long)info.map_size >> 20, (unsigned long long)info.used_bytes >> 20);
	CHECK(b.attempts > 1);
	CHECK(info.map_size >= (uint64_t)50 << 20);
	CHECK_EQ_INT(info.entries, b.count);
	CHECK_EQ_INT(verify_bulk(st, b.count), 0);
	store_close(st);
}

struct reader_arg {
	struct store *st;
	volatile int stop;
	long reads, errors;
};

/* Reads the fixed key ("bulk", 0) and scans a little, until told to stop. */
static void *reader_main(void *p)
{
	struct reader_arg *a = p;
	uint8_t k[STORE_KEY_MAX], blob[BLOB], got[BLOB];
	size_t kl = key2(k, "bulk", 0);

	blob_for(0, blob);
	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		if (get_kv(a->st, STORE_SPACE_DATA, k, kl, got, BLOB) != BLOB ||
		    memcmp(got, blob, BLOB) != 0)
			__atomic_add_fetch(&a->errors, 1, __ATOMIC_RELAXED);
		if (count_under(a->st, "none") != 0)
			__atomic_add_fetch(&a->errors, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&a->reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

void test_growth_many_txns_with_readers(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct reader_arg ra = { st, 0, 0, 0 };
	struct bulk b = { 0, 1, 0 };
	struct store_info info;
	pthread_t th[4];
	int attempts = 0, txns = 0;

	CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, reader_main, &ra);
	for (int first = 1; first < 50 * 1024; first += 100, txns++) {
		b = (struct bulk){ first, first + 100 <= 50 * 1024 ? 100 : 50 * 1024 - first, 0 };
		CHECK_EQ_INT(store_write(st, bulk_fn, &b), 0);
		attempts += b.attempts;
	}
	__atomic_store_n(&ra.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ_INT(store_info(st, &info), 0);
	printf("# 50 MiB in %d txns: %d retries, map %llu MiB; %ld concurrent reads, %ld errors\n",
	       txns, attempts - txns, (unsigned long long)info.map_size >> 20, ra.reads, ra.errors);
	CHECK(attempts > txns);
	CHECK_EQ_INT(ra.errors, 0);
	CHECK(ra.reads > 0);
	CHECK_EQ_INT(info.entries, 50 * 1024);
	CHECK_EQ_INT(verify_bulk(st, 50 * 1024), 0);
	store_close(st);
}

/* ---- growth under steady read load ---- */

struct busy_arg {
	struct store *st;
	volatile int stop;
	volatile int done;
	int result;
};

/* Begins and ends read transactions back to back, so some are always open. */
static void *busy_reader(void *p)
{
	struct busy_arg *a = p;
	struct store_txn *txn;

	while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
		if (store_read_begin(a->st, &txn) == 0)
			store_txn_end(txn);
	}
	return NULL;
}

static void *growing_writer(void *p)
{
	struct busy_arg *a = p;
	struct bulk b = { 0, 8 * 1024, 0 };	/* 8 MiB into a 1 MiB map */

	a->result = store_write(a->st, bulk_fn, &b);
	__atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A writer that must grow the map gets in although readers never pause. */
void test_growth_not_starved_by_readers(void)
{
	char dir[128];
	struct store *st = open_small(dir, sizeof(dir));
	struct busy_arg a = { st, 0, 0, -1 };
	pthread_t readers[16], writer;
	int waited_ms = 0;

	for (int i = 0; i < 16; i++)
		pthread_create(&readers[i], NULL, busy_reader, &a);
	pthread_create(&writer, NULL, growing_writer, &a);
	while (!__atomic_load_n(&a.done, __ATOMIC_ACQUIRE) && waited_ms < 10000) {
		usleep(10000);
		waited_ms += 10;
	}
	CHECK(__atomic_load_n(&a.done, __ATOMIC_ACQUIRE));	/* in time, with readers on */
	__atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);	/* also unblocks a starved writer */
	pthread_join(writer, NULL);
	for (int i = 0; i < 16; i++)
		pthread_join(readers[i], NULL);
	CHECK_EQ_INT(a.result, 0);
	printf("# growth from 1 MiB under 16 busy readers: %d ms\n", waited_ms);
	store_close(st);
}
