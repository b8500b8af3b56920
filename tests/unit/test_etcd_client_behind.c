/*
 * tests/unit/test_etcd_client_behind.c - a watch on a member that is
 * behind: one that serves the stream but stops answering the question
 * whether it is current (as one cut off with this host does while it
 * catches up after a heal), played by a small HTTP server of the test's.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"

#define BEHIND_CONNS 16

/*
 * The member behind: creates every watch (and sends nothing after), and
 * answers the first `answered` questions (/v3/kv/range) of all it gets;
 * the rest it reads and leaves unanswered.
 */
struct behind {
	int listen_fd, wake[2];
	int conns[BEHIND_CONNS];
	int answered;	/* questions still to be answered */
	atomic_int questions;	/* questions read */
	pthread_t thread;
};

static void send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/*
 * Reads one request's head and body from fd (curl sends both at once, and
 * small) and answers it: false when the connection ended.
 */
static bool behind_request(struct behind *b, int fd)
{
	static const char created[] = "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n";
	static const char count[] = "{\"header\":{\"revision\":\"5\"},\"count\":\"0\"}";
	char req[4096], out[512];
	ssize_t n = recv(fd, req, sizeof(req) - 1, 0);

	if (n <= 0)
		return false;
	req[n] = '\0';
	if (strncmp(req, "POST /v3/watch", 14) == 0) {
		snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n", strlen(created), created);
		send_all(fd, out);
	} else if (strncmp(req, "POST /v3/kv/range", 17) == 0) {
		atomic_fetch_add(&b->questions, 1);
		if (b->answered > 0) {
			b->answered--;
			snprintf(out, sizeof(out), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
				 "Content-Length: %zu\r\n\r\n%s", strlen(count), count);
			send_all(fd, out);
		}
	}
	return true;
}

static void *behind_serve(void *arg)
{
	struct behind *b = arg;

	for (;;) {
		struct pollfd p[BEHIND_CONNS + 2];
		nfds_t n = 0;

		p[n++] = (struct pollfd){ .fd = b->wake[0], .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = b->listen_fd, .events = POLLIN };
		for (int i = 0; i < BEHIND_CONNS; i++)
			if (b->conns[i] >= 0)
				p[n++] = (struct pollfd){ .fd = b->conns[i], .events = POLLIN };
		if (poll(p, n, -1) < 0 || (p[0].revents & POLLIN))
			return NULL;
		if (p[1].revents & POLLIN) {
			int fd = accept(b->listen_fd, NULL, NULL);

			for (int i = 0; fd >= 0 && i < BEHIND_CONNS; i++)
				if (b->conns[i] < 0) {
					b->conns[i] = fd;
					fd = -1;
				}
			if (fd >= 0)
				close(fd);	/* (more than the test makes) */
		}
		for (nfds_t j = 2; j < n; j++) {
			if (!(p[j].revents & (POLLIN | POLLHUP)) || behind_request(b, p[j].fd))
				continue;
			for (int i = 0; i < BEHIND_CONNS; i++)
				if (b->conns[i] == p[j].fd)
					b->conns[i] = -1;
			close(p[j].fd);
		}
	}
}

/* Starts the member behind on a port of loopback: the port, or -1. */
static int behind_start(struct behind *b, int answered)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(b, 0, sizeof(*b));
	b->answered = answered;
	for (int i = 0; i < BEHIND_CONNS; i++)
		b->conns[i] = -1;
	b->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (b->listen_fd < 0 || pipe(b->wake) < 0)
		return -1;
	if (bind(b->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(b->listen_fd, 16) < 0 ||
	    getsockname(b->listen_fd, (struct sockaddr *)&a, &al) < 0 ||
	    pthread_create(&b->thread, NULL, behind_serve, b) != 0)
		return -1;
	return ntohs(a.sin_port);
}

static void behind_stop(struct behind *b)
{
	(void)!write(b->wake[1], "x", 1);
	pthread_join(b->thread, NULL);
	for (int i = 0; i < BEHIND_CONNS; i++)
		if (b->conns[i] >= 0)
			close(b->conns[i]);
	close(b->listen_fd);
	close(b->wake[0]);
	close(b->wake[1]);
}

/* Ends the watch at its creation: where does a stream start? */
static int stop_at_created(const struct etcd_event *ev, void *arg)
{
	(void)arg;
	return ev == NULL ? 1 : 0;
}

static int no_events(const struct etcd_event *ev, void *arg)
{
	(void)ev, (void)arg;
	return 0;
}

/*
 * A watch whose member answered its first question at once and not its
 * second is left for another member once the second is slow (500 ms, not
 * its 2 s limit), and the next watch starts on the member that answered.
 * Before 2026-11-30 the question held the watch's thread its whole 2 s
 * (the watch ended 4 s after it began, with -ETIMEDOUT); after a heal
 * that was the member cut off with the host, up to 2 s more behind.
 */
