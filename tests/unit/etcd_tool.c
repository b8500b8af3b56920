/*
 * tests/unit/etcd_tool.c - the verbs of test_etcd_client for
 * tests/80-etcd-client.bats (put, get, absent, leader, bigput, incr, conflict,
 * watch-one)
 * and `bench`, which measures the figures quoted in docs/ETCD.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

/* ---- verbs for tests/80-etcd-client.bats ---- */

static int verb_put(int argc, char **argv)
{
	struct etcd_client *c = client();
	int rc = argc == 2 ? etcd_client_put(c, argv[0], strlen(argv[0]), argv[1],
					     strlen(argv[1]), 0, NULL) : -EINVAL;

	if (rc < 0)
		fprintf(stderr, "put: %s (%d)\n", etcd_client_error(c), rc);
	etcd_client_close(c);
	return rc < 0;
}

/* Prints the value (exit 0), or exits 1 when absent, 2 on error. */
static int verb_get(int argc, char **argv)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	int rc = argc == 1 ? etcd_client_range(c, argv[0], strlen(argv[0]), NULL, &r) : -EINVAL;

	if (rc < 0) {
		fprintf(stderr, "get: %s (%d)\n", etcd_client_error(c), rc);
		etcd_client_close(c);
		return 2;
	}
	rc = r.len == 1 ? 0 : 1;
	if (r.len == 1)
		printf("%.*s\n", (int)r.kvs[0].val_len, (const char *)r.kvs[0].val);
	etcd_range_result_release(&r);
	etcd_client_close(c);
	return rc;
}

/*
 * absent KEY: asks with one Txn of a single compare, and no operation,
 * whether KEY is absent: prints "absent" (exit 0) or "present" (exit 1);
 * exits 2 on an error, such as a member that cannot confirm it is current
 * within 3 s.
 */
static int verb_absent(int argc, char **argv)
{
	struct etcd_client *c = client();
	struct etcd_cmp cmp = { .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL, .rev = 0 };
	struct etcd_txn_result t;
	int rc = -EINVAL;

	etcd_client_set_timeout(c, 3000);
	if (argc == 1) {
		cmp.key = argv[0];
		cmp.key_len = strlen(argv[0]);
		rc = etcd_client_txn(c, &cmp, 1, NULL, 0, NULL, 0, &t);
	}
	if (rc < 0) {
		fprintf(stderr, "absent: %s (%d)\n", etcd_client_error(c), rc);
		etcd_client_close(c);
		return 2;
	}
	rc = t.succeeded ? 0 : 1;
	printf("%s\n", t.succeeded ? "absent" : "present");
	etcd_txn_result_release(&t);
	etcd_client_close(c);
	return rc;
}

/* leader: moves to the leader (etcd_client_prefer_leader); prints its answer and the member. */
static int verb_leader(int argc, char **argv)
{
	struct etcd_client *c = client();
	int rc = argc == 0 ? etcd_client_prefer_leader(c) : -EINVAL;

	(void)argv;
	printf("%d %s\n", rc, etcd_client_endpoint(c));
	etcd_client_close(c);
	return rc < 0;
}

/* bigput KEY BYTES: writes BYTES bytes, reads them back, prints the length read. */
static int verb_bigput(int argc, char **argv)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	size_t n = argc == 2 ? strtoul(argv[1], NULL, 10) : 0;
	char *v = malloc(n ? n : 1);
	int rc = v ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && v; i++)
		v[i] = (char)('a' + i % 26);
	if (rc == 0)
		rc = etcd_client_put(c, argv[0], strlen(argv[0]), v, n, 0, NULL);
	if (rc == 0)
		rc = etcd_client_range(c, argv[0], strlen(argv[0]), NULL, &r);
	if (rc == 0) {
		bool same = r.len == 1 && r.kvs[0].val_len == n && memcmp(r.kvs[0].val, v, n) == 0;
		printf("%zu %s\n", r.len == 1 ? r.kvs[0].val_len : 0, same ? "same" : "different");
		etcd_range_result_release(&r);
	} else {
		fprintf(stderr, "bigput: %s (%d)\n", etcd_client_error(c), rc);
	}
	free(v);
	etcd_client_close(c);
	return rc < 0;
}

/*
 * One optimistic read-modify-write of the decimal counter at k: read it and
 * its mod_revision (create_revision 0 guards a missing one), commit value+1
 * guarded on that. 1 committed, 0 conflict, <0 error.
 */
