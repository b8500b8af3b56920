/*
 * cli/cmd_mount.c - `kvfs mount` and `kvfs umount`: thin wrappers. Mount
 * options are sorted into the flags fs/ understands and the rest is handed
 * to FUSE; fs_mount_main does the serving and the daemonizing. Unmounting
 * is fusermount3's job; umount then waits for the daemon to exit.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
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
	  "create (as --create), log=FILE (append the\n"
	  "daemon's log to FILE), commit=MS (close checks\n"
	  "and queues; committed together within MS),\n"
	  "io_uring or no_io_uring (the transport; neither:\n"
	  "FUSE over io_uring when the kernel has it on),\n"
	  "and any FUSE option (allow_other, noatime, ...)" },
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

/* Runs fusermount3 -u [-z] MNT; 0 when it succeeded, else prints why (quiet: not). */
static int run_fusermount(const char *mnt, bool lazy, bool quiet)
{
	char prog[] = "fusermount3", unmount[] = "-u", lazy_opt[] = "-z";
	char *args[5] = { prog, unmount, lazy ? lazy_opt : (char *)mnt, lazy ? (char *)mnt : NULL,
			  NULL };
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return cli_fail("umount %s: cannot fork: %s", mnt, strerror(errno));
	if (pid == 0) {
		if (quiet && !freopen("/dev/null", "w", stderr))
			_exit(126);
		execvp(args[0], args);
		fprintf(stderr, "kvfs: umount %s: cannot run fusermount3: %s\n", mnt, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cli_fail("umount %s: %s", mnt, strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return CLI_EXIT_OK;
	if (quiet || (WIFEXITED(status) && WEXITSTATUS(status) == 127))
		return CLI_EXIT_FAIL;
	if (WIFEXITED(status))
		return cli_fail("umount %s failed (fusermount3 exited with status %d)", mnt,
				WEXITSTATUS(status));
	return cli_fail("umount %s failed (fusermount3 killed by signal %d)", mnt,
			WTERMSIG(status));
}

/* The pid of the daemon serving mnt (user.kvfs.pid on its root); 0 when unknown. */
static pid_t daemon_pid(const char *mnt)
{
	char buf[32];
	ssize_t n = getxattr(mnt, "user.kvfs.pid", buf, sizeof(buf) - 1);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	return pid > 1 ? (pid_t)pid : 0;
}

/* Whether pid has ended: gone, or a zombie nobody reaped yet. */
static bool pid_ended(pid_t pid)
{
	char path[64], line[512], *paren;
	bool ended = false;
	FILE *in;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	in = fopen(path, "re");
	if (!in)
		return errno == ENOENT;
	if (fgets(line, sizeof(line), in)) {
		paren = strrchr(line, ')');
		ended = paren && (paren[1] == ' ') && (paren[2] == 'Z' || paren[2] == 'X');
	}
	fclose(in);
	return ended;
}

#define UMOUNT_WAIT_MS 60000	/* a daemon commits and closes its store within this */

/*
 * kvfs umount MNT: refuses what is not a kvfs mount, clears a dead one, and
 * otherwise returns once the daemon has committed everything and exited.
 */
int cli_cmd_umount(const struct cli_verb *verb, int argc, char **argv)
{
	enum fs_mount_state state;
	bool lazy = false;
	struct cli_parse p;
	const char *arg, *mnt;
	char type[64];
	pid_t pid = 0;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		lazy = true;
	if (id < 0)
		return cli_parse_exit(id);
	mnt = p.operands[0];
	state = fs_mount_probe(mnt, type, sizeof(type));
	if (state == FS_MOUNT_NONE)
		return cli_fail("%s: not a kvfs mount (nothing is mounted there)", mnt);
	if (strcmp(type, "fuse.kvfs") != 0)
		return cli_fail("%s: not a kvfs mount (it is %s)", mnt, type);
	if (state == FS_MOUNT_DEAD) {
		/* its daemon is gone: nothing to wait for, only the mount to clear */
		if (run_fusermount(mnt, false, true) != CLI_EXIT_OK)
			return run_fusermount(mnt, true, false);
		return CLI_EXIT_OK;
	}
	if (!lazy)
		pid = daemon_pid(mnt);
	ret = run_fusermount(mnt, lazy, false);
	if (ret != CLI_EXIT_OK || pid == 0)
		return ret;
	for (int ms = 0; !pid_ended(pid); ms += 10) {
		if (ms >= UMOUNT_WAIT_MS)
			return cli_fail("umount %s: unmounted, but its daemon (pid %ld) has not "
					"exited after %d s", mnt, (long)pid, UMOUNT_WAIT_MS / 1000);
		usleep(10000);
	}
	return CLI_EXIT_OK;
}
