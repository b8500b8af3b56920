/*
 * fs/transport.c - the daemon's own reads and writes of /dev/fuse (libfuse's
 * custom io), for what libfuse 3.14 does not carry: the INIT flags it never
 * sends, and the set-ID clearing flags of a write or an open, which it reads
 * and drops before the handler sees the request.
 *
 * INIT. libfuse 3.14 takes the kernel's FUSE_PARALLEL_DIROPS into
 * conn->capable and conn->want but never puts it in the reply (fixed in
 * 3.17.1), so the kernel serializes the lookups and readdirs of one
 * directory; and it knows nothing of FUSE_HANDLE_KILLPRIV_V2, so the kernel
 * asks for security.capability before each write and clears set-ID bits
 * itself with a getattr and a setattr. writev below adds both to the INIT
 * reply when the kernel offered them (read saw the request). Neither
 * changes what libfuse parses: parallel directory operations change only
 * the kernel's locking (kvfs's handlers already run in parallel across
 * directories), and the set-ID flags travel in fields libfuse ignores
 * (fuse_write_in.write_flags, fuse_open_in.open_flags) or passes on
 * (fuse_setattr_in.valid's FATTR_KILL_SUIDGID is FUSE_SET_ATTR_KILL_SUID).
 *
 * The side channel. libfuse's multi-threaded loop hands the request a
 * worker thread read to that same thread's handler, before that thread
 * reads again (fuse_do_work in lib/fuse_loop_mt.c: receive, then process).
 * So what read notes in thread-local storage is about the request the
 * thread is serving, and the handlers of write and open ask for it
 * (fs_req_kills_suidgid); the node id is compared as a check. No splice:
 * libfuse reads every request through read below. A ring thread notes its
 * request the same way before serving it (transport_note, the rings' host
 * call).
 *
 * io_uring (-o io_uring, uring.c). INIT's reply also says
 * FUSE_OVER_IO_URING when the kernel offered it, and once that reply is
 * written the rings are registered. From then on writev gives the reply of
 * a request a ring thread serves to that ring (fs_uring_reply); every other
 * write (notifications, what /dev/fuse still carries) goes to /dev/fuse.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fs_int.h"
#include "fs/uring_int.h"

/* The fuse module's switch for FUSE over io_uring (Linux 6.14+, root may write Y). */
#define TRANSPORT_URING_PARAM "/sys/module/fuse/parameters/enable_uring"

/* The INIT flags kvfs adds to libfuse's reply, when the kernel offers them. */
#define TRANSPORT_ADDED_FLAGS (FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2)

/*
 * The request this thread read last: the one it serves (see above). Only
 * a write or an open of a node that asked the daemon to clear set-ID bits
 * is noted; any other request clears it.
 */
static _Thread_local struct {
	uint64_t nodeid;
	bool kill;
} served;

/* A write or open that asks for set-ID bits to be cleared (HANDLE_KILLPRIV_V2). */
static bool asks_kill(const struct fuse_in_header *in, size_t len)
{
	if (in->opcode == FUSE_WRITE && len >= sizeof(*in) + sizeof(struct fuse_write_in))
		return ((const struct fuse_write_in *)(in + 1))->write_flags &
		       FUSE_WRITE_KILL_SUIDGID;
	if (in->opcode == FUSE_OPEN && len >= sizeof(*in) + sizeof(struct fuse_open_in))
		return ((const struct fuse_open_in *)(in + 1))->open_flags &
		       FUSE_OPEN_KILL_SUIDGID;
	return false;
}

/* The request this thread is about to serve (read here, or by a ring thread). */
static void transport_note(void *userdata, const void *buf, size_t len)
{
	struct fs_ctx *ctx = userdata;
	const struct fuse_in_header *in = buf;
	uint64_t offered;

	served.kill = false;
	if (len < sizeof(*in))
		return;
	if ((offered = fs_uring_init_offered(in, len)) != 0) {
		atomic_store(&ctx->transport.offered, offered);
		atomic_store(&ctx->transport.init_unique, in->unique);
	}
	served.kill = asks_kill(in, len);
	served.nodeid = in->nodeid;
}

static ssize_t transport_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);

	/*
	 * A read that took a request as the unmount shut the connection
	 * down fails with ECONNABORTED (the kernel's fuse_dev_do_read), not
	 * ENODEV: the same end, which libfuse would log and count as a
	 * failure (exit 1 after a plain fusermount3 -u, with releases still
	 * queued). The rings take it as the end too (uring.c).
	 */
	if (n < 0 && errno == ECONNABORTED)
		errno = ENODEV;
	/* below a header: libfuse reports the error (errno is read's) */
	transport_note(userdata, buf, n > 0 ? (size_t)n : 0);
	return n;
}