static int incr_once(struct etcd_client *c, const char *k, int64_t *seen_mod, long *seen_val)
{
	struct etcd_range_result r;
	struct etcd_txn_result t;
	char val[32];
	long cur = 0;
	int rc = etcd_client_range(c, k, strlen(k), NULL, &r);

	if (rc < 0)
		return rc;
	struct etcd_cmp g = { .result = ETCD_CMP_EQUAL, .key = k, .key_len = strlen(k) };
	if (r.len == 1) {
		g.target = ETCD_CMP_MOD;
		g.rev = r.kvs[0].mod_rev;
		cur = strtol((const char *)r.kvs[0].val, NULL, 10);
	} else {
		g.target = ETCD_CMP_CREATE;
		g.rev = 0;
	}
	etcd_range_result_release(&r);
	if (seen_mod)
		*seen_mod = g.rev;
	if (seen_val)
		*seen_val = cur;
	snprintf(val, sizeof(val), "%ld", cur + 1);
	struct etcd_op put = { .type = ETCD_OP_PUT, .key = k, .key_len = strlen(k),
			       .val = val, .val_len = strlen(val) };
	rc = etcd_client_txn(c, &g, 1, &put, 1, NULL, 0, &t);
	if (rc < 0)
		return rc;
	rc = t.succeeded ? 1 : 0;
	etcd_txn_result_release(&t);
	return rc;
}

/* incr KEY N: N increments, each retried from the start on conflict. */
static int verb_incr(int argc, char **argv)
{
	struct etcd_client *c = client();
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : 0, retries = 0;
	int rc = 0;

	for (long i = 0; i < n && rc >= 0; i++) {
		while ((rc = incr_once(c, argv[0], NULL, NULL)) == 0)
			retries++;
	}
	if (rc < 0)
		fprintf(stderr, "incr: %s (%d)\n", etcd_client_error(c), rc);
	printf("retries=%ld\n", retries);
	etcd_client_close(c);
	return rc < 0;
}

/*
 * conflict KEY: clients A and B both read the counter; B commits first; A's
 * guarded commit must fail, and A's retry from the start must see B's value.
 */
static int verb_conflict(int argc, char **argv)
{
	struct etcd_client *a = client(), *b = client();
	struct etcd_txn_result t;
	struct etcd_range_result r;
	const char *k = argc == 1 ? argv[0] : "conflict";
	int64_t a_mod = 0;
	long a_val = 0, b_val = 0;
	int rc, ok = 1;

	/* A's read, its guard and its value kept as if A had paused before committing */
	rc = etcd_client_range(a, k, strlen(k), NULL, &r);
	if (rc < 0)
		goto out;
	a_mod = r.len ? r.kvs[0].mod_rev : 0;
	a_val = r.len ? strtol((const char *)r.kvs[0].val, NULL, 10) : 0;
	etcd_range_result_release(&r);
	rc = incr_once(b, k, NULL, &b_val);	/* B wins */
	printf("b=%s\n", rc == 1 ? "committed" : "lost");
	ok &= rc == 1;
	char val[32];
	snprintf(val, sizeof(val), "%ld", a_val + 1);
	struct etcd_cmp g = { .target = r.len ? ETCD_CMP_MOD : ETCD_CMP_CREATE,
			      .result = ETCD_CMP_EQUAL, .key = k, .key_len = strlen(k), .rev = a_mod };
	struct etcd_op put = { .type = ETCD_OP_PUT, .key = k, .key_len = strlen(k),
			       .val = val, .val_len = strlen(val) };
	rc = etcd_client_txn(a, &g, 1, &put, 1, NULL, 0, &t);
	if (rc < 0)
		goto out;
	printf("a=%s\n", t.succeeded ? "committed" : "conflict");
	ok &= !t.succeeded;
	etcd_txn_result_release(&t);
	long seen = 0;
	rc = incr_once(a, k, NULL, &seen);	/* A's retry from the start */
	printf("a-retry=%s saw=%ld\n", rc == 1 ? "committed" : "conflict", seen);
	ok &= rc == 1 && seen == b_val + 1;
out:
	if (rc < 0)
		fprintf(stderr, "conflict: %s / %s (%d)\n", etcd_client_error(a), etcd_client_error(b), rc);
	etcd_client_close(a);
	etcd_client_close(b);
	return rc < 0 || !ok;
}

static int print_first(const struct etcd_event *ev, void *arg)
{
	double *t0 = arg;

	if (!ev) {
		*t0 = now_ms();
		printf("ready\n");
		fflush(stdout);
		return 0;
	}
	printf("%s %.*s after %.0f ms\n", ev->is_delete ? "delete" : "put",
	       (int)ev->kv->key_len, (const char *)ev->kv->key, now_ms() - *t0);
	fflush(stdout);
	return 1;
}

static void *cancel_later(void *arg)
{
	sleep(20);
	etcd_client_cancel(arg);
	return NULL;
}

