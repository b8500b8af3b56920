/*
 * fs/mount.c - the daemon around the operations: options, opening the model,
 * mounting, detaching (and where a detached daemon logs), the
 * multi-threaded loop, and a clean end (unmount, commit what is pending,
 * close the store). The log's lines and the kept refusals are log.c's, the
 * invalidation worker and the watcher invalidate.c's and watcher.c's.
 *
 * Detaching: LMDB environments must not cross a fork (its locks and reader
 * slots belong to the opening process), so the store is opened after the
 * fork. The parent waits on a pipe until the child reports that the store
 * is open and the mount is made, and exits with the child's status; the
 * child prints its own errors to the still-shared stderr until then.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/fs_int.h"

/* After the unmount, the longest a remote store's servers are waited for (serve). */
#define FS_EXIT_MS 3000

/* ---- options ---- */

struct fs_optvals {
	double entry_timeout;
	double attr_timeout;
	int debug;
	char *log;	/* heap (fuse_opt) */
	int commit_ms;	/* -o commit=MS; -1 when not given */
	int io_uring;	/* -o io_uring 1, -o no_io_uring 0, neither -1 (the rings when the
			 * kernel serves them): the last given wins */
};

#define FS_OPT(t, field) { t, offsetof(struct fs_optvals, field), 1 }
static const struct fuse_opt fs_opt_spec[] = {
	{ "entry_timeout=%lf", offsetof(struct fs_optvals, entry_timeout), 0 },
	{ "attr_timeout=%lf", offsetof(struct fs_optvals, attr_timeout), 0 },
	FS_OPT("debug", debug),
	{ "log=%s", offsetof(struct fs_optvals, log), 0 },
	{ "commit=%d", offsetof(struct fs_optvals, commit_ms), 0 },
	FS_OPT("io_uring", io_uring),
	{ "no_io_uring", offsetof(struct fs_optvals, io_uring), 0 },
	FUSE_OPT_END
};

/* Keeps every option the spec does not name for FUSE. */
static int fs_opt_keep(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	(void)data;
	(void)arg;
	(void)key;
	(void)outargs;
	return 1;
}

/* Absolute form of path (which may not exist yet); heap. */
static char *abs_path(const char *path)
{
	char cwd[PATH_MAX], *out;

	out = realpath(path, NULL);
	if (out || path[0] == '/')
		return out ? out : strdup(path);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	out = malloc(strlen(cwd) + strlen(path) + 2);
	if (out)
		sprintf(out, "%s/%s", cwd, path);
	return out;
}

