/*
 * tests/unit/test_etcd_client.c - lib/etcd/etcd_client.c against a LIVE etcd
 * cluster (endpoints in KVFS_ETCD_ENDPOINTS, "HOST:PORT,..."; started by
 * tests/80-etcd-client.bats with scripts/etcd-cluster.sh). Without
 * arguments: every client call as TAP tests. With a verb, one step for the
 * bats suite or the benchmark (tests/unit/etcd_tool.c).
 * Every run works under its own key prefix, so runs never see each other.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "store/etcd/etcd_buf.h"
#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"
#include "tests/unit/unit.h"

const char *endpoints;
char prefix[64];	/* "kvfs-test/<pid>/" */

struct etcd_client *client(void)
{
	struct etcd_client *c = NULL;
	char why[256];
	int rc = etcd_client_open(endpoints, &c, why, sizeof(why));

	if (rc < 0) {
		fprintf(stderr, "# open %s: %s\n", endpoints, why);
		exit(2);
	}
	return c;
}

/* prefix + name, as bytes; *len set. Returns a static buffer of `slot`. */
const char *key(int slot, const char *name, size_t *len)
{
	static char bufs[4][256];

	*len = (size_t)snprintf(bufs[slot], sizeof(bufs[slot]), "%s%s", prefix, name);
	return bufs[slot];
}

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void test_base64(void)
{
	uint8_t in[64], back[64];
	char enc[100];

	for (size_t n = 0; n < sizeof(in); n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (uint8_t)(i * 37 + n);
		size_t el = etcd_b64_encode(in, n, enc);
		CHECK_EQ_INT(el, 4 * ((n + 2) / 3));
		long dl = etcd_b64_decode(enc, el, back);
		CHECK_EQ_INT(dl, n);
		CHECK_MEM(back, n, in, n);
	}
	etcd_b64_encode("foo", 3, enc);
	CHECK(strcmp(enc, "Zm9v") == 0);
	CHECK_EQ_INT(etcd_b64_decode("Zm9", 3, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("Zm!v", 4, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("Z===", 4, back), -EINVAL);
	CHECK_EQ_INT(etcd_b64_decode("YQ==YQ==", 8, back), -EINVAL);
}

static void test_prefix_end(void)
{
	uint8_t out[8];

	CHECK_EQ_INT(etcd_prefix_end("ab", 2, out), 2);
	CHECK_MEM(out, 2, "ac", 2);
	CHECK_EQ_INT(etcd_prefix_end("a\xff\xff", 3, out), 1);
	CHECK_MEM(out, 1, "b", 1);
	CHECK_EQ_INT(etcd_prefix_end("\xff", 1, out), 1);
	CHECK_EQ_INT(out[0], 0);
	CHECK_EQ_INT(etcd_prefix_end("", 0, out), 1);
}

static void test_open_errors(void)
{
	struct etcd_client *c = NULL;
	char why[128] = "";

	CHECK_EQ_INT(etcd_client_open("", &c, why, sizeof(why)), -EINVAL);
	CHECK(c == NULL);
	CHECK(strstr(why, "endpoint") != NULL);
	CHECK_EQ_INT(etcd_client_open("a:1,,b:2", &c, why, sizeof(why)), -EINVAL);
}

/* Binary keys and values (NUL, 0xff) survive; a missing key reads as no kvs. */
static void test_put_get(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	char k[300];
	size_t kl, pl;
	const char *p = key(0, "", &pl);
	const uint8_t val[] = { 'v', 0, 0xff, 'w' };
	int64_t rev = 0;

	memcpy(k, p, pl);
	memcpy(k + pl, "bin\0\xff", 5);
	kl = pl + 5;
	CHECK_EQ_INT(etcd_client_put(c, k, kl, val, sizeof(val), 0, &rev), 0);
	CHECK(rev > 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1) {
		CHECK_MEM(r.kvs[0].key, r.kvs[0].key_len, k, kl);
		CHECK_MEM(r.kvs[0].val, r.kvs[0].val_len, val, sizeof(val));
		/* a NUL follows the bytes (strtol of "9" must not read on into "95") */
		CHECK_EQ_INT(r.kvs[0].val[r.kvs[0].val_len], 0);
		CHECK_EQ_INT(r.kvs[0].mod_rev, rev);
		CHECK_EQ_INT(r.kvs[0].create_rev, rev);
		CHECK_EQ_INT(r.kvs[0].version, 1);
	}
	CHECK(r.revision >= rev);
	etcd_range_result_release(&r);
	/* an empty value is a value, not an absent key */
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "", 0, 0, NULL), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1)
		CHECK_EQ_INT(r.kvs[0].val_len, 0);
	etcd_range_result_release(&r);
	const char *missing = key(1, "missing", &kl);
	CHECK_EQ_INT(etcd_client_range(c, missing, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	CHECK_EQ_INT(r.count, 0);
	etcd_range_result_release(&r);
	etcd_client_close(c);
}

/* Prefix ranges: order, keys_only, limit/more/count, count_only, reads at an old revision. */
static void test_range_options(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	uint8_t end[300];
	char name[32];
	size_t pl, kl, el;
	const char *p = key(0, "r/", &pl);
	int64_t rev5 = 0, rev;

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "r/%02d", 19 - i);	/* written out of order */
		const char *k = key(1, name, &kl);
		CHECK_EQ_INT(etcd_client_put(c, k, kl, name, strlen(name), 0, &rev), 0);
		if (i == 14)
			rev5 = rev;	/* key r/05 as first written */
	}
	el = etcd_prefix_end(p, pl, end);
	struct etcd_range_opts all = { .range_end = end, .range_end_len = el };
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &all, &r), 0);
	CHECK_EQ_INT(r.len, 20);
	for (size_t i = 0; i < r.len; i++) {
		char want[128];

		snprintf(want, sizeof(want), "%sr/%02zu", prefix, i);
		CHECK_MEM(r.kvs[i].key, r.kvs[i].key_len, want, strlen(want));
		CHECK(r.kvs[i].val != NULL);
	}
	etcd_range_result_release(&r);

	struct etcd_range_opts ko = all;
	ko.keys_only = true;
	ko.limit = 5;
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &ko, &r), 0);
	CHECK_EQ_INT(r.len, 5);
	CHECK(r.more);
	CHECK_EQ_INT(r.count, 20);
	if (r.len > 0)
		CHECK(r.kvs[0].val == NULL);
	etcd_range_result_release(&r);

	struct etcd_range_opts co = all;
	co.count_only = true;
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &co, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	CHECK_EQ_INT(r.count, 20);
	etcd_range_result_release(&r);

	/* change r/05, then read it as of the revision that first wrote it */
	const char *k5 = key(1, "r/05", &kl);
	CHECK_EQ_INT(etcd_client_put(c, k5, kl, "new", 3, 0, NULL), 0);
	struct etcd_range_opts old = { .revision = rev5 };
	CHECK_EQ_INT(etcd_client_range(c, k5, kl, &old, &r), 0);
	CHECK_EQ_INT(r.len, 1);
	if (r.len == 1)
		CHECK_MEM(r.kvs[0].val, r.kvs[0].val_len, "r/05", 4);
	etcd_range_result_release(&r);

	int64_t deleted = 0;
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, &deleted, &rev), 0);
	CHECK_EQ_INT(deleted, 20);
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &all, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_delete_range(c, k5, kl, NULL, 0, &deleted, NULL), 0);
	CHECK_EQ_INT(deleted, 0);
	etcd_client_close(c);
}

