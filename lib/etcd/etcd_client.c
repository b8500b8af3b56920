/*
 * lib/etcd/etcd_client.c - the etcd v3 JSON-gateway client (lib/etcd/etcd_client.h):
 * the handle, its auth token (the URL's parts: lib/etcd/etcd_url.c), HTTP/1.1 POSTs through one
 * libcurl easy handle per client; the watch stream is in lib/etcd/etcd_watch.c, the KV,
 * Txn and lease requests are built in lib/etcd/etcd_requests.c.
 */
#include "lib/etcd/etcd_dl.h"
#include "lib/etcd/etcd_client.h"
#include "lib/etcd/etcd_client_int.h"
#include "lib/etcd/etcd_wire.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- errors ---- */

int etcd_client_fail(struct etcd_client *c, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return rc;
}

/* An {"error":..., "code":N} object (the gateway's failure form) as -errno. */
int etcd_client_gateway_error(struct etcd_client *c, const cJSON *obj)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");

	if (!cJSON_IsString(msg))
		msg = cJSON_GetObjectItemCaseSensitive(obj, "error");
	const char *text = cJSON_IsString(msg) ? msg->valuestring : "unknown error";
	int rc = etcd_wire_errno(cJSON_IsNumber(code) ? code->valueint : 2);

	/* ResourceExhausted is also the quota alarm: that one is a full disk */
	if (rc == -E2BIG && strstr(text, "space exceeded"))
		rc = -ENOSPC;
	/* InvalidArgument as a key twice in one Txn is: these are the cluster's limits */
	if (strstr(text, "too many operations in txn request"))
		rc = -EMSGSIZE;
	/* up to 512 KiB over --max-request-bytes etcd says this (code 3), above gRPC's code 8 */
	if (strstr(text, "request is too large"))
		rc = -E2BIG;
	/* ResourceExhausted too, but only a moment's: the cluster is behind on its applies */
	if (strstr(text, "too many requests"))
		rc = -EAGAIN;
	if (strstr(text, "user name is empty") && !c->user)
		return etcd_client_fail(c, -EACCES, "etcd: the cluster has authentication enabled: name a user in "
			    "the URL (?user=NAME&password=PASSWORD) (%s)", text);
	if (strstr(text, "authentication failed") || strstr(text, "permission denied"))
		rc = -EACCES;
	return etcd_client_fail(c, rc, "etcd: %s", text);
}

/* ---- transport ---- */

int etcd_client_buf_append(struct buf *b, const char *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *d;

		while (cap < b->len + n + 1)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

size_t etcd_client_on_body(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_client *c = arg;

	return etcd_client_buf_append(&c->resp, p, size * n) == 0 ? size * n : 0;
}

size_t etcd_client_discard_body(char *p, size_t size, size_t n, void *arg)
{
	(void)p, (void)arg;
	return size * n;
}

int64_t etcd_client_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* TLS, no signals, ETCD_CONNECT_MS to connect (etcd_client_int.h). */
void etcd_client_connection_setup(struct etcd_client *c, CURL *h)
{
	if (c->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
	if (c->cert)
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert);
	if (c->key)
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_CONNECT_MS);
}

/* libcurl's socket maker: the socket is noted for etcd_client_cancel. */
static curl_socket_t on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct etcd_client *c = arg;
	int fd;

	(void)purpose;
	fd = socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
	if (fd < 0)
		return CURL_SOCKET_BAD;
	pthread_mutex_lock(&c->sock_lock);
	for (size_t i = 0; i < ETCD_CLIENT_SOCKETS; i++)
		if (c->socks[i] < 0) {
			c->socks[i] = fd;
			break;
		}
	pthread_mutex_unlock(&c->sock_lock);
	return fd;
}

/* Forgets the socket before closing it, so a cancel never shuts down a reused number. */
static int on_close_socket(void *arg, curl_socket_t fd)
{
	struct etcd_client *c = arg;

	pthread_mutex_lock(&c->sock_lock);
	for (size_t i = 0; i < ETCD_CLIENT_SOCKETS; i++)
		if (c->socks[i] == fd)
			c->socks[i] = -1;
	pthread_mutex_unlock(&c->sock_lock);
	return close(fd);
}

