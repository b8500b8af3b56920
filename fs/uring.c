/*
 * fs/uring.c - FUSE over io_uring (-o io_uring): the ring entries, the
 * threads that serve them, the raw io_uring calls under them, and the
 * INIT fields that ask for them. Which requests take this way is
 * transport.c's; the kernel's structures are in uring_int.h. It knows
 * nothing of kvfs (a struct fs_uring_host names the session and the log),
 * so scripts/fuse-floor.c links it too.
 *
 * The protocol (Linux 6.14+, Documentation/filesystems/fuse-io-uring.rst).
 * Once INIT's reply said FUSE_OVER_IO_URING, the daemon registers ring
 * entries with FUSE_IO_URING_CMD_REGISTER, an io_uring command on the
 * /dev/fuse descriptor naming a queue (one per possible CPU: the kernel
 * puts a request on the queue of the CPU its caller runs on) and two
 * buffers, a header (struct fs_uring_header) and a payload. When every
 * queue holds a free entry, the kernel sends every request but forgets and
 * interrupts that way: the command completes with the request in the
 * entry's buffers. The daemon answers into the same buffers and sends
 * FUSE_IO_URING_CMD_COMMIT_AND_FETCH, which delivers the answer and waits
 * for the entry's next request. Notifications and what /dev/fuse still
 * carries stay libfuse's.
 *
 * The threads. Each entry has a thread and an io_uring of its own (single
 * issuer, task work deferred to its own waits), so no lock is shared
 * between entries: a thread waits for its request, hands it to libfuse
 * (fuse_session_process_buf) as if /dev/fuse had given it, and the
 * handler's reply comes back through the daemon's writev (transport.c's),
 * which gives it to fs_uring_reply while this thread is the one serving
 * (thread-local `serving`). Several entries per queue keep requests of one CPU served in
 * parallel, as libfuse's worker threads do on /dev/fuse.
 *
 * The end. Unmounting aborts the connection, and the kernel completes every
 * waiting command with -ENOTCONN; a thread also wakes every second to see
 * fs_uring_stop's flag, for a session ended by a signal while mounted.
 */
#define FUSE_USE_VERSION 312	/* as fs/fs_int.h: this file does without it */
#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fs/uring_int.h"

#define URING_PER_QUEUE 8	/* entries (and threads) per queue */
#define URING_SQE_SIZE 128	/* IORING_SETUP_SQE128: the command needs 24 bytes */
#define URING_WAKE_SEC 1	/* an idle thread looks at the stop flag this often */
/* Room before the payload for the in header and op_in, so a request is one buffer. */
#define URING_HEADROOM 4096

/* One io_uring: the mapped rings of one thread (fields as the kernel lays them out). */
struct uring_ring {
	int fd;
	void *map;		/* SQ and CQ rings, one mapping (IORING_FEAT_SINGLE_MMAP) */
	size_t map_len;
	unsigned char *sqes;	/* sq_entries of URING_SQE_SIZE bytes */
	size_t sqes_len;
	_Atomic unsigned *sq_tail, *cq_head, *cq_tail;
	unsigned sq_mask, cq_mask, *sq_array;
	struct io_uring_cqe *cqes;
};

/* One ring entry and the thread that serves it; only that thread touches it. */
struct uring_ent {
	struct fs_uring *u;
	unsigned qid;
	pthread_t thread;
	bool started;		/* thread is joinable */
	struct uring_ring ring;
	struct fs_uring_header *hdr;	/* heap (aligned) */
	char *buf;		/* heap: URING_HEADROOM, then the payload */
	char *payload;		/* buf + URING_HEADROOM */
	struct iovec iov[2];	/* header, payload: what REGISTER names */
	uint64_t unique;	/* the request being served */
	bool replied;		/* its reply is in the buffers */
};

struct fs_uring {
	struct fs_uring_host host;	/* a copy of the daemon's */
	int fuse_fd;
	size_t payload;
	unsigned nents;
	atomic_bool stop;
	atomic_uint registered;	/* entries the kernel accepted */
	atomic_uint failed;	/* entries that could not register */
	_Atomic uint64_t requests;	/* answered through the rings */
	struct uring_ent ents[];
};

static _Thread_local struct uring_ent *serving;

/* A line for the daemon's log (the host's; it adds the newline). */
__attribute__((format(printf, 3, 4)))
static void uring_log(struct fs_uring *u, int prio, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	u->host.log(u->host.arg, prio, line);
}

/* ---- raw io_uring ---- */

static int ring_setup(unsigned entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int ring_enter(int fd, unsigned submit, unsigned wait, unsigned flags, void *arg,
		      size_t argsz)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, arg, argsz);
}

