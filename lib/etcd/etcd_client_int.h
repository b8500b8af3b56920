/*
 * lib/etcd/etcd_client_int.h - PRIVATE to the etcd client's files
 * (lib/etcd/etcd_client.c, etcd_watch.c, etcd_requests.c, etcd_status.c,
 * etcd_url.c): the handle itself, the one call path every request goes
 * through, the handle's error message, the set-up of a connection of a
 * handle's own, and the URL's parts.
 */
#ifndef KVFS_ETCD_CLIENT_INT_H
#define KVFS_ETCD_CLIENT_INT_H

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/etcd/etcd_client.h"

#define ETCD_CLIENT_SOCKETS 4	/* a connection, and a few being tried beside it */

/* A linearizable read sent to a member on a connection of its own: is it current? */
struct etcd_question {
	CURL *easy;	/* made at the first question */
	bool busy;	/* sent, no answer yet */
	size_t member;	/* asked of eps[member] */
	int64_t sent_ns;	/* when the last one was sent */
};

/* A growing byte buffer for answers (and the watch stream's partial line). */
struct buf {
	char *data;
	size_t len, cap;
};

struct etcd_client {
	CURL *curl;
	struct curl_slist *headers;
	char *eps[ETCD_MEMBERS_MAX];	/* "http://HOST:PORT", heap */
	size_t n_eps;
	size_t cur;	/* member that answered last */
	struct etcd_health *health;	/* members passed over: own_health or a shared one */
	struct etcd_health own_health;
	/* the URL's options (etcdctl's names), heap or NULL */
	char *user, *password, *cacert, *cert, *key;
	char *token;	/* from /v3/auth/authenticate, sent as Authorization */
	long timeout_ms;
	atomic_bool cancel;	/* set by etcd_client_cancel from any thread */
	/*
	 * The sockets c->curl holds open, so that a cancel wakes a watch at
	 * once (libcurl looks at the cancel flag only about once a second
	 * while a stream is silent: every daemon's exit waited on it).
	 */
	pthread_mutex_t sock_lock;
	int socks[ETCD_CLIENT_SOCKETS];	/* -1: free */
	struct buf resp;
	char err[256];
	/* the watch stream, while etcd_client_watch runs */
	bool streaming;
	bool created;	/* its member answered that the watch is created */
	bool kept;	/* it sent while a question went unanswered: the next unanswered one ends it */
	bool long_connect;	/* the last stream's TLS handshake ran out of time: the next gets ETCD_CONNECT_MS */
	bool stay;	/* the last stream's watch_fn asked for ETCD_WATCH_AGAIN: the next starts on its member */
	int64_t created_rev;	/* etcd_client_watch_created_rev */
	int64_t began_ns;	/* when it was sent */
	int64_t heard_ns;	/* when its member last sent bytes or answered a question */
	int64_t asked_ns;	/* when the last question to its member ended (0: none since the stream began) */
	_Atomic int64_t confirmed_ns;	/* etcd_client_confirmed_ns */
	/*
	 * Whether a member is current (lib/etcd/etcd_watch.c): `mine` asks the
	 * stream's member, `other` the others in turn while it does not answer.
	 * The watch's thread drives them beside the stream in one multi handle.
	 */
	CURLM *multi;
	struct etcd_question mine, other;
	int64_t answer_ns;	/* how long the stream's member took over the last question it answered (0: none yet) */
	int64_t doubt_ns;	/* since when no member of ours confirmed it is current (0: the last one did) */
	int64_t other_ns;	/* when the other question was last answered */
	etcd_watch_fn watch_fn;
	void *watch_arg;
	int watch_rc;	/* why the stream was ended from inside (0: it was not) */
	int64_t compact_rev;
};


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

/* ---- shared by etcd_client.c and etcd_watch.c ---- */

/*
 * POSTs body to the gateway's path on c's member, moving on to the
 * others as kind allows; a stream (the watch) delivers its answer to the
 * write callback set on c->curl and returns c->watch_rc. Otherwise *reply
 * is the parsed answer (heap, the caller's to cJSON_Delete). 0 or -errno.
 */
int etcd_client_post(struct etcd_client *c, const char *path, const char *body, bool stream,
		     enum etcd_call_kind kind, cJSON **reply);
/* Trades the URL's user and password for a token: 0 or -errno. */
int etcd_client_authenticate(struct etcd_client *c);
/* An {"error":..., "code":N} object (the gateway's failure form) as -errno, the message kept. */
int etcd_client_gateway_error(struct etcd_client *c, const cJSON *obj);
/* Appends n bytes to b, NUL-ended: 0 or -ENOMEM. */
int etcd_client_buf_append(struct buf *b, const char *p, size_t n);
/* libcurl write callbacks: into c->resp, and nowhere (a probe's answer). */
size_t etcd_client_on_body(char *p, size_t size, size_t n, void *arg);
size_t etcd_client_discard_body(char *p, size_t size, size_t n, void *arg);
/* CLOCK_MONOTONIC in ns. */
int64_t etcd_client_now_ns(void);
/* Notes that member c->cur stopped answering: every client sharing c's table passes it over. */
void etcd_client_note_down(struct etcd_client *c);
/* libcurl's progress callback on c->curl: a cancel ends the transfer. */
int etcd_client_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un);
/*
 * Performs the watch's transfer, set up on c->curl, with its questions
 * beside it (lib/etcd/etcd_watch.c): its result as curl_easy_perform's;
 * a question's verdict ending it sets c->watch_rc.
 */
CURLcode etcd_client_stream_perform(struct etcd_client *c);
/* Frees what c's questions hold (the stream's multi handle, their connections). */
void etcd_client_questions_release(struct etcd_client *c);

#endif