/* -o log=FILE: appended to, never through a symlink; kept open for the daemon's life. */
static int log_open(struct fs_ctx *ctx, const char *file)
{
	ctx->log_path = abs_path(file);
	if (!ctx->log_path) {
		fprintf(stderr, "kvfs: mount: log=%s: %s\n", file, strerror(ENOMEM));
		return -1;
	}
	ctx->log_fd = open(ctx->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			   0600);
	if (ctx->log_fd < 0) {
		fprintf(stderr, "kvfs: mount: log=%s: %s\n", file, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Builds the FUSE argument list: our defaults, then the user's -o list with
 * kvfs's own options (timeouts, debug) taken out into ctx.
 */
static int build_args(struct fs_ctx *ctx, const struct fs_options *opts, struct fuse_args *args)
{
	struct fs_optvals v = { FS_TIMEOUT_DEFAULT, FS_TIMEOUT_DEFAULT, 0, NULL, -1, -1 };
	char *fsname = NULL, *shown;
	int ret = -1;

	if (fuse_opt_add_arg(args, "kvfs") < 0)
		return -1;
	if (opts->extra_options && *opts->extra_options &&
	    (fuse_opt_add_arg(args, "-o") < 0 ||
	     fuse_opt_add_arg(args, opts->extra_options) < 0))
		return -1;
	if (fuse_opt_parse(args, &v, fs_opt_spec, fs_opt_keep) < 0)
		return -1;
	if (v.log && log_open(ctx, v.log) < 0) {
		free(v.log);
		return -1;
	}
	free(v.log);
	if (v.entry_timeout < 0 || v.attr_timeout < 0) {
		fprintf(stderr, "kvfs: mount: timeouts cannot be negative\n");
		return -1;
	}
	if (v.commit_ms == 0 || v.commit_ms < -1 || v.commit_ms > 3600000) {
		fprintf(stderr, "kvfs: mount: commit=%d: give 1 to 3600000 milliseconds\n",
			v.commit_ms);
		return -1;
	}
	ctx->commit_ms = v.commit_ms > 0 ? (unsigned)v.commit_ms : 0;
	/* asked for and impossible: refused here, with the reason, not silently dropped */
	if (v.io_uring == 1 && fs_transport_check_uring() < 0)
		return -1;
	/* neither option: FUSE over io_uring where the fuse module serves it, else /dev/fuse */
	ctx->transport.want_uring = v.io_uring == 1 || (v.io_uring == -1 && fs_transport_uring_on());
	ctx->transport.need_uring = v.io_uring == 1;
	ctx->entry_timeout = v.entry_timeout;
	ctx->attr_timeout = v.attr_timeout;
	ctx->debug = opts->debug || v.debug;
	/* /proc/mounts is world-readable: a URL's options may hold a password */
	shown = model_name_shown(ctx->store_name);
	if (!shown || fuse_opt_add_opt_escaped(&fsname, shown) < 0) {
		free(shown);
		return -1;
	}
	free(shown);
	if (fuse_opt_add_arg(args, "-o") == 0 &&
	    fuse_opt_add_arg(args, "default_permissions,subtype=kvfs") == 0 &&
	    fuse_opt_add_arg(args, "-o") == 0) {
		char *o = malloc(strlen(fsname) + 8);

		if (o) {
			sprintf(o, "fsname=%s", fsname);
			ret = fuse_opt_add_arg(args, o);
			free(o);
		}
	}
	if (ret == 0 && ctx->read_only)
		ret = fuse_opt_add_arg(args, "-oro");
	free(fsname);
	return ret;
}

/* ---- detaching ---- */

/*
 * Forks. The parent waits for the child's status byte and returns it as an
 * exit code (1 when the child died first); the child returns -1 and keeps
 * the write end of the pipe in *report.
 */
static int detach_fork(int *report)
{
	int fds[2], status;
	unsigned char code;
	pid_t pid;
	ssize_t n;

	if (pipe(fds) < 0) {
		fprintf(stderr, "kvfs: mount: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "kvfs: mount: fork: %s\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return 1;
	}
	if (pid == 0) {
		close(fds[0]);
		*report = fds[1];
		return -1;
	}
	close(fds[1]);
	do {
		n = read(fds[0], &code, 1);
	} while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == 1)
		return code;
	/* The child ended before reporting: reap it if it is gone. */
	if (waitpid(pid, &status, WNOHANG) == pid && WIFEXITED(status) && WEXITSTATUS(status))
		return WEXITSTATUS(status);
	return 1;
}

static void detach_report(int *report, unsigned char code)
{
	ssize_t n;

	if (*report < 0)
		return;
	do {
		n = write(*report, &code, 1);
	} while (n < 0 && errno == EINTR);
	close(*report);
	*report = -1;
}

/* Longest escaped mountpoint a log file's name holds whole (a name is at most 255 bytes). */
#define FS_LOG_NAME_MAX 200

/*
 * The name of the default log file (without ".log") of the mount at mnt
 * (absolute, resolved), spelled as systemd-escape --path spells the path:
 * "/srv/a/mnt" is "srv-a-mnt"; "/" becomes "-", and "-", "\\", a leading
 * "." and every byte but letters, digits, ":", "_" and "." become "\xNN";
 * the root is "-". Escaped, two mountpoints never share a file, as they
 * did by last name alone (/a/mnt and /b/mnt: one log interleaved, and
 * one's rotation cut the other's), and the name says whose it is. One
 * longer than FS_LOG_NAME_MAX keeps its start, then "-" and a 64-bit
 * FNV-1a hash of the whole path. out holds FS_LOG_NAME_MAX + 18 bytes.
 */
static void log_name(const char *mnt, char *out)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t hash = 0xcbf29ce484222325ULL;
	const char *p = mnt, *end = mnt + strlen(mnt);
	size_t n = 0;
	bool cut = false;

	while (end > p && end[-1] == '/')
		end--;
	while (p < end && *p == '/')
		p++;
	for (const char *start = p; p < end; p++) {
		unsigned char c = (unsigned char)*p;
		char e[4] = { (char)c };
		size_t k = 1;

		hash = (hash ^ c) * 0x100000001b3ULL;
		if (c == '/')
			e[0] = '-';
		else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == ':' || c == '_' || (c == '.' && p != start))) {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			k = 4;
		}
		cut = cut || n + k > FS_LOG_NAME_MAX;
		if (!cut) {
			memcpy(out + n, e, k);
			n += k;
		}
	}
	if (n == 0)
		out[n++] = '-';
	if (cut)
		n += (size_t)sprintf(out + n, "-%016llx", (unsigned long long)hash);
	out[n] = '\0';
}