static void ring_close(struct uring_ring *r)
{
	if (r->sqes)
		munmap(r->sqes, r->sqes_len);
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/* A ring of 128-byte SQEs owned by the calling thread. 0, or -errno. */
static int ring_open(struct uring_ring *r)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
			 IORING_SETUP_DEFER_TASKRUN,
	};
	size_t sq_len, cq_len;
	unsigned char *m;
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = ring_setup(2, &p);
	if (r->fd < 0)
		return -errno;
	ret = -EOPNOTSUPP;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP) || !(p.features & IORING_FEAT_EXT_ARG))
		goto out_close;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->map_len = sq_len > cq_len ? sq_len : cq_len;
	m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		 IORING_OFF_SQ_RING);
	if (m == MAP_FAILED) {
		ret = -errno;
		r->map = NULL;
		goto out_close;
	}
	r->map = m;
	r->sqes_len = p.sq_entries * URING_SQE_SIZE;
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		       r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		ret = -errno;
		r->sqes = NULL;
		goto out_close;
	}
	r->sq_tail = (_Atomic unsigned *)(m + p.sq_off.tail);
	r->sq_mask = *(unsigned *)(m + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(m + p.sq_off.array);
	r->cq_head = (_Atomic unsigned *)(m + p.cq_off.head);
	r->cq_tail = (_Atomic unsigned *)(m + p.cq_off.tail);
	r->cq_mask = *(unsigned *)(m + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(m + p.cq_off.cqes);
	return 0;
out_close:
	ring_close(r);
	return ret;
}

/* Queues one FUSE command for the next ring_wait (one is ever outstanding). */
static void ring_queue_cmd(struct uring_ring *r, struct uring_ent *e, unsigned op,
			   uint64_t commit_id)
{
	unsigned tail = atomic_load_explicit(r->sq_tail, memory_order_relaxed);
	unsigned idx = tail & r->sq_mask;
	struct io_uring_sqe *sqe = (struct io_uring_sqe *)(r->sqes + idx * URING_SQE_SIZE);
	struct fs_uring_cmd *cmd = (struct fs_uring_cmd *)sqe->cmd;

	memset(sqe, 0, URING_SQE_SIZE);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->u->fuse_fd;
	sqe->cmd_op = op;
	sqe->addr = (uint64_t)(uintptr_t)e->iov;
	sqe->len = 2;
	sqe->user_data = (uint64_t)(uintptr_t)e;
	cmd->qid = (uint16_t)e->qid;
	cmd->commit_id = commit_id;
	r->sq_array[idx] = idx;
	atomic_store_explicit(r->sq_tail, tail + 1, memory_order_release);
}

/*
 * Submits what is queued and waits for the command's completion: its
 * result (>= 0: a request is in the buffers), or -EINTR when the stop
 * flag was seen while waiting.
 */
static int ring_wait(struct uring_ent *e, unsigned submit)
{
	struct uring_ring *r = &e->ring;
	struct __kernel_timespec ts = { .tv_sec = URING_WAKE_SEC };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };

	for (;;) {
		unsigned head = atomic_load_explicit(r->cq_head, memory_order_relaxed);
		int n, res;

		if (head != atomic_load_explicit(r->cq_tail, memory_order_acquire)) {
			res = r->cqes[head & r->cq_mask].res;
			atomic_store_explicit(r->cq_head, head + 1, memory_order_release);
			return res;
		}
		if (!submit && atomic_load(&e->u->stop))
			return -EINTR;
		n = ring_enter(r->fd, submit, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
			       &arg, sizeof(arg));
		if (n > 0)
			submit -= (unsigned)n < submit ? (unsigned)n : submit;
		else if (n < 0 && errno != ETIME && errno != EINTR && errno != EBUSY)
			return -errno;
	}
}

/* ---- serving ---- */

/*
 * The request in e's buffers as libfuse reads /dev/fuse: the in header and
 * op_in moved into the headroom just before the payload, so the payload
 * (a write's bytes) is not copied. 0, or -EPROTO for a request that does
 * not add up.
 */
static int ent_request(struct uring_ent *e, struct fuse_buf *fb)
{
	struct fuse_in_header in;
	size_t payload = e->hdr->ent.payload_sz, op;
	char *start;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	if (payload > e->u->payload || in.len < sizeof(in) + payload ||
	    in.len - sizeof(in) - payload > FS_URING_OP_IN)
		return -EPROTO;
	op = in.len - sizeof(in) - payload;
	start = e->payload - op - sizeof(in);
	memcpy(start + sizeof(in), e->hdr->op_in, op);
	memcpy(start, &in, sizeof(in));
	memset(fb, 0, sizeof(*fb));
	fb->mem = start;
	fb->size = in.len;
	fb->fd = -1;
	e->unique = in.unique;
	return 0;
}

