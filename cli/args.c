/*
 * cli/args.c - the argument parser, error reporting and store opening that
 * every verb of the `kvfs` command shares.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

void cli_parse_init(struct cli_parse *p, const struct cli_verb *verb,
		    int argc, char **argv)
{
	memset(p, 0, sizeof(*p));
	p->verb = verb;
	p->opts = verb->opts;
	p->argc = argc;
	p->argv = argv;
	p->next = 1;
}

int cli_parse_exit(int result)
{
	return result == CLI_PARSE_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
}

static void usage_verror(const struct cli_verb *verb, const char *fmt, va_list ap)
{
	fprintf(stderr, "kvfs: %s: ", verb->name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nusage: kvfs %s %s\n", verb->name, verb->synopsis);
	fprintf(stderr, "Try 'kvfs %s --help' for more information.\n", verb->name);
}

/* Prints a usage error for the verb being parsed; returns CLI_PARSE_ERROR. */
__attribute__((format(printf, 2, 3)))
static int parse_fail(const struct cli_parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_verror(p->verb, fmt, ap);
	va_end(ap);
	return CLI_PARSE_ERROR;
}

/* "-5", "-0.5", "-.5": a value, not an option. */
static bool looks_negative_number(const char *s)
{
	return s[0] == '-' && ((s[1] >= '0' && s[1] <= '9') ||
			       (s[1] == '.' && s[2] >= '0' && s[2] <= '9'));
}

static int add_operand(struct cli_parse *p, char *arg)
{
	if (p->noperands >= p->verb->max_operands)
		return parse_fail(p, "unexpected argument '%s'", arg);
	p->operands[p->noperands++] = arg;
	return 0;
}

static const struct cli_opt *find_long(const struct cli_parse *p, const char *name, size_t len)
{
	for (const struct cli_opt *o = p->opts; o && o->id; o++)
		if (o->long_name && strlen(o->long_name) == len &&
		    memcmp(o->long_name, name, len) == 0)
			return o;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_parse *p, char c)
{
	for (const struct cli_opt *o = p->opts; o && o->id; o++)
		if (o->short_name == c)
			return o;
	return NULL;
}

/* "--name" or "--name=value". */
static int parse_long(struct cli_parse *p, const char *word, const char **arg)
{
	const char *name = word + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	const struct cli_opt *o;

	if (len == 4 && memcmp(name, "help", 4) == 0 && !eq) {
		cli_verb_help(p->verb);
		return CLI_PARSE_HELP;
	}
	o = find_long(p, name, len);
	if (!o)
		return parse_fail(p, "unknown option '--%.*s'", (int)len, name);
	if (!o->arg_name) {
		if (eq)
			return parse_fail(p, "option '--%s' takes no value", o->long_name);
		return o->id;
	}
	if (eq) {
		*arg = eq + 1;
	} else {
		if (p->next >= p->argc)
			return parse_fail(p, "option '--%s' needs a value", o->long_name);
		*arg = p->argv[p->next++];
	}
	return o->id;
}

/* The next letter of a "-abc" cluster; "-oVALUE" and "-o VALUE" both work. */
static int parse_short(struct cli_parse *p, const char **arg)
{
	char c = *p->cluster++;
	const struct cli_opt *o;

	if (!*p->cluster)
		p->cluster = NULL;
	if (c == 'h') {
		cli_verb_help(p->verb);
		return CLI_PARSE_HELP;
	}
	o = find_short(p, c);
	if (!o)
		return parse_fail(p, "unknown option '-%c'", c);
	if (!o->arg_name)
		return o->id;
	if (p->cluster) {
		*arg = p->cluster;
		p->cluster = NULL;
		return o->id;
	}
	if (p->next >= p->argc)
		return parse_fail(p, "option '-%c' needs a value", c);
	*arg = p->argv[p->next++];
	return o->id;
}

