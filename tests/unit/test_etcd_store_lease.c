/*
 * tests/unit/test_etcd_store_lease.c - TTL leases (store/etcd/etcd_lease.c,
 * docs/ETCD.md section 9).
 */
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_etcd_store.h"

struct lease_arg {
	int64_t deadline_ns;	/* given to "e1" and "e2"; "plain" gets none */
	bool expire;	/* call expire_puts */
	bool put_again;	/* put "e2" again after it: that put has no lease */
};

static int deadline_fn(struct store_txn *t, void *arg, enum store_space space, const uint8_t *key,
		       size_t len, int64_t *deadline_ns)
{
	struct lease_arg *a = arg;

	(void)t;
	*deadline_ns = space == STORE_SPACE_DATA && len == 2 && key[0] == 'e' ? a->deadline_ns : 0;
	return 0;
}

static int lease_fn(struct store_txn *t, void *arg)
{
	struct lease_arg *a = arg;
	int rc = 0;

	rc = store_etcd_put(t, STORE_SPACE_DATA, "e1", 2, "1", 1);
	if (rc == 0)
		rc = store_etcd_put(t, STORE_SPACE_DATA, "e2", 2, "2", 1);
	if (rc == 0)
		rc = store_etcd_put(t, STORE_SPACE_DATA, "plain", 5, "p", 1);
	if (rc == 0 && a->expire)
		rc = store_etcd_expire_puts(t, deadline_fn, a);
	if (rc == 0 && a->put_again)
		rc = store_etcd_put(t, STORE_SPACE_DATA, "e2", 2, "2b", 2);
	return rc;
}

/* The lease etcd holds key k of the data space on (0: none), -1 when absent. */
static int64_t lease_of(struct store *st, const char *k)
{
	struct etcd_client *c;
	struct etcd_range_result r;
	uint8_t full[ETCD_KEY_MAX];
	size_t fl = etcd_key(ETCD(st), STORE_SPACE_DATA, k, strlen(k), full);
	int64_t lease = -1;

	if (etcd_client_take(ETCD(st), &c))
		return -2;
	if (etcd_client_range(c, full, fl, NULL, &r) == 0) {
		if (r.len == 1)
			lease = r.kvs[0].lease;
		etcd_range_result_release(&r);
	}
	etcd_client_give(ETCD(st), c);
	return lease;
}

void test_leases(void)
{
	struct store *st = open_new("lease");
	struct lease_arg a = { .deadline_ns = now_ns() + 60 * 1000000000LL, .expire = true };
	int64_t l1, l2;
	char buf[16];

	CHECK(store_etcd_ops.abilities & STORE_CAN_EXPIRE);
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	l1 = lease_of(st, "e1");
	CHECK(l1 > 0);
	CHECK(lease_of(st, "e2") == l1);	/* one lease per deadline second */
	CHECK(lease_of(st, "plain") == 0);
	/* another deadline: another lease; a put after expire_puts has none */
	a.deadline_ns += 5 * 1000000000LL;
	a.put_again = true;
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	l2 = lease_of(st, "e1");
	CHECK(l2 > 0 && l2 != l1);
	CHECK(lease_of(st, "e2") == 0);
	/* the same deadline again reuses the handle's lease */
	a.put_again = false;
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	CHECK(lease_of(st, "e2") == l2);
	/* a put without expire_puts detaches */
	a.expire = false;
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	CHECK(lease_of(st, "e1") == 0 && lease_of(st, "e2") == 0);
	/* a deadline a second away: etcd deletes the keys itself */
	a.expire = true;
	a.deadline_ns = now_ns() + 1000000000LL;
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	for (int i = 0; i < 100 && lease_of(st, "e1") != -1; i++)
		usleep(100 * 1000);
	CHECK(lease_of(st, "e1") == -1);
	CHECK(lease_of(st, "e2") == -1);
	CHECK_EQ_INT(get1(st, "plain", buf, sizeof(buf)), 0);
	/* a cached lease etcd no longer has: the commit is run again with a new one */
	a.deadline_ns = now_ns() + 60 * 1000000000LL;
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	l1 = lease_of(st, "e1");
	{
		struct etcd_client *c;

		CHECK_EQ_INT(etcd_client_take(ETCD(st), &c), 0);
		CHECK_EQ_INT(etcd_client_lease_revoke(c, l1), 0);
		etcd_client_give(ETCD(st), c);
	}
	CHECK_EQ_INT(store_etcd_write(st, lease_fn, &a), 0);
	l2 = lease_of(st, "e1");
	CHECK(l2 > 0 && l2 != l1);
	t_close(st, true);
}