/* An answer with no argument (the daemon's own, when libfuse's could not be carried). */
static void ent_reply_error(struct uring_ent *e, int err)
{
	struct fuse_out_header out = {
		.len = sizeof(out), .error = -err, .unique = e->unique,
	};

	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ent.payload_sz = 0;
	e->replied = true;
}

ssize_t fs_uring_reply(const struct iovec *iov, int count)
{
	struct uring_ent *e = serving;
	const struct fuse_out_header *out = iov[0].iov_base;
	size_t used = 0;

	if (!e || e->replied || count < 1 || iov[0].iov_len < sizeof(*out) ||
	    out->unique != e->unique)
		return -2;
	for (int i = 1; i < count; i++) {
		if (iov[i].iov_len > e->u->payload - used) {
			ent_reply_error(e, EIO);
			errno = EINVAL;
			return -1;
		}
		/* memmove: an argument may lie in the request's own payload */
		memmove(e->payload + used, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
	}
	memcpy(e->hdr->in_out, out, sizeof(*out));
	e->hdr->ent.payload_sz = (uint32_t)used;
	e->replied = true;
	return (ssize_t)(sizeof(*out) + used);
}

/* Serves the request in e's buffers; afterwards its answer is there. */
static void ent_serve(struct uring_ent *e)
{
	struct fs_uring *u = e->u;
	struct fuse_buf fb;

	e->replied = false;
	if (ent_request(e, &fb) < 0) {
		uring_log(u, LOG_ERR, "io_uring: a request that does not add up (queue %u)",
			  e->qid);
		ent_reply_error(e, EIO);
		return;
	}
	if (atomic_load(&u->stop)) {	/* the session has ended: no handler runs now */
		ent_reply_error(e, ENOTCONN);
		return;
	}
	if (u->host.note)
		u->host.note(u->host.arg, fb.mem, fb.size);
	serving = e;
	fuse_session_process_buf(u->host.se, &fb);
	serving = NULL;
	if (!e->replied) {	/* kvfs answers every request before its handler returns */
		uring_log(u, LOG_ERR, "io_uring: request %llu left unanswered",
			  (unsigned long long)e->unique);
		ent_reply_error(e, EIO);
	}
	atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
}

static void ent_note_failure(struct uring_ent *e, const char *what, int err)
{
	if (atomic_fetch_add(&e->u->failed, 1) == 0)
		uring_log(e->u, LOG_WARNING, "io_uring: %s (queue %u): %s; requests stay on "
			  "/dev/fuse", what, e->qid, strerror(-err));
}

static void *ent_main(void *arg)
{
	struct uring_ent *e = arg;
	int res;

	res = ring_open(&e->ring);
	if (res < 0) {
		ent_note_failure(e, "cannot set up a ring", res);
		return NULL;
	}
	ring_queue_cmd(&e->ring, e, FS_URING_CMD_REGISTER, 0);
	/* a refused registration completes at once; an accepted one when a request comes */
	res = ring_enter(e->ring.fd, 1, 0, 0, NULL, 0);
	if (res != 1) {
		ent_note_failure(e, "cannot register", res < 0 ? -errno : -EAGAIN);
		goto out_ring;
	}
	atomic_fetch_add(&e->u->registered, 1);
	for (unsigned submit = 0;; submit = 1) {
		res = ring_wait(e, submit);
		if (res < 0)
			break;
		ent_serve(e);
		ring_queue_cmd(&e->ring, e, FS_URING_CMD_COMMIT_AND_FETCH, e->unique);
	}
	/* -ENOTCONN: unmounted; -EINTR: stopped; anything else is a refusal worth a line */
	if (res != -ENOTCONN && res != -EINTR && res != -ECONNABORTED && res != -ECANCELED) {
		atomic_fetch_sub(&e->u->registered, 1);
		ent_note_failure(e, "the ring ended", res);
	}
out_ring:
	ring_close(&e->ring);
	return NULL;
}

/* ---- INIT ---- */

uint64_t fs_uring_init_offered(const void *req, size_t len)
{
	const struct fuse_in_header *in = req;
	const struct fuse_init_in *arg = (const void *)(in + 1);
	uint64_t flags;

	if (len < sizeof(*in) + offsetof(struct fuse_init_in, flags2) ||
	    in->opcode != FUSE_INIT || arg->major != 7)
		return 0;	/* a major above 7 is answered and asked again */
	flags = arg->flags;
	if ((flags & FUSE_INIT_EXT) && len >= sizeof(*in) + sizeof(*arg))
		flags |= (uint64_t)arg->flags2 << 32;
	return flags;
}

/* Asks for the rings in INIT's reply argument: the payload they need (see the header). */
static size_t init_ask_uring(struct fuse_init_out *arg, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), payload = 8192;

	if (!(arg->flags & FUSE_INIT_EXT) ||
	    len < offsetof(struct fuse_init_out, flags2) + sizeof(arg->flags2))
		return 0;
	arg->flags2 |= (uint32_t)(FUSE_OVER_IO_URING >> 32);
	if (arg->max_write > payload)
		payload = arg->max_write;
	if ((arg->flags & FUSE_MAX_PAGES) && arg->max_pages * page > payload)
		payload = arg->max_pages * page;
	return payload;
}