/* Guards: create_revision 0 (absent), mod_revision, value; the failure branch's range. */
static void test_txn_guards(void)
{
	struct etcd_client *c = client();
	struct etcd_txn_result t;
	size_t kl;
	const char *k = key(0, "txn/a", &kl);
	struct etcd_cmp absent = { .target = ETCD_CMP_CREATE, .result = ETCD_CMP_EQUAL,
				   .key = k, .key_len = kl, .rev = 0 };
	struct etcd_op put1 = { .type = ETCD_OP_PUT, .key = k, .key_len = kl, .val = "1", .val_len = 1 };
	struct etcd_op get = { .type = ETCD_OP_RANGE, .key = k, .key_len = kl };

	CHECK_EQ_INT(etcd_client_txn(c, &absent, 1, &put1, 1, &get, 1, &t), 0);
	CHECK(t.succeeded);
	int64_t created = t.revision;
	etcd_txn_result_release(&t);
	CHECK_EQ_INT(etcd_client_txn(c, &absent, 1, &put1, 1, &get, 1, &t), 0);
	CHECK(!t.succeeded);
	CHECK_EQ_INT(t.len, 1);
	if (t.len == 1 && t.ranges[0].len == 1)
		CHECK_EQ_INT(t.ranges[0].kvs[0].mod_rev, created);
	else
		CHECK(0);
	etcd_txn_result_release(&t);

	struct etcd_cmp mod = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_EQUAL,
				.key = k, .key_len = kl, .rev = created };
	struct etcd_op put2 = put1;
	put2.val = "2";
	CHECK_EQ_INT(etcd_client_txn(c, &mod, 1, &put2, 1, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);
	CHECK_EQ_INT(etcd_client_txn(c, &mod, 1, &put2, 1, NULL, 0, &t), 0);
	CHECK(!t.succeeded);	/* the revision moved on */
	etcd_txn_result_release(&t);

	struct etcd_cmp val = { .target = ETCD_CMP_VALUE, .result = ETCD_CMP_EQUAL,
				.key = k, .key_len = kl, .val = "2", .val_len = 1 };
	CHECK_EQ_INT(etcd_client_txn(c, &val, 1, &get, 1, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);

	/* a range guard: no key under txn/ changed after the newest revision */
	uint8_t end[300];
	size_t pl;
	const char *p = key(1, "txn/", &pl);
	size_t el = etcd_prefix_end(p, pl, end);
	struct etcd_cmp rg = { .target = ETCD_CMP_MOD, .result = ETCD_CMP_LESS, .key = p,
			       .key_len = pl, .range_end = end, .range_end_len = el, .rev = 1LL << 60 };
	CHECK_EQ_INT(etcd_client_txn(c, &rg, 1, NULL, 0, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	etcd_txn_result_release(&t);
	rg.rev = created;	/* txn/a changed after `created`: the guard fails */
	CHECK_EQ_INT(etcd_client_txn(c, &rg, 1, NULL, 0, NULL, 0, &t), 0);
	CHECK(!t.succeeded);
	etcd_txn_result_release(&t);

	/* etcd refuses a key twice in one Txn */
	struct etcd_op twice[2] = { put1, put2 };
	CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, twice, 2, NULL, 0, &t), -EINVAL);
	CHECK(strstr(etcd_client_error(c), "duplicate") != NULL);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

/* 100 puts and a delete in one Txn, all or nothing. */
static void test_txn_many_ops(void)
{
	struct etcd_client *c = client();
	struct etcd_op ops[101];
	char names[100][32];
	size_t kl[100], pl;
	struct etcd_txn_result t;
	struct etcd_range_result r;
	uint8_t end[300];
	const char *p = key(0, "many/", &pl);
	char keys[100][128];

	for (int i = 0; i < 100; i++) {
		snprintf(names[i], sizeof(names[i]), "many/%03d", i);
		const char *k = key(1, names[i], &kl[i]);
		memcpy(keys[i], k, kl[i]);
		ops[i] = (struct etcd_op){ .type = ETCD_OP_PUT, .key = keys[i], .key_len = kl[i],
					   .val = names[i], .val_len = strlen(names[i]) };
	}
	ops[100] = (struct etcd_op){ .type = ETCD_OP_DELETE, .key = "nope", .key_len = 4 };
	CHECK_EQ_INT(etcd_client_txn(c, NULL, 0, ops, 101, NULL, 0, &t), 0);
	CHECK(t.succeeded);
	CHECK_EQ_INT(t.len, 101);
	etcd_txn_result_release(&t);
	size_t el = etcd_prefix_end(p, pl, end);
	struct etcd_range_opts o = { .range_end = end, .range_end_len = el, .count_only = true };
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &o, &r), 0);
	CHECK_EQ_INT(r.count, 100);
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

static void test_leases(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	int64_t id = 0, ttl = 0;
	size_t kl;
	const char *k = key(0, "leased", &kl);

	CHECK_EQ_INT(etcd_client_lease_grant(c, 60, &id, &ttl), 0);
	CHECK(id != 0);
	CHECK_EQ_INT(ttl, 60);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, id, NULL), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK(r.len == 1 && r.kvs[0].lease == id);
	etcd_range_result_release(&r);
	ttl = 0;
	CHECK_EQ_INT(etcd_client_lease_keepalive(c, id, &ttl), 0);
	CHECK(ttl > 0);
	CHECK_EQ_INT(etcd_client_lease_revoke(c, id), 0);
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 0);	/* the lease took its key along */
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_client_lease_keepalive(c, id, &ttl), -ENOENT);
	CHECK_EQ_INT(etcd_client_lease_revoke(c, id), -ENOENT);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, id, NULL), -ENOENT);
	etcd_client_close(c);
}

