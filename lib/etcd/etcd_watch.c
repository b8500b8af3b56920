/*
 * lib/etcd/etcd_watch.c - the watch stream (etcd_client_watch): its lines
 * cut into events, and the questions that ask, on connections of their
 * own driven beside it, whether the stream's member is current.
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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- whether the watch's member is current ---- */

/* How often the watch's thread looks at its questions when nothing comes in. */
#define STREAM_TICK_MS 100

/*
 * Sends q to member m: a linearizable read (which a member cut off from
 * the leader cannot answer) on q's own connection, limit_ms in all and
 * connect_ms to connect, driven beside the stream. 0 or -ENOMEM.
 */
static int question_send(struct etcd_client *c, struct etcd_question *q, size_t m, long limit_ms,
			 long connect_ms)
{
	char url[320];

	if (!q->easy) {
		q->easy = curl_easy_init();
		if (!q->easy)
			return -ENOMEM;
		etcd_client_connection_setup(c, q->easy);
		curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, etcd_client_discard_body);
		curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, "{\"key\":\"AA==\",\"count_only\":true}");
	}
	snprintf(url, sizeof(url), "%s/v3/kv/range", c->eps[m]);
	curl_easy_setopt(q->easy, CURLOPT_URL, url);
	/* the token too (c->headers changes only between streams, on this thread) */
	curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, limit_ms);
	curl_easy_setopt(q->easy, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	q->sent_ns = etcd_client_now_ns();
	if (curl_multi_add_handle(c->multi, q->easy) != CURLM_OK)
		return -ENOMEM;
	q->busy = true;
	q->member = m;
	return 0;
}

/* Takes q out of the stream's transfers, answered or not. */
static void question_drop(struct etcd_client *c, struct etcd_question *q)
{
	if (!q->busy)
		return;
	curl_multi_remove_handle(c->multi, q->easy);
	q->busy = false;
}

/* 1: q's member answered it, 0: with an error (it lives, but cannot say it is current), -1: not. */
static int question_answer(struct etcd_question *q, CURLcode cc)
{
	long status = 0;

	if (cc != CURLE_OK)
		return -1;
	curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &status);
	return status == 200;
}

/*
 * Whether a member other than the stream's answered after `since`: a call
 * of a client sharing c's health table, or c's own other question.
 */
static bool answered_elsewhere(const struct etcd_client *c, int64_t since)
{
	return atomic_load(&c->health->answered_ns) > since &&
	       atomic_load(&c->health->answered_member) != c->cur;
}

/*
 * Ends the stream from inside: its member is passed over, the message
 * kept; moved: another member answered (ETCD_WATCH_MOVED), else -ETIMEDOUT.
 */
static void stream_leave(struct etcd_client *c, bool moved, const char *what)
{
	/*
	 * The stream ended already, for its own reason (its watch_fn's, say
	 * ETCD_WATCH_AGAIN, in the same curl_multi_perform as a question's
	 * answer): that reason stands.
	 */
	if (c->watch_rc != 0)
		return;
	/*
	 * Moved, the next stream starts on a member that just answered: no
	 * doubt, or its other question could win over its own and move it
	 * again, and again.
	 */
	if (moved)
		c->doubt_ns = 0;
	else if (!c->doubt_ns)
		c->doubt_ns = etcd_client_now_ns();
	etcd_client_note_down(c);
	c->watch_rc = etcd_client_fail(c, moved ? ETCD_WATCH_MOVED : -ETIMEDOUT,
				       "etcd %s: the watch's member %s", c->eps[c->cur], what);
}

/*
 * The stream's member answered its question (answer as question_answer's).
 * One that did not, while the stream sent nothing either, ends the stream;
 * a stream that sent meanwhile works, if slowly: kept once. One that
 * cannot say it is current while another member answers is behind.
 */
static void mine_answered(struct etcd_client *c, int answer)
{
	int64_t sent = c->mine.sent_ns, now = etcd_client_now_ns();

	c->asked_ns = now;
	if (answer == 1) {
		atomic_store(&c->confirmed_ns, sent);
		c->answer_ns = now - sent;
		c->doubt_ns = 0;
	} else if (!c->doubt_ns) {
		c->doubt_ns = now;
	}
	if (answer >= 0) {
		c->heard_ns = now;
		c->kept = false;
		if (answer == 0 && answered_elsewhere(c, sent))
			stream_leave(c, true, "cannot say it is current, and another member answers");
		return;
	}
	if (!c->kept && !answered_elsewhere(c, sent) && c->heard_ns > sent) {
		c->kept = true;
		return;
	}
	stream_leave(c, false, "stopped answering");
}