/* Notes that member c->cur stopped answering: every client sharing c's table passes it over. */
void etcd_client_note_down(struct etcd_client *c)
{
	atomic_store(&c->health->down_until_ns[c->cur], etcd_client_now_ns() + (int64_t)ETCD_DOWN_MS * 1000000);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* Nothing reached the member: safe to send the same request elsewhere. */
static bool not_sent(CURLcode cc)
{
	return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
}

static int curl_errno(struct etcd_client *c, CURLcode cc, const char *ep)
{
	int rc = -EIO;

	if (cc == CURLE_ABORTED_BY_CALLBACK)
		rc = -ECANCELED;
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		rc = -ETIMEDOUT;
	else if (not_sent(cc))
		rc = -ECONNREFUSED;
	else if (cc == CURLE_OUT_OF_MEMORY)
		rc = -ENOMEM;
	else if (cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR)
		rc = -ECONNRESET;
	return etcd_client_fail(c, rc, "etcd %s: %s", ep, curl_easy_strerror(cc));
}

/*
 * Moves c->cur to the first member from c->cur on (from the next one when
 * next, not back to c->cur) that the health table does not pass over;
 * false, c->cur unmoved, when there is none.
 */
static bool pick_member(struct etcd_client *c, bool next)
{
	int64_t now = etcd_client_now_ns();

	for (size_t i = next; i < c->n_eps; i++) {
		size_t m = (c->cur + i) % c->n_eps;

		if (atomic_load(&c->health->down_until_ns[m]) <= now) {
			c->cur = m;
			return true;
		}
	}
	return false;
}

/*
 * A watch starts on the member that answered a call of a client sharing
 * c's table last, when one answered since the last stream began: it
 * answers, where the one the last stream was on may be behind; else on
 * the member after the last stream's. After a heal the members passed
 * over in the cut are all still marked, so that every stream went back
 * to one member: in a minority cut, the one cut off with this host, which
 * then took up to 5 s to apply what the others had committed meanwhile.
 */
static void start_where_answered(struct etcd_client *c)
{
	if (c->stay) {
		c->stay = false;
		return;
	}
	if (atomic_load(&c->health->answered_ns) > c->began_ns)
		c->cur = atomic_load(&c->health->answered_member) % c->n_eps;
	else
		c->cur = (c->cur + 1) % c->n_eps;
}

/* Whether a member other than c->cur is not passed over: a read may move on to it. */
static bool others_up(const struct etcd_client *c)
{
	int64_t now = etcd_client_now_ns();

	for (size_t i = 1; i < c->n_eps; i++)
		if (atomic_load(&c->health->down_until_ns[(c->cur + i) % c->n_eps]) <= now)
			return true;
	return false;
}

/*
 * The calling thread's deadline (etcd_deadline_begin): its span and when
 * it began (CLOCK_MONOTONIC ns; span 0: none), and whether a call of the
 * thread ended or was not sent at it since. Per thread, so no lock.
 */
static _Thread_local int64_t deadline_span_ns, deadline_start_ns;
static _Thread_local bool deadline_hit;

void etcd_deadline_begin(long ms)
{
	deadline_span_ns = ms > 0 ? (int64_t)ms * 1000000 : 0;
	deadline_start_ns = etcd_client_now_ns();
	deadline_hit = false;
}

struct etcd_deadline etcd_deadline_mine(void)
{
	return (struct etcd_deadline){ .span_ns = deadline_span_ns, .start_ns = deadline_start_ns };
}

void etcd_deadline_adopt(struct etcd_deadline d)
{
	deadline_span_ns = d.span_ns;
	deadline_start_ns = d.start_ns;
	deadline_hit = false;
}

bool etcd_deadline_passed(void)
{
	return deadline_hit;
}

/*
 * The ms the thread's deadline leaves for a call of c (0: none left, the
 * thread's deadline is hit), -1 when it has none: span from its start or
 * from the last answer to a client sharing c's table, the later.
 */
static long deadline_left(const struct etcd_client *c)
{
	int64_t base = atomic_load(&c->health->answered_ns), left;

	if (!deadline_span_ns)
		return -1;
	if (base < deadline_start_ns)
		base = deadline_start_ns;
	left = base + deadline_span_ns - etcd_client_now_ns();
	/*
	 * Under a millisecond left is none: libcurl's clock is in whole ms, so
	 * a try limited to the rest can end a fraction early, and the call
	 * would then end at its deadline without saying it was hit (the next
	 * try's 1 ms ends it; tests/80 test_deadline saw it under load).
	 */
	if (left < 1000000)
		deadline_hit = true;
	return left >= 1000000 ? (long)((left + 999999) / 1000000) : 0;
}

/* Whether the clients sharing c's table were told to stop waiting, and the time is up. */
static bool calls_ended(const struct etcd_client *c)
{
	int64_t end = atomic_load(&c->health->calls_end_ns);

	return end && etcd_client_now_ns() >= end;
}

/*
 * A call's time limit on member c->cur: a read, or a write its caller
 * settles, waits ETCD_READ_TRY_MS at most while another member may answer
 * (a member slower than that is in trouble: the call moves on, or gives
 * up for its caller to settle); other calls c's own limit. Never past the
 * end etcd_health_end_calls set: a stream (no limit) or a call ends then.
 */
static long try_limit(const struct etcd_client *c, bool stream, enum etcd_call_kind kind)
{
	int64_t end = atomic_load(&c->health->calls_end_ns), left;
	long ms = stream ? 0 : c->timeout_ms, op = stream ? -1 : deadline_left(c);

	if (!stream && kind != ETCD_CALL_WRITE && ms > ETCD_READ_TRY_MS && others_up(c))
		ms = ETCD_READ_TRY_MS;
	if (op >= 0 && (ms == 0 || op < ms))
		ms = op > 0 ? op : 1;	/* the operation's deadline comes first */
	if (!end)
		return ms;
	left = (end - etcd_client_now_ns()) / 1000000;
	if (left < 1)
		left = 1;	/* (0 would be no limit at all) */
	return ms == 0 || left < ms ? (long)left : ms;
}

/* Member c->cur answered: its mark goes, unless another call set a newer one since `seen`. */
static void note_up(struct etcd_client *c, int64_t seen)
{
	if (seen)
		(void)atomic_compare_exchange_strong(&c->health->down_until_ns[c->cur], &seen, 0);
}

/* The calling thread's deadline passed: the cluster answered nothing within its span. */
static int deadline_fail(struct etcd_client *c)
{
	return etcd_client_fail(c, -ETIMEDOUT, "etcd: no member answered within %.1f s (last "
				"tried: %s)", (double)deadline_span_ns / 1e9, c->eps[c->cur]);
}

/*
 * POSTs body to path on the current member (past the ones the health
 * table passes over), moving on to the next member when one cannot be
 * connected to, or, for a request that only reads, when one stops
 * answering. stream: the watch (no time limit, the body goes to the
 * watch parser). On success *reply (unary calls) is the parsed answer,
 * heap, freed by the caller with cJSON_Delete.
 */
int etcd_client_post(struct etcd_client *c, const char *path, const char *body, bool stream,
		enum etcd_call_kind kind, cJSON **reply)
{
	size_t tries, last = c->n_eps;
	CURLcode cc = CURLE_OK;
	char url[320];
	const char *ep = c->eps[c->cur];
	int64_t seen = 0;
	long status = 0;

	c->err[0] = '\0';
	if (calls_ended(c))
		return etcd_client_fail(c, -ETIMEDOUT, "etcd %s: not sent: the time given to the "
					"cluster's calls is up", ep);
	if (!stream && deadline_left(c) == 0)
		return deadline_fail(c);
	if (stream)
		start_where_answered(c);
	/* every member passed over (all hung, say): one try, as the first of them */
	if (!pick_member(c, false))
		last = 1;
	for (tries = 0; tries < last; tries++) {
		long sent = 0;

		if (tries && (!pick_member(c, true) || calls_ended(c) ||
			      (!stream && deadline_left(c) == 0)))
			break;	/* the others are passed over too (or time is up): no more tries */
		ep = c->eps[c->cur];
		seen = atomic_load(&c->health->down_until_ns[c->cur]);
		if (stream) {
			/* each member's stream: asked as soon as it is created (lib/etcd/etcd_watch.c) */
			c->created = c->kept = false;
			c->created_rev = 0;
			c->began_ns = c->heard_ns = etcd_client_now_ns();
			c->asked_ns = 0;
		}
		c->resp.len = 0;
		snprintf(url, sizeof(url), "%s%s", ep, path);
		curl_easy_setopt(c->curl, CURLOPT_URL, url);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, try_limit(c, stream, kind));
		curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, stream && !c->long_connect ?
				 (long)ETCD_WATCH_CONNECT_MS : (long)ETCD_CONNECT_MS);
		cc = stream ? etcd_client_stream_perform(c) : curl_easy_perform(c->curl);
		if (cc == CURLE_OPERATION_TIMEDOUT) {
			/* hung, or cut off: the others are asked first for a while */
			curl_easy_getinfo(c->curl, CURLINFO_REQUEST_SIZE, &sent);
			if (stream) {
				curl_off_t tcp = 0;

				/* connected, and the handshake not done: the next try gets the whole 1 s */
				curl_easy_getinfo(c->curl, CURLINFO_CONNECT_TIME_T, &tcp);
				c->long_connect = sent == 0 && tcp > 0 && !c->long_connect;
			}
			etcd_client_note_down(c);
			if (sent == 0 || kind == ETCD_CALL_READ)
				continue;	/* nothing reached it, or asking again is harmless */
			break;	/* a write: its caller learns whether it landed (SETTLED) or waits */
		}
		if (stream)
			c->long_connect = false;
		if (!not_sent(cc))
			break;
	}
	if (cc != CURLE_OK && atomic_load(&c->cancel))
		cc = CURLE_ABORTED_BY_CALLBACK;	/* its socket was shut down under it */
	atomic_store(&c->cancel, false);	/* a cancel ends one call only */
	if (cc != CURLE_OK) {
		if (stream && c->watch_rc != 0)
			return c->watch_rc;
		if (!stream && cc == CURLE_OPERATION_TIMEDOUT && deadline_left(c) == 0)
			return deadline_fail(c);
		return curl_errno(c, cc, ep);
	}
	note_up(c, seen);
	if (stream)
		return c->watch_rc;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	*reply = cJSON_ParseWithLength(c->resp.data ? c->resp.data : "", c->resp.len);
	if (!*reply || !cJSON_IsObject(*reply)) {
		cJSON_Delete(*reply);
		*reply = NULL;
		return etcd_client_fail(c, -EPROTO, "etcd %s: HTTP %ld, answer is not JSON", c->eps[c->cur], status);
	}
	if (status != 200 || cJSON_GetObjectItemCaseSensitive(*reply, "error")) {
		int rc = etcd_client_gateway_error(c, *reply);

		cJSON_Delete(*reply);
		*reply = NULL;
		return rc;
	}
	atomic_store(&c->health->answered_member, c->cur);
	atomic_store(&c->health->answered_ns, etcd_client_now_ns());	/* the cluster answers: deadlines move on */
	return 0;
}

