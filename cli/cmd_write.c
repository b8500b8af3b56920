/*
 * cli/cmd_write.c - the verbs that change a store: put, rm, mkdir, import
 * and load. Each change is one model call, so one transaction: it happens
 * entirely or not at all, also while the store is mounted.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define MIB (1024.0 * 1024.0)
#define PROGRESS_MIN_BYTES (1024 * 1024)

enum {
	OPT_TYPE = 1,
	OPT_CREATE,
	OPT_RECURSIVE,
	OPT_ARRAY,
};

const struct cli_opt cli_opts_put[] = {
	{ OPT_TYPE, 't', "type", "TYPE",
	  "string, integer, double, boolean, null or bytes; VALUE\n"
	  "must parse as that type (any JSON number for the\n"
	  "numbers: 1 and 1e308 make the doubles 1.0 and 1e+308).\n"
	  "Without it an existing leaf keeps its type when VALUE\n"
	  "is written as that type prints, else it becomes a\n"
	  "string (bytes when VALUE is not UTF-8)." },
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist" },
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
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_load[] = {
	{ OPT_CREATE, 0, "create", NULL, "create the store when it does not exist (the default)" },
	{ 0, 0, NULL, NULL, NULL },
};

/* ---- put ---- */

static int put_run(const char *store, const char *path, const char *value,
		   enum model_type type, bool create)
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
	ret = cli_open(store, create ? CLI_OPEN_CREATE : CLI_OPEN_WRITE, &m);
	if (ret)
		goto out_release;
	ret = model_write(m, path, data, len, type, 0, &err);
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
	struct cli_parse p;
	const char *arg;
	int id;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0) {
		if (id == OPT_CREATE)
			create = true;
		else if (model_type_parse(arg, &type) < 0)
			return cli_usage_error(verb, "unknown type '%s' (string, integer, double, "
					       "boolean, null or bytes)", arg);
	}
	if (id < 0)
		return cli_parse_exit(id);
	return put_run(p.operands[0], p.operands[1], p.operands[2], type, create);
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
	if (cli_open(p.operands[0], create ? CLI_OPEN_CREATE : CLI_OPEN_WRITE, &m))
		return CLI_EXIT_FAIL;
	ret = model_mkdir(m, p.operands[1], kind, &err);
	ret = ret < 0 ? cli_model_fail(ret, &err, p.operands[1]) : CLI_EXIT_OK;
	cli_close(m, ret);
	return ret;
}

/* ---- import ---- */

/* "\rimport: 45% (123.4 MiB of 274.0 MiB)" on a terminal, redrawn per percent. */
struct progress {
	int last_percent;
	bool drawn;
};

static void progress_draw(void *arg, uint64_t done, uint64_t total)
{
	struct progress *pr = arg;
	int percent;

	if (total == 0)
		return;
	if (done > total)
		done = total;
	percent = (int)(done * 100 / total);
	if (pr->drawn && percent == pr->last_percent)
		return;
	fprintf(stderr, "\rimport: %d%% (%.1f MiB of %.1f MiB)", percent,
		(double)done / MIB, (double)total / MIB);
	fflush(stderr);
	pr->last_percent = percent;
	pr->drawn = true;
}

static int import_run(struct model *m, const char *path, const struct cli_input *in)
{
	struct model_error err = { .msg = "" };
	struct progress pr = { .last_percent = -1, .drawn = false };
	bool show = in->len > PROGRESS_MIN_BYTES && isatty(STDERR_FILENO);
	int ret;

	ret = model_import(m, path, in->data ? in->data : "", in->len,
			   show ? progress_draw : NULL, &pr, &err);
	if (pr.drawn) {
		if (ret == 0)
			progress_draw(&pr, in->len, in->len);
		fputc('\n', stderr);
	}
	return ret < 0 ? cli_model_fail(ret, &err, path) : CLI_EXIT_OK;
}

int cli_cmd_import(const struct cli_verb *verb, int argc, char **argv)
{
	struct cli_input in;
	struct cli_parse p;
	const char *arg;
	struct model *m;
	int id, ret;

	cli_parse_init(&p, verb, argc, argv);
	while ((id = cli_parse_next(&p, &arg)) > 0)
		;
	if (id < 0)
		return cli_parse_exit(id);
	if (cli_input_read(p.operands[2], &in))
		return CLI_EXIT_FAIL;
	ret = cli_open(p.operands[0], CLI_OPEN_CREATE, &m);
	if (ret == CLI_EXIT_OK) {
		ret = import_run(m, p.operands[1], &in);
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