/*
 * Without syslog, and stderr no file: the messages go to
 * $XDG_RUNTIME_DIR/kvfs/NAME.log, else /tmp/kvfs-UID/NAME.log (NAME: the
 * mountpoint's whole path escaped, log_name), appended to; the path is
 * printed (say: stderr is a terminal) while the terminal is still the
 * command's. The directory is made 0700 and must be the caller's own, so
 * no one else can plant a link there.
 */
static void default_log(struct fs_ctx *ctx, bool say)
{
	const char *run = getenv("XDG_RUNTIME_DIR");
	char dir[PATH_MAX], name[FS_LOG_NAME_MAX + 18], file[PATH_MAX + sizeof(name) + 8];
	struct stat st;

	if (run && run[0] == '/')
		snprintf(dir, sizeof(dir), "%s/kvfs", run);
	else
		snprintf(dir, sizeof(dir), "/tmp/kvfs-%ld", (long)getuid());
	if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || lstat(dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077)) {
		if (say)
			fprintf(stderr, "kvfs: mount: no syslog here, and %s is not a directory of yours "
				"alone: the daemon's messages are lost (-o log=FILE keeps them)\n", dir);
		return;
	}
	log_name(ctx->mountpoint, name);
	snprintf(file, sizeof(file), "%s/%s.log", dir, name);
	if (log_open(ctx, file) < 0 || !say)
		return;
	fprintf(stderr, "kvfs: mount: no syslog here: the daemon's messages go to %s\n", file);
}

/* The child, once serving: a new session, "/" as cwd, stdio on /dev/null (see the log). */
static void detach_finish(struct fs_ctx *ctx, int *report)
{
	int fd;

	struct stat st;

	/*
	 * Without syslog (containers, minimal machines) the daemon keeps the
	 * mount command's stderr when that is a file (the user sent it
	 * there); a pipe is not kept, since whoever reads it would wait for
	 * the daemon to end, nor a terminal, where messages would appear in
	 * whatever runs there long after: those go to a file of their own,
	 * named before detaching (default_log).
	 */
	if (!ctx->log_path && access("/dev/log", F_OK) != 0) {
		if (fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode))
			ctx->log_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		else
			default_log(ctx, isatty(STDERR_FILENO));
	}
	openlog("kvfs", LOG_PID, LOG_DAEMON);
	setsid();
	if (chdir("/") < 0)
		fs_log(ctx, LOG_WARNING, "chdir /: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR);
	detach_report(report, 0);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

/* ---- the daemon ---- */

/* The watcher sleeps on the monotonic clock: a clock change must not stall it. */
static int watch_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int ret;

	pthread_condattr_init(&attr);
	ret = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (ret == 0)
		ret = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return ret;
}

static void log_serving(struct fs_ctx *ctx)
{
	char *shown = model_name_shown(ctx->store_name);	/* no password in the log */

	fs_log(ctx, LOG_INFO, "serving %s at %s%s", shown ? shown : "the store",
	       ctx->mountpoint, ctx->read_only ? " (read-only)" : "");
	free(shown);
}

/*
 * The store's name as model_open takes it (a directory made absolute, a URL
 * unchanged: it names no local path) and the local directory the daemon
 * keeps its spill files in (the store's own, or the temporary directory).
 */
static void store_names(struct fs_ctx *ctx, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	if (!model_name_is_url(name)) {
		ctx->store_dir = abs_path(name);
		ctx->store_name = ctx->store_dir ? strdup(ctx->store_dir) : NULL;
		return;
	}
	ctx->store_name = strdup(name);
	ctx->store_dir = abs_path(tmp && *tmp ? tmp : "/tmp");
}

