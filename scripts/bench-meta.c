/*
 * scripts/bench-meta.c - the worker of scripts/bench-meta.sh, an mdtest-style
 * metadata benchmark: P processes each create, stat and remove N files, in a
 * directory of their own or all in one, and the three phases are timed
 * between barriers, so each rate is every process's files over the wall time
 * of the slowest. It only uses system calls, so any file system can be
 * measured the same way (tmpfs as the reference, kvfs mounts beside it).
 *
 * Usage: bench-meta DIR PROCS FILES own|shared [BYTES]
 * Prints "create R", "stat R", "remove R" (files per second) and exits 0, or
 * names the failed call and file and exits 1. When BENCH_META_HOOK is set,
 * it is run by the shell before each phase and after the last, outside the
 * timed span, with the phase's name (or "end") as its argument: the script
 * reads the daemon's and the cluster's request counters there.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum phase { PHASE_CREATE, PHASE_STAT, PHASE_REMOVE, PHASE_MAX };

static const char *const phase_names[PHASE_MAX] = { "create", "stat", "remove" };

struct job {
	const char *dir;	/* the directory the processes' own directories or files go in */
	long procs;
	long files;
	int shared;		/* 1: every file in dir itself; 0: dir/pI per process */
	size_t bytes;		/* written to each file at its create (mdtest's -w) */
	int ready[2];		/* a child writes one byte here when it is ready for the next phase */
	int go[2];		/* the parent writes one byte per child to start a phase */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* File J of process I, in PATH (PATH_MAX bytes). */
static void file_path(const struct job *jb, long i, long j, char *path)
{
	if (jb->shared)
		snprintf(path, PATH_MAX, "%s/f%ld.%ld", jb->dir, i, j);
	else
		snprintf(path, PATH_MAX, "%s/p%ld/f%ld", jb->dir, i, j);
}

/* One file's part of a phase: 0, or -1 with the failure reported. */
static int do_one(const struct job *jb, enum phase ph, const char *path, const char *buf)
{
	struct stat st;
	int fd;

	switch (ph) {
	case PHASE_CREATE:
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			goto fail;
		if (jb->bytes && write(fd, buf, jb->bytes) != (ssize_t)jb->bytes) {
			close(fd);
			goto fail;
		}
		if (close(fd) != 0)	/* kvfs reports its commit's error here */
			goto fail;
		return 0;
	case PHASE_STAT:
		if (stat(path, &st) != 0)
			goto fail;
		if ((size_t)st.st_size != jb->bytes) {
			fprintf(stderr, "bench-meta: %s: size %lld, wrote %zu\n", path,
				(long long)st.st_size, jb->bytes);
			return -1;
		}
		return 0;
	case PHASE_REMOVE:
		if (unlink(path) != 0)
			goto fail;
		return 0;
	default:
		return -1;
	}
fail:
	fprintf(stderr, "bench-meta: %s %s: %s\n", phase_names[ph], path, strerror(errno));
	return -1;
}

/* Process I: waits for each phase's start, runs it, says it is done. Never returns. */
static void child_run(const struct job *jb, long i)
{
	char path[PATH_MAX], *buf, c;

	buf = malloc(jb->bytes + 1);
	if (!buf)
		_exit(1);
	memset(buf, 'x', jb->bytes);
	for (int ph = 0; ph < PHASE_MAX; ph++) {
		if (write(jb->ready[1], "r", 1) != 1 || read(jb->go[0], &c, 1) != 1)
			_exit(1);
		for (long j = 0; j < jb->files; j++) {
			file_path(jb, i, j, path);
			if (do_one(jb, ph, path, buf) != 0)
				goto fail;
		}
	}
	free(buf);
	_exit(write(jb->ready[1], "r", 1) == 1 ? 0 : 1);
fail:
	/* the others still hold ready open: the parent must be told, not left waiting */
	_exit(write(jb->ready[1], "e", 1) == 1 ? 1 : 2);
}

