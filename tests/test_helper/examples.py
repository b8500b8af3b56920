#!/usr/bin/env python3
# tests/test_helper/examples.py - the console examples of README.md and
# docs/kvfs.1, for tests/26-docs-examples.bats, which runs each one.
#
#   examples.py list FILE...              one line per example block:
#                                         "run FILE:LINE" or "skip FILE:LINE why"
#   examples.py script FILE:LINE ROOT     the block as a bash script (below)
#   examples.py check FILE:LINE ROOT OUT  compares the output the block shows
#                                         with what its run wrote into OUT
#
# What an example is:
#   README.md   a fenced block whose info string is `console` (commands after
#               "$ ", every other line the output of the command above it) or
#               `sh` (every line a command, output not shown). A block that
#               must not run is preceded, blank lines aside, by a line
#               <!-- not run: WHY -->.
#   kvfs.1      a block between .nf and .fi holding a line that starts with
#               "$ "; roff escapes (\-, \(aq, \e, ...) are undone. A roff
#               comment .\" not run: WHY among the three lines before .nf
#               skips it.
# A command line ending in "\" or "|" (or "&&", "||") goes on on the next
# line, as the shell reads it.
#
# Path rewriting: an absolute path whose first component is srv, mnt or
# backup (/srv/people, /mnt/docs, /backup/x) becomes ROOT/srv/..., in the
# commands and in the output shown, so that a block writes only below ROOT.
# Nothing else is rewritten: other paths (scripts/demo.json) are relative
# to the directory the block runs in.
#
# Output is compared word by word (whitespace-separated), since `ls` in a
# terminal lays names out in columns where a pipe gets one per line; only
# commands followed by output lines are compared.
import re
import shlex
import sys

ROOTED = re.compile(r"(?<![\w.$/~-])/(srv|mnt|backup)(?=/|\b)")
NOT_RUN_MD = re.compile(r"^<!--\s*not run:\s*(.*?)\s*-->\s*$")
NOT_RUN_MAN = re.compile(r'^\.\\"\s*not run:\s*(.*?)\s*$')
CONTINUES = re.compile(r"(\\|\||&&)\s*$")

ROFF = [("\\-", "-"), ("\\(aq", "'"), ("\\(dq", '"'), ("\\(ga", "`"),
        ("\\(ti", "~"), ("\\&", ""), ("\\e", "\\")]


class Block:
    def __init__(self, where, kind, lines, skip=None):
        self.where = where	# "FILE:LINE" of the opening line
        self.kind = kind	# "console" or "sh"
        self.lines = lines	# the block's text, one string a line
        self.skip = skip	# why it is not run, or None

    def steps(self):
        """[(command, [expected output lines])], in order."""
        steps = []
        pending = None	# a command still going on on the next line
        for line in self.lines:
            if pending is not None:
                pending += "\n" + line
                if not CONTINUES.search(line):
                    steps.append((pending, []))
                    pending = None
                continue
            if self.kind == "sh" or line.startswith("$ "):
                cmd = line[2:] if self.kind == "console" else line
                if self.kind == "sh" and (not cmd.strip() or cmd.lstrip().startswith("#")):
                    continue
                if CONTINUES.search(cmd):
                    pending = cmd
                else:
                    steps.append((cmd, []))
            elif steps:
                steps[-1][1].append(line)
        if pending is not None:
            steps.append((pending, []))
        return steps


def from_markdown(path):
    blocks, lines = [], open(path).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```\s*(\w+)?\s*$", lines[i])
        if not m:
            i += 1
            continue
        kind, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if kind in ("console", "sh"):
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            why = NOT_RUN_MD.match(lines[k]) if k >= 0 else None
            blocks.append(Block("%s:%d" % (path, start + 1), kind, lines[start + 1:j],
                                why.group(1) if why else None))
        i = j + 1
    return blocks


def unroff(line):
    for a, b in ROFF:
        line = line.replace(a, b)
    return line


def from_man(path):
    blocks, lines = [], open(path).read().split("\n")
    for i, line in enumerate(lines):
        if line != ".nf":
            continue
        j = i + 1
        while j < len(lines) and lines[j] != ".fi":
            j += 1
        body = [unroff(x) for x in lines[i + 1:j]]
        if not any(x.startswith("$ ") for x in body):
            continue
        why = None
        for k in range(max(0, i - 3), i):
            m = NOT_RUN_MAN.match(lines[k])
            if m:
                why = m.group(1)
        blocks.append(Block("%s:%d" % (path, i + 1), "console", body, why))
    return blocks


def blocks_of(path):
    return from_man(path) if path.endswith(".1") else from_markdown(path)


def find(where):
    path = where.rsplit(":", 1)[0]
    for b in blocks_of(path):
        if b.where == where:
            return b
    sys.exit("examples.py: no example at " + where)


def rooted(text, root):
    return ROOTED.sub(lambda m: root + "/" + m.group(1), text)


def script(block, root):
    """A bash script that runs the block's commands in one shell, with -e:
    step N's output (stdout and stderr) goes to $OUT/N and, with the
    command, to the transcript $OUT/log; a failing command ends it."""
    out = ["set -eE",
           'trap \'st=$?; cat "$OUT/$step" >>"$OUT/log" 2>/dev/null; '
           'echo "(exit status $st)" >>"$OUT/log"\' ERR']
    for n, (cmd, _) in enumerate(block.steps(), 1):
        cmd = rooted(cmd, root)
        out.append("step=%d; printf '$ %%s\\n' %s >>\"$OUT/log\"" % (n, shlex.quote(cmd)))
        out.append("{ %s\n} >\"$OUT/%d\" 2>&1" % (cmd, n))
        out.append('cat "$OUT/%d" >>"$OUT/log"' % n)
    return "\n".join(out) + "\n"


def check(block, root, outdir):
    bad = 0
    for n, (cmd, want) in enumerate(block.steps(), 1):
        if not want:
            continue
        want = rooted("\n".join(want), root)
        try:
            got = open("%s/%d" % (outdir, n)).read()
        except OSError:
            got = ""
        if want.split() != got.split():
            bad += 1
            print("%s: `%s` printed:\n%s\n  where the example shows:\n%s\n" %
                  (block.where, cmd, got.rstrip("\n"), want))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "list":
        for path in argv[1:]:
            for b in blocks_of(path):
                print("skip %s %s" % (b.where, b.skip) if b.skip else "run " + b.where)
        return 0
    if len(argv) == 3 and argv[0] == "script":
        sys.stdout.write(script(find(argv[1]), argv[2]))
        return 0
    if len(argv) == 4 and argv[0] == "check":
        return check(find(argv[1]), argv[2], argv[3])
    sys.stderr.write("usage: examples.py list FILE... | script FILE:LINE ROOT | "
                     "check FILE:LINE ROOT OUTDIR\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
