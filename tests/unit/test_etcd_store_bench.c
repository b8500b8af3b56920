/*
 * tests/unit/test_etcd_store_bench.c - the program's bench verb: a point
 * get, a commit and a listing of 1000 children through store.h, on either
 * backend; and the fill of those children, which the listing tests share.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/unit/test_etcd_store.h"

static double ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Children ("kids", i) for i in [from, to), each with per_child leaves ("kids", i, j). */
int fill_fn(struct store_txn *t, void *arg)
{
	struct fill_arg *a = arg;

	for (int i = a->from; i < a->to; i++)
		for (int j = 0; j < a->per_child; j++) {
			uint8_t k[64];
			struct tuple_writer w;
			int rc;

			tuple_writer_init(&w, k, sizeof(k));
			tuple_put_string(&w, "kids", 4);
			tuple_put_int(&w, i);
			tuple_put_int(&w, j);
			rc = store_put(t, STORE_SPACE_DATA, k, w.len, "0123456789abcdef", 16);
			if (rc)
				return rc;
		}
	return 0;
}

#define BENCH_KEY "\x02" "bench\x00"	/* the tuple ("bench") */

static int one_put(struct store_txn *t, void *arg)
{
	const char *v = arg;

	return store_put(t, STORE_SPACE_DATA, BENCH_KEY, sizeof(BENCH_KEY) - 1, v, strlen(v));
}

int bench(const char *name, int per_child, bool reuse)
{
	struct store *st;
	struct store_txn *t;
	struct store_scan *s = NULL;
	struct store_val k, v;
	uint8_t pfx[16];
	struct tuple_writer w;
	char why[256];
	double t0, get_ms, put_ms, ls_ms = 1e9;
	size_t end;
	int n = 0, rc = store_open(name, STORE_OPEN_CREATE, &st, why, sizeof(why));

	if (rc) {
		fprintf(stderr, "bench: %s\n", why);
		return 1;
	}
	int chunk = 3000 / per_child > 0 ? 3000 / per_child : 1;	/* children per write */

	for (int from = 0; !reuse && from < 1000; from += chunk) {
		struct fill_arg a = { from, from + chunk, per_child };

		if (a.to > 1000)
			a.to = 1000;
		if ((rc = store_write(st, fill_fn, &a)))
			goto fail;
	}
	if ((rc = store_write(st, one_put, (void *)(uintptr_t)"v")))
		goto fail;
	t0 = ms_now();
	for (int i = 0; i < 200; i++) {
		if ((rc = store_read_begin(st, &t)))
			goto fail;
		rc = store_get(t, STORE_SPACE_DATA, BENCH_KEY, sizeof(BENCH_KEY) - 1, &v);
		store_txn_end(t);
		if (rc)
			goto fail;
	}
	get_ms = (ms_now() - t0) / 200;
	t0 = ms_now();
	for (int i = 0; i < 50; i++)
		if ((rc = store_write(st, one_put, (void *)(uintptr_t)(i % 2 ? "odd" : "even"))))
			goto fail;
	put_ms = (ms_now() - t0) / 50;
	tuple_writer_init(&w, pfx, sizeof(pfx));
	tuple_put_string(&w, "kids", 4);
	for (int round = 0; round < 5; round++) {
		t0 = ms_now();
		if ((rc = store_read_begin(st, &t)))
			goto fail;
		s = NULL;
		rc = store_scan_open(t, STORE_SPACE_DATA, pfx, w.len, &s);
		n = 0;
		if (rc == 0)
			store_scan_expect_children(s);	/* as `ls` does (model/tree/node_read.c) */
		if (rc == 0)
			while ((rc = store_scan_next_distinct(s, 1, &k, &v, &end)) == 1)
				n++;
		if (s)
			store_scan_close(s);
		store_txn_end(t);
		if (rc < 0)
			goto fail;
		if (ms_now() - t0 < ls_ms)
			ls_ms = ms_now() - t0;
	}
	printf("%s\t%s\tpoint get %.3f ms\tcommit of one put %.3f ms\tls of %d children (%d keys each, best of 5) %.2f ms\n",
	       store_backend(st), name, get_ms, put_ms, n, per_child, ls_ms);
	store_close(st);
	return 0;
fail:
	fprintf(stderr, "bench: %s: %s\n", name, strerror(-rc));
	store_close(st);
	return 1;
}
