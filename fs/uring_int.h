/*
 * fs/uring_int.h - FUSE over io_uring between transport.c and uring.c: the
 * kernel's part of the protocol that Debian 12's <linux/fuse.h> (7.38)
 * lacks, and what the two files offer each other. Not part of fs_int.h:
 * only those two include it.
 */
#ifndef KVFS_FS_URING_INT_H
#define KVFS_FS_URING_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct fs_ctx;

/*
 * The kernel's side, protocol 7.42 (Linux 6.14, include/uapi/linux/fuse.h
 * and Documentation/filesystems/fuse-io-uring.rst), defined here only where
 * the installed header has no such name.
 */
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ULL << 41)	/* INIT, flags2 bit 9: both sides can */
#endif
#define FS_URING_HEADER_IN_OUT 128	/* FUSE_URING_IN_OUT_HEADER_SZ */
#define FS_URING_OP_IN 128		/* FUSE_URING_OP_IN_OUT_SZ */
#define FS_URING_CMD_REGISTER 1		/* FUSE_IO_URING_CMD_REGISTER */
#define FS_URING_CMD_COMMIT_AND_FETCH 2	/* FUSE_IO_URING_CMD_COMMIT_AND_FETCH */

/*
 * struct fuse_uring_req_header: one per ring entry, beside its payload
 * buffer. A request arrives as its fuse_in_header in in_out, the opcode's
 * fixed argument (fuse_write_in, ...; nothing for a lookup) in op_in and
 * the rest (names, written bytes) in the payload, payload_sz of it. A reply
 * leaves its fuse_out_header in in_out and every argument in the payload.
 */
struct fs_uring_header {
	char in_out[FS_URING_HEADER_IN_OUT];
	char op_in[FS_URING_OP_IN];
	struct {				/* struct fuse_uring_ent_in_out */
		uint64_t flags;
		uint64_t commit_id;	/* the request's unique: the commit names it */
		uint32_t payload_sz;	/* bytes of the payload used, both ways */
		uint32_t padding;
		uint64_t reserved;
	} ent;
};

/* struct fuse_uring_cmd_req: the command area of a 128-byte SQE. */
struct fs_uring_cmd {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;			/* the queue: one per possible CPU */
	uint8_t padding[6];
};

/* ---- uring.c, for transport.c ---- */

/*
 * After INIT's reply: registers the rings, one queue per possible CPU,
 * payload buffers of payload bytes (at least the kernel's max_write and
 * max_pages). Threads of their own serve them; failures are logged and
 * leave /dev/fuse serving. 0, or -errno.
 */
int fs_uring_start(struct fs_ctx *ctx, size_t payload);
/* Stops and joins the ring threads (once the session loop has ended); idempotent. */
void fs_uring_stop(struct fs_ctx *ctx);
/*
 * The reply iov (libfuse's writev: iov[0] the out header) when it answers
 * the ring request this thread serves: copied into that entry and
 * committed once the handler returns. The bytes taken, -1 with errno set
 * when the reply cannot be carried, or -2 when it is not the ring's (a
 * notification, an interrupt's answer: /dev/fuse takes it).
 */
ssize_t fs_uring_reply(const struct iovec *iov, int count);
/* Whether every ring entry is registered (the kernel then routes requests there). */
bool fs_uring_serving(struct fs_ctx *ctx);

/* ---- transport.c, for uring.c ---- */

/* Notes the request this thread is about to serve (see fs_req_kills_suidgid). */
void fs_transport_note(struct fs_ctx *ctx, const void *buf, size_t len);

#endif