static struct fs_ctx *ctx_new(const struct fs_options *opts)
{
	struct fs_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	store_names(ctx, opts->store_dir);
	ctx->mountpoint = abs_path(opts->mountpoint);
	if (!ctx->store_name || !ctx->store_dir || !ctx->mountpoint ||
	    watch_cond_init(&ctx->watch.cond) != 0) {
		free(ctx->store_name);
		free(ctx->store_dir);
		free(ctx->mountpoint);
		free(ctx);
		return NULL;
	}
	if (fs_nodes_init(ctx) < 0) {
		pthread_cond_destroy(&ctx->watch.cond);
		free(ctx->store_name);
		free(ctx->store_dir);
		free(ctx->mountpoint);
		free(ctx->inodes.buckets);
		free(ctx);
		return NULL;
	}
	ctx->foreground = opts->foreground;
	ctx->read_only = opts->read_only;
	ctx->log_fd = -1;
	pthread_mutex_init(&ctx->err.lock, NULL);
	ctx->uid = getuid();
	ctx->gid = getgid();
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->inval.lock, NULL);
	pthread_cond_init(&ctx->inval.cond, NULL);
	pthread_cond_init(&ctx->inval.sent_cond, NULL);
	pthread_mutex_init(&ctx->push_lock, NULL);
	pthread_mutex_init(&ctx->ahead.lock, NULL);
	pthread_mutex_init(&ctx->schema.try_lock, NULL);
	pthread_mutex_init(&ctx->schema.lock, NULL);
	{
		pthread_rwlockattr_t ra;

		/* renames and unlinks (exclusive) are not starved by streams of commits */
		pthread_rwlockattr_init(&ra);
		pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
		pthread_rwlock_init(&ctx->section.gen_lock, &ra);
		pthread_rwlockattr_destroy(&ra);
	}
	pthread_mutex_init(&ctx->watch.lock, NULL);
	return ctx;
}

static void ctx_free(struct fs_ctx *ctx)
{
	fs_ahead_release(ctx);
	fs_nodes_release(ctx);
	pthread_mutex_destroy(&ctx->ahead.lock);
	fs_table_release(ctx);
	pthread_mutex_destroy(&ctx->schema.try_lock);
	pthread_mutex_destroy(&ctx->schema.lock);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->inval.lock);
	pthread_cond_destroy(&ctx->inval.cond);
	pthread_cond_destroy(&ctx->inval.sent_cond);
	pthread_rwlock_destroy(&ctx->section.gen_lock);
	pthread_mutex_destroy(&ctx->push_lock);
	pthread_mutex_destroy(&ctx->watch.lock);
	pthread_cond_destroy(&ctx->watch.cond);
	pthread_mutex_destroy(&ctx->err.lock);
	for (unsigned i = 0; i < FS_ERRORS_MAX; i++)
		free(ctx->err.ring[i].path);
	if (ctx->log_fd >= 0)
		close(ctx->log_fd);
	free(ctx->log_path);
	free(ctx->store_name);
	free(ctx->store_dir);
	free(ctx->mountpoint);
	free(ctx);
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void mountinfo_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * The absolute path of dir as mountinfo spells it: resolved, or for a dead
 * mount (which cannot be resolved) its parent resolved and its name.
 */
static char *mount_path(const char *dir)
{
	char *path = realpath(dir, NULL), *copy, *slash, *parent, *out = NULL;

	if (path)
		return path;
	copy = abs_path(dir);
	if (!copy)
		return NULL;
	while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
		copy[strlen(copy) - 1] = '\0';
	slash = strrchr(copy, '/');
	if (slash && slash != copy) {
		*slash = '\0';
		parent = realpath(copy, NULL);
		if (parent) {
			out = malloc(strlen(parent) + strlen(slash + 1) + 2);
			if (out)
				sprintf(out, "%s/%s", strcmp(parent, "/") ? parent : "", slash + 1);
			free(parent);
		}
		*slash = '/';
	}
	if (!out)
		return copy;
	free(copy);
	return out;
}

enum fs_mount_state fs_mount_probe(const char *dir, char *fstype, size_t cap)
{
	enum fs_mount_state state = FS_MOUNT_NONE;
	char *path, *line = NULL;
	size_t linecap = 0;
	struct statvfs sv;
	FILE *in;

