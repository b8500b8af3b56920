/*
 * cli/cmd_write.c - the verbs that change a store: put, rm, mkdir, import
 * and load. Each change is one model call, so one transaction: it happens
 * entirely or not at all, also while the store is mounted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

#define PROGRESS_MIN_BYTES (1024 * 1024)

enum {
	OPT_TYPE = 1,
	OPT_CREATE,
	OPT_RECURSIVE,
	OPT_ARRAY,
	OPT_LINES,
	OPT_ATOMIC,
	OPT_TTL,
};

/* import --lines commits every LINES_BATCH_ROWS lines or LINES_BATCH_BYTES bytes. */
#define LINES_BATCH_ROWS 10000
#define LINES_BATCH_BYTES (16 * 1024 * 1024)

const struct cli_opt cli_opts_put[] = {
	{ OPT_TYPE, 't', "type", "TYPE",
	  "string, integer, double, boolean, null or bytes; VALUE\n"
	  "must parse as that type (any JSON number for the\n"
	  "numbers: 1 and 1e308 make the doubles 1.0 and 1e+308).\n"
	  "Without it an existing leaf keeps its type when VALUE\n"
	  "is written as that type prints, else it becomes a\n"
	  "string (bytes when VALUE is not UTF-8)." },
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist" },
	{ OPT_TTL, 0, "ttl", "SECONDS",
	  "the leaf expires after SECONDS (1 or more); without\n"
	  "it a put clears the leaf's time to live" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_rm[] = {
	{ OPT_RECURSIVE, 'r', "recursive", NULL, "remove a whole subtree (one transaction)" },
	{ OPT_RECURSIVE, 'R', NULL, NULL, NULL },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_mkdir[] = {
	{ OPT_ARRAY, 0, "array", NULL, "create an empty array instead" },
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist" },
	{ 0, 0, NULL, NULL, NULL },
};

/* import and load create a missing store anyway; --create is accepted for symmetry. */
const struct cli_opt cli_opts_import[] = {
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist (the default)" },
	{ OPT_LINES, 0, "lines", NULL,
	  "FILE is JSON Lines: each line becomes a row of the\n"
	  "table at PATH (or the next element of the array at\n"
	  "PATH), committed every 10000 lines or 16 MiB" },
	{ OPT_ATOMIC, 0, "atomic", NULL, "with --lines: one transaction, all lines or none" },
	{ OPT_TTL, 0, "ttl", "SECONDS",
	  "the imported node (and all under it) expires after\n"
	  "SECONDS; not with --lines" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_load[] = {
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist (the default)" },
	{ 0, 0, NULL, NULL, NULL },
};

/* ---- put ---- */

/* A time to live on the command line: 1 second to 100 years. */
static bool parse_ttl(const char *arg, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *arg == '\0' || *end != '\0' || model_ttl_deadline(v, 0, &(int64_t){ 0 }) < 0)
		return false;
	*out = v;
	return true;
}

static int put_run(const char *store, const char *path, const char *value,
		   enum model_type type, bool create, int64_t ttl)
{
	struct model_error err = { .msg = "" };
	struct cli_input in = { 0 };
	const char *data = value;
	size_t len = strlen(value);
	struct model *m;
	int ret;

	if (strcmp(value, "-") == 0) {
		if (cli_input_read("-", &in))
			return CLI_EXIT_FAIL;
		data = in.data ? in.data : "";
		len = in.len;
	}
	ret = cli_open(store, create ? CLI_OPEN_CREATE : CLI_OPEN_MAKE, &m);
	if (ret)
		goto out_release;
	ret = model_write_ttl(m, path, data, len, type, 0, ttl, &err);
	ret = ret < 0 ? cli_model_fail(ret, &err, path) : CLI_EXIT_OK;
	cli_close(m, ret);
out_release:
	cli_input_release(&in);
	return ret;
}

int cli_cmd_put(const struct cli_verb *verb, int argc, char **argv)
{
	enum model_type type = 0;
	bool create = false;
	int64_t ttl = 0;
	struct cli_parse p;
	const char *arg;
	int id;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0) {
		if (id == OPT_CREATE)
			create = true;
		else if (id == OPT_TTL && !parse_ttl(arg, &ttl))
			return cli_usage_error(verb, "--ttl takes whole seconds, 1 to 3155760000");
		else if (id == OPT_TYPE && model_type_parse(arg, &type) < 0)
			return cli_usage_error(verb, "unknown type '%s' (string, integer, double, "
					       "boolean, null or bytes)", arg);
	}
	if (id < 0)
		return cli_parse_exit(id);
	return put_run(p.operands[0], p.operands[1], p.operands[2], type, create, ttl);
}

/* ---- rm ---- */

/* Without -r: a leaf, or a container only when it is empty. */
static int rm_flags(struct model *m, const char *path, bool recursive, unsigned *flags)
{
	struct model_error err = { .msg = "" };
	struct model_node node;
	int ret;

	if (recursive) {
		*flags = MODEL_REMOVE_RECURSIVE;
		return CLI_EXIT_OK;
	}
	ret = model_stat(m, path, 0, &node, &err);
	if (ret < 0)
		return cli_model_fail(ret, &err, path);
	if (node.kind == MODEL_KIND_LEAF) {
		*flags = MODEL_REMOVE_LEAF;
		return CLI_EXIT_OK;
	}
	/* Removing NAME.json removes all of NAME: say so rather than do it. */
	if (node.kind == MODEL_KIND_VIEW)
		return cli_fail("%s: is the JSON view of a subtree; use rm -r to remove "
				"the whole subtree", path);
	if (!node.empty)
		return cli_fail("%s: is a directory and not empty, use -r", path);
	*flags = MODEL_REMOVE_DIR;
	return CLI_EXIT_OK;
}

int cli_cmd_rm(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	bool recursive = false;
	struct cli_parse p;
	struct model *m;
	unsigned flags = 0;
	int ret;

	cli_parse_init(&p, verb, argc, argv);
	if (!cli_parse_open(&p, CLI_OPEN_WRITE, &recursive, &m, &ret))
		return ret;
	ret = rm_flags(m, p.operands[1], recursive, &flags);
	if (ret == CLI_EXIT_OK) {
		ret = model_remove(m, p.operands[1], flags, &err);
		ret = ret < 0 ? cli_model_fail(ret, &err, p.operands[1]) : CLI_EXIT_OK;
	}
	model_close(m);
	return ret;
}

/* ---- mkdir ---- */

int cli_cmd_mkdir(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	enum model_kind kind = MODEL_KIND_OBJECT;
	bool create = false;
	struct cli_parse p;
	const char *arg;
	struct model *m;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		if (id == OPT_ARRAY)
			kind = MODEL_KIND_ARRAY;
		else
			create = true;
	if (id < 0)
		return cli_parse_exit(id);
	if (cli_open(p.operands[0], create ? CLI_OPEN_CREATE : CLI_OPEN_MAKE, &m))
		return CLI_EXIT_FAIL;
	ret = model_mkdir(m, p.operands[1], kind, &err);
	ret = ret < 0 ? cli_model_fail(ret, &err, p.operands[1]) : CLI_EXIT_OK;
	cli_close(m, ret);
	return ret;
}

/* ---- import ---- */

static void import_tick(void *arg, uint64_t done, uint64_t total)
{
	(void)total;
	cli_progress_draw(arg, done, -1, false);
}

static int import_run(struct model *m, const char *path, const struct cli_input *in,
		      int64_t ttl)
{
	struct model_error err = { .msg = "" };
	struct cli_progress pr;
	int ret;

	cli_progress_start(&pr, in->len);
	pr.show = pr.show && in->len > PROGRESS_MIN_BYTES;
	/* a mapped file gives its pages back as it is parsed */
	ret = model_import_ttl(m, path, in->data ? in->data : "", in->len, ttl,
			       in->mapped ? MODEL_WRITE_MAPPED : 0, pr.show ? import_tick : NULL,
			       &pr, &err);
	if (ret == 0)
		cli_progress_draw(&pr, in->len, -1, true);
	cli_progress_end(&pr);
	return ret < 0 ? cli_model_fail(ret, &err, path) : CLI_EXIT_OK;
}

/* ---- import --lines ---- */

/* The bar, with the bytes and rows committed before the current call. */
struct lines_progress {
	struct cli_progress bar;
	uint64_t bytes, rows;
};

static void lines_draw(struct lines_progress *pr, uint64_t bytes, uint64_t rows, bool force)
{
	cli_progress_draw(&pr->bar, bytes, (int64_t)rows, force);
}

/* Called by the model while a batch runs: its bytes and rows so far. */
static void lines_tick(void *arg, uint64_t bytes, uint64_t rows)
{
	struct lines_progress *pr = arg;

	lines_draw(pr, pr->bytes + bytes, pr->rows + rows, false);
}

struct lines_run {
	struct model *m;
	const char *path;
	bool atomic;
	struct model_lines st;
	struct lines_progress pr;
	uint64_t next_line;	/* the first line of the next batch */
};

/* Bytes of data before its line `skip` lines on. */
static size_t lines_prefix(const char *data, size_t len, uint64_t skip)
{
	size_t at = 0;

	while (skip-- > 0) {
		const char *nl = memchr(data + at, '\n', len - at);

		if (!nl)
			return len;
		at = (size_t)(nl - data) + 1;
	}
	return at;
}

/*
 * Commits one batch of whole lines. When a line is refused, the lines of
 * the batch before it are committed again without it (not with --atomic),
 * so the import stops exactly at the refused line; the message says what
 * was committed.
 */
static int lines_batch(struct lines_run *r, const char *data, size_t len, uint64_t nlines)
{
	struct model_error err = { .msg = "" };
	int ret = model_import_lines(r->m, r->path, data, len, r->next_line, &r->st, &err);

	if (ret < 0 && !r->atomic && r->st.fail_line > r->next_line) {
		struct model_error again = { .msg = "" };
		uint64_t before = r->st.fail_line - r->next_line, fail = r->st.fail_line;

		if (model_import_lines(r->m, r->path, data, lines_prefix(data, len, before),
				       r->next_line, &r->st, &again) == 0) {
			r->next_line += before;
			r->pr.rows = r->st.rows;
		}
		r->st.fail_line = fail;
	}
	if (ret < 0) {
		char where[48] = "";

		cli_progress_end(&r->pr.bar);
		if (r->st.fail_line)
			snprintf(where, sizeof(where), "line %llu: ",
				 (unsigned long long)r->st.fail_line);
		if (r->atomic || r->next_line == 1)
			return cli_fail("%s%s; nothing was committed", where,
					err.msg[0] ? err.msg : strerror(-ret));
		return cli_fail("%s%s; lines 1-%llu were committed (%llu rows), none after",
				where, err.msg[0] ? err.msg : strerror(-ret),
				(unsigned long long)r->next_line - 1,
				(unsigned long long)r->st.rows);
	}
	r->next_line += nlines;
	r->pr.bytes += len;
	r->pr.rows = r->st.rows;
	lines_draw(&r->pr, r->pr.bytes, r->pr.rows, false);
	return CLI_EXIT_OK;
}

static uint64_t count_lines(const char *data, size_t len)
{
	uint64_t n = 0;

	for (const char *p = data; (p = memchr(p, '\n', len - (size_t)(p - data))); p++)
		n++;
	return n + (len && data[len - 1] != '\n');
}

/* --atomic: the whole input in one call, so one transaction. */
static int lines_atomic(struct lines_run *r, const char *name)
{
	struct cli_input in;
	int ret;

	if (cli_input_read(name, &in))
		return CLI_EXIT_FAIL;
	r->pr.bar.total = in.len;
	ret = lines_batch(r, in.data ? in.data : "", in.len,
			  count_lines(in.data ? in.data : "", in.len));
	cli_input_release(&in);
	return ret;
}

/*
 * LINES_BATCH_ROWS, or the test hook KVFS_TEST_LINES_BATCH_ROWS: tests/72
 * crosses batch boundaries with fewer rows where each row costs round
 * trips (an etcd store).
 */
static uint64_t lines_batch_rows(void)
{
	const char *s = getenv("KVFS_TEST_LINES_BATCH_ROWS");
	long long n = s ? atoll(s) : 0;

	return n > 0 ? (uint64_t)n : LINES_BATCH_ROWS;
}

/* Streams the input: memory holds one batch, whatever the input's size. */
static int lines_stream(struct lines_run *r, FILE *in, const char *name)
{
	char *line = NULL, *batch = NULL;
	size_t line_cap = 0, len = 0, cap = 0;
	uint64_t nlines = 0, rows_max = lines_batch_rows();
	int ret = CLI_EXIT_OK;
	ssize_t n;

	while (ret == CLI_EXIT_OK && (n = getline(&line, &line_cap, in)) >= 0) {
		if (len + (size_t)n > cap) {
			size_t ncap = (len + (size_t)n) * 2;
			char *grown = realloc(batch, ncap);

			if (!grown) {
				ret = cli_fail("%s: not enough memory for a batch of lines", name);
				break;
			}
			batch = grown;
			cap = ncap;
		}
		memcpy(batch + len, line, (size_t)n);
		len += (size_t)n;
		if (++nlines >= rows_max || len >= LINES_BATCH_BYTES) {
			ret = lines_batch(r, batch, len, nlines);
			len = 0;
			nlines = 0;
		}
	}
	if (ret == CLI_EXIT_OK && ferror(in))
		ret = cli_fail("%s: read error: %s", name, strerror(errno));
	if (ret == CLI_EXIT_OK && nlines)
		ret = lines_batch(r, batch, len, nlines);
	free(batch);
	free(line);
	return ret;
}

static int lines_main(const char *store, const char *path, const char *name, bool atomic)
{
	struct lines_run r = { .path = path, .atomic = atomic, .next_line = 1 };
	bool is_stdin = strcmp(name, "-") == 0;
	const char *shown = is_stdin ? "standard input" : name;
	FILE *in = stdin;
	struct stat st;
	int ret;

	if (!is_stdin && !atomic) {
		in = fopen(name, "r");
		if (!in)
			return cli_fail("%s: %s", name, strerror(errno));
	}
	cli_progress_start(&r.pr.bar, !atomic && fstat(fileno(in), &st) == 0 &&
				      S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0);
	r.st.progress = lines_tick;
	r.st.arg = &r.pr;
	ret = cli_open(store, CLI_OPEN_CREATE, &r.m);
	if (ret)
		goto out_fclose;
	ret = atomic ? lines_atomic(&r, name) : lines_stream(&r, in, shown);
	/* the final figures are drawn however quick the import was */
	if (ret == CLI_EXIT_OK)
		lines_draw(&r.pr, r.pr.bytes, r.pr.rows, true);
	cli_progress_end(&r.pr.bar);
	cli_close(r.m, ret);
out_fclose:
	if (in != stdin)
		fclose(in);
	return ret;
}

int cli_cmd_import(const struct cli_verb *verb, int argc, char **argv)
{
	bool lines = false, atomic = false;
	int64_t ttl = 0;
	struct cli_input in;
	struct cli_parse p;
	const char *arg;
	struct model *m;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0) {
		lines |= id == OPT_LINES;
		atomic |= id == OPT_ATOMIC;
		if (id == OPT_TTL && !parse_ttl(arg, &ttl))
			return cli_usage_error(verb, "--ttl takes whole seconds, 1 to 3155760000");
	}
	if (id < 0)
		return cli_parse_exit(id);
	if (ttl && lines)
		return cli_usage_error(verb, "--ttl goes with a JSON document, not --lines "
				       "(a table's rows take its default: kvfs table create --ttl)");
	if (atomic && !lines)
		return cli_usage_error(verb, "--atomic goes with --lines (a JSON document is "
				       "always imported in one transaction)");
	if (lines)
		return lines_main(p.operands[0], p.operands[1], p.operands[2], atomic);
	if (cli_input_read_spill(p.operands[2], p.operands[0], &in))
		return CLI_EXIT_FAIL;
	ret = cli_open(p.operands[0], CLI_OPEN_CREATE, &m);
	if (ret == CLI_EXIT_OK) {
		ret = import_run(m, p.operands[1], &in, ttl);
		cli_close(m, ret);
	}
	cli_input_release(&in);
	return ret;
}

/* ---- load ---- */

int cli_cmd_load(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	const char *name = "-", *arg;
	struct cli_parse p;
	struct model *m;
	FILE *in = stdin;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		;
	if (id < 0)
		return cli_parse_exit(id);
	if (p.noperands > 1)
		name = p.operands[1];
	if (strcmp(name, "-") != 0) {
		in = fopen(name, "r");
		if (!in)
			return cli_fail("%s: %s", name, strerror(errno));
	}
	ret = cli_open(p.operands[0], CLI_OPEN_CREATE, &m);
	if (ret)
		goto out_fclose;
	ret = model_load(m, in, &err);
	if (ret == -EEXIST && !err.msg[0])
		ret = cli_fail("%s: not empty; load needs an empty store", p.operands[0]);
	else if (ret < 0)
		ret = cli_model_fail(ret, &err, name);
	cli_close(m, ret);
out_fclose:
	if (in != stdin)
		fclose(in);
	return ret;
}
