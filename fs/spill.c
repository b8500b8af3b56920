/*
 * fs/spill.c - the buffer of an open file (a writer's content, a view
 * reader's rendering), once it outgrows FS_SPILL_MIN, lives in an unlinked
 * temporary file in the store's directory (a disk, not the heap), mapped
 * shared so that f->buf still reads it; writes go to the file with pwrite
 * and reads are answered from it (fs_spill_reply), so the daemon's memory
 * never holds the whole content (the model gives back the pages it parses).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs/fs_int.h"

/* A file that unlinks itself: O_TMPFILE, else a named one removed at once. */
static int spill_open(const char *dir)
{
	char *name;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd >= 0 ? fd : -errno;
	if (asprintf(&name, "%s/.kvfs-spill.XXXXXX", dir) < 0)
		return -ENOMEM;
	fd = mkostemp(name, O_CLOEXEC);
	if (fd >= 0)
		unlink(name);
	else
		fd = -errno;
	free(name);
	return fd;
}

static int spill_write_all(int fd, const char *buf, size_t len, size_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
		off += (size_t)n;
	}
	return 0;
}

/* Moves the heap buffer (f->len bytes) into a new spill file of cap bytes. */
static int spill_start(struct fs_file *f, size_t cap)
{
	void *map;
	int fd = spill_open(f->spill_dir), ret;

	if (fd < 0)
		return fd;
	if (ftruncate(fd, (off_t)cap) < 0) {
		ret = -errno;
		goto out_close;
	}
	ret = spill_write_all(fd, f->buf, f->len, 0);
	if (ret < 0)
		goto out_close;
	map = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out_close;
	}
	free(f->buf);
	f->buf = map;
	f->cap = cap;
	f->spill_fd = fd;
	f->spilled = true;
	f->spill_end = f->len;
	return 0;
out_close:
	close(fd);
	return ret;
}

int fs_spill_grow(struct fs_file *f, size_t cap)
{
	void *map;

	if (!f->spilled)
		return spill_start(f, cap);
	if (ftruncate(f->spill_fd, (off_t)cap) < 0)
		return -errno;
	map = mremap(f->buf, f->cap, cap, MREMAP_MAYMOVE);
	if (map == MAP_FAILED)
		return -errno;
	f->buf = map;
	f->cap = cap;
	return 0;
}

int fs_spill_zero_gap(struct fs_file *f)
{
	/* Past spill_end the file is a hole: zeros already, nothing to touch. */
	if (f->len >= f->spill_end)
		return 0;
	/* Cutting the file at len and growing it back zeroes the old bytes. */
	if (ftruncate(f->spill_fd, (off_t)f->len) < 0 || ftruncate(f->spill_fd, (off_t)f->cap) < 0)
		return -errno;
	f->spill_end = f->len;
	return 0;
}

int fs_spill_write(struct fs_file *f, const void *buf, size_t size, size_t off)
{
	int ret = spill_write_all(f->spill_fd, buf, size, off);

	if (ret == 0 && off + size > f->spill_end)
		f->spill_end = off + size;
	return ret;
}

void fs_spill_release(struct fs_file *f)
{
	if (!f->spilled)
		return;
	munmap(f->buf, f->cap);
	close(f->spill_fd);
	f->buf = NULL;
	f->len = f->cap = 0;
	f->spilled = false;
}

void fs_spill_reply(fuse_req_t req, struct fs_file *f, size_t size, off_t off)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

	if ((uint64_t)off >= f->len) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > f->len - (size_t)off)
		size = f->len - (size_t)off;
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = f->spill_fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}
