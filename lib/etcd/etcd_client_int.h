/*
 * lib/etcd/etcd_client_int.h - PRIVATE to the etcd client's files
 * (lib/etcd/etcd_client.c, lib/etcd/etcd_requests.c, lib/etcd/etcd_status.c):
 * the one call path every request goes through, the handle's error
 * message, and the set-up of a connection of a handle's own.
 */
#ifndef KVFS_ETCD_CLIENT_INT_H
#define KVFS_ETCD_CLIENT_INT_H

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "lib/etcd/etcd_client.h"

/* What a request does, which decides how long a member that does not answer is waited for. */
enum etcd_call_kind {
	ETCD_CALL_WRITE,	/* changes something: c's whole limit, never sent twice */
	ETCD_CALL_READ,	/* changes nothing: ETCD_READ_TRY_MS, then sent to the next member */
	ETCD_CALL_SETTLED,	/* a write its caller settles: ETCD_READ_TRY_MS, then -ETIMEDOUT */
};

/*
 * Serializes and sends req (consumed, also on failure) to the gateway's
 * path, authenticating first when the URL named a user, and parses the
 * answer into *reply (heap, the caller's to cJSON_Delete). 0 or -errno, the
 * message kept for etcd_client_error.
 */
int etcd_client_call(struct etcd_client *c, const char *path, cJSON *req, enum etcd_call_kind kind,
		     cJSON **reply);

/*
 * What every connection of c carries (h: c's own, or another one made for
 * c): TLS (the CA that signed the members' certificates, our certificate
 * and key), no signals (threads: no SIGALRM), a 1 s limit to connect.
 */
void etcd_client_connection_setup(struct etcd_client *c, CURL *h);

/* Keeps a printf-style message as the handle's last error; returns rc. */
int etcd_client_fail(struct etcd_client *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