/* The headers every request carries: JSON, no "Expect:", the token when there is one. */
static int set_headers(struct etcd_client *c)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

	/* "Expect:" off: libcurl would wait for a 100 Continue on big bodies. */
	if (h)
		h = curl_slist_append(h, "Expect:");
	if (h && c->token) {
		size_t n = strlen(c->token) + 32;
		char *line = malloc(n);
		struct curl_slist *with = NULL;

		if (line) {
			snprintf(line, n, "Authorization: %s", c->token);
			with = curl_slist_append(h, line);
			free(line);
		}
		if (!with) {
			curl_slist_free_all(h);
			h = NULL;
		}
	}
	if (!h)
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building headers");
	curl_slist_free_all(c->headers);
	c->headers = h;
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	return 0;
}

/* Trades the URL's user and password for a token (POST /v3/auth/authenticate). */
int etcd_client_authenticate(struct etcd_client *c)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const cJSON *tok;
	char *body;
	int rc;

	free(c->token);
	c->token = NULL;
	if ((rc = set_headers(c)) < 0) {
		cJSON_Delete(req);
		return rc;
	}
	if (!req || !cJSON_AddStringToObject(req, "name", c->user) ||
	    !cJSON_AddStringToObject(req, "password", c->password ? c->password : "")) {
		cJSON_Delete(req);
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a request");
	}
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (!body)
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a request");
	rc = etcd_client_post(c, "/v3/auth/authenticate", body, false, ETCD_CALL_WRITE, &reply);
	free(body);
	if (rc < 0) {
		char why[sizeof(c->err)];

		snprintf(why, sizeof(why), "%s", c->err);
		return etcd_client_fail(c, rc == -EINVAL ? -EACCES : rc, "etcd: user %s: %s", c->user, why);
	}
	tok = cJSON_GetObjectItemCaseSensitive(reply, "token");
	if (cJSON_IsString(tok) && (c->token = strdup(tok->valuestring)))
		rc = set_headers(c);
	else
		rc = etcd_client_fail(c, -EACCES, "etcd: user %s: authentication gave no token (is auth enabled?)",
			  c->user);
	cJSON_Delete(reply);
	return rc;
}