int cli_parse_next(struct cli_parse *p, const char **arg)
{
	const struct cli_verb *v = p->verb;
	int ret;

	*arg = NULL;
	if (p->cluster)
		return parse_short(p, arg);
	while (p->next < p->argc) {
		char *word = p->argv[p->next++];

		if (p->operands_only || word[0] != '-' || word[1] == '\0' ||
		    looks_negative_number(word)) {
			ret = add_operand(p, word);
			if (ret < 0)
				return ret;
			continue;
		}
		if (strcmp(word, "--") == 0) {
			p->operands_only = true;
			continue;
		}
		if (word[1] == '-')
			return parse_long(p, word, arg);
		p->cluster = word + 1;
		return parse_short(p, arg);
	}
	if (p->noperands < v->min_operands)
		return parse_fail(p, "missing %s", v->operand_names[p->noperands]);
	return CLI_PARSE_END;
}

/* ---- reporting ---- */

int cli_usage_error(const struct cli_verb *verb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_verror(verb, fmt, ap);
	va_end(ap);
	return CLI_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	if (cli_signal_caught())
		return CLI_EXIT_FAIL;	/* the failure is the signal's doing: stay quiet */
	fputs("kvfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_FAIL;
}

int cli_model_fail(int ret, const struct model_error *err, const char *what)
{
	if (err && err->msg[0])
		return cli_fail("%s", err->msg);
	return cli_fail("%s: %s", what, strerror(ret < 0 ? -ret : ret));
}

/* What each exit code means, for every verb's help; docs/kvfs.1 says the same. */
static const struct {
	enum cli_exit code;
	const char *meaning;
} exit_meanings[] = {
	{ CLI_EXIT_OK, "success" },
	{ CLI_EXIT_FAIL, "the operation failed or was refused; the reason is on stderr" },
	{ CLI_EXIT_USAGE, "the command line is wrong (unknown option, missing operand...)" },
};

/*
 * Writes the spellings of the option at o and of its aliases into buf:
 * short forms first, then long ones, the value's name last ("-t, --type
 * TYPE"). A long-only option is indented to line up with "-x, --long".
 */
static void help_opt_names(const struct cli_opt *o, char *buf, size_t size)
{
	const struct cli_opt *a;
	size_t len = 0;

	buf[0] = '\0';
	for (a = o; a == o || (a->id && !a->help); a++)
		if (a->short_name && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s-%c",
						len ? ", " : "", a->short_name);
	if (len == 0)
		len = (size_t)snprintf(buf, size, "    ");
	for (a = o; a == o || (a->id && !a->help); a++)
		if (a->long_name && len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s--%s",
						buf[len - 1] == ' ' ? "" : ", ",
						a->long_name);
	if (o->arg_name && len < size)
		snprintf(buf + len, size - len, " %s", o->arg_name);
}

/* One help line per option, its text aligned after the longest spelling. */
static void help_options(const struct cli_opt *opts)
{
	const int width_max = 24;
	char names[64];
	int width = (int)strlen("-h, --help");

	for (const struct cli_opt *o = opts; o && o->id; o++) {
		if (!o->help)
			continue;
		help_opt_names(o, names, sizeof(names));
		if ((int)strlen(names) > width && (int)strlen(names) <= width_max)
			width = (int)strlen(names);
	}
	printf("\nOptions:\n");
	for (const struct cli_opt *o = opts; o && o->id; o++) {
		const char *text = o->help;

		if (!text)
			continue;
		help_opt_names(o, names, sizeof(names));
		printf("  %-*s  ", width, names);
		if (!*text)
			putchar('\n');
		while (*text) {
			size_t len = strcspn(text, "\n");

			printf("%.*s\n", (int)len, text);
			text += len;
			if (*text == '\n' && *++text)
				printf("  %-*s  ", width, "");
		}
	}
	printf("  %-*s  %s\n", width, "-h, --help", "show this help and exit");
}

void cli_verb_help(const struct cli_verb *verb)
{
	printf("usage: kvfs %s %s\n\n%s\n", verb->name, verb->synopsis, verb->summary);
	if (verb->help && verb->help[0])
		printf("\n%s", verb->help);
	help_options(verb->opts);
	printf("\nExit status:\n");
	for (size_t i = 0; i < sizeof(exit_meanings) / sizeof(exit_meanings[0]); i++)
		printf("  %d  %s\n", (int)exit_meanings[i].code, exit_meanings[i].meaning);
}

int cli_finish_stdout(int code)
{
	if ((fflush(stdout) != 0 || ferror(stdout)) && !cli_signal_caught()) {
		int saved = errno;

		cli_fail("write error on standard output: %s", strerror(saved));
		return CLI_EXIT_FAIL;
	}
	return code;
}

/*
 * The CLI's only global state: a signal handler can reach nothing else.
 * broken_fd is the write end of a pipe whose read end is closed; the
 * store watches caught_signal (cli_open).
 */
static volatile sig_atomic_t caught_signal;
static int broken_fd = -1;

/* ---- stores ---- */

/* "no store at DIR"; a verb that adds data also names the verbs that make one. */
static int no_store(const char *dir, enum cli_open_mode mode)
{
	if (mode == CLI_OPEN_MAKE)
		return cli_fail("no store at %s (make one with kvfs mkdir --create, "
				"put --create, import or mount --create)", dir);
	return cli_fail("no store at %s", dir);
}

int cli_open(const char *dir, enum cli_open_mode mode, struct model **out)
{
	return cli_open_ret(dir, mode, out, NULL);
}

int cli_open_ret(const char *dir, enum cli_open_mode mode, struct model **out, int *open_err)
{
	struct model_error err = { .msg = "" };
	/* a verb follows no other writer's commits as a mount does: it reads one moment */
	unsigned flags = MODEL_OPEN_ONESHOT;
	struct stat st;
	int ret;

	*out = NULL;
	if (open_err)
		*open_err = 0;
	if (mode == CLI_OPEN_READ)
		flags |= MODEL_OPEN_READONLY;
	if (mode == CLI_OPEN_CREATE)
		flags |= MODEL_OPEN_CREATE;
	/* Say "no store" before the model can say something less clear
	 * (a URL names no local path: the backend says what is wrong). */
	if (!model_name_is_url(dir) && mode != CLI_OPEN_CREATE && stat(dir, &st) != 0 &&
	    errno == ENOENT)
		return no_store(dir, mode);
	if (!model_name_is_url(dir) && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
		return cli_fail("no store at %s: not a directory", dir);
	ret = model_open(dir, flags, out, &err);
	if (open_err)
		*open_err = ret < 0 ? ret : 0;
	if (ret == -ENOENT && mode != CLI_OPEN_CREATE)
		return no_store(dir, mode);
	if (ret < 0)
		return cli_model_fail(ret, &err, dir);
	/* a caught signal stops every scan and keeps any write from committing */
	model_set_interrupt(*out, &caught_signal);
	return CLI_EXIT_OK;
}

void cli_close(struct model *m, int code)
{
	if (code == CLI_EXIT_OK)
		model_close(m);
	else
		model_close_discard(m);
}

/* ---- signals ---- */


static void on_signal(int sig)
{
	int saved = errno;

	/*
	 * A second SIGINT or SIGTERM kills at once, whatever the verb is
	 * doing: the first asked for a clean end, and every scan and write
	 * stops at its next step for it, so this is only a backstop.
	 */
	if (caught_signal && sig != SIGPIPE) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (!caught_signal)
		caught_signal = sig;
	if (broken_fd >= 0)
		dup2(broken_fd, STDOUT_FILENO);	/* async-signal-safe */
	errno = saved;
}

void cli_signals_catch(void)
{
	static const int sigs[] = { SIGPIPE, SIGINT, SIGTERM };
	struct sigaction sa, old;
	int fds[2];

	if (broken_fd < 0 && pipe2(fds, O_CLOEXEC) == 0) {
		close(fds[0]);
		broken_fd = fds[1];
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: a blocked write fails with EINTR */
	sigemptyset(&sa.sa_mask);
	/*
	 * A signal ignored when we started stays ignored, as POSIX expects:
	 * a script's background job has SIGINT ignored so that Ctrl-C leaves
	 * it running, and a caller that ignores SIGPIPE wants EPIPE instead.
	 */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

/*
 * What a fault inside LMDB says: by default, that the store is damaged
 * and check tells more; once cli_damage_checking has run, check's own
 * report (what it could not read, what to do). Written before any signal
 * can come, read by the handlers.
 */
static const char bus_msg[] = "kvfs: the store is damaged (a page lies past the end of its "
			      "file); run kvfs check\n";
static const char segv_msg[] = "kvfs: the store is damaged (LMDB faulted reading one of its "
			       "pages); run kvfs check\n";
static char check_bus_msg[3 * PATH_MAX], check_segv_msg[3 * PATH_MAX];
static size_t check_bus_len, check_segv_len;

static void damage_say(const char *msg, size_t len, const char *check_msg, size_t check_len)
{
	ssize_t n;

	if (check_len)
		n = write(STDERR_FILENO, check_msg, check_len);
	else
		n = write(STDERR_FILENO, msg, len);
	(void)n;
}

/* One report of check's, with what to do after it; the length written (0: none fits). */
static size_t damage_report(char *buf, size_t size, const char *what, const char *store)
{
	int n = snprintf(buf, size, "kvfs: check: the store is damaged: %s; the rest was not "
			 "checked\n", what);
	size_t len = n > 0 && (size_t)n < size ? (size_t)n : 0;

	n = cli_damage_advice(buf + len, size - len, "kvfs: check: ", store);
	return n > 0 && (size_t)n < size - len ? len + (size_t)n : 0;
}

int cli_damage_advice(char *buf, size_t size, const char *prefix, const char *store)
{
	return snprintf(buf, size, "%swhat to do: restore %s from a backup (kvfs backup makes one), "
			"or save what is still readable with `kvfs dump %s > FILE` (it stops at the "
			"first damaged record) and `kvfs export %s PATH` for the parts it did not "
			"reach\n", prefix, store, store, store);
}

void cli_damage_checking(const char *store)
{
	check_bus_len = damage_report(check_bus_msg, sizeof(check_bus_msg),
				      "a page lies past the end of its file", store);
	check_segv_len = damage_report(check_segv_msg, sizeof(check_segv_msg),
				       "LMDB faulted reading one of its pages", store);
}

/*
 * No cleanup is safe once the map has faulted, and none is needed: the
 * reader slot this process leaves is cleared by the next open (store/).
 */
static void on_bus_error(int sig)
{
	damage_say(bus_msg, sizeof(bus_msg) - 1, check_bus_msg, check_bus_len);
	(void)sig;
	_exit(CLI_EXIT_FAIL);
}

/* What SIGSEGV did before cli_damage_catch: the default, or a sanitizer's report. */
static struct sigaction segv_before;

/*
 * LMDB keeps no checksums: a flipped bit in a page's offsets sends it to
 * read outside the map. A fault while it reads is that; any other one is
 * a bug of kvfs, and is handed back: the handler returns to the faulting
 * instruction, which faults again into what SIGSEGV did before. A SIGSEGV
 * sent by kill (si_code <= 0) is raised again for it, pending until then.
 */
static void on_segv(int sig, siginfo_t *info, void *context)
{
	(void)context;
	if (info->si_code <= 0 || !model_in_store_engine()) {
		sigaction(sig, &segv_before, NULL);
		if (info->si_code <= 0)
			raise(sig);
		return;
	}
	damage_say(segv_msg, sizeof(segv_msg) - 1, check_segv_msg, check_segv_len);
	_exit(CLI_EXIT_FAIL);
}

void cli_damage_catch(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_bus_error;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sa.sa_handler = NULL;
	sa.sa_sigaction = on_segv;
	/* on the alternate stack when there is one (a sanitizer's): a stack overflow still reports */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, &segv_before);
}

int cli_signal_caught(void)
{
	return caught_signal;
}

int cli_signals_finish(int code)
{
	int sig = caught_signal;

	if (!sig)
		return code;
	signal(sig, SIG_DFL);
	raise(sig);
	return 128 + sig;	/* only if the signal did not end the process */
}

bool cli_parse_open(struct cli_parse *p, enum cli_open_mode mode, bool *flag,
		    struct model **m, int *code)
{
	const char *arg;
	int id;

	while ((id = cli_parse_next(p, &arg)) > 0)
		*flag = true;
	if (id < 0) {
		*code = cli_parse_exit(id);
		return false;
	}
	*code = cli_open(p->operands[0], mode, m);
	return *code == CLI_EXIT_OK;
}
