/*
 * tests/unit/test_etcd_store_turn.c - a write that keeps losing its guards
 * gets a bounded turn (store/etcd/etcd_turn.c, docs/ETCD.md section 4a):
 * one handle commits in a tight loop what another handle's slow write
 * reads, and the slow write still completes within a bound; a turn whose
 * holder died holds the others no longer than its lease.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_etcd_store.h"

#define TURN_READ_MS 100	/* each point read of the slow write (KVFS_ETCD_TEST_READ_MS) */
#define TURN_FAST_S 10	/* the fast writer stops by itself after this long */
#define TURN_BOUND_S 5	/* the slow write must end within this */
#define TURN_DEAD_S 2	/* the lease of a holder that died */

struct fast_arg {
	struct store *st;
	atomic_int commits;
	atomic_bool stop;
	atomic_bool done;	/* it stopped writing */
	int rc;	/* the first failed write's */
};

/* Commits "a" = its count, as fast as it can, until told or TURN_FAST_S have passed. */
static void *fast_main(void *arg)
{
	struct fast_arg *f = arg;
	int64_t until = now_ns() + TURN_FAST_S * INT64_C(1000000000);
	char val[32];

	while (!atomic_load(&f->stop) && now_ns() < until) {
		struct kv_arg a = { "a", val, 0 };
		int rc;

		snprintf(val, sizeof(val), "%d", atomic_load(&f->commits) + 1);
		rc = store_etcd_write(f->st, put_fn, &a);
		if (rc) {
			f->rc = rc;
			break;
		}
		atomic_fetch_add(&f->commits, 1);
	}
	atomic_store(&f->done, true);
	return NULL;
}

struct slow_arg {
	int runs;
	char seen[32];
};

/* Reads "a", "b" and "c" (each read slowed), then puts what it saw of "a" under "seen". */
static int slow_fn(struct store_txn *t, void *arg)
{
	struct slow_arg *s = arg;
	static const char *const keys[] = { "a", "b", "c" };
	struct store_val v;
	int rc;

	s->runs++;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		rc = store_etcd_get(t, STORE_SPACE_DATA, keys[i], 1, &v);
		if (rc)
			return rc;
		if (i == 0)
			snprintf(s->seen, sizeof(s->seen), "%.*s", (int)v.len, (const char *)v.data);
	}
	return store_etcd_put(t, STORE_SPACE_DATA, "seen", 4, s->seen, strlen(s->seen));
}

/* Whether the store's turn key is there now (-1: the cluster did not say). */
static int turn_present(struct store *st)
{
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_turn_key(ETCD(st), k);
	struct etcd_range_result r;
	struct etcd_client *c;
	int n = -1;

	if (etcd_client_take(ETCD(st), &c))
		return -1;
	if (etcd_client_range(c, k, kl, NULL, &r) == 0) {
		n = r.len > 0;
		etcd_range_result_release(&r);
	}
	etcd_client_give(ETCD(st), c);
	return n;
}

void test_turn(void)
{
	struct store *slow = open_new("turn"), *fast_st;
	struct fast_arg f = { .rc = 0 };
	struct slow_arg s = { 0 };
	char why[256], buf[32];
	pthread_t th;
	int64_t t0, ms;
	int at_end;

	CHECK_EQ_INT(t_open(url("turn"), 0, &fast_st, why, sizeof(why)), 0);
	put1(slow, "a", "0");
	put1(slow, "b", "0");
	put1(slow, "c", "0");
	f.st = fast_st;
	atomic_init(&f.commits, 0);
	atomic_init(&f.stop, false);
	atomic_init(&f.done, false);
	CHECK_EQ_INT(pthread_create(&th, NULL, fast_main, &f), 0);
	while (atomic_load(&f.commits) < 20 && !f.rc)
		usleep(1000);	/* until the fast writer is in its stride */

	ETCD(slow)->test_read_us = TURN_READ_MS * 1000u;
	t0 = now_ns();
	CHECK_EQ_INT(store_etcd_write(slow, slow_fn, &s), 0);
	ms = (now_ns() - t0) / 1000000;
	ETCD(slow)->test_read_us = 0;
	at_end = atomic_load(&f.commits);
	fprintf(stderr, "# slow write: %d runs, %lld ms; the fast writer's commits: %d before it ended\n",
		s.runs, (long long)ms, at_end);
	CHECK(ms < TURN_BOUND_S * 1000);
	/* the fast writer writes on after it */
	while (atomic_load(&f.commits) < at_end + 5 && !atomic_load(&f.done))
		usleep(1000);
	CHECK(atomic_load(&f.commits) >= at_end + 5);
	atomic_store(&f.stop, true);
	CHECK_EQ_INT(pthread_join(th, NULL), 0);
	CHECK_EQ_INT(f.rc, 0);
	/* what it put is what it read, and the turn is given up */
	CHECK_EQ_INT(get1(slow, "seen", buf, sizeof(buf)), 0);
	CHECK(strcmp(buf, s.seen) == 0);
	CHECK_EQ_INT(turn_present(slow), 0);
	t_close(fast_st, false);
	t_close(slow, true);
}

