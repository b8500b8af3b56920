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
 * libfuse reads every request through read below.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fs_int.h"

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

/* The INIT request: which flags the kernel offered, and the reply to amend. */
static void note_init(struct fs_ctx *ctx, const struct fuse_in_header *in, size_t len)
{
	const struct fuse_init_in *arg = (const void *)(in + 1);
	uint64_t flags;

	if (len < sizeof(*in) + offsetof(struct fuse_init_in, flags2) || arg->major != 7)
		return;	/* a major above 7 is answered and asked again */
	flags = arg->flags;
	if ((flags & FUSE_INIT_EXT) && len >= sizeof(*in) + sizeof(*arg))
		flags |= (uint64_t)arg->flags2 << 32;
	atomic_store(&ctx->transport.offered, flags);
	atomic_store(&ctx->transport.init_unique, in->unique);
}

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

static ssize_t transport_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	served.kill = false;
	if (n < (ssize_t)sizeof(*in))
		return n;	/* libfuse reports the error (errno is read's) */
	if (in->opcode == FUSE_INIT)
		note_init(userdata, in, (size_t)n);
	served.kill = asks_kill(in, (size_t)n);
	served.nodeid = in->nodeid;
	return n;
}

/*
 * INIT's reply (iov[0] its header): libfuse's flags, and those the kernel
 * offered that libfuse cannot send.
 */
static void amend_init(struct fs_ctx *ctx, struct iovec *iov, int count)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	uint64_t offered = atomic_load(&ctx->transport.offered), added;
	struct fuse_init_out *arg;

	if (count < 2 || out->error != 0 ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, max_background))
		return;
	arg = iov[1].iov_base;
	if (arg->major != 7)
		return;
	added = offered & TRANSPORT_ADDED_FLAGS;
	arg->flags |= (uint32_t)added;
	fs_trace(ctx, "init: kernel offered 0x%llx, kvfs added 0x%llx, reply flags 0x%x",
		 (unsigned long long)offered, (unsigned long long)added, arg->flags);
}

static ssize_t transport_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct fs_ctx *ctx = userdata;
	uint64_t init = atomic_load(&ctx->transport.init_unique);

	/* INIT's reply, once; notifications are unique 0, INIT never is */
	if (init != 0 && !atomic_load(&ctx->transport.init_done) && count >= 1 &&
	    iov[0].iov_len >= sizeof(struct fuse_out_header) &&
	    ((const struct fuse_out_header *)iov[0].iov_base)->unique == init) {
		amend_init(ctx, iov, count);
		atomic_store(&ctx->transport.init_done, true);
	}
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