	if (cap)
		fstype[0] = '\0';
	path = mount_path(dir);
	in = path ? fopen("/proc/self/mountinfo", "re") : NULL;
	if (!in) {
		free(path);
		return FS_MOUNT_NONE;
	}
	/* id parent major:minor root MOUNTPOINT options... - TYPE source superoptions */
	while (getline(&line, &linecap, in) > 0) {
		char *mnt = NULL, *sep = strstr(line, " - "), *tok, *save = NULL;
		int field = 0;

		if (!sep)
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			if (++field == 5)
				mnt = tok;
		if (!mnt)
			continue;
		mountinfo_unescape(mnt);
		if (strcmp(mnt, path) != 0)
			continue;
		state = FS_MOUNT_LIVE;	/* the last line for it is the newest mount */
		tok = strtok_r(sep + 3, " ", &save);
		if (cap)
			snprintf(fstype, cap, "%s", tok ? tok : "");
	}
	free(line);
	fclose(in);
	/*
	 * statfs always reaches the daemon (stat may be answered from the
	 * cache). A dead daemon's mount answers ENOTCONN over /dev/fuse, and
	 * ECONNABORTED over io_uring (the rings' teardown aborts the link);
	 * ECANCELED while that teardown, which the kernel runs after the
	 * process is gone, has not finished (a clean-clone run's ls got it
	 * right after kill -9 and wait).
	 */
	if (state == FS_MOUNT_LIVE && statvfs(path, &sv) < 0 &&
	    (errno == ENOTCONN || errno == ECONNABORTED || errno == ECANCELED))
		state = FS_MOUNT_DEAD;
	free(path);
	return state;
}

/* The queue's bound for a tool's last touch (FS_LATER_MS, or the test's). */
static unsigned later_ms(void)
{
	const char *s = getenv("KVFS_TEST_LATER_MS");
	int ms = s ? atoi(s) : 0;

	return ms > 0 ? (unsigned)ms : FS_LATER_MS;
}

/*
 * Refuses to stack a second daemon on a kvfs mount, or to mount over a dead
 * one (kill -9 left it: "Transport endpoint is not connected").
 */
