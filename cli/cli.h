/*
 * cli/cli.h - private interfaces shared by the files of cli/: the verb
 * table, a small argument parser, error reporting with the exit codes of
 * docs/kvfs.1, opening a store, and reading a whole input. The CLI talks to
 * the document model only through model/model.h and mounts through fs/fs.h.
 *
 * Exit codes: 0 success, 1 the operation failed or was refused (not found,
 * invalid JSON, problems found by check...), 2 the command line is wrong.
 */
#ifndef KVFS_CLI_H
#define KVFS_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

#ifndef KVFS_VERSION
#define KVFS_VERSION "0.1.0"
#endif

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_FAIL = 1,
	CLI_EXIT_USAGE = 2,
};

#define CLI_OPERANDS_MAX 5

struct cli_verb;
struct cli_opt;
typedef int (*cli_verb_fn)(const struct cli_verb *verb, int argc, char **argv);

/* One verb of the command: `kvfs NAME ...`. */
struct cli_verb {
	const char *name;
	cli_verb_fn run;
	const char *synopsis;	/* options and operands, after "kvfs NAME " */
	const char *summary;	/* one line for `kvfs --help` */
	const char *help;	/* description for `kvfs NAME --help`, before the options */
	const struct cli_opt *opts;	/* the options; NULL when it has none */
	int min_operands;
	int max_operands;
	const char *operand_names[CLI_OPERANDS_MAX];	/* for "missing STORE" */
};

/* ---- argument parsing ---- */

/*
 * One option a verb accepts; id > 0. A verb's table is the only list of its
 * options: the parser accepts what it holds, `kvfs VERB --help` prints it,
 * and tests/23-cli-help.bats compares it with docs/kvfs.1. An entry whose
 * help is NULL is another spelling of the entry before it (same id, shown
 * on the same help line). "--help"/"-h" is accepted everywhere and is not
 * in the tables. A table ends with an entry whose id is 0.
 */
struct cli_opt {
	int id;
	char short_name;	/* 0: long form only */
	const char *long_name;	/* NULL: short form only */
	const char *arg_name;	/* the value's name in help ("TYPE"); NULL: a flag */
	const char *help;	/* "\n" starts a continuation line */
};

/* The option tables of the verbs that have options (cli/cmd_*.c). */
extern const struct cli_opt cli_opts_mount[];
extern const struct cli_opt cli_opts_umount[];
extern const struct cli_opt cli_opts_get[];
extern const struct cli_opt cli_opts_put[];
extern const struct cli_opt cli_opts_ls[];
extern const struct cli_opt cli_opts_rm[];
extern const struct cli_opt cli_opts_mkdir[];
extern const struct cli_opt cli_opts_import[];
extern const struct cli_opt cli_opts_export[];
extern const struct cli_opt cli_opts_load[];
extern const struct cli_opt cli_opts_check[];
extern const struct cli_opt cli_opts_table[];
extern const struct cli_opt cli_opts_index[];
extern const struct cli_opt cli_opts_find[];

enum cli_parse_result {
	CLI_PARSE_END = 0,
	CLI_PARSE_HELP = -1,	/* --help was given and printed: exit 0 */
	CLI_PARSE_ERROR = -2,	/* a usage error was printed: exit 2 */
};

/*
 * Parser state. Options may appear anywhere before "--"; operands are
 * collected in order. "-" and arguments that look like negative numbers
 * ("-5", "-1.5e3", "-.5") are operands, so `kvfs put S /n -5` works.
 */
struct cli_parse {
	const struct cli_verb *verb;
	const struct cli_opt *opts;	/* terminated by an entry with id 0 */
	int argc;
	char **argv;
	int next;		/* index of the next argument to look at */
	const char *cluster;	/* rest of a "-abc" cluster, or NULL */
	bool operands_only;	/* after "--" */
	int noperands;
	char *operands[CLI_OPERANDS_MAX];
};

/* argv[0] is the verb name; the options come from verb->opts. */
void cli_parse_init(struct cli_parse *p, const struct cli_verb *verb,
		    int argc, char **argv);
/*
 * Returns the id of the next option (its argument in *arg, borrowed from
 * argv), CLI_PARSE_END when the arguments are used up and the operand count
 * fits the verb, CLI_PARSE_HELP or CLI_PARSE_ERROR (already printed).
 */
int cli_parse_next(struct cli_parse *p, const char **arg);
/* The exit code for a negative cli_parse_next result. */
int cli_parse_exit(int result);

/* ---- reporting ---- */

