/*
 * tests/unit/test_etcd_store_feed.c - the change feed, and answers shared
 * across read transactions (docs/ETCD.md section 8a).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_etcd_store.h"

struct feed_log {
	int n, mine;
	char last[64];
};

static int feed_fn(void *arg, const struct store_change *c)
{
	struct feed_log *l = arg;

	l->n++;
	l->mine += c->mine;
	snprintf(l->last, sizeof(l->last), "%.*s", (int)c->len, (const char *)c->key);
	return 0;
}

/* Polls the feed of a after position `after` until it names n changes (bounded: 3 s). */
static struct feed_log feed_wait(struct store *a, uint64_t after, int n, uint64_t *upto)
{
	struct feed_log l = { 0 };

	for (int i = 0; i < 300; i++) {
		memset(&l, 0, sizeof(l));
		CHECK_EQ_INT(store_etcd_feed_read(a, after, feed_fn, &l, upto), 0);
		if (l.n >= n)
			break;
		usleep(10 * 1000);
	}
	return l;
}

void test_feed(void)
{
	struct store *a = open_new("feed"), *b;
	char why[256];
	uint64_t pos, upto = 0;
	struct feed_log l;

	CHECK_EQ_INT(t_open(url("feed"), 0, &b, why, sizeof(why)), 0);
	pos = store_etcd_position(a);	/* starts a's watch */
	CHECK(pos > 0);
	CHECK(!store_etcd_changed_elsewhere(a));
	put1(b, "from-b", "1");
	l = feed_wait(a, pos, 1, &upto);
	CHECK_EQ_INT(l.n, 1);
	CHECK_EQ_INT(l.mine, 0);
	CHECK(strcmp(l.last, "from-b") == 0);
	CHECK(upto > pos);
	CHECK(store_etcd_changed_elsewhere(a));
	CHECK(!store_etcd_changed_elsewhere(a));	/* once per change */
	/* our own commit: in the feed as mine, and no news for changed_elsewhere */
	pos = upto;
	put1(a, "from-a", "2");
	l = feed_wait(a, pos, 1, &upto);
	CHECK_EQ_INT(l.n, 1);
	CHECK_EQ_INT(l.mine, 1);
	CHECK(!store_etcd_changed_elsewhere(a));
	CHECK(store_etcd_position(a) >= upto);
	/* before the watch began: cannot tell */
	CHECK_EQ_INT(store_etcd_feed_read(a, 1, feed_fn, &l, &upto), -ESTALE);
	t_close(b, false);
	t_close(a, true);
}

/* ---- answers shared across read transactions (docs/ETCD.md section 8a) ---- */

/* Polls (5 s at most) until a's watch has applied revision rev. */
static bool watch_saw(struct store *a, uint64_t rev)
{
	for (int i = 0; i < 500 && store_etcd_position(a) < rev; i++)
		usleep(10 * 1000);
	return store_etcd_position(a) >= rev;
}

/* Deletes "e". */
static int del_e_fn(struct store_txn *t, void *arg)
{
	(void)arg;
	return store_etcd_del(t, STORE_SPACE_DATA, "e", 1);
}

/* Puts "e" = "2" unless "e" exists (an O_EXCL create). */
static int create_e_fn(struct store_txn *t, void *arg)
{
	struct store_val v;
	int rc = store_etcd_get(t, STORE_SPACE_DATA, "e", 1, &v);

	(void)arg;
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	return store_etcd_put(t, STORE_SPACE_DATA, "e", 1, "2", 1);
}