static int check_mountpoint(const char *mnt)
{
	enum fs_mount_state state;
	char type[64];
	struct stat st;

	state = fs_mount_probe(mnt, type, sizeof(type));
	if (state == FS_MOUNT_DEAD) {
		fprintf(stderr, "kvfs: mount: %s: a dead mount is left there (its daemon ended "
			"without unmounting); clear it with: kvfs umount %s\n", mnt, mnt);
		return -1;
	}
	if (state == FS_MOUNT_LIVE && strcmp(type, "fuse.kvfs") == 0) {
		fprintf(stderr, "kvfs: mount: %s: already a kvfs mount; unmount it first "
			"(kvfs umount %s)\n", mnt, mnt);
		return -1;
	}
	if (stat(mnt, &st) < 0) {
		fprintf(stderr, "kvfs: mount: %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "kvfs: mount: %s: %s\n", mnt, strerror(ENOTDIR));
		return -1;
	}
	return 0;
}

static int open_model(struct fs_ctx *ctx, const struct fs_options *opts)
{
	unsigned flags = (opts->create ? MODEL_OPEN_CREATE : 0) |
			 (opts->read_only ? MODEL_OPEN_READONLY : MODEL_OPEN_SYNC_ONCE);
	struct model_error err = { 0 };
	const char *lag;
	struct stat st;
	int ret;

	if (!opts->create && !model_name_is_url(ctx->store_name) &&
	    stat(ctx->store_name, &st) < 0 && errno == ENOENT) {
		fprintf(stderr, "kvfs: mount: no store at %s (use --create to make one)\n",
			opts->store_dir);
		return -1;
	}
	ret = model_open(ctx->store_name, flags, &ctx->model, &err);
	if (ret < 0) {
		fprintf(stderr, "kvfs: mount: %s\n", err.msg[0] ? err.msg : strerror(-ret));
		return -1;
	}
	fs_ahead_start(ctx);
	lag = getenv("KVFS_TEST_RELEASE_LAG_MS");
	if (lag)
		ctx->release_lag_us = (unsigned)atoi(lag) * 1000u;
	lag = getenv("KVFS_TEST_RELEASE_LATE_MS");
	if (lag)
		ctx->release_late_us = (unsigned)atoi(lag) * 1000u;
	/* -o commit=MS: writes are checked and queued, committed together (docs/COMMITS.md) */
	if (ctx->commit_ms && !opts->read_only &&
	    (ret = model_queue_start(ctx->model, ctx->commit_ms, MODEL_QUEUE_ALL)) < 0) {
		fprintf(stderr, "kvfs: mount: commit=%u: %s\n", ctx->commit_ms, strerror(-ret));
		model_close(ctx->model);
		return -1;
	}
	/*
	 * The default mode: a tool's finishing touches to a file it has just
	 * written are queued for its next commit (fs_node_fresh). A store
	 * that cannot hold a batch open (etcd) commits each at once.
	 * KVFS_TEST_LATER_MS sets the bound for a test whose next commit must
	 * meet the touch however slow a loaded machine makes it (tests/44).
	 */
	if (!ctx->commit_ms && !opts->read_only &&
	    model_queue_start(ctx->model, later_ms(), MODEL_QUEUE_LATER) == 0)
		ctx->later = true;
	return 0;
}

/*
 * Runs the session until it is unmounted or signalled; 0 on a clean end,
 * SERVE_NEVER_MOUNTED when it failed before the store was ever served.
 */
#define SERVE_NEVER_MOUNTED (-2)
static int serve(struct fs_ctx *ctx, int *report)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (fuse_set_signal_handlers(ctx->se) < 0) {
		fprintf(stderr, "kvfs: mount: cannot set signal handlers\n");
		return SERVE_NEVER_MOUNTED;
	}
	if (fuse_session_mount(ctx->se, ctx->mountpoint) < 0) {
		fprintf(stderr, "kvfs: mount: cannot mount %s\n", ctx->mountpoint);
		ret = SERVE_NEVER_MOUNTED;
		goto out_signals;
	}
	fs_transport_start(ctx);	/* before the kernel's INIT is read */
	if (fs_inval_start(ctx) < 0)
		fs_log(ctx, LOG_WARNING, "no invalidation thread: names expire by timeout");
	if (fs_watch_start(ctx) < 0)
		fs_log(ctx, LOG_WARNING, "no watcher thread: changes by other processes show late");
	if (!ctx->foreground)
		detach_finish(ctx, report);
	log_serving(ctx);
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		ret = -1;
	} else {
		fuse_loop_cfg_set_max_threads(cfg, 32);
		ret = fuse_session_loop_mt(ctx->se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	fs_transport_stop(ctx);	/* the io_uring threads serve nothing past here */
	/*
	 * Unmounted: what is left (the watcher's last round, pending commits,
	 * the store's close) waits on a remote store's servers FS_EXIT_MS at
	 * most, so that a daemon whose cluster stopped answering still exits.
	 */
	model_end_calls(ctx->model, FS_EXIT_MS);
	fs_watch_stop(ctx);
	fs_inval_stop(ctx);
	fuse_session_unmount(ctx->se);
	fs_log(ctx, LOG_INFO, "unmounted %s", ctx->mountpoint);
out_signals:
	fuse_remove_signal_handlers(ctx->se);
	if (ret == SERVE_NEVER_MOUNTED)
		return ret;
	return ret >= 0 ? 0 : -1;	/* > 0: the number of the signal that ended it */
}

int fs_mount_main(const struct fs_options *opts)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	int report = -1, code = 1, served = SERVE_NEVER_MOUNTED;
	struct fs_ctx *ctx;

	if (!opts->store_dir || !opts->mountpoint) {
		fprintf(stderr, "kvfs: mount: a store and a mountpoint are needed\n");
		return 2;
	}
	if (check_mountpoint(opts->mountpoint) < 0)
		return 1;
	if (!opts->foreground) {
		code = detach_fork(&report);
		if (code >= 0)
			return code;
		code = 1;
	}
	ctx = ctx_new(opts);
	if (!ctx) {
		fprintf(stderr, "kvfs: mount: out of memory\n");
		goto out_report;
	}
	if (build_args(ctx, opts, &args) < 0)
		goto out_args;	/* a refused option leaves the arguments built so far */
	if (open_model(ctx, opts) < 0)
		goto out_args;
	ctx->se = fuse_session_new(&args, &fs_ops_counted, sizeof(fs_ops_counted), ctx);
	if (!ctx->se)
		goto out_model;
	served = serve(ctx, &report);
	code = served == 0 ? 0 : 1;
	fuse_session_destroy(ctx->se);	/* runs fs_ops.destroy: commits what is pending */
out_model:
	fs_files_commit_all(ctx);
	/* A --create that never served leaves no store behind. */
	if (served == SERVE_NEVER_MOUNTED) {
		model_close_discard(ctx->model);
	} else {
		/* commits the queued batch (-o commit); the last commit's meta page
		 * is not synced by its commit (SYNC_ONCE) */
		if (!opts->read_only && model_sync(ctx->model) < 0)
			fs_log(ctx, LOG_ERR, "cannot sync the store at unmount");
		model_close(ctx->model);
	}
out_args:
	fuse_opt_free_args(&args);
	ctx_free(ctx);
out_report:
	detach_report(&report, (unsigned char)code);
	if (!opts->foreground)
		closelog();
	return code;
}
