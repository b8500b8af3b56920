/*
 * cli/cmd_table.c - the table verbs: `kvfs table create|column|reference|
 * unreference|show|drop`,
 * `kvfs index create|drop|list` and `kvfs find` (docs/kvfs.1, TABLES).
 * Parsing and printing only; the meaning is in model/table/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

enum {
	OPT_KEY_DEPTH = 1,
	OPT_KEY_FIELDS,
	OPT_REQUIRED,
	OPT_MAX_LENGTH,
	OPT_REFERENCES,
	OPT_UNIQUE,
	OPT_FROM,
	OPT_TO,
	OPT_JSON,
	OPT_TTL,
};

const struct cli_opt cli_opts_table[] = {
	{ OPT_KEY_DEPTH, 0, "key-depth", "N", "create: key levels of a row (2 or more: a composite key)" },
	{ OPT_KEY_FIELDS, 0, "key-fields", "FIELDS", "create: the fields the key levels hold, F1,F2..." },
	{ OPT_REQUIRED, 0, "required", NULL, "column: every row must have the field" },
	{ OPT_MAX_LENGTH, 0, "max-length", "N", "column: at most N characters (bytes for bytes)" },
	{ OPT_REFERENCES, 0, "references", "TABLE", "column: the value names a row of TABLE" },
	{ OPT_TTL, 0, "ttl", "SECONDS", "create: new rows expire after SECONDS" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_index[] = {
	{ OPT_UNIQUE, 0, "unique", NULL, "create: no two rows may have the same values" },
	{ 0, 0, NULL, NULL, NULL },
};

const struct cli_opt cli_opts_find[] = {
	{ OPT_FROM, 0, "from", "A", "rows whose value is A or more" },
	{ OPT_TO, 0, "to", "B", "rows whose value is B or less" },
	{ OPT_JSON, 0, "json", NULL, "print the rows as JSON Lines, not their keys" },
	{ 0, 0, NULL, NULL, NULL },
};

struct table_args {
	int key_depth;
	const char *key_fields, *references, *from, *to;
	bool required, unique, json;
	int64_t max_length;
	int64_t ttl;
};

static bool parse_count(const char *arg, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || *arg == '\0' || *end != '\0' || v < 1 || v > max)
		return false;
	*out = v;
	return true;
}

/* Parses the options; false with *code set when the verb is done. */
static bool parse_all(struct cli_parse *p, const struct cli_verb *verb, struct table_args *a,
		      int *code)
{
	const char *arg;
	int64_t n;
	int id;

	while ((id = cli_parse_next(p, &arg)) > 0) {
		switch (id) {
		case OPT_KEY_DEPTH:
			if (!parse_count(arg, 8, &n)) {
				*code = cli_usage_error(verb, "--key-depth must be 1 to 8");
				return false;
			}
			a->key_depth = (int)n;
			break;
		case OPT_MAX_LENGTH:
			if (!parse_count(arg, INT64_MAX, &a->max_length)) {
				*code = cli_usage_error(verb, "--max-length must be a positive integer");
				return false;
			}
			break;
		case OPT_TTL:
			if (!parse_count(arg, 3155760000LL, &a->ttl)) {
				*code = cli_usage_error(verb, "--ttl must be 1 to 3155760000 seconds");
				return false;
			}
			break;
		case OPT_KEY_FIELDS: a->key_fields = arg; break;
		case OPT_REFERENCES: a->references = arg; break;
		case OPT_REQUIRED: a->required = true; break;
		case OPT_UNIQUE: a->unique = true; break;
		case OPT_FROM: a->from = arg; break;
		case OPT_TO: a->to = arg; break;
		case OPT_JSON: a->json = true; break;
		default: break;
		}
	}
	if (id < 0) {
		*code = cli_parse_exit(id);
		return false;
	}
	return true;
}

/* Operands wanted by an action, counting the action itself. */
static bool operands_are(const struct cli_verb *verb, const struct cli_parse *p, int n,
			 const char *usage, int *code)
{
	if (p->noperands == n)
		return true;
	*code = cli_usage_error(verb, "usage: kvfs %s %s", verb->name, usage);
	return false;
}

static int finish(struct model *m, int ret, const struct model_error *err, const char *what)
{
	int code = ret < 0 ? cli_model_fail(ret, err, what) : CLI_EXIT_OK;

	cli_close(m, code);
	return code;
}

static int table_show(const char *store, const char *path)
{
	struct model_error err = { .msg = "" };
	struct model *m;
	char *json = NULL;
	size_t len = 0;
	int ret;

	if (cli_open(store, CLI_OPEN_READ, &m))
		return CLI_EXIT_FAIL;
	ret = model_table_show(m, path, &json, &len, &err);
	if (ret == 0)
		fwrite(json, 1, len, stdout);
	free(json);
	model_close(m);
	return ret < 0 ? cli_model_fail(ret, &err, path) : cli_finish_stdout(CLI_EXIT_OK);
}