/*
 * INIT's reply (iov[0] its header): libfuse's flags, and those the kernel
 * offered that libfuse cannot send. The payload size the rings need, or 0
 * when none are wanted or the kernel cannot have them (said in the log).
 */
static size_t amend_init(struct fs_ctx *ctx, struct iovec *iov, int count)
{
	uint64_t offered = atomic_load(&ctx->transport.offered);
	bool uring = ctx->transport.want_uring;
	size_t payload = fs_uring_init_amend(iov, count, offered, TRANSPORT_ADDED_FLAGS, uring);

	if (uring && !payload && ctx->transport.need_uring)
		fs_log(ctx, LOG_WARNING, "io_uring: the kernel did not offer FUSE over io_uring at "
		       "INIT (is %s Y?): serving through /dev/fuse", TRANSPORT_URING_PARAM);
	else if (uring && !payload)
		fs_trace(ctx, "io_uring: not offered at INIT: serving through /dev/fuse");
	fs_trace(ctx, "init: kernel offered 0x%llx, kvfs added 0x%llx",
		 (unsigned long long)offered, (unsigned long long)(offered & TRANSPORT_ADDED_FLAGS));
	return payload;
}

/* A line of the rings' for the daemon's log. */
static void transport_log(void *userdata, int prio, const char *line)
{
	fs_log(userdata, prio, "%s", line);
}

/* INIT's reply: amended, written, and then (-o io_uring) the rings registered. */
static ssize_t write_init(struct fs_ctx *ctx, int fd, struct iovec *iov, int count)
{
	const struct fs_uring_host host = {
		.se = ctx->se, .arg = ctx, .log = transport_log, .note = transport_note,
	};
	size_t payload = amend_init(ctx, iov, count);
	struct fs_uring *u;
	ssize_t n;
	int ret;

	atomic_store(&ctx->transport.init_done, true);
	n = writev(fd, iov, count);
	/* the kernel took the reply in writev: registering is allowed from now on */
	if (n < 0 || !payload)
		return n;
	ret = fs_uring_start(&host, payload, &u);
	if (ret < 0)
		fs_log(ctx, LOG_WARNING, "io_uring: %s: serving through /dev/fuse",
		       strerror(-ret));
	else
		atomic_store(&ctx->transport.uring, u);
	return n;
}

static ssize_t transport_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs_ctx *ctx = userdata;
	uint64_t init = atomic_load(&ctx->transport.init_unique);
	ssize_t n = fs_uring_reply(iov, count);

	if (n != -2)
		return n;	/* a ring's request: its thread commits the reply */
	/* INIT's reply, once; notifications are unique 0, INIT never is */
	if (init != 0 && !atomic_load(&ctx->transport.init_done) && count >= 1 &&
	    iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == init)
		return write_init(ctx, fd, iov, count);
	return writev(fd, iov, count);
}

int fs_transport_start(struct fs_ctx *ctx)
{
	static const struct fuse_custom_io io = {
		.read = transport_read,
		.writev = transport_writev,
	};
	int ret = fuse_session_custom_io(ctx->se, &io, fuse_session_fd(ctx->se));

	if (ret < 0)
		fs_log(ctx, LOG_WARNING, "libfuse's own transport: %s; lookups in one directory "
		       "run one at a time", strerror(-ret));
	return ret;
}

bool fs_req_kills_suidgid(fuse_ino_t ino)
{
	return served.kill && served.nodeid == ino;
}

/* The fuse module's enable_uring: its first character, or EOF when there is none. */
static int uring_param(void)
{
	FILE *f = fopen(TRANSPORT_URING_PARAM, "re");
	int c;

	if (!f)
		return EOF;
	c = fgetc(f);
	fclose(f);
	return c;
}

bool fs_transport_uring_on(void)
{
	return uring_param() == 'Y';
}

int fs_transport_check_uring(void)
{
	int c = uring_param();

	if (c == EOF) {
		fprintf(stderr, "kvfs: mount: io_uring: this kernel has no FUSE over io_uring "
			"(no %s: Linux 6.14 or later with CONFIG_FUSE_IO_URING, fuse loaded)\n",
			TRANSPORT_URING_PARAM);
		return -1;
	}
	if (c != 'Y') {
		fprintf(stderr, "kvfs: mount: io_uring: FUSE over io_uring is off in this kernel: "
			"%s is N (root can write Y to it); mount without -o io_uring to use "
			"/dev/fuse\n", TRANSPORT_URING_PARAM);
		return -1;
	}
	return 0;
}

void fs_transport_stop(struct fs_ctx *ctx)
{
	fs_uring_stop(atomic_exchange(&ctx->transport.uring, NULL));
}

size_t fs_transport_format(struct fs_ctx *ctx, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "transport %s\n",
			 fs_uring_serving(atomic_load(&ctx->transport.uring)) ? "io_uring" : "dev_fuse");

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