int etcd_client_call(struct etcd_client *c, const char *path, cJSON *req, enum etcd_call_kind kind,
		     cJSON **reply)
{
	char *body = cJSON_PrintUnformatted(req);
	int rc;

	cJSON_Delete(req);
	if (!body)
		return etcd_client_fail(c, -ENOMEM, "etcd: out of memory building a request");
	rc = (c->user && !c->token) ? etcd_client_authenticate(c) : 0;
	if (rc == 0)
		rc = etcd_client_post(c, path, body, false, kind, reply);
	if (rc == -EACCES && c->user && strstr(c->err, "invalid auth token")) {
		/* the token expired (or the member restarted): one more, fresh one */
		rc = etcd_client_authenticate(c);
		if (rc == 0)
			rc = etcd_client_post(c, path, body, false, kind, reply);
	}
	free(body);
	return rc;
}

/* ---- handle ---- */

static int add_endpoint(struct etcd_client *c, const char *s, size_t n)
{
	int rc;

	if (c->n_eps == ETCD_MEMBERS_MAX)
		return -EINVAL;
	rc = etcd_url_endpoint(s, n, c->cacert || c->cert, &c->eps[c->n_eps]);
	if (rc == 0)
		c->n_eps++;
	return rc;
}

static int parse_options(struct etcd_client *c, const char *q, char *why, size_t why_len)
{
	char **slot[ETCD_URL_OPTIONS] = { &c->user, &c->password, &c->cacert, &c->cert, &c->key };

	return etcd_url_options(q, slot, why, why_len);
}