/* ---- watch ---- */

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
static void test_watch(void)
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

/* A dead first member is skipped; no live member at all is -ECONNREFUSED with a message. */
static void test_failover(void)
{
	struct etcd_client *c = NULL;
	struct etcd_range_result r;
	char list[512], why[128];
	size_t kl;
	const char *k = key(0, "fo", &kl);

	snprintf(list, sizeof(list), "127.0.0.1:1,%s", endpoints);
	CHECK_EQ_INT(etcd_client_open(list, &c, why, sizeof(why)), 0);
	if (!c)
		return;
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, 0, NULL), 0);
	CHECK(strcmp(etcd_client_endpoint(c), "http://127.0.0.1:1") != 0);	/* moved on */
	CHECK_EQ_INT(etcd_client_delete_range(c, k, kl, NULL, 0, NULL, NULL), 0);
	etcd_client_close(c);

	CHECK_EQ_INT(etcd_client_open("127.0.0.1:1,127.0.0.1:2", &c, why, sizeof(why)), 0);
	if (!c)
		return;
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), -ECONNREFUSED);
	CHECK(strstr(etcd_client_error(c), "127.0.0.1") != NULL);
	etcd_client_close(c);
}

/*
 * A member that takes connections and never answers (a listening socket
 * nobody accepts on: the kernel completes the handshake and keeps what is
 * sent): its port, the socket in *fd. -1 when none could be made.
 */
