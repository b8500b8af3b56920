/*
 * tests/unit/etcd_test.h - what test_etcd_client.c shares with its parts
 * (test_etcd_client_*.c) and its verbs (tests/unit/etcd_tool.c): the
 * cluster, a per-run key prefix, a handle; and the tests the parts hold.
 */
#ifndef KVFS_ETCD_TEST_H
#define KVFS_ETCD_TEST_H

#include <stddef.h>

#define UNIT_SHARED
#include "tests/unit/unit.h"

struct etcd_client;

extern const char *endpoints;	/* KVFS_ETCD_ENDPOINTS */
extern char prefix[64];	/* "kvfs-test/<pid>/": keys of this run */

/* A new handle on the cluster (exits 2 when it cannot be opened); close it with etcd_client_close. */
struct etcd_client *client(void);
/* prefix + name in one of 4 static slots; *len set; valid until the slot is reused. */
const char *key(int slot, const char *name, size_t *len);
double now_ms(void);
/* Runs verb argv[0]: its exit status, or -1 when there is no such verb. */
int etcd_tool_run(int argc, char **argv);

/* test_etcd_client_calls.c */
void test_base64(void);
void test_prefix_end(void);
void test_open_errors(void);
void test_put_get(void);
void test_range_options(void);
void test_txn_guards(void);
void test_txn_many_ops(void);
void test_leases(void);

/* test_etcd_client_watch.c */
void test_watch(void);
void test_watch_skip(void);
void test_compacted(void);

/* test_etcd_client_faults.c */
void test_failover(void);
void test_hung_member(void);
void test_deadline(void);
void test_too_large(void);

/* test_etcd_client_behind.c */
void test_watch_moves(void);
void test_watch_doubt_next(void);

/* test_etcd_client_buf.c */
void test_buf_reads(void);
void test_buf_next_touch(void);
void test_buf_put_sorted(void);
void test_buf_commit_gaps(void);
void test_buf_op_next(void);
void test_buf_guards(void);

#endif
