/*
 * tests/unit/test_etcd_client_watch.c - watches: another handle's puts and
 * delete reaching a prefix watch in order, a replay from a revision, a
 * watch ended at its creation to skip a backlog, and what compaction
 * leaves of reads and watches from before it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

struct watch_log {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready;
	int n;	/* events seen */
	int stop_after;
	char keys[8][64];
	bool deletes[8];
	struct etcd_client *c;
	const void *k;
	size_t k_len;
	const void *end;
	size_t end_len;
	int64_t start;
	int rc;
};

static int on_event(const struct etcd_event *ev, void *arg)
{
	struct watch_log *w = arg;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	if (!ev) {
		w->ready = true;
	} else if (w->n < 8) {
		size_t l = ev->kv->key_len < 63 ? ev->kv->key_len : 63;
		memcpy(w->keys[w->n], ev->kv->key, l);
		w->keys[w->n][l] = '\0';
		w->deletes[w->n] = ev->is_delete;
		w->n++;
		if (w->n == w->stop_after)
			rc = 1;
	}
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

static void *watch_thread(void *arg)
{
	struct watch_log *w = arg;

	w->rc = etcd_client_watch(w->c, w->k, w->k_len, w->end, w->end_len, w->start,
				  on_event, w, NULL);
	pthread_mutex_lock(&w->mu);
	w->ready = true;	/* also wakes a waiter when the watch failed */
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Waits (bounded, 10 s) for the watch to be established. */
static void wait_ready(struct watch_log *w)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&w->mu);
	while (!w->ready && pthread_cond_timedwait(&w->cv, &w->mu, &dl) == 0)
		;
	pthread_mutex_unlock(&w->mu);
}

/* Joins the watch thread; cancels the watch first if it runs 20 s (a test failure, not a hang). */
static void watch_join(pthread_t th, struct watch_log *w)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 20;
	if (pthread_timedjoin_np(th, NULL, &dl) != 0) {
		fprintf(stderr, "#   watch still running after 20 s: cancelled\n");
		unit_current_failed = 1;
		etcd_client_cancel(w->c);
		pthread_join(th, NULL);
	}
}

static void watch_init(struct watch_log *w, const char *p, size_t pl, uint8_t *end, int stop_after)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->c = client();
	w->k = p;
	w->k_len = pl;
	w->end = end;
	w->end_len = etcd_prefix_end(p, pl, end);
	w->stop_after = stop_after;
}

static void watch_release(struct watch_log *w)
{
	etcd_client_close(w->c);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}

/* Another handle's puts and delete reach a prefix watch in order; a replay from a revision. */
void test_watch(void)
{
	struct etcd_client *c = client();
	struct watch_log w;
	pthread_t th;
	uint8_t end[300];
	char p[128];
	size_t pl, kl;
	int64_t first = 0;

	const char *wp = key(0, "w/", &pl);

	memcpy(p, wp, pl);
	watch_init(&w, p, pl, end, 3);
	CHECK_EQ_INT(pthread_create(&th, NULL, watch_thread, &w), 0);
	wait_ready(&w);
	CHECK(w.ready);
	const char *ka = key(1, "w/a", &kl);
	CHECK_EQ_INT(etcd_client_put(c, ka, kl, "1", 1, 0, &first), 0);
	const char *kb = key(1, "w/b", &kl);
	CHECK_EQ_INT(etcd_client_put(c, kb, kl, "2", 1, 0, NULL), 0);
	const char *other = key(2, "elsewhere", &kl);
	CHECK_EQ_INT(etcd_client_put(c, other, kl, "3", 1, 0, NULL), 0);
	ka = key(1, "w/a", &kl);
	CHECK_EQ_INT(etcd_client_delete_range(c, ka, kl, NULL, 0, NULL, NULL), 0);
	watch_join(th, &w);
	CHECK_EQ_INT(w.rc, 1);	/* ended by the callback after 3 events */
	CHECK_EQ_INT(w.n, 3);
	CHECK(strstr(w.keys[0], "w/a") && !w.deletes[0]);
	CHECK(strstr(w.keys[1], "w/b") && !w.deletes[1]);
	CHECK(strstr(w.keys[2], "w/a") && w.deletes[2]);
	watch_release(&w);

	/* the same history replayed from the first put's revision */
	watch_init(&w, p, pl, end, 3);
	w.start = first;
	CHECK_EQ_INT(pthread_create(&th, NULL, watch_thread, &w), 0);
	watch_join(th, &w);
	CHECK_EQ_INT(w.n, 3);
	CHECK(w.n == 3 && w.deletes[2]);
	watch_release(&w);

	/* a quiet watch ends when cancelled from another thread */
	watch_init(&w, p, pl, end, 100);
	CHECK_EQ_INT(pthread_create(&th, NULL, watch_thread, &w), 0);
	wait_ready(&w);
	etcd_client_cancel(w.c);
	watch_join(th, &w);
	CHECK_EQ_INT(w.rc, -ECANCELED);
	/* and the handle works again afterwards */
	struct etcd_range_result r;
	CHECK_EQ_INT(etcd_client_range(w.c, p, pl, NULL, &r), 0);
	etcd_range_result_release(&r);
	watch_release(&w);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, etcd_prefix_end(p, pl, end), NULL, NULL), 0);
	etcd_client_close(c);
}
struct skip_log {
	struct etcd_client *c;
	int64_t created;	/* the member's revision at the creation */
	int events;
	char first[64];	/* the first event's key */
};