int cli_cmd_table(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	struct table_args a = { 0 };
	struct cli_parse p;
	struct model *m;
	const char *action;
	int code = 0, ret;

	cli_parse_init(&p, verb, argc, argv);
	if (!parse_all(&p, verb, &a, &code))
		return code;
	action = p.operands[0];
	if (strcmp(action, "show") == 0)
		return operands_are(verb, &p, 3, "show STORE PATH", &code)
			? table_show(p.operands[1], p.operands[2]) : code;
	if (strcmp(action, "create") == 0) {
		if (!operands_are(verb, &p, 3, "create STORE PATH --key-depth N", &code))
			return code;
		if (!a.key_depth)
			return cli_usage_error(verb, "create needs --key-depth N");
	} else if (strcmp(action, "column") == 0) {
		if (!operands_are(verb, &p, 5, "column STORE PATH FIELD TYPE", &code))
			return code;
	} else if (strcmp(action, "drop") == 0) {
		if (!operands_are(verb, &p, 3, "drop STORE PATH", &code))
			return code;
	} else if (strcmp(action, "reference") == 0) {
		if (!operands_are(verb, &p, 5, "reference STORE PATH FIELD[,FIELD...] TABLE", &code))
			return code;
	} else if (strcmp(action, "unreference") == 0) {
		if (!operands_are(verb, &p, 4, "unreference STORE PATH FIELD[,FIELD...]", &code))
			return code;
	} else {
		return cli_usage_error(verb, "unknown action '%s' (create, column, reference, "
				       "unreference, show, drop)", action);
	}
	if (cli_open(p.operands[1], action[0] == 'c' ? CLI_OPEN_MAKE : CLI_OPEN_WRITE, &m))
		return CLI_EXIT_FAIL;
	if (action[0] == 'c' && action[1] == 'r')
		ret = model_table_create_ttl(m, p.operands[2], a.key_depth, a.key_fields, a.ttl,
					     &err);
	else if (action[0] == 'c')
		ret = model_table_column(m, p.operands[2], p.operands[3], p.operands[4],
					 a.required, a.max_length, a.references, &err);
	else if (action[0] == 'r' || action[0] == 'u')
		ret = model_table_reference(m, p.operands[2], p.operands[3],
					    action[0] == 'r' ? p.operands[4] : NULL, &err);
	else
		ret = model_table_drop(m, p.operands[2], &err);
	return finish(m, ret, &err, p.operands[2]);
}

int cli_cmd_index(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	struct table_args a = { 0 };
	struct cli_parse p;
	struct model *m;
	const char *action;
	int code = 0, ret;

	cli_parse_init(&p, verb, argc, argv);
	if (!parse_all(&p, verb, &a, &code))
		return code;
	action = p.operands[0];
	if (strcmp(action, "list") == 0) {
		if (!operands_are(verb, &p, 3, "list STORE PATH", &code))
			return code;
		if (cli_open(p.operands[1], CLI_OPEN_READ, &m))
			return CLI_EXIT_FAIL;
		ret = model_index_list(m, p.operands[2], stdout, &err);
		model_close(m);
		return ret < 0 ? cli_model_fail(ret, &err, p.operands[2])
			: cli_finish_stdout(CLI_EXIT_OK);
	}
	if (strcmp(action, "create") == 0) {
		if (!operands_are(verb, &p, 5, "create STORE PATH NAME FIELD[,FIELD...]", &code))
			return code;
	} else if (strcmp(action, "drop") == 0) {
		if (!operands_are(verb, &p, 4, "drop STORE PATH NAME", &code))
			return code;
	} else {
		return cli_usage_error(verb, "unknown action '%s' (create, drop, list)", action);
	}
	if (cli_open(p.operands[1], action[0] == 'c' ? CLI_OPEN_MAKE : CLI_OPEN_WRITE, &m))
		return CLI_EXIT_FAIL;
	if (action[0] == 'c')
		ret = model_index_create(m, p.operands[2], p.operands[3], p.operands[4], a.unique,
					 &err);
	else
		ret = model_index_drop(m, p.operands[2], p.operands[3], &err);
	return finish(m, ret, &err, p.operands[2]);
}

int cli_cmd_find(const struct cli_verb *verb, int argc, char **argv)
{
	struct model_error err = { .msg = "" };
	struct table_args a = { 0 };
	struct model_find q = { 0 };
	struct cli_parse p;
	struct model *m;
	int code = 0, ret;

	cli_parse_init(&p, verb, argc, argv);
	if (!parse_all(&p, verb, &a, &code))
		return code;
	if (p.noperands == 4 && (a.from || a.to))
		return cli_usage_error(verb, "give VALUE or --from/--to, not both");
	if (p.noperands == 3 && !a.from && !a.to)
		return cli_usage_error(verb, "give VALUE, or --from A and/or --to B");
	q.value = p.noperands == 4 ? p.operands[3] : NULL;
	q.from = a.from;
	q.to = a.to;
	q.json = a.json;
	if (cli_open(p.operands[0], CLI_OPEN_READ, &m))
		return CLI_EXIT_FAIL;
	cli_signals_catch();
	ret = model_find(m, p.operands[1], p.operands[2], &q, stdout, &err);
	model_close(m);
	return ret < 0 ? cli_model_fail(ret, &err, p.operands[1]) : cli_finish_stdout(CLI_EXIT_OK);
}
