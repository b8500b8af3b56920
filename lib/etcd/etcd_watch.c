/*
 * lib/etcd/etcd_watch.c - the watch stream (etcd_client_watch): its lines
 * cut into events, and the probe that asks, on a connection of its own,
 * whether the stream's member is current (libcurl's progress callback).
 */
#include "lib/etcd/etcd_dl.h"
#include "lib/etcd/etcd_client.h"
#include "lib/etcd/etcd_client_int.h"
#include "lib/etcd/etcd_wire.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- whether the watch's member is current ---- */

/*
 * Asks the watch's member for a linearizable read (which a member cut off
 * from the leader cannot answer) on a connection of its own: 1 when it
 * answered it, 0 when it answered with an error (it lives, but cannot say
 * it is current), -1 when it did not answer. Cannot tell (no memory): 0.
 */
static int member_answers(struct etcd_client *c)
{
	char url[320];
	long status = 0;

	if (!c->probe) {
		c->probe = curl_easy_init();
		if (!c->probe)
			return 0;
		etcd_client_connection_setup(c, c->probe);
		curl_easy_setopt(c->probe, CURLOPT_TIMEOUT_MS, (long)ETCD_PROBE_MS);
		curl_easy_setopt(c->probe, CURLOPT_WRITEFUNCTION, etcd_client_discard_body);
		curl_easy_setopt(c->probe, CURLOPT_POSTFIELDS, "{\"key\":\"AA==\",\"count_only\":true}");
	}
	snprintf(url, sizeof(url), "%s/v3/kv/range", c->eps[c->cur]);
	curl_easy_setopt(c->probe, CURLOPT_URL, url);
	curl_easy_setopt(c->probe, CURLOPT_HTTPHEADER, c->headers);	/* the token too */
	if (curl_easy_perform(c->probe) != CURLE_OK)
		return -1;
	curl_easy_getinfo(c->probe, CURLINFO_RESPONSE_CODE, &status);
	return status == 200;
}

/*
 * Whether the stream's connection holds bytes not read yet: the member
 * sent while the probe held this thread (a probe waits up to
 * ETCD_PROBE_MS, and a watch's backlog can come in meanwhile).
 */
static bool stream_unread(struct etcd_client *c)
{
	struct pollfd p[ETCD_CLIENT_SOCKETS];
	nfds_t n = 0;

	pthread_mutex_lock(&c->sock_lock);
	for (size_t i = 0; i < ETCD_CLIENT_SOCKETS; i++)
		if (c->socks[i] >= 0)
			p[n++] = (struct pollfd){ .fd = c->socks[i], .events = POLLIN };
	pthread_mutex_unlock(&c->sock_lock);
	if (poll(p, n, 0) <= 0)
		return false;
	for (nfds_t i = 0; i < n; i++)
		if (p[i].revents & POLLIN)
			return true;
	return false;
}

/*
 * Whether a member other than the watch's answered a call of a client
 * sharing c's health table after `since`: the cluster answers there.
 */
static bool answered_elsewhere(const struct etcd_client *c, int64_t since)
{
	return atomic_load(&c->health->answered_ns) > since &&
	       atomic_load(&c->health->answered_member) != c->cur;
}

/*
 * libcurl calls it at least once a second during a transfer. A watch is
 * silent while nothing changes, and also when its member hangs or is cut
 * off: every ETCD_CONFIRM_MS the member is asked on another connection
 * whether it is current, which confirms every commit up to the question;
 * one that does not answer while the stream sent nothing either ends the
 * watch (its caller resumes elsewhere). The first question waits for the
 * watch to be created (or ETCD_CONFIRM_MS without): a member that has the
 * commits serves a watch without a leader, which the question needs, and
 * a question asked during the connect held this thread past the connect's
 * limit (after a heal, with the members electing, the backlog then came
 * only once a leader answered, seconds later). The question holds this
 * thread, so what the stream sent meanwhile is still unread when it ends
 * (stream_unread), and the next one waits ETCD_CONFIRM_MS from its end:
 * asked back to back, slow questions left a backlog unread for seconds.
 * But a member that does not answer while another does is behind (one
 * cut off with this host, applying after the heal what the others
 * committed meanwhile took it 5 s once): the watch goes to that other;
 * and a stream is kept so only once: the next question unanswered ends it.
 */
int etcd_client_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct etcd_client *c = arg;
	int64_t asked;
	int answer;

	(void)dt, (void)dn, (void)ut, (void)un;
	if (atomic_load(&c->cancel))
		return 1;
	if (!c->streaming || (asked = etcd_client_now_ns()) - c->asked_ns < (int64_t)ETCD_CONFIRM_MS * 1000000)
		return 0;
	if (!c->created && asked - c->began_ns < (int64_t)ETCD_CONFIRM_MS * 1000000)
		return 0;	/* being connected or created: its own limits bound that */
	answer = member_answers(c);
	c->asked_ns = etcd_client_now_ns();
	if (answer == 1)
		atomic_store(&c->confirmed_ns, asked);
	if (answer >= 0) {
		c->heard_ns = c->asked_ns;
		c->kept = false;
		return 0;
	}
	if (!c->kept && !answered_elsewhere(c, asked) && (c->heard_ns > asked || stream_unread(c))) {
		c->kept = true;
		return 0;	/* (a stream that sent meanwhile works, if slowly: once) */
	}
	etcd_client_note_down(c);
	c->watch_rc = etcd_client_fail(c, -ETIMEDOUT, "etcd %s: the watch's member stopped answering",
				       c->eps[c->cur]);
	return 1;
}