static int silent_member(int *fd)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(*fd, 16) < 0 ||
	    getsockname(*fd, (struct sockaddr *)&a, &al) < 0)
		return -1;
	return ntohs(a.sin_port);
}

/*
 * A hung first member: a read waits for the call's time limit there, then
 * moves on; a write there is -ETIMEDOUT (its outcome is the caller's to
 * find out); either way the member is noted, and every client sharing the
 * health table passes over it without waiting.
 */
static void test_hung_member(void)
{
	struct etcd_health health = { 0 };
	struct etcd_client *c = NULL, *d = NULL, *e = NULL;
	struct etcd_range_result r;
	char list[512], why[128], hung[32];
	size_t kl;
	const char *k = key(0, "hung", &kl);
	int fd, port = silent_member(&fd);
	double t0;

	CHECK(port > 0);
	if (port <= 0)
		return;
	snprintf(hung, sizeof(hung), "http://127.0.0.1:%d", port);
	snprintf(list, sizeof(list), "127.0.0.1:%d,%s", port, endpoints);
	CHECK_EQ_INT(etcd_client_open(list, &c, why, sizeof(why)), 0);
	CHECK_EQ_INT(etcd_client_open(list, &d, why, sizeof(why)), 0);
	CHECK_EQ_INT(etcd_client_open(list, &e, why, sizeof(why)), 0);
	if (!c || !d || !e)
		goto out;
	etcd_client_share_health(c, &health);
	etcd_client_share_health(d, &health);
	etcd_client_set_timeout(c, 300);
	etcd_client_set_timeout(e, 300);
	/* a read: one time limit lost, then the next member answers */
	t0 = now_ms();
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK(now_ms() - t0 >= 250);
	CHECK(strcmp(etcd_client_endpoint(c), hung) != 0);
	etcd_range_result_release(&r);
	/* another client of the same table writes past it at once */
	t0 = now_ms();
	CHECK_EQ_INT(etcd_client_put(d, k, kl, "x", 1, 0, NULL), 0);
	CHECK(now_ms() - t0 < 250);
	CHECK(strcmp(etcd_client_endpoint(d), hung) != 0);
	/* a write sent to the hung member is not sent again elsewhere */
	CHECK_EQ_INT(etcd_client_put(e, k, kl, "y", 1, 0, NULL), -ETIMEDOUT);
	CHECK(strstr(etcd_client_error(e), hung + 7) != NULL);
	CHECK_EQ_INT(etcd_client_range(d, k, kl, NULL, &r), 0);
	CHECK(r.len == 1 && r.kvs[0].val_len == 1 && r.kvs[0].val[0] == 'x');
	etcd_range_result_release(&r);
	/* its own table noted the member too: the next call goes elsewhere */
	t0 = now_ms();
	CHECK_EQ_INT(etcd_client_delete_range(e, k, kl, NULL, 0, NULL, NULL), 0);
	CHECK(now_ms() - t0 < 250);
	etcd_client_close(e);
	/* at the default 10 s limit a read waits ETCD_READ_TRY_MS there, while others may answer */
	e = NULL;
	CHECK_EQ_INT(etcd_client_open(list, &e, why, sizeof(why)), 0);
	if (!e)
		goto out;
	t0 = now_ms();
	CHECK_EQ_INT(etcd_client_range(e, k, kl, NULL, &r), 0);
	CHECK(now_ms() - t0 >= ETCD_READ_TRY_MS - 50 && now_ms() - t0 < ETCD_READ_TRY_MS + 3000);
	etcd_range_result_release(&r);
out:
	etcd_client_close(c);
	etcd_client_close(d);
	etcd_client_close(e);
	close(fd);
}