/* watch-one PREFIX: prints "ready", then the first event under PREFIX (exit 0); gives up after 20 s. */
static int verb_watch_one(int argc, char **argv)
{
	struct etcd_client *c = client();
	uint8_t end[512];
	double t0 = 0;
	pthread_t th;
	size_t pl = argc == 1 ? strlen(argv[0]) : 0;
	int rc;

	if (pl == 0 || pl > sizeof(end))
		return 2;
	pthread_create(&th, NULL, cancel_later, c);
	pthread_detach(th);
	rc = etcd_client_watch(c, argv[0], pl, end, etcd_prefix_end(argv[0], pl, end), 0,
			       print_first, &t0, NULL);
	if (rc != 1)
		fprintf(stderr, "watch: %s (%d)\n", etcd_client_error(c), rc);
	_exit(rc == 1 ? 0 : 1);	/* the canceller thread may still sleep */
}

/* ---- bench: the figures in docs/ETCD.md (not a test) ---- */

/* Writes n keys "<p>NNNNN/SSS" (subtree of `sub` keys per child) in Txns of 1000 puts. */
static int bench_fill(struct etcd_client *c, const char *p, int n, int sub)
{
	static struct etcd_op ops[1000];
	static char keys[1000][96];
	struct etcd_txn_result t;
	int used = 0, rc = 0;

	for (int i = 0; i < n && rc == 0; i++) {
		for (int j = 0; j < sub && rc == 0; j++) {
			int kl = snprintf(keys[used], sizeof(keys[used]), "%s%05d/%03d", p, i, j);
			ops[used] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = keys[used],
						      .key_len = (size_t)kl, .val = "value-of-about-32-bytes-xxxxxxxxx",
						      .val_len = 33 };
			if (++used == 1000 || (i == n - 1 && j == sub - 1)) {
				rc = etcd_client_txn(c, NULL, 0, ops, (size_t)used, NULL, 0, &t);
				if (rc == 0)
					etcd_txn_result_release(&t);
				used = 0;
			}
		}
	}
	return rc;
}

static double bench_range(struct etcd_client *c, const char *p, bool keys_only, int runs, size_t *got)
{
	uint8_t end[128];
	struct etcd_range_opts o = { .range_end = end, .keys_only = keys_only };
	struct etcd_range_result r;
	double t0 = now_ms();

	o.range_end_len = etcd_prefix_end(p, strlen(p), end);
	for (int i = 0; i < runs; i++) {
		if (etcd_client_range(c, p, strlen(p), &o, &r) < 0)
			return -1;
		*got = r.len;
		etcd_range_result_release(&r);
	}
	return (now_ms() - t0) / runs;
}

struct bench_watch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct etcd_client *c;
	const char *p;
	size_t pl;
	uint8_t end[128];
	size_t el;
	bool ready;
	int seen;	/* events */
	double at;	/* when the last one arrived */
};

static int bench_on_event(const struct etcd_event *ev, void *arg)
{
	struct bench_watch *b = arg;

	pthread_mutex_lock(&b->mu);
	if (ev) {
		b->seen++;
		b->at = now_ms();
	} else {
		b->ready = true;
	}
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return 0;
}

static void *bench_watch_thread(void *arg)
{
	struct bench_watch *b = arg;

	etcd_client_watch(b->c, b->p, b->pl, b->end, b->el, 0, bench_on_event, b, NULL);
	pthread_mutex_lock(&b->mu);
	b->ready = true;
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* Waits (at most 5 s) for the watch to be ready (seen < 0) or to have seen `seen` events. */
static void bench_wait(struct bench_watch *b, int seen)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	pthread_mutex_lock(&b->mu);
	while ((seen < 0 ? !b->ready : b->seen < seen) &&
	       pthread_cond_timedwait(&b->cv, &b->mu, &dl) == 0)
		;
	pthread_mutex_unlock(&b->mu);
}

/* Mean time from starting a put to its event's arrival in another handle's watch. */
static double bench_watch(struct etcd_client *c)
{
	struct bench_watch b = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	pthread_t th;
	double sum = 0;
	size_t kl;

	b.c = client();
	b.p = key(0, "bw/", &b.pl);
	b.el = etcd_prefix_end(b.p, b.pl, b.end);
	if (pthread_create(&th, NULL, bench_watch_thread, &b) != 0)
		return -1;
	bench_wait(&b, -1);
	for (int i = 0; i < 20; i++) {
		double t0 = now_ms();
		const char *k = key(1, i % 2 ? "bw/a" : "bw/b", &kl);

		if (etcd_client_put(c, k, kl, "x", 1, 0, NULL) < 0)
			break;
		bench_wait(&b, i + 1);
		pthread_mutex_lock(&b.mu);
		sum += b.at - t0;
		pthread_mutex_unlock(&b.mu);
	}
	etcd_client_cancel(b.c);
	pthread_join(th, NULL);
	etcd_client_close(b.c);
	return b.seen >= 20 ? sum / 20 : -1;
}

