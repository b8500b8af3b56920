/*
 * tests/unit/test_etcd_client_buf.c - the write buffer (store/etcd/etcd_buf.c)
 * over the client: reads through it, a subtree replaced in one Txn, and the
 * guards that fail a commit when another client changed what was read.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/etcd/etcd_buf.h"
#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

/* Reads through the buffer: written, deleted (by key or range), untouched. */
void test_buf_reads(void)
{
	struct etcd_buf *b = NULL;
	const void *v;
	size_t vl;

	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_put(b, "k/a", 3, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "2", 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/a", 3, "one", 3), 0);	/* last write wins */
	CHECK_EQ_INT(etcd_buf_get(b, "k/a", 3, &v, &vl), 1);
	CHECK_MEM(v, vl, "one", 3);
	CHECK_EQ_INT(etcd_buf_get(b, "k/z", 3, &v, &vl), -ENOENT);
	CHECK_EQ_INT(etcd_buf_del(b, "k/z", 3), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/z", 3, &v, &vl), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, "k/", 2, "k0", 2), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/a", 3, &v, &vl), 0);	/* gone with the range */
	CHECK_EQ_INT(etcd_buf_get(b, "k/never", 7, &v, &vl), 0);	/* covered */
	CHECK_EQ_INT(etcd_buf_get(b, "l", 1, &v, &vl), -ENOENT);
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "again", 5), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/b", 3, &v, &vl), 1);
	CHECK_MEM(v, vl, "again", 5);
	CHECK_EQ_INT(etcd_buf_put(b, "k/empty", 7, NULL, 0), 0);	/* an empty value, not a delete */
	CHECK_EQ_INT(etcd_buf_get(b, "k/empty", 7, &v, &vl), 1);
	CHECK_EQ_INT(vl, 0);
	/* a range to the end of the keyspace (etcd's "\0") covers everything after its start */
	CHECK_EQ_INT(etcd_buf_del_range(b, "m", 1, "", 1), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "zzz", 3, &v, &vl), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "l", 1, &v, &vl), -ENOENT);
	etcd_buf_free(b);
}

/* The buffer's next touch at or after k (after it when !incl) is expect ("": none). */
/*
 * etcd_buf_put_sorted merges a batch into what the buffer holds: new keys
 * in order among the old, a key held (a value or a tombstone) takes the
 * batch's value, the rest stay; reads and the in-order walk agree.
 */
