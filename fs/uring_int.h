/*
 * fs/uring_int.h - FUSE over io_uring between transport.c and uring.c: the
 * kernel's part of the protocol that Debian 12's <linux/fuse.h> (7.38)
 * lacks, and what the two files offer each other. Not part of fs_int.h:
 * only those two include it, and scripts/fuse-floor.c, which links uring.c
 * alone (uring.c includes nothing of kvfs's but this header).
 */
#ifndef KVFS_FS_URING_INT_H
#define KVFS_FS_URING_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_session;

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

/* ---- uring.c, for transport.c and scripts/fuse-floor.c ---- */

/*
 * What a daemon lends its rings: the session whose handlers serve the
 * requests, a log, and a look at each request before it is served. Copied
 * at fs_uring_start; arg is handed back to both calls, from ring threads.
 */
struct fs_uring_host {
	struct fuse_session *se;
	void *arg;
	void (*log)(void *arg, int prio, const char *line);	/* prio: syslog's */
	void (*note)(void *arg, const void *req, size_t len);	/* NULL: none */
};
struct fs_uring;

/*
 * The flags an INIT request (req, len bytes as read from /dev/fuse)
 * offers, flags2 above bit 31; 0 for any other request.
 */
uint64_t fs_uring_init_offered(const void *req, size_t len);
/*
 * Amends INIT's reply (iov[0] its out header, iov[1] its fuse_init_out)
 * before it is written: the flags of add that the kernel offered, and with
 * uring FUSE_OVER_IO_URING when it offered that. The payload size the
 * rings then need (the kernel's max_write and max_pages, 8 KiB at least),
 * or 0 when they are not asked for (not wanted, not offered, a failed INIT).
 */
size_t fs_uring_init_amend(struct iovec *iov, int count, uint64_t offered, uint64_t add,
			   bool uring);
/*
 * After INIT's reply is written: registers the rings, one queue per
 * possible CPU, payload buffers of fs_uring_init_amend's size. Threads of
 * their own serve them; failures are logged and leave /dev/fuse serving.
 * 0 and *out (heap, freed by fs_uring_stop), or -errno.
 */
int fs_uring_start(const struct fs_uring_host *host, size_t payload, struct fs_uring **out);
/* Stops and joins the ring threads (once the session loop has ended) and frees u; NULL: nothing. */
void fs_uring_stop(struct fs_uring *u);
/*
 * The reply iov (libfuse's writev: iov[0] the out header) when it answers
 * the ring request this thread serves: copied into that entry and
 * committed once the handler returns. The bytes taken, -1 with errno set
 * when the reply cannot be carried, or -2 when it is not the ring's (a
 * notification, an interrupt's answer: /dev/fuse takes it).
 */
ssize_t fs_uring_reply(const struct iovec *iov, int count);
/* Whether every ring entry of u (NULL: none) is registered (the kernel then routes requests there). */
bool fs_uring_serving(struct fs_uring *u);

#endif
