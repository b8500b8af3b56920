/*
 * tests/unit/test_etcd_client_calls.c - the client's encodings (base64, a
 * prefix's end) and its calls one by one: open, put, get, range options,
 * guarded and many-operation transactions, leases.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

void test_base64(void)
{
	uint8_t in[64], back[64];
	char enc[100];

	for (size_t n = 0; n < sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 37 + n);
		size_t el = etcd_b64_encode(in, n, enc);
		CHECK_EQ_INT(el, 4 * ((n + 2) / 3));
		long dl = etcd_b64_decode(enc, el, back);
		CHECK_EQ_INT(dl, n);
		CHECK_MEM(back, n, in, n);
	}
	etcd_b64_encode("foo", 3, enc);
	CHECK(strcmp(enc, "Zm9v") == 0);
	CHECK_EQ_INT(etcd_b64_decode("Zm9", 3, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("Zm!v", 4, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("Z===", 4, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("YQ==YQ==", 8, back), -EINVAL);
}

void test_prefix_end(void)
{
	uint8_t out[8];

	CHECK_EQ_INT(etcd_prefix_end("ab", 2, out), 2);
	CHECK_MEM(out, 2, "ac", 2);
	CHECK_EQ_INT(etcd_prefix_end("a\xff\xff", 3, out), 1);
	CHECK_MEM(out, 1, "b", 1);
	CHECK_EQ_INT(etcd_prefix_end("\xff", 1, out), 1);
	CHECK_EQ_INT(out[0], 0);
	CHECK_EQ_INT(etcd_prefix_end("", 0, out), 1);
}

void test_open_errors(void)
{
	struct etcd_client *c = NULL;
	char why[128] = "";

	CHECK_EQ_INT(etcd_client_open("", &c, why, sizeof(why)), -EINVAL);
	CHECK(c == NULL);
	CHECK(strstr(why, "endpoint") != NULL);
	CHECK_EQ_INT(etcd_client_open("a:1,,b:2", &c, why, sizeof(why)), -EINVAL);
}

/* Binary keys and values (NUL, 0xff) survive; a missing key reads as no kvs. */
void test_put_get(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	char k[300];
	size_t kl, pl;
	const char *p = key(0, "", &pl);
	const uint8_t val[] = { 'v', 0, 0xff, 'w' };
	int64_t rev = 0;

	memcpy(k, p, pl);
	memcpy(k + pl, "bin\0\xff", 5);
	kl = pl + 5;
	CHECK_EQ_INT(etcd_client_put(c, k, kl, val, sizeof(val), 0, &rev), 0);
	CHECK(rev > 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1) {
		CHECK_MEM(r.kvs[0].key, r.kvs[0].key_len, k, kl);
		CHECK_MEM(r.kvs[0].val, r.kvs[0].val_len, val, sizeof(val));
		/* a NUL follows the bytes (strtol of "9" must not read on into "95") */
		CHECK_EQ_INT(r.kvs[0].val[r.kvs[0].val_len], 0);
		CHECK_EQ_INT(r.kvs[0].mod_rev, rev);
		CHECK_EQ_INT(r.kvs[0].create_rev, rev);
		CHECK_EQ_INT(r.kvs[0].version, 1);
	}
	CHECK(r.revision >= rev);
	etcd_range_result_release(&r);
	/* an empty value is a value, not an absent key */
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "", 0, 0, NULL), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1)
		CHECK_EQ_INT(r.kvs[0].val_len, 0);
	etcd_range_result_release(&r);
	const char *missing = key(1, "missing", &kl);
	CHECK_EQ_INT(etcd_client_range(c, missing, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	CHECK_EQ_INT(r.count, 0);
	etcd_range_result_release(&r);
	etcd_client_close(c);
}

/* Prefix ranges: order, keys_only, limit/more/count, count_only, reads at an old revision. */
void test_range_options(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	uint8_t end[300];
	char name[32];
	size_t pl, kl, el;
	const char *p = key(0, "r/", &pl);
	int64_t rev5 = 0, rev;

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "r/%02d", 19 - i);	/* written out of order */
		const char *k = key(1, name, &kl);
		CHECK_EQ_INT(etcd_client_put(c, k, kl, name, strlen(name), 0, &rev), 0);
		if (i == 14)
			rev5 = rev;	/* key r/05 as first written */
	}
	el = etcd_prefix_end(p, pl, end);
	struct etcd_range_opts all = { .range_end = end, .range_end_len = el };
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &all, &r), 0);
	CHECK_EQ_INT(r.len, 20);
	for (size_t i = 0; i < r.len; i++) {
		char want[128];

		snprintf(want, sizeof(want), "%sr/%02zu", prefix, i);
		CHECK_MEM(r.kvs[i].key, r.kvs[i].key_len, want, strlen(want));
		CHECK(r.kvs[i].val != NULL);
	}
	etcd_range_result_release(&r);

	struct etcd_range_opts ko = all;
	ko.keys_only = true;
	ko.limit = 5;
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &ko, &r), 0);
	CHECK_EQ_INT(r.len, 5);
	CHECK(r.more);
	CHECK_EQ_INT(r.count, 20);
	if (r.len > 0)
		CHECK(r.kvs[0].val == NULL);
	etcd_range_result_release(&r);

	struct etcd_range_opts co = all;
	co.count_only = true;
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &co, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	CHECK_EQ_INT(r.count, 20);
	etcd_range_result_release(&r);

	/* change r/05, then read it as of the revision that first wrote it */
	const char *k5 = key(1, "r/05", &kl);
	CHECK_EQ_INT(etcd_client_put(c, k5, kl, "new", 3, 0, NULL), 0);
	struct etcd_range_opts old = { .revision = rev5 };
	CHECK_EQ_INT(etcd_client_range(c, k5, kl, &old, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1)
		CHECK_MEM(r.kvs[0].val, r.kvs[0].val_len, "r/05", 4);
	etcd_range_result_release(&r);

	int64_t deleted = 0;
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, &deleted, &rev), 0);
	CHECK_EQ_INT(deleted, 20);
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &all, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_delete_range(c, k5, kl, NULL, 0, &deleted, NULL), 0);
	CHECK_EQ_INT(deleted, 0);
	etcd_client_close(c);
}