struct slow_run {
	struct store *st;
	struct slow_arg s;
	int rc;
	int64_t ms;
};

/* One slow write on its own handle; its result and time in *arg. */
static void *slow_main(void *arg)
{
	struct slow_run *r = arg;
	int64_t t0 = now_ns();

	r->rc = store_etcd_write(r->st, slow_fn, &r->s);
	r->ms = (now_ns() - t0) / 1000000;
	return NULL;
}

/*
 * Two slow writes at once against the fast writer: both starve, both try
 * to take the turn; one takes it, the other waits for it, and both end
 * within the bound.
 */
void test_turn_two_slow(void)
{
	struct store *fast_st = open_new("turn2");
	struct slow_run r[2] = { { 0 } };
	struct fast_arg f = { .rc = 0 };
	char why[256];
	pthread_t fth, th[2];

	put1(fast_st, "a", "0");
	put1(fast_st, "b", "0");
	put1(fast_st, "c", "0");
	for (int i = 0; i < 2; i++) {
		CHECK_EQ_INT(t_open(url("turn2"), 0, &r[i].st, why, sizeof(why)), 0);
		ETCD(r[i].st)->test_read_us = TURN_READ_MS * 1000u;
	}
	f.st = fast_st;
	atomic_init(&f.commits, 0);
	atomic_init(&f.stop, false);
	atomic_init(&f.done, false);
	CHECK_EQ_INT(pthread_create(&fth, NULL, fast_main, &f), 0);
	while (atomic_load(&f.commits) < 20 && !f.rc)
		usleep(1000);	/* until the fast writer is in its stride */
	for (int i = 0; i < 2; i++)
		CHECK_EQ_INT(pthread_create(&th[i], NULL, slow_main, &r[i]), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ_INT(pthread_join(th[i], NULL), 0);
		fprintf(stderr, "# slow write %d of 2: %d runs, %lld ms\n", i + 1, r[i].s.runs,
			(long long)r[i].ms);
		CHECK_EQ_INT(r[i].rc, 0);
		CHECK(r[i].ms < TURN_BOUND_S * 1000);
	}
	CHECK(!atomic_load(&f.done));	/* the fast writer was still writing */
	atomic_store(&f.stop, true);
	CHECK_EQ_INT(pthread_join(fth, NULL), 0);
	CHECK_EQ_INT(f.rc, 0);
	CHECK_EQ_INT(turn_present(fast_st), 0);
	for (int i = 0; i < 2; i++)
		t_close(r[i].st, false);
	t_close(fast_st, true);
}

/*
 * A turn taken by a holder that died (its key on a lease nobody renews):
 * a write fails its guard once, waits for the key to go with the lease
 * instead of running attempts that must fail, and lands after it.
 */
void test_turn_dead_holder(void)
{
	struct store *st = open_new("turn-dead");
	uint8_t k[ETCD_KEY_MAX];
	size_t kl = etcd_turn_key(ETCD(st), k);
	struct kv_arg a = { "x", "1", 0 };
	struct etcd_client *c;
	int64_t lease = 0, t0, ms;

	put1(st, "x", "0");	/* (the handle knows its writer key: no settle in the way) */
	CHECK_EQ_INT(etcd_client_take(ETCD(st), &c), 0);
	CHECK_EQ_INT(etcd_client_lease_grant(c, TURN_DEAD_S, &lease, NULL), 0);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "", 0, lease, NULL), 0);
	etcd_client_give(ETCD(st), c);
	t0 = now_ns();
	CHECK_EQ_INT(store_etcd_write(st, put_fn, &a), 0);
	ms = (now_ns() - t0) / 1000000;
	fprintf(stderr, "# a write behind a dead holder's turn: %d runs, %lld ms\n", a.runs,
		(long long)ms);
	CHECK_EQ_INT(a.runs, 2);	/* refused by the turn once, then waited */
	CHECK(ms >= (TURN_DEAD_S - 1) * 1000 && ms < (TURN_DEAD_S + 3) * 1000);
	CHECK_EQ_INT(turn_present(st), 0);
	t_close(st, true);
}