/* Waits until every process is ready for the next phase: 0, or -1 when one failed. */
static int wait_ready(const struct job *jb)
{
	char c;

	for (long n = 0; n < jb->procs; n++)
		if (read(jb->ready[0], &c, 1) != 1 || c != 'r')
			return -1;
	return 0;
}

/* Runs BENCH_META_HOOK, if set, with NAME: 0, or -1 when it failed. */
static int run_hook(const char *name)
{
	const char *hook = getenv("BENCH_META_HOOK");
	char cmd[4096];

	if (!hook)
		return 0;
	snprintf(cmd, sizeof(cmd), "%s %s", hook, name);
	return system(cmd) == 0 ? 0 : -1;
}

/* Runs the phases between barriers; the seconds of each go in secs. */
static int parent_run(struct job *jb, double secs[PHASE_MAX])
{
	double t0 = 0;

	for (int ph = 0; ph <= PHASE_MAX; ph++) {
		if (wait_ready(jb) != 0)
			return -1;
		if (ph > 0)
			secs[ph - 1] = now_s() - t0;
		if (run_hook(ph == PHASE_MAX ? "end" : phase_names[ph]) != 0)
			return -1;
		if (ph == PHASE_MAX)
			break;
		t0 = now_s();
		for (long n = 0; n < jb->procs; n++)
			if (write(jb->go[1], "g", 1) != 1)
				return -1;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct job *jb)
{
	if (argc < 5 || argc > 6)
		return -1;
	jb->dir = argv[1];
	jb->procs = strtol(argv[2], NULL, 10);
	jb->files = strtol(argv[3], NULL, 10);
	jb->bytes = argc == 6 ? strtoul(argv[5], NULL, 10) : 0;
	if (strcmp(argv[4], "own") != 0 && strcmp(argv[4], "shared") != 0)
		return -1;
	jb->shared = strcmp(argv[4], "shared") == 0;
	if (jb->procs < 1 || jb->procs > 1024 || jb->files < 1 || jb->bytes > (1u << 20))
		return -1;
	return 0;
}

/* Each process's own directory, made before the clock starts (mdtest's too). */
static int make_dirs(const struct job *jb)
{
	char path[PATH_MAX];

	for (long i = 0; !jb->shared && i < jb->procs; i++) {
		snprintf(path, sizeof(path), "%s/p%ld", jb->dir, i);
		if (mkdir(path, 0755) != 0) {
			fprintf(stderr, "bench-meta: mkdir %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct job jb;
	double secs[PHASE_MAX] = { 0 };
	pid_t *pids;
	int ret = 1, status, failed = 0;
	long started = 0;

	if (parse_args(argc, argv, &jb) != 0) {
		fprintf(stderr, "usage: bench-meta DIR PROCS FILES own|shared [BYTES]\n");
		return 2;
	}
	if (make_dirs(&jb) != 0 || pipe(jb.ready) != 0 || pipe(jb.go) != 0)
		return 1;
	pids = calloc((size_t)jb.procs, sizeof(*pids));
	if (!pids)
		return 1;
	for (; started < jb.procs; started++) {
		pids[started] = fork();
		if (pids[started] < 0)
			goto out_kill_children;
		if (pids[started] == 0)
			child_run(&jb, started);
	}
	/* only children write ready: a read sees its end when one exits early */
	close(jb.ready[1]);
	if (parent_run(&jb, secs) != 0)
		goto out_kill_children;
	ret = 0;
out_kill_children:
	for (long i = 0; i < started; i++) {
		if (ret != 0)
			kill(pids[i], SIGTERM);
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	free(pids);
	if (ret == 0 && failed)
		ret = 1;
	for (int ph = 0; ret == 0 && ph < PHASE_MAX; ph++)
		printf("%s %.1f\n", phase_names[ph], (double)(jb.procs * jb.files) / secs[ph]);
	return ret;
}