size_t fs_uring_init_amend(struct iovec *iov, int count, uint64_t offered, uint64_t add,
			   bool uring)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	struct fuse_init_out *arg;

	if (count < 2 || out->error != 0 ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, max_background))
		return 0;
	arg = iov[1].iov_base;
	if (arg->major != 7)
		return 0;
	arg->flags |= (uint32_t)(offered & add);
	if (!uring || !(offered & FUSE_OVER_IO_URING))
		return 0;
	return init_ask_uring(arg, iov[1].iov_len);
}

/* ---- the set of entries ---- */

/* Queues the kernel keeps: one per possible CPU (the highest in /sys's list, plus one). */
static unsigned possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char line[256], *p;
	unsigned long top = 0;

	if (!f)
		return (unsigned)sysconf(_SC_NPROCESSORS_CONF);
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	for (p = line; *p;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (v > top)
			top = v;
		p = end + (*end == ',' || *end == '-');
	}
	return (unsigned)top + 1;
}

static int ent_alloc(struct uring_ent *e, size_t payload)
{
	if (posix_memalign((void **)&e->hdr, 64, sizeof(*e->hdr)) != 0)
		return -ENOMEM;
	memset(e->hdr, 0, sizeof(*e->hdr));
	/* page-aligned payload; its pages are touched only as requests use them */
	if (posix_memalign((void **)&e->buf, 4096, URING_HEADROOM + payload) != 0) {
		free(e->hdr);
		e->hdr = NULL;
		return -ENOMEM;
	}
	e->payload = e->buf + URING_HEADROOM;
	e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
	e->iov[1] = (struct iovec){ e->payload, payload };
	return 0;
}

static void uring_free(struct fs_uring *u)
{
	for (unsigned i = 0; i < u->nents; i++) {
		free(u->ents[i].hdr);
		free(u->ents[i].buf);
	}
	free(u);
}

int fs_uring_start(const struct fs_uring_host *host, size_t payload, struct fs_uring **out)
{
	unsigned nqueues = possible_cpus(), nents = nqueues * URING_PER_QUEUE;
	struct fs_uring *u;
	sigset_t all, old;
	int ret = 0;

	if (nqueues == 0 || nqueues > 1024)
		return -EINVAL;
	u = calloc(1, sizeof(*u) + nents * sizeof(u->ents[0]));
	if (!u)
		return -ENOMEM;
	u->host = *host;
	u->fuse_fd = fuse_session_fd(host->se);
	u->payload = payload;
	u->nents = nents;
	for (unsigned i = 0; i < nents && ret == 0; i++) {
		u->ents[i].u = u;
		u->ents[i].qid = i % nqueues;
		ret = ent_alloc(&u->ents[i], payload);
	}
	if (ret < 0) {
		uring_free(u);
		return ret;
	}
	/* the ring threads take no signal: libfuse's handlers end the session */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned i = 0; i < nents; i++) {
		struct uring_ent *e = &u->ents[i];

		e->started = pthread_create(&e->thread, NULL, ent_main, e) == 0;
		if (!e->started)
			ent_note_failure(e, "cannot start a thread", -EAGAIN);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	uring_log(u, LOG_INFO, "io_uring: %u queues of %u entries, %zu-byte payloads",
		  nqueues, URING_PER_QUEUE, payload);
	*out = u;
	return 0;
}

void fs_uring_stop(struct fs_uring *u)
{
	if (!u)
		return;
	atomic_store(&u->stop, true);
	for (unsigned i = 0; i < u->nents; i++)
		if (u->ents[i].started)
			pthread_join(u->ents[i].thread, NULL);
	uring_log(u, LOG_INFO, "io_uring: %llu requests served through the rings",
		  (unsigned long long)atomic_load(&u->requests));
	uring_free(u);
}

bool fs_uring_serving(struct fs_uring *u)
{
	return u && atomic_load(&u->failed) == 0 && atomic_load(&u->registered) == u->nents;
}
