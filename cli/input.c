/*
 * cli/input.c - reads a whole input into memory for `kvfs import`: regular
 * files are mapped (no copy, no limit but the address space), pipes and
 * terminals are read into a buffer that doubles as it fills.
 */
#include <errno.h>
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

int cli_input_read(const char *name, struct cli_input *in)
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
	else
		ret = input_slurp(fd, shown, in);
out_close:
	if (!is_stdin)
		close(fd);
	return ret;
}

void cli_input_release(struct cli_input *in)
{
	if (in->mapped)
		munmap((void *)in->data, in->len);
	free(in->heap);
	memset(in, 0, sizeof(*in));
}