void test_buf_put_sorted(void)
{
	struct etcd_buf *b = NULL;
	const struct etcd_buf_kv kvs[] = {
		{ .key = "a", .key_len = 1, .val = "A", .val_len = 1 },
		{ .key = "k/b", .key_len = 3, .val = "new b", .val_len = 5 },
		{ .key = "k/c", .key_len = 3, .val = "C", .val_len = 1 },
		{ .key = "k/d", .key_len = 3, .val = "", .val_len = 0 },
		{ .key = "z", .key_len = 1, .val = "Z", .val_len = 1 },
	};
	const char *order[] = { "a", "k/a", "k/b", "k/c", "k/d", "k/e", "z" };
	const void *k = "", *v;
	size_t kl = 0, vl, i = 0;
	bool incl = true;

	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_put(b, "k/a", 3, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "2", 1), 0);
	CHECK_EQ_INT(etcd_buf_del(b, "k/d", 3), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/e", 3, "5", 1), 0);
	CHECK_EQ_INT(etcd_buf_put_sorted(b, kvs, 5), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/a", 3, &v, &vl), 1);
	CHECK(vl == 1 && memcmp(v, "1", 1) == 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/b", 3, &v, &vl), 1);
	CHECK(vl == 5 && memcmp(v, "new b", 5) == 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/d", 3, &v, &vl), 1);	/* the tombstone replaced */
	CHECK_EQ_INT((int)vl, 0);
	while (etcd_buf_next_put(b, k, kl, incl, "\0", 1, &k, &kl, &v, &vl) == 1 && i < 7) {
		CHECK(kl == strlen(order[i]) && memcmp(k, order[i], kl) == 0);
		incl = false;
		i++;
	}
	CHECK_EQ_INT((int)i, 7);
	CHECK_EQ_INT((int)etcd_buf_ops(b), 7);
	CHECK_EQ_INT(etcd_buf_put_sorted(b, kvs, 0), 0);
	etcd_buf_free(b);
}

static void check_touch(const struct etcd_buf *b, const char *k, bool incl, const char *expect)
{
	const void *t = NULL;
	size_t tl = 0;
	int rc = etcd_buf_next_touch(b, k, strlen(k), incl, &t, &tl);

	CHECK_EQ_INT(rc, expect[0] ? 1 : 0);
	if (rc == 1 && expect[0])
		CHECK_MEM(t, tl, expect, strlen(expect));
}

/* The next key a buffer touches: a put, a tombstone, a range's start, or a key a range covers. */
void test_buf_next_touch(void)
{
	struct etcd_buf *b = NULL;

	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	check_touch(b, "a", true, "");
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_del(b, "k/d", 3), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, "m/", 2, "m0", 2), 0);
	check_touch(b, "a", true, "k/b");
	check_touch(b, "k/b", true, "k/b");
	check_touch(b, "k/b", false, "k/d");	/* a tombstone counts */
	check_touch(b, "k/c", true, "k/d");
	check_touch(b, "k/d", false, "m/");	/* a range's start */
	check_touch(b, "m/x", false, "m/x");	/* inside a range: the key itself */
	check_touch(b, "m0", true, "");
	etcd_buf_free(b);
}

/* Lists the keys and values under p at the newest revision as "k=v;..." (k without p). */
static void list_under(struct etcd_client *c, const char *p, size_t pl, char *out, size_t len)
{
	struct etcd_range_result r;
	uint8_t end[300];
	struct etcd_range_opts o = { .range_end = end, .range_end_len = etcd_prefix_end(p, pl, end) };
	size_t n = 0;

	out[0] = '\0';
	if (etcd_client_range(c, p, pl, &o, &r) < 0)
		return;
	for (size_t i = 0; i < r.len && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%.*s=%.*s;",
				      (int)(r.kvs[i].key_len - pl), (const char *)r.kvs[i].key + pl,
				      (int)r.kvs[i].val_len, (const char *)r.kvs[i].val);
	etcd_range_result_release(&r);
}

/* A subtree replaced in one Txn: deleted ranges go out as gaps around the puts inside them. */
void test_buf_commit_gaps(void)
{
	struct etcd_client *c = client();
	struct etcd_buf *b = NULL;
	char p[128], k[160], got[512];
	uint8_t end[300];
	size_t pl, el;
	bool ok = false;
	int64_t rev = 0;
	const char *bp = key(0, "buf/", &pl);

	memcpy(p, bp, pl);
	el = etcd_prefix_end(p, pl, end);
	for (const char *n = "abcd"; *n; n++) {
		snprintf(k, sizeof(k), "%.*s%c", (int)pl, p, *n);
		CHECK_EQ_INT(etcd_client_put(c, k, strlen(k), "old", 3, 0, NULL), 0);
	}
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_del_range(b, p, pl, end, el), 0);
	snprintf(k, sizeof(k), "%.*sb", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "B", 1), 0);
	snprintf(k, sizeof(k), "%.*se", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "E", 1), 0);
	snprintf(k, sizeof(k), "%.*szz", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_del(b, k, strlen(k)), 0);	/* covered: dropped */
	/* two overlapping ranges merge: [a, c) and [b, d) with a put of bb inside */
	char ka[160], kc[160], kb[160], kd[160];
	snprintf(ka, sizeof(ka), "%.*sa", (int)pl, p);
	snprintf(kb, sizeof(kb), "%.*sb", (int)pl, p);
	snprintf(kc, sizeof(kc), "%.*sc", (int)pl, p);
	snprintf(kd, sizeof(kd), "%.*sd", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_del_range(b, ka, strlen(ka), kc, strlen(kc)), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, kb, strlen(kb), kd, strlen(kd)), 0);
	snprintf(k, sizeof(k), "%.*sbb", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "BB", 2), 0);
	CHECK(etcd_buf_ops(b) >= 3);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, &rev), 0);
	CHECK(ok);
	CHECK(rev > 0);
	etcd_buf_free(b);
	/* b was dropped by the second range (put before it), bb and e were put after */
	list_under(c, p, pl, got, sizeof(got));
	CHECK(strcmp(got, "bb=BB;e=E;") == 0);
	if (strcmp(got, "bb=BB;e=E;") != 0)
		fprintf(stderr, "#   got %s\n", got);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

/* Whether two ops are the same operation: type, key, range end, value, lease. */
static bool op_same(const struct etcd_op *a, const struct etcd_op *b)
{
	return a->type == b->type && a->key_len == b->key_len &&
	       !memcmp(a->key, b->key, a->key_len) && !a->range_end == !b->range_end &&
	       a->range_end_len == b->range_end_len &&
	       (!a->range_end || !memcmp(a->range_end, b->range_end, a->range_end_len)) &&
	       a->val_len == b->val_len && (!a->val_len || !memcmp(a->val, b->val, a->val_len)) &&
	       a->lease == b->lease;
}