/* Prints "kvfs: VERB: <msg>" and the verb's usage line to stderr; returns 2. */
int cli_usage_error(const struct cli_verb *verb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints "kvfs: <msg>" to stderr; returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Reports a failed model call: err->msg when the model wrote one, else
 * "<what>: <strerror(-ret)>". Returns 1.
 */
int cli_model_fail(int ret, const struct model_error *err, const char *what);
/*
 * Prints the full help of a verb to stdout: usage, summary, description,
 * the options from verb->opts and the exit codes of enum cli_exit.
 */
void cli_verb_help(const struct cli_verb *verb);
/* Flushes stdout; reports a write error (a full disk, a closed pipe). */
int cli_finish_stdout(int code);

/* ---- stores ---- */

enum cli_open_mode {
	CLI_OPEN_READ,		/* read-only; the store must exist */
	CLI_OPEN_WRITE,		/* read-write; the store must exist */
	CLI_OPEN_MAKE,		/* as WRITE, for a verb that adds data: a missing
				 * store's message says how to make one */
	CLI_OPEN_CREATE,	/* read-write; created when missing */
};
/*
 * Opens the store in dir; on failure prints why ("kvfs: no store at DIR"
 * when it does not exist, with the verbs that make one for CLI_OPEN_MAKE)
 * and returns 1. *out is heap; close it with
 * model_close.
 */
int cli_open(const char *dir, enum cli_open_mode mode, struct model **out);
/* cli_open, also giving the open's -errno in *open_err (0 when it opened). */
int cli_open_ret(const char *dir, enum cli_open_mode mode, struct model **out, int *open_err);
/*
 * Closes a store a writing verb opened; when the verb failed (code is not
 * 0) and the store was created by this run, it is removed again: a failed
 * command leaves nothing behind.
 */
void cli_close(struct model *m, int code);
/*
 * The start of a verb with at most one option, a flag: parses the rest of p
 * (any option sets *flag; flag may be NULL when the verb has no options),
 * then opens the store named by operand 0 into *m (heap; close it with
 * model_close). False when the verb is done instead, with its exit code in
 * *code: --help, a usage error, or a store that cannot be opened.
 */
bool cli_parse_open(struct cli_parse *p, enum cli_open_mode mode, bool *flag,
		    struct model **m, int *code);

/* ---- signals ---- */

/*
 * For the verbs that read: SIGPIPE, SIGINT and SIGTERM (unless ignored
 * when the process started: they stay ignored) no longer kill at
 * once. The first one is recorded and standard output is pointed at a
 * broken pipe, so the verb's next write fails, its scans stop at their
 * next step and its writes abort (cli_open has the store watch the flag),
 * it ends its transaction and closes the store like after any error (no
 * message is printed then). A second SIGINT or SIGTERM kills at once.
 */
void cli_signals_catch(void);
/*
 * Every verb but mount: a SIGBUS (LMDB reading a page that a damaged store
 * places past the end of its file), or a SIGSEGV while inside LMDB (a
 * damaged page's offsets), prints that the store is damaged and exits with
 * CLI_EXIT_FAIL instead of dying by the signal. Any other SIGSEGV is left
 * to what handled it before (the default, or a sanitizer).
 */
void cli_damage_catch(void);
/*
 * For check, which is the command the message above sends users to:
 * from now on such a fault is reported as check's finding about store,
 * followed by cli_damage_advice, instead.
 */
void cli_damage_checking(const char *store);
/*
 * Writes into buf (like snprintf, whose result it returns) the line that
 * tells what to do about a damaged store: restore a backup, or save what
 * still reads. prefix starts the line ("check: ").
 */
int cli_damage_advice(char *buf, size_t size, const char *prefix, const char *store);
/* The signal recorded by the handler, 0 if none. */
int cli_signal_caught(void);
/*
 * After the verb has cleaned up: dies by the recorded signal (default
 * action), as a reader killed by it would, so `kvfs dump S | head` exits
 * like any pipe reader. Returns code when no signal was recorded.
 */
int cli_signals_finish(int code);

/* ---- whole inputs ---- */

/* A whole file or stdin in memory: mapped, or read into a heap buffer. */
struct cli_input {
	const char *data;	/* NULL only when len is 0 */
	size_t len;
	bool mapped;		/* data is an mmap of len bytes */
	char *heap;		/* data when read into memory (heap, free()) */
};
/*
 * Reads all of `name` ("-" is stdin): regular files are mapped, anything
 * else is read into a growing buffer (cli_input_read_spill: into a file).
 * On failure prints why (naming the file, and saying so when the memory
 * is not available) and returns 1. Release with cli_input_release.
 */
int cli_input_read(const char *name, struct cli_input *in);
/*
 * As cli_input_read, but an input that is not a regular file (a pipe, a
 * terminal) is first copied to an unlinked temporary file and then mapped
 * like one, so memory stays bounded whatever its size: the file goes in
 * the store's directory when `store` names a local one (or its parent),
 * else in $TMPDIR or /var/tmp. The copy is finished before anything is
 * written to the store, so a slow writer never holds the store's write
 * lock. store may be NULL (no directory of its own to prefer).
 */
int cli_input_read_spill(const char *name, const char *store, struct cli_input *in);
void cli_input_release(struct cli_input *in);

/* ---- verbs ---- */

/*
 * The import progress bar (cli/progress.c): drawn on stderr only when it
 * is a terminal, at most five times a second unless forced. total 0: the
 * size is unknown (a pipe); rows < 0: not counted.
 */
struct cli_progress {
	bool show;
	bool drawn;
	uint64_t total;
	double start, last;
};
void cli_progress_start(struct cli_progress *pr, uint64_t total);
void cli_progress_draw(struct cli_progress *pr, uint64_t bytes, int64_t rows, bool force);
/* Ends the line the bar was drawn on, if any. */
void cli_progress_end(struct cli_progress *pr);

int cli_cmd_get(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_ls(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_export(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_dump(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_check(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_info(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_backup(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_put(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_rm(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_mkdir(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_import(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_load(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_mount(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_umount(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_table(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_index(const struct cli_verb *verb, int argc, char **argv);
int cli_cmd_find(const struct cli_verb *verb, int argc, char **argv);

#endif