/*
 * Whether answers renew a 600 ms deadline: calls 400 ms apart, each after
 * the last answer, go on past 600 ms. A call may rightly end at the
 * deadline when its pause and round trip took 600 ms since the last answer
 * (a loaded machine: CI, and 1 of 3 runs at load 30 before this); then
 * the run begins again, 20 runs at most.
 */
static bool deadline_renewed(struct etcd_client *live, const char *k, size_t kl)
{
	struct etcd_range_result r;

	for (int run = 0; run < 20; run++) {
		double begun, last;
		int rc = 0;

		etcd_deadline_begin(600);
		begun = last = now_ms();
		for (int i = 0; i < 3 && rc == 0; i++) {
			usleep(400 * 1000);
			rc = etcd_client_range(live, k, kl, NULL, &r);
			if (rc == 0) {
				etcd_range_result_release(&r);
				last = now_ms();
			}
		}
		if (rc == 0 && !etcd_deadline_passed() && last - begun > 600)
			return true;
		/* ended, and only at the deadline: 600 ms since the last answer */
		CHECK_EQ_INT(rc, -ETIMEDOUT);
		CHECK(now_ms() - last >= 550);
	}
	return false;
}

/*
 * The thread's deadline: every call of a client whose members are all
 * silent ends at it, whatever each call's own limit (a write's 10 s) and
 * however many members it has left to try, and later calls are not sent;
 * an answer gives the operation its whole span again; 0 lifts it.
 */