/*
 * Another member answered the other question: the cluster answers there,
 * which every client sharing c's table learns (a stream starts where a
 * call was answered last).
 */
static void other_answered(struct etcd_client *c, int answer)
{
	if (answer != 1)
		return;
	c->other_ns = etcd_client_now_ns();
	atomic_store(&c->health->answered_member, c->other.member);
	atomic_store(&c->health->answered_ns, c->other_ns);
}

/* The member after the last one the other question asked, not the stream's. */
static size_t other_member(const struct etcd_client *c)
{
	size_t m = c->other.easy ? c->other.member : c->cur;

	m = (m + 1) % c->n_eps;
	return m == c->cur ? (m + 1) % c->n_eps : m;
}

/* How long the stream's member may take over a question before it is slow (ns). */
static int64_t slow_ns(const struct etcd_client *c)
{
	int64_t slow = c->answer_ns ? 4 * c->answer_ns : (int64_t)ETCD_PROBE_MS * 1000000;

	return slow < (int64_t)ETCD_QUESTION_TURN_MS * 1000000 ?
	       (int64_t)ETCD_QUESTION_TURN_MS * 1000000 : slow;
}

/*
 * Whether the stream's member had its turn to clear a doubt: asked since
 * the stream began, and its question not fresh (four times its last
 * answer, ETCD_QUESTION_TURN_MS when it has none), or not creating the
 * watch for as long as a question may take. The doubt may be an earlier
 * stream's, and a current member answers: left as soon as another member
 * answered, it was passed over ETCD_DOWN_MS by every client sharing c's
 * table (the other question is often answered first).
 */
static bool mine_had_its_turn(const struct etcd_client *c, int64_t now)
{
	int64_t fresh = c->answer_ns ? 4 * c->answer_ns : (int64_t)ETCD_QUESTION_TURN_MS * 1000000;

	if (c->mine.busy)
		return now - c->mine.sent_ns >= fresh;
	if (c->mine.sent_ns > c->began_ns)
		return true;	/* it answered, and not that it is current */
	return !c->created && now - c->began_ns >= slow_ns(c);
}

/*
 * The other question, to the members other than the stream's in turn: a
 * connect begun in a cut waits for its SYN to be sent again (1 s), so a
 * short connect limit has a fresh one sent soon after the heal.
 */
static void other_ask(struct etcd_client *c, int64_t now)
{
	if (c->other.busy || c->n_eps < 2 ||
	    now - c->other.sent_ns < (int64_t)ETCD_QUESTION_TURN_MS / 2 * 1000000)
		return;
	(void)question_send(c, &c->other, other_member(c), slow_ns(c) / 1000000,
			    ETCD_QUESTION_TURN_MS / 2);
}

/*
 * Between the stream's reads: asks the stream's member every
 * ETCD_CONFIRM_MS (the first question once it created the watch, or
 * ETCD_CONFIRM_MS after it was sent when it has not: a member that has
 * the commits serves a watch without a leader, which the question needs).
 * While a question to it is slow (over ETCD_QUESTION_TURN_MS and four
 * times its last answer: a slow network is not a member behind), or
 * while no member of ours confirmed since a question went unconfirmed
 * (in a cut, say), the others are asked in turn, and the stream is left
 * for one that answers. That is the member cut off with this host,
 * applying after the heal what the others committed meanwhile (it took 2
 * to 5 s), while the others have it all; and after a cut, whichever
 * member the stream found first.
 */
static void questions_tick(struct etcd_client *c)
{
	int64_t now = etcd_client_now_ns();
	bool slow = c->mine.busy && now - c->mine.sent_ns >= slow_ns(c);

	if (c->doubt_ns || slow)
		other_ask(c, now);
	if (c->doubt_ns && c->other_ns > c->began_ns && mine_had_its_turn(c, now)) {
		stream_leave(c, true, "has not confirmed it is current since another member did");
		return;
	}
	if (slow && answered_elsewhere(c, c->mine.sent_ns)) {
		stream_leave(c, true, "did not answer while another member did");
		return;
	}
	if (c->mine.busy || now - c->asked_ns < (int64_t)ETCD_CONFIRM_MS * 1000000)
		return;
	if (!c->created && now - c->began_ns < (int64_t)ETCD_CONFIRM_MS * 1000000)
		return;	/* being connected or created: its own limits bound that */
	if (question_send(c, &c->mine, c->cur, ETCD_PROBE_MS, ETCD_CONNECT_MS) < 0)
		c->asked_ns = now;	/* (no memory: asked again later) */
}

