#!/usr/bin/env python3
# tests/test_helper/cli_options.py - reads the options and exit codes of the
# kvfs command from one of three places, for tests/23-cli-help.bats:
#
#   cli_options.py code SRCDIR         the option tables in SRCDIR/cli/*.c
#   cli_options.py man  MANPAGE        the .TP items of docs/kvfs.1
#   cli_options.py help KVFS_BIN       `kvfs VERB --help` for every verb
#
# and prints one sorted line per item, the same form from every source:
#   verb NAME                          a verb exists
#   opt VERB -r,-R,--recursive         an option and all its spellings
#   opt VERB -t,--type=ARG             ... that takes a value
#   exit CODE                          an exit code
# plus, for man and help, "synopsis VERB SPELLING" for every option spelling
# named in the verb's usage line. `--help`/`-h` (common to every verb) is
# left out of "opt" lines; `help` reports a verb whose help lacks it.
import glob
import os
import re
import subprocess
import sys


def spec(spellings, has_arg):
    """The one form of an option: its spellings sorted, then =ARG."""
    shorts = sorted(s for s in spellings if not s.startswith("--"))
    longs = sorted(s for s in spellings if s.startswith("--"))
    return ",".join(shorts + longs) + ("=ARG" if has_arg else "")


# ---- code: cli/kvfs.c's verb table and cli/cmd_*.c's option tables ----

C_TABLE = re.compile(r"^const struct cli_opt cli_opts_(\w+)\[\] = \{(.*?)^\};",
                     re.S | re.M)
C_ENTRY = re.compile(r"\{\s*(\w+)\s*,\s*('(.)'|0)\s*,\s*(\"([^\"]*)\"|NULL)\s*,"
                     r"\s*(\"[^\"]*\"|NULL)\s*,\s*(NULL|\")")
C_VERB = re.compile(r"\.name\s*=\s*\"(\w+)\"(.*?)(?=\.name\s*=|\Z)", re.S)
C_EXIT = re.compile(r"CLI_EXIT_\w+\s*=\s*(\d+)")


def from_code(srcdir):
    tables = {}
    for path in sorted(glob.glob(os.path.join(srcdir, "cli", "*.c"))):
        for name, body in C_TABLE.findall(open(path).read()):
            groups = []		# [spellings, has_arg]; an alias joins the last
            for m in C_ENTRY.finditer(body):
                if m.group(1) == "0":
                    break
                spellings = []
                if m.group(3):
                    spellings.append("-" + m.group(3))
                if m.group(5):
                    spellings.append("--" + m.group(5))
                if m.group(7) == "NULL" and groups:
                    groups[-1][0] += spellings
                else:
                    groups.append([spellings, m.group(6) != "NULL"])
            tables[name] = [spec(s, a) for s, a in groups]
    out = []
    kvfs_c = open(os.path.join(srcdir, "cli", "kvfs.c")).read()
    verbs = kvfs_c[kvfs_c.index("verbs[] = {"):]
    for verb, body in C_VERB.findall(verbs):
        out.append("verb " + verb)
        m = re.search(r"\.opts\s*=\s*cli_opts_(\w+)", body)
        if m:
            out += ["opt %s %s" % (verb, o) for o in tables[m.group(1)]]
    cli_h = open(os.path.join(srcdir, "cli", "cli.h")).read()
    enum = cli_h[cli_h.index("enum cli_exit {"):]
    enum = enum[:enum.index("};")]
    out += ["exit " + c for c in C_EXIT.findall(enum)]
    return out


# ---- man: SYNOPSIS lines, the VERBS section's .TP items, EXIT STATUS ----

MAN_SPELLING = re.compile(r"\\-(\\-[A-Za-z][A-Za-z0-9-]*|[A-Za-z](?![A-Za-z]))")


def man_spellings(line):
    return [("-" + s).replace("\\-", "-") for s in MAN_SPELLING.findall(line)]


def from_man(path):
    lines = open(path).read().split("\n")
    out = []
    section = None
    verb = None		# the verb of the SYNOPSIS line or VERBS item being read
    depth = 0		# inside .RS ... .RE of a verb item
    for i, line in enumerate(lines):
        if line.startswith(".SH "):
            section = line[4:].strip('"')
            verb = None
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if section == "SYNOPSIS":
            m = re.match(r"\.B kvfs (\w+)$", line)
            if m:
                verb = m.group(1)
                out.append("verb " + verb)
            elif line == ".br":
                verb = None
            elif verb:
                out += ["synopsis %s %s" % (verb, s) for s in man_spellings(line)]
        elif section == "VERBS":
            if line == ".RS":
                depth += 1
            elif line == ".RE":
                depth -= 1
            elif line == ".TP" and depth == 0:
                m = re.match(r"\.B (\w+)", nxt)
                verb = m.group(1) if m else None
            elif line == ".TP" and depth == 1 and verb:
                spellings = man_spellings(nxt)
                if spellings:
                    out.append("opt %s %s" % (verb, spec(spellings, "\\fI" in nxt)))
        elif section == "EXIT STATUS":
            m = re.match(r"\.B (\d+)$", nxt)
            if line == ".TP" and m:
                out.append("exit " + m.group(1))
    return out


# ---- help: `kvfs --help` for the verbs, `kvfs VERB --help` for the rest ----

HELP_OPT = re.compile(r"^  ( *)(-\S.*?)(  |$)")


def from_help(kvfs):
    def run(*args):
        return subprocess.run([kvfs] + list(args), check=True,
                              capture_output=True, text=True).stdout

    out = []
    top = run("--help").split("\n")
    verbs = [l.split()[0] for l in top[top.index("verbs:") + 1:]
             if l.startswith("  ")]
    for verb in verbs:
        out.append("verb " + verb)
        text = run(verb, "--help").split("\n")
        usage = text[0]
        if not usage.startswith("usage: kvfs %s " % verb):
            out.append("error %s: help does not start with its usage" % verb)
        for s in re.findall(r"\[(--?[A-Za-z][A-Za-z0-9-]*)", usage):
            out.append("synopsis %s %s" % (verb, s))
        part = None
        saw_help = False
        for l in text[1:]:
            if l and not l.startswith(" "):
                part = l
                continue
            if part == "Options:":
                m = HELP_OPT.match(l)
                if not m:
                    continue
                head = m.group(2)
                spellings = re.findall(r"--?[A-Za-z][A-Za-z0-9-]*", head)
                if spellings == ["-h", "--help"]:
                    saw_help = True
                    continue
                has_arg = bool(re.search(r"\s[A-Z][A-Z_]*$", head))
                out.append("opt %s %s" % (verb, spec(spellings, has_arg)))
            elif part == "Exit status:":
                m = re.match(r"^  (\d+)  ", l)
                if m:
                    out.append("exit %s %s" % (verb, m.group(1)))
        if not saw_help:
            out.append("error %s: help does not list -h, --help" % verb)
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("code", "man", "help"):
        sys.exit("usage: cli_options.py code|man|help SOURCE")
    kind, source = sys.argv[1], sys.argv[2]
    out = {"code": from_code, "man": from_man, "help": from_help}[kind](source)
    for line in sorted(set(out)):
        print(line)


main()
