/*
 * cli/input.c - reads a whole input for `kvfs import`: regular files are
 * mapped (no copy, no limit but the address space); pipes and terminals
 * are copied to an unlinked temporary file that is then mapped the same
 * way (import), or read into a buffer that doubles as it fills (small
 * inputs: put -).
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#define MIB (1024.0 * 1024.0)
#define READ_CHUNK (64 * 1024)
#define SPILL_CHUNK (1024 * 1024)

static const char *input_name(const char *name)
{
	return strcmp(name, "-") == 0 ? "standard input" : name;
}

/* Maps a regular file of st_size bytes; an empty file needs no mapping. */
static int input_map(int fd, const char *name, off_t size, struct cli_input *in)
{
	void *p;

	if ((uint64_t)size > SIZE_MAX)
		return cli_fail("%s: too large for this machine's address space", name);
	if (size == 0)
		return CLI_EXIT_OK;
	p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		int saved = errno;

		if (saved == ENOMEM)
			return cli_fail("%s: cannot map %.1f MiB into memory: %s", name,
					(double)size / MIB, strerror(saved));
		return cli_fail("%s: cannot map: %s", name, strerror(saved));
	}
	madvise(p, (size_t)size, MADV_SEQUENTIAL);
	in->data = p;
	in->len = (size_t)size;
	in->mapped = true;
	return CLI_EXIT_OK;
}

/* Reads until end of file into a buffer that doubles when full. */
static int input_slurp(int fd, const char *name, struct cli_input *in)
{
	size_t cap = 0, len = 0;
	char *buf = NULL;

	for (;;) {
		ssize_t n;

		if (cap - len < READ_CHUNK) {
			size_t ncap = cap ? cap * 2 : 4 * READ_CHUNK;
			char *nbuf = ncap > cap ? realloc(buf, ncap) : NULL;

			if (!nbuf) {
				free(buf);
				return cli_fail("%s: not enough memory to read the input "
						"(%.1f MiB read, %.1f MiB needed next); import "
						"from a regular file instead, it is mapped",
						name, (double)len / MIB, (double)ncap / MIB);
			}
			buf = nbuf;
			cap = ncap;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			free(buf);
			return cli_fail("%s: read error: %s", name, strerror(saved));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	in->heap = buf;
	in->data = buf;
	in->len = len;
	return CLI_EXIT_OK;
}

/* An unlinked file in dir: O_TMPFILE, else a named one removed at once. -1 with errno. */
static int spill_open(const char *dir)
{
	char *tmpl;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	if (asprintf(&tmpl, "%s/.kvfs-import.XXXXXX", dir) < 0)
		return -1;
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0)
		unlink(tmpl);
	free(tmpl);
	return fd;
}

/*
 * The first directory that takes the temporary file: the store's own (its
 * disk is where the data goes anyway), its parent (a store not created
 * yet), then $TMPDIR, /var/tmp. An etcd URL has no directory here.
 */
static int spill_place(const char *store, const char **where)
{
	const char *tries[4] = { NULL, NULL, getenv("TMPDIR"), "/var/tmp" };
	char *copy = store && !strstr(store, "://") ? strdup(store) : NULL;
	int fd = -1, saved = ENOENT;

	if (copy) {
		tries[0] = store;
		tries[1] = dirname(copy);
	}
	for (size_t i = 0; i < 4 && fd < 0; i++) {
		if (!tries[i] || !*tries[i])
			continue;
		fd = spill_open(tries[i]);
		if (fd < 0)
			saved = errno;
		*where = i < 2 ? (i ? "the store's parent directory" : "the store's directory") :
			 tries[i];
	}
	free(copy);
	errno = saved;
	return fd;
}

static int spill_write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copies all of fd to an unlinked temporary file, then maps that file. */
static int input_spill(int fd, const char *name, const char *store, struct cli_input *in)
{
	const char *where = "";
	char *buf = malloc(SPILL_CHUNK);
	int tmp, ret;
	off_t size = 0;

	if (!buf)
		return cli_fail("%s: out of memory", name);
	tmp = spill_place(store, &where);
	if (tmp < 0) {
		ret = cli_fail("%s: cannot make a temporary file for the input: %s", name,
			       strerror(errno));
		goto out_free;
	}
	for (;;) {
		ssize_t n = read(fd, buf, SPILL_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = cli_fail("%s: read error: %s", name, strerror(errno));
			goto out_close;
		}
		if (n == 0)
			break;
		if (spill_write_all(tmp, buf, (size_t)n) < 0) {
			ret = cli_fail("%s: cannot copy the input to a temporary file in %s: %s "
				       "(%.1f MiB copied)", name, where, strerror(errno),
				       (double)size / MIB);
			goto out_close;
		}
		size += n;
	}
	ret = input_map(tmp, name, size, in);
out_close:
	close(tmp);	/* the mapping keeps the file's pages; the file goes with it */
out_free:
	free(buf);
	return ret;
}

static int input_read(const char *name, const char *store, bool spill, struct cli_input *in)
{
	const char *shown = input_name(name);
	bool is_stdin = strcmp(name, "-") == 0;
	struct stat st;
	int fd, ret;

	memset(in, 0, sizeof(*in));
	fd = is_stdin ? STDIN_FILENO : open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("%s: %s", name, strerror(errno));
	if (fstat(fd, &st) != 0) {
		ret = cli_fail("%s: %s", shown, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = cli_fail("%s: is a directory", shown);
		goto out_close;
	}
	/* stdin redirected from a file may not start at offset 0: read it then. */
	if (S_ISREG(st.st_mode) && lseek(fd, 0, SEEK_CUR) == 0)
		ret = input_map(fd, shown, st.st_size, in);
	else if (spill)
		ret = input_spill(fd, shown, store, in);
	else
		ret = input_slurp(fd, shown, in);
out_close:
	if (!is_stdin)
		close(fd);
	return ret;
}

int cli_input_read(const char *name, struct cli_input *in)
{
	return input_read(name, NULL, false, in);
}

int cli_input_read_spill(const char *name, const char *store, struct cli_input *in)
{
	return input_read(name, store, true, in);
}

void cli_input_release(struct cli_input *in)
{
	if (in->mapped)
		munmap((void *)in->data, in->len);
	free(in->heap);
	memset(in, 0, sizeof(*in));
}
