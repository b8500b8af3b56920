/*
 * cli/kvfs.c - the `kvfs` command: the verb table with each verb's help,
 * `kvfs --help`, `kvfs --version`, and dispatch to cli/cmd_*.c.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_verb verbs[] = {
	{
		.name = "mount", .run = cli_cmd_mount,
		.synopsis = "[-f] [-d] [-o OPTIONS] [--create] STORE MNT",
		.summary = "Serve STORE as a filesystem at MNT.",
		.help =
		"Runs as a daemon until `kvfs umount MNT`; with -f it stays in the foreground.\n"
		"STORE is a directory (an LMDB store) or etcd://HOST:PORT[,...]/PREFIX.\n",
		.opts = cli_opts_mount,
		.min_operands = 2, .max_operands = 2, .operand_names = { "STORE", "MNT" },
	},
	{
		.name = "umount", .run = cli_cmd_umount,
		.synopsis = "[-z] MNT",
		.summary = "Unmount a kvfs filesystem (runs fusermount3 -u MNT).",
		.help = "",
		.opts = cli_opts_umount,
		.min_operands = 1, .max_operands = 1, .operand_names = { "MNT" },
	},
	{
		.name = "get", .run = cli_cmd_get,
		.synopsis = "[--json [--compact]] STORE PATH",
		.summary = "Print the leaf at PATH exactly as `cat` prints it in the mount.",
		.help = "",
		.opts = cli_opts_get,
		.min_operands = 2, .max_operands = 2, .operand_names = { "STORE", "PATH" },
	},
	{
		.name = "put", .run = cli_cmd_put,
		.synopsis = "[--type TYPE] [--create] [--ttl SECONDS] STORE PATH VALUE",
		.summary = "Set the leaf at PATH to VALUE; it reads back followed by one newline.",
		.help =
		"VALUE is the value itself, not the text of a file: `kvfs put S /a hi` makes\n"
		"`kvfs get S /a` print \"hi\\n\". VALUE \"-\" reads the value from standard\n"
		"input, exactly (a trailing newline is part of it).\n",
		.opts = cli_opts_put,
		.min_operands = 3, .max_operands = 3,
		.operand_names = { "STORE", "PATH", "VALUE" },
	},
	{
		.name = "ls", .run = cli_cmd_ls,
		.synopsis = "[-l] STORE [PATH]",
		.summary = "List the children of PATH (default: the root), one per line.",
		.help =
		"Names are shown as the mount shows them (escaped as in docs/FORMAT.md);\n"
		"array elements come in index order. A line of -l reads\n"
		"  -rw-r--r-- -           integer            3  age\n"
		"  MODE       OWNER       TYPE or KIND    SIZE  NAME\n",
		.opts = cli_opts_ls,
		.min_operands = 1, .max_operands = 2, .operand_names = { "STORE", "PATH" },
	},
	{
		.name = "rm", .run = cli_cmd_rm,
		.synopsis = "[-r] STORE PATH",
		.summary = "Remove the leaf or empty directory at PATH.",
		.help = "",
		.opts = cli_opts_rm,
		.min_operands = 2, .max_operands = 2, .operand_names = { "STORE", "PATH" },
	},
	{
		.name = "mkdir", .run = cli_cmd_mkdir,
		.synopsis = "[--array] [--create] STORE PATH",
		.summary = "Create an empty object (a directory) at PATH.",
		.help = "",
		.opts = cli_opts_mkdir,
		.min_operands = 2, .max_operands = 2, .operand_names = { "STORE", "PATH" },
	},
	{
		.name = "import", .run = cli_cmd_import,
		.synopsis = "[--create] [--lines [--atomic]] [--ttl SECONDS] STORE PATH FILE|-",
		.summary = "Replace the subtree at PATH with the JSON document in FILE.",
		.help =
		"One transaction: invalid JSON is refused and nothing changes. \"-\" reads\n"
		"standard input. The store is created when it does not exist. Shows a\n"
		"progress bar on a terminal for inputs over 1 MiB.\n"
		"\n"
		"With --lines, FILE holds one JSON value per line (JSON Lines; blank lines\n"
		"are skipped). PATH a table: each line is a row, named by the table's key\n"
		"fields (a row of that key is replaced), or, when it names none, by the\n"
		"next integer after the highest integer key (1 in an empty table). PATH\n"
		"not a table: each line is appended to the array at PATH (created when\n"
		"missing). Each row is checked as any write; the input is streamed and\n"
		"committed in batches; a refused line stops the import, the lines before\n"
		"it are committed and the message says which. On a terminal a progress\n"
		"line shows bytes, rows per second and the time left.\n",
		.opts = cli_opts_import,
		.min_operands = 3, .max_operands = 3,
		.operand_names = { "STORE", "PATH", "FILE" },
	},
	{
		.name = "export", .run = cli_cmd_export,
		.synopsis = "[--compact] STORE [PATH]",
		.summary = "Print the subtree at PATH (default: everything) as JSON.",
		.help = "",
		.opts = cli_opts_export,
		.min_operands = 1, .max_operands = 2, .operand_names = { "STORE", "PATH" },
	},
	{
		.name = "dump", .run = cli_cmd_dump,
		.synopsis = "STORE",
		.summary = "Write a lossless, versioned dump of the whole store to standard output.",
		.help = "Types, bytes leaves and modification times survive `kvfs load`.\n",
		.min_operands = 1, .max_operands = 1, .operand_names = { "STORE" },
	},
	{
		.name = "load", .run = cli_cmd_load,
		.synopsis = "[--create] STORE [FILE|-]",
		.summary = "Load a dump (default: from standard input) into an empty store.",
		.help = "The store is created when it does not exist; a store with data is refused.\n",
		.opts = cli_opts_load,
		.min_operands = 1, .max_operands = 2, .operand_names = { "STORE", "FILE" },
	},
	{
		.name = "check", .run = cli_cmd_check,
		.synopsis = "[--repair] STORE",
		.summary = "Verify every key and value against the on-disk format.",
		.help =
		"Prints each problem, then \"check: N keys, M problems\"; exits 1 on problems.\n"
		"Tables: every index entry against its row, every row against every index,\n"
		"column, unique and reference rule.\n",
		.opts = cli_opts_check,
		.min_operands = 1, .max_operands = 1, .operand_names = { "STORE" },
	},
	{
		.name = "backup", .run = cli_cmd_backup,
		.synopsis = "STORE DIR",
		.summary = "Write a compacted copy of the store into DIR, safely while mounted.",
		.help =
		"DIR must not exist or be empty. The copy is a store of its own: mount it,\n"
		"or read it with any kvfs verb.\n",
		.min_operands = 2, .max_operands = 2, .operand_names = { "STORE", "DIR" },
	},
	{
		.name = "table", .run = cli_cmd_table,
		.synopsis = "create|column|reference|unreference|show|drop [--key-depth N] "
		"[--key-fields FIELDS] [--required] [--max-length N] [--references TABLE] "
		"[--ttl SECONDS] STORE PATH [FIELD TYPE | FIELDS [TABLE]]",
		.summary = "Declare a directory a table, its columns and references; show or drop "
		"its schema.",
		.help =
		"kvfs table create STORE PATH --key-depth N [--key-fields F1[,F2...]]\n"
		"kvfs table column STORE PATH FIELD TYPE [--required] [--max-length N]\n"
		"                  [--references TABLE]   (TYPE: string, integer, double,\n"
		"                  number, boolean, bytes, object, array)\n"
		"kvfs table reference STORE PATH F1[,F2...] TABLE\n"
		"                  the fields' values, in order, are the key levels of a row\n"
		"                  of TABLE (key depth: their number), which must exist and\n"
		"                  cannot be removed while referenced; a row that leaves one\n"
		"                  of them out (or null) references nothing\n"
		"kvfs table unreference STORE PATH F1[,F2...]   forget that reference\n"
		"kvfs table show STORE PATH     the schema as JSON\n"
		"kvfs table drop STORE PATH     forget schema and indexes, keep the rows\n"
		"A schema that existing rows break is refused, naming the row.\n",
		.opts = cli_opts_table,
		.min_operands = 3, .max_operands = 5,
		.operand_names = { "ACTION", "STORE", "PATH", "FIELD", "TYPE" },
	},
	{
		.name = "index", .run = cli_cmd_index,
		.synopsis = "create|drop|list [--unique] STORE PATH [NAME [FIELD[,FIELD...]]]",
		.summary = "Create, drop or list the secondary indexes of a table.",
		.help =
		"kvfs index create STORE PATH NAME FIELD[,FIELD...] [--unique]\n"
		"kvfs index drop STORE PATH NAME\n"
		"kvfs index list STORE PATH\n"
		"Creating fills the index in one transaction; a unique index over duplicate\n"
		"values is refused, naming two clashing rows.\n",
		.opts = cli_opts_index,
		.min_operands = 3, .max_operands = 5,
		.operand_names = { "ACTION", "STORE", "PATH", "NAME", "FIELD" },
	},
	{
		.name = "find", .run = cli_cmd_find,
		.synopsis = "[--from A] [--to B] [--json] STORE PATH NAME [VALUE]",
		.summary = "Print the keys (or rows) of a table's rows through an index.",
		.help =
		"One primary key per line, key levels joined by /, in index order. VALUE\n"
		"matches exactly; --from/--to bound a range (inclusive, either may be left\n"
		"out). A composite index takes VALUE as V1/V2... (a prefix of its fields).\n",
		.opts = cli_opts_find,
		.min_operands = 3, .max_operands = 4,
		.operand_names = { "STORE", "PATH", "NAME", "VALUE" },
	},
	{
		.name = "info", .run = cli_cmd_info,
		.synopsis = "STORE",
		.summary = "Show the key count, the space used and free, and the live readers.",
		.help = "",
		.min_operands = 1, .max_operands = 1, .operand_names = { "STORE" },
	},
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static void print_help(FILE *f)
{
	fputs("usage: kvfs VERB [OPTIONS] ARGS...\n"
	      "       kvfs --help | --version | VERB --help\n"
	      "\n"
	      "kvfs shows documents kept in an ordered key-value store as files and\n"
	      "directories. STORE names one of two kinds:\n"
	      "  DIR                                a directory holding an LMDB store\n"
	      "  etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?OPTIONS]\n"
	      "                                     a prefix in an etcd v3 cluster (OPTIONS:\n"
	      "                                     user=, password=, cacert=, cert=, key=)\n"
	      "The offline verbs work on a store whether it is mounted or not.\n"
	      "\n"
	      "verbs:\n", f);
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-7s %s\n", verbs[i].name, verbs[i].summary);
	fputs("\nSee kvfs(1) for details (in the source tree: man -l docs/kvfs.1).\n", f);
}

static const struct cli_verb *find_verb(const char *name)
{
	for (size_t i = 0; i < NVERBS; i++)
		if (strcmp(verbs[i].name, name) == 0)
			return &verbs[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const struct cli_verb *verb;

	if (argc < 2) {
		print_help(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			verb = find_verb(argv[2]);
			if (!verb) {
				cli_fail("unknown verb '%s' (see kvfs --help)", argv[2]);
				return CLI_EXIT_USAGE;
			}
			cli_verb_help(verb);
			return cli_finish_stdout(CLI_EXIT_OK);
		}
		print_help(stdout);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("kvfs %s\n", KVFS_VERSION);
		return cli_finish_stdout(CLI_EXIT_OK);
	}
	if (argv[1][0] == '-') {
		cli_fail("unknown option '%s' (see kvfs --help)", argv[1]);
		return CLI_EXIT_USAGE;
	}
	verb = find_verb(argv[1]);
	if (!verb) {
		cli_fail("unknown verb '%s' (see kvfs --help)", argv[1]);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(verb->name, "mount") != 0)
		cli_damage_catch();	/* the daemon keeps the default: see cli.h */
	return cli_signals_finish(cli_finish_stdout(verb->run(verb, argc - 1, argv + 1)));
}