void test_watch_moves(void)
{
	struct behind b;
	struct etcd_client *c = NULL;
	char list[512], why[128], behind_ep[40];
	size_t kl;
	const char *k = key(0, "moves", &kl);
	int port = behind_start(&b, 1), rc;
	size_t members = 2;	/* it, and the cluster's */
	double t0, took;

	CHECK(port > 0);
	if (port <= 0)
		return;
	snprintf(behind_ep, sizeof(behind_ep), "http://127.0.0.1:%d", port);
	snprintf(list, sizeof(list), "127.0.0.1:%d,%s", port, endpoints);
	CHECK_EQ_INT(etcd_client_open(list, &c, why, sizeof(why)), 0);
	if (!c)
		goto out;
	for (const char *p = endpoints; *p; p++)
		members += *p == ',';
	etcd_client_spread(c, members - 1);	/* a first stream starts after the last: on the first */
	t0 = now_ms();
	rc = etcd_client_watch(c, k, kl, NULL, 0, 0, no_events, NULL, NULL);
	took = now_ms() - t0;
	CHECK_EQ_INT(rc, ETCD_WATCH_MOVED);
	/* its second question is sent ETCD_CONFIRM_MS after the first answer */
	CHECK(took >= ETCD_CONFIRM_MS + ETCD_QUESTION_TURN_MS - 50);
	CHECK(took < ETCD_CONFIRM_MS + ETCD_PROBE_MS - 300);
	CHECK(atomic_load(&b.questions) == 2);
	CHECK(strstr(etcd_client_error(c), "did not answer while another member did") != NULL);
	if (took >= ETCD_CONFIRM_MS + ETCD_PROBE_MS - 300)
		fprintf(stderr, "# the watch ended after %.0f ms: %s\n", took, etcd_client_error(c));
	/* the next stream: on the member that answered */
	CHECK_EQ_INT(etcd_client_watch(c, k, kl, NULL, 0, 0, stop_at_created, NULL, NULL), 1);
	CHECK(strcmp(etcd_client_endpoint(c), behind_ep) != 0);
out:
	etcd_client_close(c);
	behind_stop(&b);
}

/* Cancels a watch after `ms`: one that is kept runs until then. */
struct canceller {
	struct etcd_client *c;
	int ms;
	pthread_t thread;
};

static void *cancel_later(void *arg)
{
	struct canceller *k = arg;

	usleep((useconds_t)k->ms * 1000);
	etcd_client_cancel(k->c);
	return NULL;
}

/*
 * A member that stopped answering its questions is left with -ETIMEDOUT,
 * and the doubt it leaves is for the next stream's member to clear: a
 * current one answers its own question and keeps the watch. Before
 * 2026-11-30's review it was left at once with ETCD_WATCH_MOVED when the
 * other question's member answered first, and passed over ETCD_DOWN_MS by
 * every client sharing the table.
 */
void test_watch_doubt_next(void)
{
	struct behind b;
	struct etcd_health h = { 0 };
	struct etcd_client *c = NULL;
	struct canceller k = { .ms = 1500 };
	char list[512], why[128], behind_ep[40];
	size_t kl;
	const char *k_ = key(0, "doubt", &kl);
	int port = behind_start(&b, 0), rc;
	size_t members = 2;	/* it, and the cluster's */

	CHECK(port > 0);
	if (port <= 0)
		return;
	for (const char *p = endpoints; *p; p++)
		members += *p == ',';
	snprintf(behind_ep, sizeof(behind_ep), "http://127.0.0.1:%d", port);
	snprintf(list, sizeof(list), "127.0.0.1:%d,%s", port, endpoints);
	CHECK_EQ_INT(etcd_client_open(list, &c, why, sizeof(why)), 0);
	if (!c || members < 3)
		goto out;	/* (the other question needs a third member) */
	etcd_client_share_health(c, &h);
	etcd_client_spread(c, members - 1);	/* a first stream starts after the last: on the first */
	CHECK_EQ_INT(etcd_client_watch(c, k_, kl, NULL, 0, 0, no_events, NULL, NULL), -ETIMEDOUT);
	CHECK(strcmp(etcd_client_endpoint(c), behind_ep) == 0);
	/*
	 * The next stream begins later than the other question's turn (the
	 * feed waits 200 ms, then connects): that question is asked at once.
	 */
	usleep(ETCD_QUESTION_TURN_MS / 2 * 1000 + 50000);
	/* the next stream, on the cluster's first member: current, kept until cancelled */
	k.c = c;
	CHECK(pthread_create(&k.thread, NULL, cancel_later, &k) == 0);
	rc = etcd_client_watch(c, k_, kl, NULL, 0, 0, no_events, NULL, NULL);
	pthread_join(k.thread, NULL);
	CHECK_EQ_INT(rc, -ECANCELED);
	if (rc != -ECANCELED)
		fprintf(stderr, "# the second watch: %s\n", etcd_client_error(c));
	CHECK(atomic_load(&h.down_until_ns[1]) == 0);
out:
	etcd_client_close(c);
	behind_stop(&b);
}
