/*
 * tests/unit/etcd_test.h - what test_etcd_client.c shares with its verbs
 * (tests/unit/etcd_tool.c): the cluster, a per-run key prefix, a handle.
 */
#ifndef KVFS_ETCD_TEST_H
#define KVFS_ETCD_TEST_H

#include <stddef.h>

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

#endif