/* Guards: create_revision 0 (absent), mod_revision, value; the failure branch's range. */
void test_txn_guards(void)
{
	struct etcd_client *c = client();
	struct etcd_txn_result t;
	size_t kl;
	const char *k = key(0, "txn/a", &kl);
	struct etcd_cmp absent = { .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL,
				   .key = k, .key_len = kl, .rev = 0 };
	struct etcd_op put1 = { .type = ETCD_OP_PUT, .key = k, .key_len = kl, .val = "1", .val_len = 1 };
	struct etcd_op get = { .type = ETCD_OP_RANGE, .key = k, .key_len = kl };

	CHECK_EQ_INT(etcd_client_txn(c, &absent, 1, &put1, 1, &get, 1, &t), 0);
	CHECK(t.succeeded);
	int64_t created = t.revision;
	etcd_txn_result_release(&t);
	CHECK_EQ_INT(etcd_client_txn(c, &absent, 1, &put1, 1, &get, 1, &t), 0);
	CHECK(!t.succeeded);
	CHECK_EQ_INT(t.len, 1);
	if (t.len == 1 && t.ranges[0].len == 1)
		CHECK_EQ_INT(t.ranges[0].kvs[0].mod_rev, created);
	else
		CHECK(0);
	etcd_txn_result_release(&t);

	struct etcd_cmp mod = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL,
				.key = k, .key_len = kl, .rev = created };
	struct etcd_op put2 = put1;
	put2.val = "2";
	CHECK_EQ_INT(etcd_client_txn(c, &mod, 1, &put2, 1, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);
	CHECK_EQ_INT(etcd_client_txn(c, &mod, 1, &put2, 1, NULL, 0, &t), 0);
	CHECK(!t.succeeded);	/* the revision moved on */
	etcd_txn_result_release(&t);

	struct etcd_cmp val = { .target = ETCD_CMP_VALUE, .result = ETCD_CMP_EQUAL,
				.key = k, .key_len = kl, .val = "2", .val_len = 1 };
	CHECK_EQ_INT(etcd_client_txn(c, &val, 1, &get, 1, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);

	/* a range guard: no key under txn/ changed after the newest revision */
	uint8_t end[300];
	size_t pl;
	const char *p = key(1, "txn/", &pl);
	size_t el = etcd_prefix_end(p, pl, end);
	struct etcd_cmp rg = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_LESS, .key = p,
			       .key_len = pl, .range_end = end, .range_end_len = el, .rev = 1LL << 60 };
	CHECK_EQ_INT(etcd_client_txn(c, &rg, 1, NULL, 0, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);
	rg.rev = created;	/* txn/a changed after `created`: the guard fails */
	CHECK_EQ_INT(etcd_client_txn(c, &rg, 1, NULL, 0, NULL, 0, &t), 0);
	CHECK(!t.succeeded);
	etcd_txn_result_release(&t);

	/* etcd refuses a key twice in one Txn */
	struct etcd_op twice[2] = { put1, put2 };
	CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, twice, 2, NULL, 0, &t), -EINVAL);
	CHECK(strstr(etcd_client_error(c), "duplicate") != NULL);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

/* 100 puts and a delete in one Txn, all or nothing. */
void test_txn_many_ops(void)
{
	struct etcd_client *c = client();
	struct etcd_op ops[101];
	char names[100][32];
	size_t kl[100], pl;
	struct etcd_txn_result t;
	struct etcd_range_result r;
	uint8_t end[300];
	const char *p = key(0, "many/", &pl);
	char keys[100][128];

	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "many/%03d", i);
		const char *k = key(1, names[i], &kl[i]);
		memcpy(keys[i], k, kl[i]);
		ops[i] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = keys[i], .key_len = kl[i],
					   .val = names[i], .val_len = strlen(names[i]) };
	}
	ops[100] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = "nope", .key_len = 4 };
	CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, ops, 101, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	CHECK_EQ_INT(t.len, 101);
	etcd_txn_result_release(&t);
	size_t el = etcd_prefix_end(p, pl, end);
	struct etcd_range_opts o = { .range_end = end, .range_end_len = el, .count_only = true };
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &o, &r), 0);
	CHECK_EQ_INT(r.count, 100);
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

void test_leases(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	int64_t id = 0, ttl = 0;
	size_t kl;
	const char *k = key(0, "leased", &kl);

	CHECK_EQ_INT(etcd_client_lease_grant(c, 60, &id, &ttl), 0);
	CHECK(id != 0);
	CHECK_EQ_INT(ttl, 60);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, id, NULL), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK(r.len == 1 && r.kvs[0].lease == id);
	etcd_range_result_release(&r);
	ttl = 0;
	CHECK_EQ_INT(etcd_client_lease_keepalive(c, id, &ttl), 0);
	CHECK(ttl > 0);
	CHECK_EQ_INT(etcd_client_lease_revoke(c, id), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 0);	/* the lease took its key along */
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_lease_keepalive(c, id, &ttl), -ENOENT);
	CHECK_EQ_INT(etcd_client_lease_revoke(c, id), -ENOENT);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, id, NULL), -ENOENT);
	etcd_client_close(c);
}