/* The transfers that ended: the stream's result in *stream_cc (true when it did). */
static bool transfers_ended(struct etcd_client *c, CURLcode *stream_cc)
{
	bool ended = false;
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (msg->easy_handle == c->curl) {
			*stream_cc = msg->data.result;
			ended = true;
		} else if (c->mine.busy && msg->easy_handle == c->mine.easy) {
			int answer = question_answer(&c->mine, msg->data.result);

			question_drop(c, &c->mine);
			mine_answered(c, answer);
		} else if (c->other.busy && msg->easy_handle == c->other.easy) {
			int answer = question_answer(&c->other, msg->data.result);

			question_drop(c, &c->other);
			other_answered(c, answer);
		}
	}
	return ended;
}

CURLcode etcd_client_stream_perform(struct etcd_client *c)
{
	CURLcode cc = CURLE_OK;
	int running;

	if (!c->multi && !(c->multi = curl_multi_init()))
		return CURLE_OUT_OF_MEMORY;
	if (curl_multi_add_handle(c->multi, c->curl) != CURLM_OK)
		return CURLE_OUT_OF_MEMORY;
	for (;;) {
		if (curl_multi_perform(c->multi, &running) != CURLM_OK) {
			cc = CURLE_OUT_OF_MEMORY;
			break;
		}
		if (transfers_ended(c, &cc))
			break;
		/*
		 * A cancel shuts the sockets c->curl opened, but the stream may run
		 * on one its question opened (the multi's connections are shared):
		 * seen here, within a tick, whatever libcurl calls back.
		 */
		if (atomic_load(&c->cancel)) {
			cc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (c->watch_rc == 0)
			questions_tick(c);	/* (after a verdict, a question sent would be dropped at once) */
		if (c->watch_rc != 0) {
			cc = CURLE_ABORTED_BY_CALLBACK;	/* a question's verdict */
			break;
		}
		if (curl_multi_poll(c->multi, NULL, 0, STREAM_TICK_MS, NULL) != CURLM_OK) {
			cc = CURLE_OUT_OF_MEMORY;
			break;
		}
	}
	/* a question about this stream says nothing about the next */
	question_drop(c, &c->mine);
	question_drop(c, &c->other);
	curl_multi_remove_handle(c->multi, c->curl);
	return cc;
}

void etcd_client_questions_release(struct etcd_client *c)
{
	if (c->multi)
		curl_multi_cleanup(c->multi);
	if (c->mine.easy)
		curl_easy_cleanup(c->mine.easy);
	if (c->other.easy)
		curl_easy_cleanup(c->other.easy);
}

/* libcurl calls it at least once a second during a transfer. */
int etcd_client_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct etcd_client *c = arg;

	(void)dt, (void)dn, (void)ut, (void)un;
	return atomic_load(&c->cancel) ? 1 : 0;
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
/*
 * What libcurl read of the stream: its complete lines are handed on, the
 * rest kept for the next call. Only the new bytes are searched: what was
 * kept has no newline. (Searched from the start, one commit's answer of
 * 100,000 events, tens of MB in 16 KiB pieces, took the watch's thread
 * 36% of the daemon's time in a cp of a 20,000-record document.)
 */
static size_t on_watch_body(char *p, size_t size, size_t n, void *arg)
{
	struct etcd_client *c = arg;
	size_t start = 0, i = c->resp.len;
	const char *nl;

	c->heard_ns = etcd_client_now_ns();
	if (etcd_client_buf_append(&c->resp, p, size * n) < 0) {
		c->watch_rc = etcd_client_fail(c, -ENOMEM, "etcd: out of memory reading a watch");
		return 0;
	}
	while (i < c->resp.len && (nl = memchr(c->resp.data + i, '\n', c->resp.len - i))) {
		i = (size_t)(nl - c->resp.data);
		if (i > start)
			c->watch_rc = watch_line(c, c->resp.data + start, i - start);
		start = ++i;
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