static void test_deadline(void)
{
	struct etcd_client *c = NULL, *live = NULL;
	struct etcd_range_result r;
	char list[128], why[128];
	size_t kl;
	const char *k = key(0, "deadline", &kl);
	int fd, port = silent_member(&fd);
	double t0;

	CHECK(port > 0);
	if (port <= 0)
		return;
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", port, port);
	CHECK_EQ_INT(etcd_client_open(list, &c, why, sizeof(why)), 0);
	CHECK_EQ_INT(etcd_client_open(endpoints, &live, why, sizeof(why)), 0);
	if (!c || !live)
		goto out;
	etcd_deadline_begin(600);
	t0 = now_ms();
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "x", 1, 0, NULL), -ETIMEDOUT);
	CHECK(now_ms() - t0 >= 550 && now_ms() - t0 < 1500);
	CHECK(strstr(etcd_client_error(c), "no member answered within 0.6 s") != NULL);
	CHECK(etcd_deadline_passed());
	t0 = now_ms();	/* passed: not sent, even to a member that answers */
	CHECK_EQ_INT(etcd_client_range(live, k, kl, NULL, &r), -ETIMEDOUT);
	CHECK(now_ms() - t0 < 100);
	CHECK(deadline_renewed(live, k, kl));
out:
	etcd_deadline_begin(0);
	etcd_client_close(c);
	etcd_client_close(live);
	close(fd);
}

/* Over the raised limit (10 MiB) a request is refused with -E2BIG, nothing written. */
static void test_too_large(void)
{
	struct etcd_client *c = client();
	struct etcd_range_result r;
	size_t n = 11u << 20, kl;
	char *big = malloc(n);
	const char *k = key(0, "huge", &kl);

	CHECK(big != NULL);
	if (!big)
		return;
	memset(big, 'h', n);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, big, n, 0, NULL), -E2BIG);
	CHECK(etcd_client_error(c)[0] != '\0');
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	CHECK_EQ_INT(r.len, 0);
	etcd_range_result_release(&r);
	free(big);
	etcd_client_close(c);
}

static int count_event(const struct etcd_event *ev, void *arg)
{
	(void)arg;
	return ev ? 1 : 0;	/* the first event ends the watch; "created" does not */
}

/* After compaction, reads and watches from before it give -ESTALE (and the oldest revision left). */
static void test_compacted(void)
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

/* ---- the write buffer (store/etcd/etcd_buf.c) ---- */

/* Reads through the buffer: written, deleted (by key or range), untouched. */
static void test_buf_reads(void)
{
	struct etcd_buf *b = NULL;
	const void *v;
	size_t vl;

	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_put(b, "k/a", 3, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "2", 1), 0);
	CHECK_EQ_INT(etcd_buf_put(b, "k/a", 3, "one", 3), 0);	/* last write wins */
	CHECK_EQ_INT(etcd_buf_get(b, "k/a", 3, &v, &vl), 1);
	CHECK_MEM(v, vl, "one", 3);
	CHECK_EQ_INT(etcd_buf_get(b, "k/z", 3, &v, &vl), -ENOENT);
	CHECK_EQ_INT(etcd_buf_del(b, "k/z", 3), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/z", 3, &v, &vl), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, "k/", 2, "k0", 2), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/a", 3, &v, &vl), 0);	/* gone with the range */
	CHECK_EQ_INT(etcd_buf_get(b, "k/never", 7, &v, &vl), 0);	/* covered */
	CHECK_EQ_INT(etcd_buf_get(b, "l", 1, &v, &vl), -ENOENT);
	CHECK_EQ_INT(etcd_buf_put(b, "k/b", 3, "again", 5), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "k/b", 3, &v, &vl), 1);
	CHECK_MEM(v, vl, "again", 5);
	CHECK_EQ_INT(etcd_buf_put(b, "k/empty", 7, NULL, 0), 0);	/* an empty value, not a delete */
	CHECK_EQ_INT(etcd_buf_get(b, "k/empty", 7, &v, &vl), 1);
	CHECK_EQ_INT(vl, 0);
	/* a range to the end of the keyspace (etcd's "\0") covers everything after its start */
	CHECK_EQ_INT(etcd_buf_del_range(b, "m", 1, "", 1), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "zzz", 3, &v, &vl), 0);
	CHECK_EQ_INT(etcd_buf_get(b, "l", 1, &v, &vl), -ENOENT);
	etcd_buf_free(b);
}