/*
 * etcd_buf_op_next, which a staged commit encodes from one op at a time,
 * gives etcd_buf_plan's operations in its order: ranges as the gaps
 * around the puts inside them (a put at a range's start, one at the start
 * of the gap after another, a tombstone inside, a range to the keyspace's
 * end), then the puts and the deletes no range covers. No cluster needed.
 */
void test_buf_op_next(void)
{
	static const char *const puts[] = { "a", "c", "c/1", "c/2", "e", "g/x", "q" };
	struct etcd_buf *b = NULL;
	struct etcd_buf_plan p;
	struct etcd_buf_op_iter it;
	struct etcd_op op;
	size_t n = 0;
	int rc;

	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_del_range(b, "c", 1, "d", 1), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, "g/", 2, "g0", 2), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, "x", 1, "", 1), 0);	/* to the end of the keyspace */
	CHECK_EQ_INT(etcd_buf_del(b, "c/0", 3), 0);	/* a tombstone a range covers: dropped */
	CHECK_EQ_INT(etcd_buf_del(b, "f", 1), 0);	/* one no range covers: sent */
	for (size_t i = 0; i < sizeof(puts) / sizeof(puts[0]); i++)
		CHECK_EQ_INT(etcd_buf_put(b, puts[i], strlen(puts[i]), puts[i], 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "c\0", 2, "C", 1), 0);	/* the gap after c starts at it: no gap between */
	CHECK_EQ_INT(etcd_buf_put(b, "y", 1, "Y", 1), 0);	/* inside the last range */
	CHECK_EQ_INT(etcd_buf_plan(b, &p), 0);
	CHECK(p.n_ops >= 12);
	etcd_buf_op_iter_init(&it);
	while ((rc = etcd_buf_op_next(b, &it, &op)) == 1) {
		CHECK(n < p.n_ops && op_same(&op, &p.ops[n]));
		n++;
	}
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(n, p.n_ops);
	CHECK_EQ_INT(etcd_buf_op_next(b, &it, &op), 0);	/* done stays done */
	etcd_buf_op_iter_release(&it);
	etcd_buf_plan_release(&p);
	/* an empty buffer has no operation */
	etcd_buf_free(b);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	etcd_buf_op_iter_init(&it);
	CHECK_EQ_INT(etcd_buf_op_next(b, &it, &op), 0);
	etcd_buf_op_iter_release(&it);
	etcd_buf_free(b);
}

/* Key guards (present and absent) and range guards fail when another client changed what was read. */
void test_buf_guards(void)
{
	struct etcd_client *c = client(), *other = client();
	struct etcd_range_result r;
	struct etcd_buf *b = NULL;
	uint8_t end[300];
	char p[128];
	size_t pl, kl, el;
	bool ok = true;
	const char *gp = key(0, "guard/", &pl);

	memcpy(p, gp, pl);
	el = etcd_prefix_end(p, pl, end);
	const char *k = key(1, "guard/k", &kl);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "v", 1, 0, NULL), 0);

	/* 1: a key read, then changed by another client */
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	int64_t mod = r.len ? r.kvs[0].mod_rev : -1;
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, k, kl, mod), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, k, kl, mod), 0);	/* read twice: one compare */
	CHECK_EQ_INT(etcd_buf_put(b, k, kl, "mine", 4), 0);
	CHECK_EQ_INT(etcd_client_put(other, k, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);

	/* 2: an absent key read, then created by another client */
	const char *absent = key(2, "guard/new", &kl);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, absent, kl, 0), 0);
	CHECK_EQ_INT(etcd_buf_put(b, absent, kl, "mine", 4), 0);
	CHECK_EQ_INT(etcd_client_put(other, absent, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);

	/* 3: a range read at R; untouched it commits, a put into it makes it fail */
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &(struct etcd_range_opts){ .range_end = end,
		.range_end_len = el, .keys_only = true }, &r), 0);
	int64_t at = r.revision;
	etcd_range_result_release(&r);
	const char *x = key(3, "elsewhere", &kl);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_range(b, p, pl, end, el, at), 0);
	CHECK_EQ_INT(etcd_buf_put(b, x, kl, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(ok);
	etcd_buf_free(b);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_range(b, p, pl, end, el, at), 0);
	CHECK_EQ_INT(etcd_buf_put(b, x, kl, "2", 1), 0);
	const char *in = key(2, "guard/in", &kl);
	CHECK_EQ_INT(etcd_client_put(other, in, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	x = key(3, "elsewhere", &kl);
	CHECK_EQ_INT(etcd_client_delete_range(c, x, kl, NULL, 0, NULL, NULL), 0);
	etcd_client_close(other);
	etcd_client_close(c);
}