/* Skips the backlog at the creation (ETCD_WATCH_AGAIN); then ends at the first event. */
static int skip_event(const struct etcd_event *ev, void *arg)
{
	struct skip_log *s = arg;
	size_t l;

	if (!ev) {
		s->created = etcd_client_watch_created_rev(s->c);
		return s->events ? 0 : ETCD_WATCH_AGAIN;
	}
	l = ev->kv->key_len < 63 ? ev->kv->key_len : 63;
	memcpy(s->first, ev->kv->key, l);
	s->first[l] = '\0';
	return 1;
}

/*
 * A watch from an old revision learns at its creation how far its member
 * is (the backlog it would send first); a callback that ends it there
 * with ETCD_WATCH_AGAIN gets that back, and a watch from past the backlog
 * sees only what came after.
 */
void test_watch_skip(void)
{
	struct etcd_client *c = client();
	struct skip_log s = { .c = client() };
	int64_t first = 0, last = 0;
	uint8_t end[300];
	char p[128];
	size_t pl, kl;
	const char *wp = key(0, "skip/", &pl);

	memcpy(p, wp, pl);
	for (int i = 0; i < 5; i++) {
		const char *k = key(1, i ? "skip/old" : "skip/first", &kl);

		CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, 0, i ? &last : &first), 0);
	}
	CHECK_EQ_INT(etcd_client_watch_created_rev(s.c), 0);
	/*
	 * A linearizable read through s.c first: its member has then applied
	 * the puts, and the watch starts on the member that answered. Without
	 * it the watch could start on a follower still behind `last`.
	 */
	struct etcd_range_result r;
	CHECK_EQ_INT(etcd_client_range(s.c, p, pl, &(struct etcd_range_opts){ .count_only = true }, &r), 0);
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_watch(s.c, p, pl, end, etcd_prefix_end(p, pl, end), first,
				       skip_event, &s, NULL), ETCD_WATCH_AGAIN);
	CHECK(s.created >= last);	/* the member had the backlog: it would have come first */
	CHECK(s.first[0] == '\0');	/* and none of it did */

	/* from past the backlog: the next put is the first event */
	s.events = 1;
	const char *kn = key(1, "skip/new", &kl);
	CHECK_EQ_INT(etcd_client_put(c, kn, kl, "y", 1, 0, NULL), 0);
	CHECK_EQ_INT(etcd_client_watch(s.c, p, pl, end, etcd_prefix_end(p, pl, end), s.created + 1,
				       skip_event, &s, NULL), 1);
	CHECK(strstr(s.first, "skip/new") != NULL);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, etcd_prefix_end(p, pl, end), NULL, NULL), 0);
	etcd_client_close(s.c);
	etcd_client_close(c);
}

static int count_event(const struct etcd_event *ev, void *arg)
{
	(void)arg;
	return ev ? 1 : 0;	/* the first event ends the watch; "created" does not */
}

/* After compaction, reads and watches from before it give -ESTALE (and the oldest revision left). */
void test_compacted(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	int64_t r1 = 0, r2 = 0, oldest = 0;
	size_t kl;
	const char *k = key(0, "compact", &kl);

	CHECK_EQ_INT(etcd_client_put(c, k, kl, "1", 1, 0, &r1), 0);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "2", 1, 0, &r2), 0);
	CHECK_EQ_INT(etcd_client_compact(c, r2, true), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, &(struct etcd_range_opts){ .revision = r1 }, &r), -ESTALE);
	CHECK(strstr(etcd_client_error(c), "compacted") != NULL);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, &(struct etcd_range_opts){ .revision = r2 }, &r), 0);
	CHECK(r.len == 1 && r.kvs[0].val_len == 1 && r.kvs[0].val[0] == '2');
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_watch(c, k, kl, NULL, 0, r1, count_event, NULL, &oldest), -ESTALE);
	CHECK(oldest >= r2);
	CHECK_EQ_INT(etcd_client_compact(c, r1, false), -ESTALE);	/* already compacted */
	CHECK_EQ_INT(etcd_client_delete_range(c, k, kl, NULL, 0, NULL, NULL), 0);
	etcd_client_close(c);
}