int etcd_client_open(const char *endpoints, struct etcd_client **out, char *why, size_t why_len)
{
	struct etcd_client *c;
	const char *p = endpoints, *comma, *query = strchr(endpoints, '?');
	size_t list_len = query ? (size_t)(query - endpoints) : strlen(endpoints);
	int rc = -ENOMEM;

	*out = NULL;
	if (etcd_dl_load(why, why_len) < 0)
		return -ENOSYS;	/* libcurl or cJSON is not installed */
	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		if (why)
			snprintf(why, why_len, "libcurl: %s", curl_easy_strerror(curl_init_rc));
		return -EIO;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_why;
	c->timeout_ms = 10000;
	c->health = &c->own_health;
	atomic_init(&c->cancel, false);
	pthread_mutex_init(&c->sock_lock, NULL);
	for (size_t i = 0; i < ETCD_CLIENT_SOCKETS; i++)
		c->socks[i] = -1;
	if ((rc = parse_options(c, query ? query + 1 : "", why, why_len)) < 0) {
		etcd_client_close(c);
		return rc;
	}
	for (;;) {
		comma = memchr(p, ',', list_len - (size_t)(p - endpoints));
		rc = add_endpoint(c, p, comma ? (size_t)(comma - p) :
				  list_len - (size_t)(p - endpoints));
		if (rc < 0)
			goto out_close;
		if (!comma)
			break;
		p = comma + 1;
	}
	rc = -ENOMEM;
	c->curl = curl_easy_init();
	if (!c->curl || set_headers(c) < 0)
		goto out_close;
	etcd_client_connection_setup(c, c->curl);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, etcd_client_on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, etcd_client_on_progress);
	curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c->curl, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(c->curl, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(c->curl, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	curl_easy_setopt(c->curl, CURLOPT_CLOSESOCKETDATA, c);
	*out = c;
	return 0;

out_close:
	etcd_client_close(c);
out_why:
	if (why)
		snprintf(why, why_len, rc == -EINVAL ? "bad etcd endpoint list \"%s\"" :
			 "out of memory opening an etcd client for \"%s\"", endpoints);
	return rc;
}

void etcd_client_close(struct etcd_client *c)
{
	if (!c)
		return;
	etcd_client_questions_release(c);	/* the multi handle first, as libcurl asks */
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	for (size_t i = 0; i < c->n_eps; i++)
		free(c->eps[i]);
	free(c->user);
	if (c->password)
		explicit_bzero(c->password, strlen(c->password));
	free(c->password);
	free(c->token);
	free(c->cacert);
	free(c->cert);
	free(c->key);
	free(c->resp.data);
	pthread_mutex_destroy(&c->sock_lock);
	free(c);
}

const char *etcd_client_error(const struct etcd_client *c)
{
	return c->err;
}

const char *etcd_client_endpoint(const struct etcd_client *c)
{
	return c->eps[c->cur];
}

void etcd_client_spread(struct etcd_client *c, size_t i)
{
	c->cur = i % c->n_eps;
}

void etcd_client_share_health(struct etcd_client *c, struct etcd_health *h)
{
	c->health = h ? h : &c->own_health;
	c->cur = atomic_load(&c->health->preferred) % c->n_eps;
}

size_t etcd_client_members(const struct etcd_client *c)
{
	return c->n_eps;
}

int etcd_client_place(const struct etcd_client *c, const char *url)
{
	size_t n = strlen(url);

	while (n && url[n - 1] == '/')
		n--;
	for (size_t i = 0; i < c->n_eps; i++)
		if (strlen(c->eps[i]) == n && memcmp(c->eps[i], url, n) == 0)
			return (int)i;
	return -1;
}

void etcd_client_prefer(struct etcd_client *c, size_t place)
{
	c->cur = place % c->n_eps;
	atomic_store(&c->health->preferred, c->cur);
}

void etcd_health_end_calls(struct etcd_health *h, long ms)
{
	atomic_store(&h->calls_end_ns, etcd_client_now_ns() + (int64_t)ms * 1000000);
}

void etcd_client_set_timeout(struct etcd_client *c, long ms)
{
	c->timeout_ms = ms;
}

void etcd_client_cancel(struct etcd_client *c)
{
	atomic_store(&c->cancel, true);
	/* wakes a transfer waiting on the socket; the call then ends with -ECANCELED */
	pthread_mutex_lock(&c->sock_lock);
	for (size_t i = 0; i < ETCD_CLIENT_SOCKETS; i++)
		if (c->socks[i] >= 0)
			shutdown(c->socks[i], SHUT_RDWR);
	pthread_mutex_unlock(&c->sock_lock);
}