/* Lists the keys and values under p at the newest revision as "k=v;..." (k without p). */
static void list_under(struct etcd_client *c, const char *p, size_t pl, char *out, size_t len)
{
	struct etcd_range_result r;
	uint8_t end[300];
	struct etcd_range_opts o = { .range_end = end, .range_end_len = etcd_prefix_end(p, pl, end) };
	size_t n = 0;

	out[0] = '\0';
	if (etcd_client_range(c, p, pl, &o, &r) < 0)
		return;
	for (size_t i = 0; i < r.len && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%.*s=%.*s;",
				      (int)(r.kvs[i].key_len - pl), (const char *)r.kvs[i].key + pl,
				      (int)r.kvs[i].val_len, (const char *)r.kvs[i].val);
	etcd_range_result_release(&r);
}

/* A subtree replaced in one Txn: deleted ranges go out as gaps around the puts inside them. */
static void test_buf_commit_gaps(void)
{
	struct etcd_client *c = client();
	struct etcd_buf *b = NULL;
	char p[128], k[160], got[512];
	uint8_t end[300];
	size_t pl, el;
	bool ok = false;
	int64_t rev = 0;
	const char *bp = key(0, "buf/", &pl);

	memcpy(p, bp, pl);
	el = etcd_prefix_end(p, pl, end);
	for (const char *n = "abcd"; *n; n++) {
		snprintf(k, sizeof(k), "%.*s%c", (int)pl, p, *n);
		CHECK_EQ_INT(etcd_client_put(c, k, strlen(k), "old", 3, 0, NULL), 0);
	}
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	if (!b)
		return;
	CHECK_EQ_INT(etcd_buf_del_range(b, p, pl, end, el), 0);
	snprintf(k, sizeof(k), "%.*sb", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "B", 1), 0);
	snprintf(k, sizeof(k), "%.*se", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "E", 1), 0);
	snprintf(k, sizeof(k), "%.*szz", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_del(b, k, strlen(k)), 0);	/* covered: dropped */
	/* two overlapping ranges merge: [a, c) and [b, d) with a put of bb inside */
	char ka[160], kc[160], kb[160], kd[160];
	snprintf(ka, sizeof(ka), "%.*sa", (int)pl, p);
	snprintf(kb, sizeof(kb), "%.*sb", (int)pl, p);
	snprintf(kc, sizeof(kc), "%.*sc", (int)pl, p);
	snprintf(kd, sizeof(kd), "%.*sd", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_del_range(b, ka, strlen(ka), kc, strlen(kc)), 0);
	CHECK_EQ_INT(etcd_buf_del_range(b, kb, strlen(kb), kd, strlen(kd)), 0);
	snprintf(k, sizeof(k), "%.*sbb", (int)pl, p);
	CHECK_EQ_INT(etcd_buf_put(b, k, strlen(k), "BB", 2), 0);
	CHECK(etcd_buf_ops(b) >= 3);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, &rev), 0);
	CHECK(ok);
	CHECK(rev > 0);
	etcd_buf_free(b);
	/* b was dropped by the second range (put before it), bb and e were put after */
	list_under(c, p, pl, got, sizeof(got));
	CHECK(strcmp(got, "bb=BB;e=E;") == 0);
	if (strcmp(got, "bb=BB;e=E;") != 0)
		fprintf(stderr, "#   got %s\n", got);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	etcd_client_close(c);
}

