/*
 * lib/etcd/etcd_client_int.h - PRIVATE to the etcd client's files
 * (lib/etcd/etcd_client.c, etcd_requests.c, etcd_status.c, etcd_url.c):
 * the one call path every request goes through, the handle's error
 * message, the set-up of a connection of a handle's own, and the URL's parts.
 */
#ifndef KVFS_ETCD_CLIENT_INT_H
#define KVFS_ETCD_CLIENT_INT_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdbool.h>

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
 * and key), no signals (threads: no SIGALRM), ETCD_CONNECT_MS to connect.
 */
void etcd_client_connection_setup(struct etcd_client *c, CURL *h);

/* How many members c's endpoint list names. */
size_t etcd_client_members(const struct etcd_client *c);
/* The place in c's list of the member whose base URL is url ("http://HOST:PORT[/]"); -1: none. */
int etcd_client_place(const struct etcd_client *c, const char *url);
/* c, and the clients that share its health table from then on, start at member place. */
void etcd_client_prefer(struct etcd_client *c, size_t place);

/* Keeps a printf-style message as the handle's last error; returns rc. */
int etcd_client_fail(struct etcd_client *c, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The options of a store URL, in this order: user, password, cacert, cert, key. */
#define ETCD_URL_OPTIONS 5

/*
 * One member of the URL's list (s, n bytes) as a base URL, "http://" or,
 * with TLS options, "https://" put before it when it names no scheme:
 * *out is a heap string the caller frees. -EINVAL for an empty or over
 * 256-byte member.
 */
int etcd_url_endpoint(const char *s, size_t n, bool tls, char **out);

/*
 * The options after "?" (q, NAME=VALUE&...) into *slot[i] (heap strings,
 * the caller frees them; a slot already set is replaced), then etcdctl's
 * environment (ETCDCTL_USER, ETCDCTL_PASSWORD, ...) for the ones left
 * out. -EINVAL with the reason in why for an unknown name, a bad %
 * escape or key= without cert=.
 */
int etcd_url_options(const char *q, char **slot[ETCD_URL_OPTIONS], char *why, size_t why_len);

#endif
