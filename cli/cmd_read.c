/*
 * cli/cmd_read.c - the verbs that only read a store: get, ls, export, dump,
 * check, info and backup. Each opens the store read-only, which LMDB allows
 * while the store is mounted and being written.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

#define MIB (1024.0 * 1024.0)

enum {
	OPT_JSON = 1,
	OPT_COMPACT,
	OPT_LONG,
};

const struct cli_opt cli_opts_get[] = {
	{ OPT_JSON, 0, "json", NULL, "print the subtree (or leaf) at PATH as JSON, pretty-printed" },
	{ OPT_COMPACT, 0, "compact", NULL, "print the JSON on one line (implies --json)" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_ls[] = {
	{ OPT_LONG, 'l', "long", NULL, "prefix each name with its mode, its owner\n"
	  "(uid:gid; - when none is stored: the mounting\n"
	  "user), the leaf's type or the directory's kind,\n"
	  "and the size in bytes (- for a directory)" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_export[] = {
	{ OPT_COMPACT, 0, "compact", NULL, "one line (and a newline) instead of pretty-printed" },
	{ 0, 0, NULL, NULL, NULL },
};

static bool node_is_container(const struct model_node *node)
{
	return node->kind == MODEL_KIND_OBJECT || node->kind == MODEL_KIND_ARRAY;
}

/* JSON to stdout; compact JSON is one line, so it gets its newline here. */
static int export_run(struct model *m, const char *path, bool compact)
{
	struct model_error err = { .msg = "" };
	int ret;

	ret = model_export_file(m, path, compact ? MODEL_JSON_COMPACT : 0, stdout, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	if (compact)
		putchar('\n');
	return CLI_EXIT_OK;
}

/* The leaf at path, exactly as `cat` prints it in the mount. */
static int get_text(struct model *m, const char *path)
{
	struct model_error err = { .msg = "" };
	struct model_node node;
	char *text;
	size_t len;
	int ret;

	ret = model_stat(m, path, 0, &node, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	if (node_is_container(&node))
		return cli_fail("%s: is a directory, use --json", *path ? path : "/");
	ret = model_read_all(m, path, &text, &len, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	fwrite(text, 1, len, stdout);
	free(text);
	return CLI_EXIT_OK;
}

int cli_cmd_get(const struct cli_verb *verb, int argc, char **argv)
{
	bool json = false, compact = false;
	struct cli_parse p;
	struct model *m;
	const char *arg;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		if (id == OPT_JSON)
			json = true;
		else if (id == OPT_COMPACT)
			compact = json = true;
	if (id < 0)
		return cli_parse_exit(id);
	cli_signals_catch();
	if (cli_open(p.operands[0], CLI_OPEN_READ, &m))
		return CLI_EXIT_FAIL;
	if (json) {
		ret = export_run(m, p.operands[1], compact);
	} else {
		ret = get_text(m, p.operands[1]);
	}
	model_close(m);
	return ret;
}

/* ---- ls ---- */

/*
 * The mode as ls(1) shows it: the stored one, else the default the mount
 * shows (0755 directories, 0644 files); the owner "uid:gid" when stored
 * ("-" for either part: the mounting user's).
 */
static void ls_print_attr(const struct model_node *node)
{
	static const char rwx[] = "rwxrwxrwx";
	bool dir = node_is_container(node);
	unsigned mode = (node->attr.have & MODEL_ATTR_MODE) ? node->attr.mode : dir ? 0755 : 0644;
	char text[11], owner[32], uid[12] = "-", gid[12] = "-";

	text[0] = dir ? 'd' : '-';
	for (int i = 0; i < 9; i++)
		text[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & 04000)
		text[3] = (mode & 0100) ? 's' : 'S';
	if (mode & 02000)
		text[6] = (mode & 0010) ? 's' : 'S';
	if (mode & 01000)
		text[9] = (mode & 0001) ? 't' : 'T';
	text[10] = '\0';
	if (node->attr.have & MODEL_ATTR_UID)
		snprintf(uid, sizeof(uid), "%u", (unsigned)node->attr.uid);
	if (node->attr.have & MODEL_ATTR_GID)
		snprintf(gid, sizeof(gid), "%u", (unsigned)node->attr.gid);
	if ((node->attr.have & (MODEL_ATTR_UID | MODEL_ATTR_GID)) == 0)
		snprintf(owner, sizeof(owner), "-");
	else
		snprintf(owner, sizeof(owner), "%s:%s", uid, gid);
	printf("%s %-11s ", text, owner);
}

static void ls_print(const char *name, const struct model_node *node, bool long_form)
{
	if (!long_form) {
		printf("%s\n", name);
		return;
	}
	ls_print_attr(node);
	if (node_is_container(node))
		printf("%-7s %12s  %s\n", model_kind_name(node->kind), "-", name);
	else
		printf("%-7s %12" PRIu64 "  %s\n", node->kind == MODEL_KIND_LEAF ?
		       model_type_name(node->type) : model_kind_name(node->kind),
		       node->size, name);
}

static int ls_one(void *arg, const char *name, const struct model_node *node)
{
	ls_print(name, node, *(bool *)arg);
	return 0;
}

/* `ls FILE` prints FILE's own name, as ls(1) does. */
static const char *last_name(const char *path)
{
	const char *end = path + strlen(path), *start;

	while (end > path && end[-1] == '/')
		end--;
	for (start = end; start > path && start[-1] != '/'; start--)
		;
	return start;
}

static int ls_run(struct model *m, const char *path, bool long_form)
{
	struct model_error err = { .msg = "" };
	struct model_list *list;
	struct model_node node;
	int ret;

	ret = model_stat(m, path, 0, &node, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	if (!node_is_container(&node)) {
		ls_print(last_name(path), &node, long_form);
		return CLI_EXIT_OK;
	}
	ret = model_list_open(m, path, &list, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	do
		ret = model_list_fill(list, ls_one, &long_form);
	while (ret == 1);
	if (ret == -EIO && model_list_damage(list))
		ret = cli_fail("%s: cannot list: the store is damaged here: %s; run kvfs check "
			       "(then restore from a backup, or kvfs dump what is readable)", path,
			       model_list_damage(list));
	else if (ret < 0)
		ret = cli_fail("%s: cannot list: %s", path, strerror(-ret));
	model_list_close(list);
	if (ret != 0)
		return ret;
	return CLI_EXIT_OK;
}

int cli_cmd_ls(const struct cli_verb *verb, int argc, char **argv)
{
	bool long_form = false;
	struct cli_parse p;
	struct model *m;
	int ret;

	cli_parse_init(&p, verb, argc, argv);
	cli_signals_catch();
	if (!cli_parse_open(&p, CLI_OPEN_READ, &long_form, &m, &ret))
		return ret;
	ret = ls_run(m, p.noperands > 1 ? p.operands[1] : "/", long_form);
	model_close(m);
	return ret;
}

/* ---- export, dump ---- */

int cli_cmd_export(const struct cli_verb *verb, int argc, char **argv)
{
	bool compact = false;
	struct cli_parse p;
	const char *path;
	struct model *m;
	int ret;

	cli_parse_init(&p, verb, argc, argv);
	cli_signals_catch();
	if (!cli_parse_open(&p, CLI_OPEN_READ, &compact, &m, &ret))
		return ret;
	path = p.noperands > 1 ? p.operands[1] : "/";
	ret = export_run(m, path, compact);
	model_close(m);
	return ret;
}

int cli_cmd_dump(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	struct cli_parse p;
	struct model *m;
	int ret;

	cli_parse_init(&p, verb, argc, argv);
	cli_signals_catch();
	if (!cli_parse_open(&p, CLI_OPEN_READ, NULL, &m, &ret))
		return ret;
	ret = model_dump(m, stdout, &err);
	model_close(m);
	return ret < 0 ? cli_model_fail(ret, &err, p.operands[0]) : CLI_EXIT_OK;
}

/* ---- check, info ---- */

/* The walk itself: open, verify, print the report and the summary line. */
const struct cli_opt cli_opts_check[] = {
	{ 1, 0, "repair", NULL,
	  "first rebuild every table index from the rows, the\n"
	  "TTL spaces from each other, and (etcd) the children\n"
	  "space's missing entries" },
	{ 0, 0, NULL, NULL, NULL },
};

/* After a report that the store is damaged (on stderr): what to do about it. */
static int check_advise(const char *dir)
{
	char line[3 * PATH_MAX];

	if (cli_damage_advice(line, sizeof(line), "kvfs: check: ", dir) > 0)
		fputs(line, stderr);
	return CLI_EXIT_FAIL;
}

static int check_run(const char *dir, bool repair)
{
	struct model_error err = { .msg = "" };
	struct model_info info = { 0 };
	uint64_t problems = 0;
	struct model *m;
	int ret;

	if (cli_open_ret(dir, repair ? CLI_OPEN_WRITE : CLI_OPEN_READ, &m, &ret))
		return ret == -EIO ? check_advise(dir) : CLI_EXIT_FAIL;	/* damaged: said why */
	ret = repair ? model_check_repair(m, &err) : 0;
	if (ret < 0) {
		model_close(m);
		return cli_model_fail(ret, &err, dir);
	}
	if (repair)
		printf("check: indexes rebuilt\ncheck: ttl space rebuilt\n");
	ret = model_check(m, stdout, &problems, &err);
	if (ret < 0) {
		model_close(m);
		cli_model_fail(ret, &err, dir);
		return ret == -EIO ? check_advise(dir) : CLI_EXIT_FAIL;
	}
	model_info(m, &info);
	model_close(m);
	if (info.stale_readers_cleared)
		printf("check: warning: cleared %u reader slots left by processes that died "
		       "while reading (they pin old pages and make the file grow)\n",
		       info.stale_readers_cleared);
	printf("check: %" PRIu64 " keys, %" PRIu64 " problems\n", info.entries, problems);
	return problems ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	default: return "a signal";
	}
}

/*
 * A corrupt page can make LMDB (or a decoder) fault. The walk runs in a
 * child process, so that a fault becomes a report and an exit status 1
 * instead of killing check. A signal that was sent (Ctrl-C, a closed pipe)
 * ends this process the same way.
 */
int cli_cmd_check(const struct cli_verb *verb, int argc, char **argv)
{
	char advice[3 * PATH_MAX];
	struct cli_parse p;
	const char *arg;
	int id, status, sig;
	pid_t pid;

	bool repair = false;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		repair = true;
	if (id < 0)
		return cli_parse_exit(id);
	cli_signals_catch();
	cli_damage_checking(p.operands[0]);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return cli_fail("check: cannot fork: %s", strerror(errno));
	if (pid == 0)
		exit(cli_signals_finish(cli_finish_stdout(check_run(p.operands[0], repair))));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return cli_fail("check: %s", strerror(errno));
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	sig = WTERMSIG(status);
	if (sig == SIGPIPE || sig == SIGINT || sig == SIGTERM || sig == SIGKILL ||
	    cli_signal_caught())
		return cli_signals_finish(128 + sig);
	printf("check: store is damaged: the walk crashed with %s (%d)\n", signal_name(sig), sig);
	if (cli_damage_advice(advice, sizeof(advice), "check: ", p.operands[0]) > 0)
		fputs(advice, stdout);
	return CLI_EXIT_FAIL;
}

static void info_size(const char *label, uint64_t bytes)
{
	printf("%-11s %" PRIu64 " bytes (%.1f MiB)\n", label, bytes, (double)bytes / MIB);
}

int cli_cmd_info(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_info info;
	struct cli_parse p;
	struct model *m;
	int ret;

	cli_parse_init(&p, verb, argc, argv);
	cli_signals_catch();
	if (!cli_parse_open(&p, CLI_OPEN_READ, NULL, &m, &ret))
		return ret;
	ret = model_info(m, &info);
	model_close(m);
	if (ret < 0)
		return cli_fail("%s: %s", p.operands[0], strerror(-ret));
	printf("store:      %s\n", p.operands[0]);
	printf("keys:       %" PRIu64 "\n", info.entries);
	if (!info.has_usage) {	/* no local file: no space or reader figures */
		printf("backend:    %s (no file usage or reader slots to show)\n", info.backend);
		printf("generation: %" PRIu64 "\n", info.generation);
		return CLI_EXIT_OK;
	}
	info_size("used:", info.used_bytes);
	info_size("free:", info.free_bytes);
	info_size("high water:", info.high_water_bytes);
	info_size("file:", info.file_bytes);
	info_size("map size:", info.map_size);
	printf("readers:    %u", info.readers);
	for (unsigned i = 0; i < info.reader_pids_len; i++)
		printf("%s%d", i ? " " : " (pids ", info.reader_pids[i]);
	printf("%s\n", info.reader_pids_len < info.readers ? " ...)" :
	       info.reader_pids_len ? ")" : "");
	printf("stale readers cleared: %u\n", info.stale_readers_cleared);
	printf("generation: %" PRIu64 "\n", info.generation);
	return CLI_EXIT_OK;
}

/* ---- backup ---- */

/* 1 when dir is an empty directory, 0 when it does not exist, else prints why and -1. */
static int backup_target_state(const char *dir)
{
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (stat(dir, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		cli_fail("%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		cli_fail("%s: exists and is not a directory", dir);
		return -1;
	}
	d = opendir(dir);
	if (!d) {
		cli_fail("%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			break;
	closedir(d);
	if (de) {
		cli_fail("%s: not empty; a backup needs a new or empty directory", dir);
		return -1;
	}
	return 1;
}

/* Removes what a failed backup left in dir (the store's two files). */
static void backup_cleanup(const char *dir, bool created)
{
	static const char *const files[] = { "data.mdb", "lock.mdb" };
	char path[4096];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, files[i]) < (int)sizeof(path))
			unlink(path);
	}
	if (created)
		rmdir(dir);
}

/*
 * Creates the missing directories above dir, as mkdir -p does (mode 0777
 * less the umask). *made is the topmost one it created (heap; the caller
 * frees it), or NULL when all were there. 0, or -errno (then *made still
 * names what was created, for backup_remove_parents).
 */
static int backup_make_parents(const char *dir, char **made)
{
	char *path, *slash;
	int ret = 0;

	*made = NULL;
	path = strdup(dir);
	if (!path)
		return -ENOMEM;
	for (slash = strchr(path + 1, '/'); slash && slash[1]; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(path, 0777) == 0) {
			if (!*made && !(*made = strdup(path)))
				ret = -ENOMEM;
		} else if (errno != EEXIST) {
			ret = -errno;
		}
		*slash = '/';
		if (ret)
			break;
	}
	free(path);
	return ret;
}

/* Removes the directories above dir up to made, which a failed backup created. */
static void backup_remove_parents(const char *dir, const char *made)
{
	char *path, *slash;

	if (!made)
		return;
	path = strdup(dir);
	if (!path)
		return;
	while ((slash = strrchr(path, '/')) && slash != path) {
		*slash = '\0';
		if (strlen(path) < strlen(made))
			break;
		rmdir(path);
	}
	free(path);
}

/* Opens the copy to prove it is a usable store, and tells how to use it. */
static int backup_report(const char *store, const char *dir)
{
	struct model_info info = { 0 };
	struct model *copy;

	if (cli_open(dir, CLI_OPEN_READ, &copy))
		return cli_fail("%s: the backup was written but cannot be opened", dir);
	model_info(copy, &info);
	model_close(copy);
	printf("backup: copied %s to %s (%" PRIu64 " keys, %.1f MiB)\n", store, dir,
	       info.entries, (double)info.used_bytes / MIB);
	printf("The copy is a complete store: read it with `kvfs export %s`, mount it\n"
	       "with `kvfs mount %s MNT`, or restore it by unmounting %s and putting\n"
	       "%s in its place.\n", dir, dir, store, dir);
	return CLI_EXIT_OK;
}

int cli_cmd_backup(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	const char *store, *dir, *arg;
	char *made = NULL;
	struct cli_parse p;
	struct model *m;
	bool created;
	int id, ret, state;

	cli_parse_init(&p, verb, argc, argv);
	id = cli_parse_next(&p, &arg);
	if (id < 0)
		return cli_parse_exit(id);
	store = p.operands[0];
	dir = p.operands[1];
	state = backup_target_state(dir);
	if (state < 0)
		return CLI_EXIT_FAIL;
	if (cli_open(store, CLI_OPEN_READ, &m))
		return CLI_EXIT_FAIL;
	created = state == 0;
	if (created) {
		ret = backup_make_parents(dir, &made);
		if (ret == 0 && mkdir(dir, 0700) != 0)
			ret = -errno;
		if (ret) {
			ret = cli_fail("%s: cannot create: %s", dir, strerror(-ret));
			goto out_remove_parents;
		}
	}
	ret = model_backup(m, dir, &err);
	if (ret < 0) {
		ret = cli_model_fail(ret, &err, dir);
		backup_cleanup(dir, created);
		goto out_remove_parents;
	}
	ret = CLI_EXIT_OK;
	goto out_close;
out_remove_parents:
	backup_remove_parents(dir, made);
out_close:
	free(made);
	model_close(m);
	return ret ? ret : backup_report(store, dir);
}