/* Key guards (present and absent) and range guards fail when another client changed what was read. */
static void test_buf_guards(void)
{
	struct etcd_client *c = client(), *other = client();
	struct etcd_range_result r;
	struct etcd_buf *b = NULL;
	uint8_t end[300];
	char p[128];
	size_t pl, kl, el;
	bool ok = true;
	const char *gp = key(0, "guard/", &pl);

	memcpy(p, gp, pl);
	el = etcd_prefix_end(p, pl, end);
	const char *k = key(1, "guard/k", &kl);
	CHECK_EQ_INT(etcd_client_put(c, k, kl, "v", 1, 0, NULL), 0);

	/* 1: a key read, then changed by another client */
	CHECK_EQ_INT(etcd_client_range(c, k, kl, NULL, &r), 0);
	int64_t mod = r.len ? r.kvs[0].mod_rev : -1;
	etcd_range_result_release(&r);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, k, kl, mod), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, k, kl, mod), 0);	/* read twice: one compare */
	CHECK_EQ_INT(etcd_buf_put(b, k, kl, "mine", 4), 0);
	CHECK_EQ_INT(etcd_client_put(other, k, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);

	/* 2: an absent key read, then created by another client */
	const char *absent = key(2, "guard/new", &kl);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_key(b, absent, kl, 0), 0);
	CHECK_EQ_INT(etcd_buf_put(b, absent, kl, "mine", 4), 0);
	CHECK_EQ_INT(etcd_client_put(other, absent, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);

	/* 3: a range read at R; untouched it commits, a put into it makes it fail */
	CHECK_EQ_INT(etcd_client_range(c, p, pl, &(struct etcd_range_opts){ .range_end = end,
		.range_end_len = el, .keys_only = true }, &r), 0);
	int64_t at = r.revision;
	etcd_range_result_release(&r);
	const char *x = key(3, "elsewhere", &kl);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_range(b, p, pl, end, el, at), 0);
	CHECK_EQ_INT(etcd_buf_put(b, x, kl, "1", 1), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(ok);
	etcd_buf_free(b);
	CHECK_EQ_INT(etcd_buf_new(&b), 0);
	CHECK_EQ_INT(etcd_buf_guard_range(b, p, pl, end, el, at), 0);
	CHECK_EQ_INT(etcd_buf_put(b, x, kl, "2", 1), 0);
	const char *in = key(2, "guard/in", &kl);
	CHECK_EQ_INT(etcd_client_put(other, in, kl, "theirs", 6, 0, NULL), 0);
	CHECK_EQ_INT(etcd_buf_commit(b, c, &ok, NULL), 0);
	CHECK(!ok);
	etcd_buf_free(b);
	CHECK_EQ_INT(etcd_client_delete_range(c, p, pl, end, el, NULL, NULL), 0);
	x = key(3, "elsewhere", &kl);
	CHECK_EQ_INT(etcd_client_delete_range(c, x, kl, NULL, 0, NULL, NULL), 0);
	etcd_client_close(other);
	etcd_client_close(c);
}

int main(int argc, char **argv)
{
	int rc;

	endpoints = getenv("KVFS_ETCD_ENDPOINTS");
	if (!endpoints || !*endpoints) {
		fprintf(stderr, "KVFS_ETCD_ENDPOINTS is not set (scripts/etcd-cluster.sh start)\n");
		return 2;
	}
	snprintf(prefix, sizeof(prefix), "kvfs-test/%d/", (int)getpid());
	if (argc > 1) {
		rc = etcd_tool_run(argc - 1, argv + 1);
		if (rc < 0)
			fprintf(stderr, "unknown verb %s\n", argv[1]);
		return rc < 0 ? 2 : rc;
	}
	TEST(test_base64);
	TEST(test_prefix_end);
	TEST(test_open_errors);
	TEST(test_put_get);
	TEST(test_range_options);
	TEST(test_txn_guards);
	TEST(test_txn_many_ops);
	TEST(test_leases);
	TEST(test_watch);
	TEST(test_failover);
	TEST(test_hung_member);
	TEST(test_deadline);
	TEST(test_too_large);
	TEST(test_compacted);
	TEST(test_buf_reads);
	TEST(test_buf_commit_gaps);
	TEST(test_buf_guards);
	return UNIT_DONE();
}