static int bench_main(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	struct etcd_txn_result t;
	static struct etcd_op ops[1000];
	static char keys[1000][96];
	char p1[96], p10[96];
	size_t kl, got = 0;
	const char *k = key(0, "point", &kl);
	int runs = 200;
	double t0, get_ms, txn_ms, ls_ms;

	if (etcd_client_put(c, k, kl, "v", 1, 0, NULL) < 0)
		goto fail;
	t0 = now_ms();
	for (int i = 0; i < runs; i++) {
		if (etcd_client_range(c, k, kl, NULL, &r) < 0)
			goto fail;
		etcd_range_result_release(&r);
	}
	get_ms = (now_ms() - t0) / runs;
	printf("point get:                        %.3f ms (mean of %d)\n", get_ms, runs);

	for (int i = 0; i < 100; i++) {
		int n = snprintf(keys[i], sizeof(keys[i]), "%stxn/%03d", prefix, i);
		ops[i] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = keys[i], .key_len = (size_t)n,
					   .val = "value-of-about-32-bytes-xxxxxxxxx", .val_len = 33 };
	}
	t0 = now_ms();
	for (int i = 0; i < 30; i++) {
		if (etcd_client_txn(c, NULL, 0, ops, 100, NULL, 0, &t) < 0)
			goto fail;
		etcd_txn_result_release(&t);
	}
	txn_ms = (now_ms() - t0) / 30;
	printf("100-put txn:                      %.3f ms (mean of 30) = %.1f x point get\n",
	       txn_ms, txn_ms / get_ms);

	snprintf(p1, sizeof(p1), "%sls1/", prefix);
	snprintf(p10, sizeof(p10), "%sls10/", prefix);
	if (bench_fill(c, p1, 1000, 1) < 0 || bench_fill(c, p10, 1000, 10) < 0)
		goto fail;
	ls_ms = bench_range(c, p1, true, 30, &got);
	printf("keys_only range, 1000 keys:       %.3f ms (%zu keys) = %.1f x point get\n",
	       ls_ms, got, ls_ms / get_ms);
	t0 = bench_range(c, p1, false, 30, &got);
	printf("range with values, 1000 keys:     %.3f ms = %.2f x keys_only\n", t0, t0 / ls_ms);
	t0 = bench_range(c, p10, true, 10, &got);
	printf("keys_only range, 1000 children x 10 keys: %.3f ms (%zu keys) = %.1f x 1000 keys\n",
	       t0, got, t0 / ls_ms);
	/* one bounded range per child, batched into one Txn of 1000 range ops */
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(keys[i], sizeof(keys[i]), "%s%05d/", p10, i);
		ops[i] = (struct etcd_op){ .type = ETCD_OP_RANGE, .key = keys[i], .key_len = (size_t)n,
					   .range_end = NULL, .keys_only = true, .limit = 1 };
	}
	static uint8_t ends[1000][96];
	for (int i = 0; i < 1000; i++) {
		ops[i].range_end = ends[i];
		ops[i].range_end_len = etcd_prefix_end(keys[i], ops[i].key_len, ends[i]);
	}
	t0 = now_ms();
	for (int i = 0; i < 10; i++) {
		if (etcd_client_txn(c, NULL, 0, ops, 1000, NULL, 0, &t) < 0)
			goto fail;
		etcd_txn_result_release(&t);
	}
	t0 = (now_ms() - t0) / 10;
	printf("txn of 1000 limit-1 ranges (one per child): %.3f ms = %.1f x 1000-key keys_only range\n",
	       t0, t0 / ls_ms);
	t0 = bench_watch(c);
	if (t0 < 0)
		goto fail;
	printf("watch delivery (put sent -> event in another handle): %.3f ms (mean of 20) = %.1f x point get\n",
	       t0, t0 / get_ms);
	k = key(0, "", &kl);
	uint8_t end[128];
	etcd_client_delete_range(c, k, kl, end, etcd_prefix_end(k, kl, end), NULL, NULL);
	etcd_client_close(c);
	return 0;
fail:
	fprintf(stderr, "bench: %s\n", etcd_client_error(c));
	etcd_client_close(c);
	return 1;
}

int etcd_tool_run(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } verbs[] = {
		{ "put", verb_put }, { "get", verb_get }, { "absent", verb_absent },
		{ "leader", verb_leader },
		{ "bigput", verb_bigput },
		{ "incr", verb_incr }, { "conflict", verb_conflict }, { "watch-one", verb_watch_one },
	};

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[0], verbs[i].name) == 0)
			return verbs[i].fn(argc - 1, argv + 1);
	if (strcmp(argv[0], "bench") == 0)
		return bench_main();
	return -1;
}