int64_t etcd_client_confirmed_ns(const struct etcd_client *c)
{
	return atomic_load(&c->confirmed_ns);
}

int64_t etcd_client_watch_created_rev(const struct etcd_client *c)
{
	return c->created_rev;
}

/* ---- the stream ---- */

/* One line of the stream: {"result": WatchResponse} or {"error": ...}. */
static int watch_line(struct etcd_client *c, const char *line, size_t len)
{
	cJSON *o = cJSON_ParseWithLength(line, len);
	const cJSON *res, *events, *ev;
	int64_t rev;
	int rc = 0;

	if (!o)
		return etcd_client_fail(c, -EPROTO, "etcd: watch line is not JSON");
	res = cJSON_GetObjectItemCaseSensitive(o, "result");
	if (!res) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");

		rc = etcd_client_gateway_error(c, e ? e : o);
		goto out;
	}
	rev = etcd_wire_get_i64(cJSON_GetObjectItemCaseSensitive(res, "header"), "revision");
	if (etcd_wire_get_i64(res, "compact_revision") > 0) {
		c->compact_rev = etcd_wire_get_i64(res, "compact_revision");
		rc = etcd_client_fail(c, -ESTALE, "etcd: watch start revision compacted (oldest %" PRId64 ")",
			  c->compact_rev);
		goto out;
	}
	if (etcd_wire_get_bool(res, "canceled")) {
		rc = etcd_client_fail(c, -EPIPE, "etcd: watch canceled by the server");
		goto out;
	}
	if (etcd_wire_get_bool(res, "created")) {
		c->created = true;
		c->created_rev = rev;
		rc = c->watch_fn(NULL, c->watch_arg);
		goto out;
	}
	events = cJSON_GetObjectItemCaseSensitive(res, "events");
	cJSON_ArrayForEach(ev, events) {
		const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
		struct etcd_kv kv;
		struct etcd_event e = { .kv = &kv, .revision = rev };

		e.is_delete = cJSON_IsString(type) && strcmp(type->valuestring, "DELETE") == 0;
		e.last = ev->next == NULL;
		rc = etcd_wire_parse_kv(cJSON_GetObjectItemCaseSensitive(ev, "kv"), &kv);
		if (rc < 0) {
			rc = etcd_client_fail(c, rc, "etcd: bad watch event");
			goto out;
		}
		rc = c->watch_fn(&e, c->watch_arg);
		etcd_wire_kv_release(&kv);
		if (rc != 0)
			break;
	}
out:
	cJSON_Delete(o);
	return rc;
}

/* Cuts the stream into lines; a non-zero watch_rc ends the transfer. */
static size_t on_watch_body(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_client *c = arg;
	size_t start = 0, i;

	c->heard_ns = etcd_client_now_ns();
	if (etcd_client_buf_append(&c->resp, p, size * n) < 0) {
		c->watch_rc = etcd_client_fail(c, -ENOMEM, "etcd: out of memory reading a watch");
		return 0;
	}
	for (i = 0; i < c->resp.len; i++) {
		if (c->resp.data[i] != '\n')
			continue;
		if (i > start)
			c->watch_rc = watch_line(c, c->resp.data + start, i - start);
		start = i + 1;
		if (c->watch_rc != 0)
			return 0;
	}
	memmove(c->resp.data, c->resp.data + start, c->resp.len - start);
	c->resp.len -= start;
	return size * n;
}

int etcd_client_watch(struct etcd_client *c, const void *key, size_t key_len,
		      const void *range_end, size_t range_end_len, int64_t start_rev,
		      etcd_watch_fn fn, void *arg, int64_t *compact_rev)
{
	cJSON *req = cJSON_CreateObject(), *cr = cJSON_CreateObject();
	char *body = NULL;
	int rc = req && cr && cJSON_AddItemToObject(req, "create_request", cr) ? 0 : -ENOMEM;

	if (rc < 0)
		cJSON_Delete(cr);
	if (rc == 0)
		rc = etcd_wire_add_b64(cr, "key", key, key_len);
	if (rc == 0 && range_end)
		rc = etcd_wire_add_b64(cr, "range_end", range_end, range_end_len);
	if (rc == 0 && start_rev > 0)
		rc = etcd_wire_add_i64(cr, "start_revision", start_rev);
	if (rc == 0 && !(body = cJSON_PrintUnformatted(req)))
		rc = -ENOMEM;
	cJSON_Delete(req);
	if (rc < 0)
		return etcd_client_fail(c, rc, "etcd: out of memory building a watch");
	/* a watch carries the token too (a fresh one: the stream may outlive an old one) */
	if (c->user && (rc = etcd_client_authenticate(c)) < 0) {
		free(body);
		return rc;
	}
	c->watch_fn = fn;
	c->watch_arg = arg;
	c->watch_rc = 0;
	c->compact_rev = 0;
	c->created_rev = 0;
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_watch_body);
	c->streaming = true;
	rc = etcd_client_post(c, "/v3/watch", body, true, ETCD_CALL_READ, NULL);
	c->streaming = false;
	/* an answer without a final newline (an error object) is a line too */
	if (rc == 0 && c->resp.len > 0)
		rc = watch_line(c, c->resp.data, c->resp.len);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, etcd_client_on_body);
	free(body);
	c->resp.len = 0;
	if (compact_rev)
		*compact_rev = c->compact_rev;
	c->stay = rc == ETCD_WATCH_AGAIN;
	/* A stream that ends by itself (member gone) is a broken watch. */
	if (rc == 0)
		rc = etcd_client_fail(c, -EPIPE, "etcd %s: watch stream ended", c->eps[c->cur]);
	return rc;
}
