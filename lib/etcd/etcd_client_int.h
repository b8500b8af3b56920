/*
 * lib/etcd/etcd_client_int.h - PRIVATE to the etcd client's two files
 * (lib/etcd/etcd_client.c, lib/etcd/etcd_requests.c): the one call path every
 * request goes through, and the handle's error message.
 */
#ifndef KVFS_ETCD_CLIENT_INT_H
#define KVFS_ETCD_CLIENT_INT_H

#include <cjson/cJSON.h>

#include "lib/etcd/etcd_client.h"

/*
 * Serializes and sends req (consumed, also on failure) to the gateway's
 * path, authenticating first when the URL named a user, and parses the
 * answer into *reply (heap, the caller's to cJSON_Delete). 0 or -errno, the
 * message kept for etcd_client_error. reads_only: the request changes
 * nothing, so a member that stops answering it is replaced by the next.
 */
int etcd_client_call(struct etcd_client *c, const char *path, cJSON *req, bool reads_only,
		     cJSON **reply);

/* Keeps a printf-style message as the handle's last error; returns rc. */
int etcd_client_fail(struct etcd_client *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
