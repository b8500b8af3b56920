/*
 * tests/unit/test_etcd_client.c - lib/etcd/'s program against a LIVE cluster
 * (KVFS_ETCD_ENDPOINTS; tests/80 starts one): main, the order of the tests
 * (test_etcd_client_*.c) or a verb (etcd_tool.c), the fixtures they share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define UNIT_MAIN
#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

const char *endpoints;
char prefix[64];	/* "kvfs-test/<pid>/": each run its own, so runs never see each other */

struct etcd_client *client(void)
{
	struct etcd_client *c = NULL;
	char why[256];
	int rc = etcd_client_open(endpoints, &c, why, sizeof(why));

	if (rc < 0) {
		fprintf(stderr, "# open %s: %s\n", endpoints, why);
		exit(2);
	}
	return c;
}

/* prefix + name, as bytes; *len set. Returns a static buffer of `slot`. */
const char *key(int slot, const char *name, size_t *len)
{
	static char bufs[4][256];

	*len = (size_t)snprintf(bufs[slot], sizeof(bufs[slot]), "%s%s", prefix, name);
	return bufs[slot];
}

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int rc;

	endpoints = getenv("KVFS_ETCD_ENDPOINTS");
	if (!endpoints || !*endpoints) {
		fprintf(stderr, "KVFS_ETCD_ENDPOINTS is not set (scripts/etcd-cluster.sh start)\n");
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "kvfs-test/%d/", (int)getpid());
	if (argc > 1) {
		rc = etcd_tool_run(argc - 1, argv + 1);
		if (rc < 0)
			fprintf(stderr, "unknown verb %s\n", argv[1]);
		return rc < 0 ? 2 : rc;
	}
	TEST(test_base64);
	TEST(test_prefix_end);
	TEST(test_open_errors);
	TEST(test_put_get);
	TEST(test_range_options);
	TEST(test_txn_guards);
	TEST(test_txn_many_ops);
	TEST(test_leases);
	TEST(test_watch);
	TEST(test_watch_skip);
	TEST(test_failover);
	TEST(test_hung_member);
	TEST(test_watch_moves);
	TEST(test_watch_doubt_next);
	TEST(test_deadline);
	TEST(test_too_large);
	TEST(test_compacted);
	TEST(test_buf_reads);
	TEST(test_buf_next_touch);
	TEST(test_buf_put_sorted);
	TEST(test_buf_commit_gaps);
	TEST(test_buf_op_next);
	TEST(test_buf_guards);
	return UNIT_DONE();
}
