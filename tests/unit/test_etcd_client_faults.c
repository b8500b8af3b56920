/*
 * tests/unit/test_etcd_client_faults.c - the client when the cluster fails
 * it: a dead or a hung member, a request's deadline, a value over etcd's
 * request limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "lib/etcd/etcd_client.h"
#include "tests/unit/etcd_test.h"


/* A dead first member is skipped; no live member at all is -ECONNREFUSED with a message. */
void test_failover(void)
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
void test_hung_member(void)
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
void test_deadline(void)
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
void test_too_large(void)
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