void test_shared(void)
{
	struct store *a = open_new("shared"), *b, *c, *other = open_new("shared-other");
	struct store_txn *t1, *t2, *t3;
	struct store_val v1, v2, v3;
	char why[256];
	uint64_t rev;

	CHECK_EQ_INT(t_open(url("shared"), 0, &b, why, sizeof(why)), 0);
	put1(a, "k", "v1");
	/* no watch (a one-shot verb): each read transaction reads at the newest revision */
	CHECK_EQ_INT(t_read(a, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	put1(other, "x", "1");	/* the cluster's revision moves; a's store does not change */
	CHECK_EQ_INT(t_read(a, &t2), 0);
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(store_etcd_txn_id(t2) > store_etcd_txn_id(t1));
	CHECK(!ETXN(t1)->snap && !ETXN(t2)->snap);
	t_end(t2);
	t_end(t1);

	/* a mount's watch runs: the next transactions read at t1's revision, its answers */
	(void)store_etcd_position(a);	/* starts it */
	CHECK(watch_caught_up(a));
	CHECK_EQ_INT(t_read(a, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	CHECK(ETXN(t1)->snap != NULL);
	put1(other, "x", "2");	/* not a's store: nothing to retire */
	CHECK_EQ_INT(t_read(a, &t2), 0);
	CHECK(ETXN(t2)->snap == ETXN(t1)->snap);
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(v2.data == v1.data);	/* the same answer, not asked again */
	CHECK_EQ_INT(store_etcd_txn_id(t2), store_etcd_txn_id(t1));
	CHECK(store_etcd_txn_id(t2) < etcd_newest_revision(ETCD(a)));
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "none", 4, &v2), -ENOENT);
	t_end(t1);	/* t2 still holds the answers */
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(v2.len == 2 && memcmp(v2.data, "v1", 2) == 0);
	t_end(t2);

	/* a commit of ours retires them before it returns; older transactions keep theirs */
	CHECK_EQ_INT(t_read(a, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	put1(a, "k", "v2");
	CHECK_EQ_INT(t_read(a, &t2), 0);
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(v2.len == 2 && memcmp(v2.data, "v2", 2) == 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	CHECK(v1.len == 2 && memcmp(v1.data, "v1", 2) == 0);
	t_end(t2);
	t_end(t1);

	/* another process's commit: retired once a's watch has it */
	CHECK(watch_caught_up(a));
	CHECK_EQ_INT(t_read(a, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	CHECK(ETXN(t1)->snap != NULL);
	put1(b, "k", "v3");
	rev = etcd_newest_revision(ETCD(b));
	CHECK(watch_saw(a, rev));
	CHECK_EQ_INT(t_read(a, &t2), 0);
	CHECK(ETXN(t2)->snap != ETXN(t1)->snap);
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(v2.len == 2 && memcmp(v2.data, "v3", 2) == 0);
	t_end(t2);
	t_end(t1);

	/* one 1 s old serves no new transaction, which starts the next one at once */
	CHECK(watch_caught_up(a));
	CHECK_EQ_INT(t_read(a, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);
	CHECK(ETXN(t1)->snap != NULL);
	t_end(t1);
	usleep(1100 * 1000);
	CHECK_EQ_INT(t_read(a, &t2), 0);
	CHECK(ETXN(t2)->snap == NULL);	/* the old one retired as t2 began */
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(ETXN(t2)->snap != NULL);	/* that retirement was no commit */
	t_end(t2);

	/*
	 * The same with a watch that lags (a test hook: each event waits
	 * 300 ms), so that a snapshot is still current after another handle's
	 * commit. A read that pinned a newer revision than the snapshot's
	 * retires it: a transaction begun after it never reads the older state.
	 */
	setenv("KVFS_ETCD_TEST_WATCH_LAG_MS", "300", 1);
	CHECK_EQ_INT(t_open(url("shared"), 0, &c, why, sizeof(why)), 0);
	(void)store_etcd_position(c);	/* its watch starts, lagging */
	unsetenv("KVFS_ETCD_TEST_WATCH_LAG_MS");
	CHECK(watch_caught_up(c));
	CHECK_EQ_INT(t_read(c, &t2), 0);	/* no snapshot: t2 will pin its own */
	CHECK_EQ_INT(t_read(c, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "k", 1, &v1), 0);	/* starts one */
	CHECK(ETXN(t1)->snap != NULL && ETXN(t2)->snap == NULL);
	put1(b, "k", "v4");
	CHECK_EQ_INT(store_etcd_get(t2, STORE_SPACE_DATA, "k", 1, &v2), 0);
	CHECK(v2.len == 2 && memcmp(v2.data, "v4", 2) == 0);
	CHECK_EQ_INT(t_read(c, &t3), 0);
	CHECK_EQ_INT(store_etcd_get(t3, STORE_SPACE_DATA, "k", 1, &v3), 0);
	CHECK(v3.len == 2 && memcmp(v3.data, "v4", 2) == 0);
	t_end(t3);
	t_end(t2);
	t_end(t1);

	/*
	 * A write that refuses (or changes nothing) from shared answers is
	 * checked against the newest revision: b's delete, which c's watch
	 * has not shown yet, lets c's exclusive create through.
	 */
	put1(c, "e", "1");
	CHECK(watch_caught_up(c));
	CHECK_EQ_INT(t_read(c, &t1), 0);
	CHECK_EQ_INT(store_etcd_get(t1, STORE_SPACE_DATA, "e", 1, &v1), 0);	/* in the snapshot */
	CHECK(ETXN(t1)->snap != NULL);
	CHECK_EQ_INT(store_etcd_write(b, del_e_fn, NULL), 0);
	CHECK_EQ_INT(store_etcd_write(c, create_e_fn, NULL), 0);
	t_end(t1);
	CHECK_EQ_INT(get1(c, "e", why, sizeof(why)), 0);
	CHECK(strcmp(why, "2") == 0);
	t_close(c, false);
	t_close(b, false);
	t_close(other, true);
	t_close(a, true);
}
