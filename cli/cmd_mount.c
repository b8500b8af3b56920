/*
 * cli/cmd_mount.c - `kvfs mount` and `kvfs umount`: thin wrappers. Mount
 * options are sorted into the flags fs/ understands and the rest is handed
 * to FUSE; fs_mount_main does the serving and the daemonizing. Unmounting
 * is fusermount3's job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fs/fs.h"

enum {
	OPT_FOREGROUND = 1,
	OPT_OPTIONS,
	OPT_CREATE,
	OPT_DEBUG,
	OPT_LAZY,
};

const struct cli_opt cli_opts_mount[] = {
	{ OPT_FOREGROUND, 'f', "foreground", NULL, "do not detach from the terminal; log to stderr" },
	{ OPT_OPTIONS, 'o', "options", "OPTIONS",
	  "comma-separated mount options: ro (read-only),\n"
	  "rw, debug (trace every FUSE call, implies -f),\n"
	  "create (as --create), and any FUSE option\n"
	  "(allow_other, noatime, ...)" },
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist" },
	{ OPT_DEBUG, 'd', "debug", NULL, "the same as -o debug" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_umount[] = {
	{ OPT_LAZY, 'z', "lazy", NULL, "detach the filesystem even while it is busy" },
	{ 0, 0, NULL, NULL, NULL },
};

/* Appends the options of one -o list to extra, taking out the ones fs/ handles. */
static void mount_sort_options(const char *list, struct fs_options *fo, char *extra)
{
	const char *opt = list;

	while (*opt) {
		size_t len = strcspn(opt, ",");

		if (len == 2 && memcmp(opt, "ro", 2) == 0) {
			fo->read_only = true;
		} else if (len == 2 && memcmp(opt, "rw", 2) == 0) {
			fo->read_only = false;
		} else if (len == 5 && memcmp(opt, "debug", 5) == 0) {
			fo->debug = true;
		} else if (len == 6 && memcmp(opt, "create", 6) == 0) {
			fo->create = true;
		} else if (len > 0) {
			if (*extra)
				strcat(extra, ",");
			strncat(extra, opt, len);
		}
		opt += len;
		if (*opt == ',')
			opt++;
	}
}

static size_t args_size(int argc, char **argv)
{
	size_t total = 1;

	for (int i = 0; i < argc; i++)
		total += strlen(argv[i]) + 1;
	return total;
}

int cli_cmd_mount(const struct cli_verb *verb, int argc, char **argv)
{
	struct fs_options fo = { 0 };
	struct cli_parse p;
	const char *arg;
	char *extra;
	int id, ret;

	extra = calloc(1, args_size(argc, argv));
	if (!extra)
		return cli_fail("mount: out of memory");
	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0) {
		if (id == OPT_FOREGROUND)
			fo.foreground = true;
		else if (id == OPT_OPTIONS)
			mount_sort_options(arg, &fo, extra);
		else if (id == OPT_CREATE)
			fo.create = true;
		else
			fo.debug = true;
	}
	if (id < 0) {
		free(extra);
		return cli_parse_exit(id);
	}
	fo.store_dir = p.operands[0];
	fo.mountpoint = p.operands[1];
	fo.extra_options = *extra ? extra : NULL;
	if (fo.debug)
		fo.foreground = true;
	fflush(stdout);
	ret = fs_mount_main(&fo);
	free(extra);
	return ret;
}

/* Runs fusermount3 -u [-z] MNT and reports how it ended. */
int cli_cmd_umount(const struct cli_verb *verb, int argc, char **argv)
{
	char prog[] = "fusermount3", unmount[] = "-u", lazy_opt[] = "-z";
	char *args[5] = { prog, unmount, NULL, NULL, NULL };
	bool lazy = false;
	struct cli_parse p;
	const char *arg;
	int id, status;
	pid_t pid;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		lazy = true;
	if (id < 0)
		return cli_parse_exit(id);
	args[2] = lazy ? lazy_opt : p.operands[0];
	args[3] = lazy ? p.operands[0] : NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return cli_fail("umount %s: cannot fork: %s", p.operands[0], strerror(errno));
	if (pid == 0) {
		execvp(args[0], args);
		fprintf(stderr, "kvfs: umount %s: cannot run fusermount3: %s\n",
			p.operands[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cli_fail("umount %s: %s", p.operands[0], strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return CLI_EXIT_OK;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return CLI_EXIT_FAIL;
	if (WIFEXITED(status))
		return cli_fail("umount %s failed (fusermount3 exited with status %d)",
				p.operands[0], WEXITSTATUS(status));
	return cli_fail("umount %s failed (fusermount3 killed by signal %d)",
			p.operands[0], WTERMSIG(status));
}
