#!/usr/bin/python3
# scripts/model-tables.py - a randomized, seeded, model-based test of tables
# (issue 32, section 7): random writes through the real mount and the real
# CLI, each predicted by a small oracle, and the store compared with it
# after every step.
#
# Usage: model-tables.py KVFS_BIN STORE MOUNTPOINT [--seed N] [--steps N]
#                        [--check-every N] [--mount] [--trace] [--stats]
#                        [--without OPERATION]...
#   STORE is mounted at MOUNTPOINT already (tests/76), or, with --mount, the
#   driver mounts it there (created) and unmounts it at the end (make stress).
#   The store must hold nothing yet: the driver declares its own tables.
#   Without --seed a fresh one is drawn. Prints the seed first; on a failure
#   the step, the operation and the difference, and exits 1. --trace prints
#   each step to stderr, --stats each kind of operation's outcomes;
#   --without leaves out an operation (named as --stats names it) that finds
#   a defect not fixed yet, so that a CI seed can pass meanwhile.
#
# The oracle (scripts/model_tables_oracle.py) models three tables, /p, /o
# and /c (typed, required and max-length columns, a key field, unique and
# plain indexes, a unique composite index, a reference from /o to /p and
# one over two fields from /o to /c, keyed by two levels, a default TTL on
# /o; /c's second key level an integer column, its rows 1 2 10 in that
# order), a sparse array /d/a and a scratch directory /t. Each operation
# either succeeds or is refused (type, required, max length, unique, key
# field, reference, or a referenced row removed); the oracle says which,
# and a refusal stores nothing. Besides the rows' writes, writes of
# /o/@schema.json drop and declare the composite index again, and `kvfs
# dump | kvfs load` makes a copy of the store that must equal the model.
# TTLs are modelled as whether a node has a deadline and roughly when
# (seconds left within a few), never waited for.
#
# After each step: `kvfs export --compact` equals the model; the mount shows
# the rows and fields the step touched (within 5 s: outside changes show
# within about a fifth of a second, docs/SPEED.md); `kvfs find` over one
# index (all of them every --check-every steps, with exact and range
# queries) lists the model's rows in index order; refusals happened exactly
# when predicted, with a message naming a rule the oracle says is broken.
# Every --check-every steps: `kvfs check` reports 0 problems, every node's
# TTL is checked, and the mount's views of the tables equal the model.
#
# Left out of the random operations, because they are known not to work yet
# (issue 32) or were found broken by this driver (see its commit):
#   - rows leaving out a key field that has rules (issue 32 section 2): /p's
#     key field id has no column and no index, and import --lines lines
#     always name it.
#   - the order of rows of equal index values (issue 32 section 4 orders
#     them by an integer key column's value; /p and /o have none): compared
#     as sets. /c's second key level is an integer column, and its rows
#     must come in numeric order in exports and in the mount's readdir.
#   - columns changed by @schema.json writes: only an index is (a column
#     changed would need the oracle to judge every row again).

import argparse
import errno
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

sys.dont_write_bytecode = True	# no __pycache__ in scripts/
from model_tables_oracle import (  # noqa: E402  (scripts/, beside this file)
    BIG, C_ROW, COLUMNS, DOUBLES, FIELDS, INDEXES, MULTI_REFS, O_NAMES, O_TTL, P_KEYS,
    REASON_TEXT, TOGGLED, TTLS, Model, Row, canon, cat_text, diff, fmt_double, index_order,
    kind_of, text_as, value_from_text)


class Failure(Exception):
    pass


# ---- the driver ----

class Driver:
    def __init__(self, args):
        self.kvfs = args.kvfs
        self.store = args.store
        self.mnt = args.mountpoint.rstrip("/")
        self.rng = random.Random(args.seed)
        self.seed = args.seed
        self.trace = args.trace
        self.check_every = args.check_every
        self.without = set(args.without)
        unknown = self.without - {name for _, name, *_ in self.OPS}
        if unknown:
            sys.exit(f"model-tables: --without {sorted(unknown)}: no such operation")
        self.m = Model()
        self.tmp = tempfile.mkdtemp(prefix="kvfs-model.")
        self.step = 0
        self.op = "setup"
        self.counts = {"ok": 0, "refused": 0}
        self.reasons = {}
        self.by_op = {}		# operation name -> [accepted, refused]
        self.opname = None

    # -- running things --

    def run(self, *cmd, stdin=None):
        r = subprocess.run(list(cmd), input=stdin, capture_output=True, text=True)
        return r.returncode, r.stdout, r.stderr

    def sh(self, script, *args):
        """A shell command line (redirections as a user types them), args as $1..."""
        return self.run("sh", "-c", script, "sh", *args)

    def cli(self, *args, stdin=None):
        return self.run(self.kvfs, *args, stdin=stdin)

    def must(self, *args, stdin=None):
        rc, out, err = self.cli(*args, stdin=stdin)
        if rc != 0:
            raise Failure(f"kvfs {' '.join(args)} exited {rc}: {err.strip()}")
        return out

    def fail(self, what):
        raise Failure(what)

    def path(self, *parts):
        return "/".join([self.mnt] + list(parts))

    def spath(self, *parts):
        return "/" + "/".join(parts)

    def tmpfile(self, text):
        p = os.path.join(self.tmp, "in")
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
        return p

    def mount_error(self, *dirs):
        out = []
        for d in dirs:
            try:
                out.append(os.getxattr(d, "user.kvfs.error").decode(errors="replace"))
            except OSError:
                pass
        return " | ".join(out)

    # -- outcomes --

    def outcome(self, rc, reasons, message):
        """Fails unless the operation was refused exactly when reasons (the
        rules the oracle sees broken) is not empty, naming one of them."""
        if reasons and rc == 0:
            self.fail(f"accepted, but the oracle refuses it: {sorted(reasons)}")
        if not reasons and rc != 0:
            self.fail(f"refused (exit {rc}), but the oracle accepts it: {message.strip()}")
        if reasons:
            if not any(REASON_TEXT[r] in message for r in reasons):
                self.fail(f"refused, but not for {sorted(reasons)}: {message.strip()!r}")
            self.counts["refused"] += 1
            self.by_op.setdefault(self.opname, [0, 0])[1] += 1
            for r in reasons:
                self.reasons[r] = self.reasons.get(r, 0) + 1
        else:
            self.counts["ok"] += 1
            self.by_op.setdefault(self.opname, [0, 0])[0] += 1
        return not reasons

    # -- choosing --

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def chance(self, p):
        return self.rng.random() < p

    def pick_row(self):
        """A table and one of its rows: (table, key, Row), or None when the
        table drawn has no row."""
        table = self.pick(["p", "o"])
        key = self.row_key(table)
        return None if key is None else (table, key, self.m.tables[table][key])

    def row_key(self, table, existing=True):
        rows = self.m.tables[table]
        if existing:
            return self.pick(rows) if rows else None
        names = P_KEYS if table == "p" else O_NAMES + list(rows)
        return self.pick(names)

    def field_text(self, table, field, key):
        """A text for a leaf write: mostly one its column takes, some it refuses."""
        col = COLUMNS[table].get(field)
        typ = col[0] if col else None
        if field == "id":
            return self.pick([key] * 3 + ["zz"])
        if field == "email":
            return self.pick(["a@x", "b@x", "c@x", "d@x", ""])
        if field == "note":
            return self.pick(["hi", "x y", "12", "true"])
        if field == "who":
            return self.pick(P_KEYS + ["zed"])
        if field in ("ca", "cb"):
            return self.c_level(field)
        if field == "name":
            return self.pick(["", "al", "bea", "cyrus", "dmitri", "eleanor",
                              "\u00e9\u00e9\u00e9", "\u00e9" * 6, "\u00e9" * 7])
        if field == "tag":
            return self.pick(["", "a", "ab", "abc", "abcd"])
        if typ == "integer":
            return self.pick(["0", "7", "-3", "42", "31", str(BIG), "abc", "4.5"])
        if typ == "double":
            # "7": a file's text must read back as written, and 7.0 would not,
            # so the mount refuses it where kvfs put stores 7.0
            return self.pick([fmt_double(x) for x in DOUBLES] + ["7", "x"])
        if typ == "boolean":
            return self.pick(["true", "false", "yes"])
        raise AssertionError(field)

    def field_value(self, table, field, key, bad_rate=0.1):
        """A JSON value for a document's field: mostly right, some wrong."""
        col = COLUMNS[table].get(field)
        if field == "id":
            return self.pick([key] * 4 + ["zz"])
        if field == "email":
            return self.pick(["a@x", "b@x", "c@x", "d@x", ""])
        if field == "note":
            return self.pick(["hi", 12, True])
        if field == "who":
            return self.pick(P_KEYS + ["zed"] + ([5] if self.chance(0.1) else []))
        if field in ("ca", "cb"):
            return self.c_level(field)
        typ = col[0]
        bad = self.chance(bad_rate)
        if typ == "integer":
            return self.pick([4.0, "7"] + ([None] if field == "age" else [])) if bad else \
                self.pick([0, 7, -3, 42, 31, BIG])
        if typ == "double":
            return self.pick([1, "2.5"]) if bad else self.pick(DOUBLES + [None])
        if typ == "boolean":
            return self.pick(["true", 1]) if bad else self.pick([True, False, None])
        if field == "name":
            return 5 if bad else self.pick(["al", "cyrus", "dmitri", "eleanor", "\u00e9" * 6,
                                            "\u00e9" * 7, None])
        if field == "tag":
            return 7 if bad else self.pick(["a", "abc", "abcd", None])
        raise AssertionError(field)

    def c_level(self, field):
        """A key level of /c for ca or cb: mostly one there is, some not."""
        return self.pick(["A", "A", "B", "Z"] if field == "ca" else ["1", "1", "2", "9"])

    def gen_row(self, table, key, bad_rate=0.1):
        doc = {}
        for f in FIELDS[table]:
            required = COLUMNS[table].get(f, (None, False))[1]
            if required and self.chance(0.95) or self.chance(0.6 if f == "email" else 0.4):
                doc[f] = self.field_value(table, f, key, bad_rate)
        return doc

    # ---- the operations: each predicts, runs, compares, applies ----
    # Each returns the things to settle: ("row", table, key, fields...),
    # ("arr",), ("scratch",).

    def write_leaf(self, table, key, field, value, deadline=None):
        """A leaf written: a write clears its TTL unless it gives one."""
        r = self.m.tables[table][key]
        r.fields[field] = value
        r.fttl.pop(field, None)
        if deadline:
            r.fttl[field] = deadline

    def leaf_write(self, how):
        """echo V > ROW/FIELD through the mount, or kvfs put [--ttl] S PATH V."""
        if not (picked := self.pick_row()):
            return None
        table, key, row = picked
        field = self.pick(FIELDS[table])
        text = self.field_text(table, field, key)
        value = value_from_text(table, field, text, row.fields.get(field), how == "echo")
        fields = dict(row.fields, **{field: value})
        reasons = self.m.broken(table, key, fields)
        ttl = None
        t0 = time.time()
        if how == "echo":
            self.op = f"echo {text!r} > {table}/{key}/{field}"
            rc, _, err = self.sh('/bin/echo "$1" >"$2"', text, self.path(table, key, field))
            if rc != 0:
                err += self.mount_error(self.path(table, key), self.path(table))
        else:
            args = ["put"]
            if self.chance(0.3):
                ttl = self.pick(TTLS)
                args += ["--ttl", str(ttl)]
            args += [self.store, self.spath(table, key, field), text]
            self.op = "kvfs " + " ".join(args[:-1]) + f" {text!r}"
            rc, _, err = self.cli(*args)
        if self.outcome(rc, reasons, err):
            self.write_leaf(table, key, field, value, t0 + ttl if ttl else None)
        return [("row", table, key, field)]

    def trunc_append(self):
        """: > ROW/FIELD then echo V >> ROW/FIELD through the mount."""
        if not (picked := self.pick_row()):
            return None
        table, key, row = picked
        field = self.pick(FIELDS[table])
        old = row.fields.get(field)
        empty = value_from_text(table, field, "", old, True)
        empty_ok = not self.m.broken(table, key, dict(row.fields, **{field: empty}))
        text = self.field_text(table, field, key)
        self.op = f": > {table}/{key}/{field}; echo {text!r} >> {table}/{key}/{field}"
        p = self.path(table, key, field)
        self.sh(': >"$1"', p)	# a refusal here is seen in what is stored
        if empty_ok:
            self.write_leaf(table, key, field, empty)	# committed at its close
            old = empty
        # else a field whose "" is refused: held a moment for the append
        value = value_from_text(table, field, text, old, True)
        reasons = self.m.broken(table, key, dict(row.fields, **{field: value}))
        rc, _, err = self.sh('/bin/echo "$1" >>"$2"', text, p)
        if rc != 0:
            err += self.mount_error(self.path(table, key), self.path(table))
        if self.outcome(rc, reasons, err):
            self.write_leaf(table, key, field, value)
        return [("row", table, key, field)]

    def replace_row(self, how):
        """cp doc.json ROW.json through the mount, or kvfs import [--ttl] S ROW FILE."""
        table = self.pick(["p", "o"])
        key = self.row_key(table, existing=self.chance(0.5))
        if key is None:
            return None
        doc = self.gen_row(table, key)
        reasons = self.m.broken(table, key, doc)
        src = self.tmpfile(json.dumps(doc, ensure_ascii=False))
        existed = key in self.m.tables[table]
        ttl = None
        t0 = time.time()
        if how == "cp":
            self.op = f"cp {json.dumps(doc, ensure_ascii=False)} {table}/{key}.json"
            rc, _, err = self.run("cp", src, self.path(table, key + ".json"))
            if rc != 0:
                err += self.mount_error(self.path(table))
        else:
            args = ["import"]
            if self.chance(0.3):
                ttl = self.pick(TTLS)
                args += ["--ttl", str(ttl)]
            args += [self.store, self.spath(table, key)]
            self.op = "kvfs " + " ".join(args) + " " + json.dumps(doc, ensure_ascii=False)
            rc, _, err = self.cli(*(args + [src]))
        if self.outcome(rc, reasons, err):
            # a document written over a node clears its TTLs (and those inside);
            # a new row of /o takes the table's unless the write gives one
            deadline = t0 + ttl if ttl else None
            if deadline is None and not existed and table == "o":
                deadline = t0 + O_TTL
            old = self.m.tables[table].get(key)
            self.m.tables[table][key] = Row(doc, deadline)
            # a field that stays keeps its attribute record (mode, times)
            self.m.tables[table][key].moved_in = bool(old and old.moved_in)
        return [("row", table, key) + tuple(doc)]

    def mv_field(self):
        """echo V > t/NAME [setfattr ttl], then mv t/NAME ROW/FIELD through the mount."""
        if not (picked := self.pick_row()):
            return None
        table, key, row = picked
        field = self.pick(FIELDS[table])
        text = self.field_text(table, field, key)
        src = self.path("t", "mv" + str(self.step))
        rc, _, err = self.sh('/bin/echo "$1" >"$2"', text, src)
        if rc != 0:
            self.fail(f"echo > {src}: {err.strip()}")
        ttl = None
        t0 = time.time()
        if self.chance(0.3):
            ttl = self.pick(TTLS)
            os.setxattr(src, "user.kvfs.ttl", str(ttl).encode())
        self.op = f"echo {text!r} > t/NAME{' (ttl %d)' % ttl if ttl else ''}; " \
                  f"mv t/NAME {table}/{key}/{field}"
        # a moved text file is typed as echo's text is (model/tree/rename.c)
        value = value_from_text(table, field, text, row.fields.get(field), True)
        reasons = self.m.broken(table, key, dict(row.fields, **{field: value}))
        rc, _, err = self.run("mv", src, self.path(table, key, field))
        if rc != 0:
            err += self.mount_error(self.path(table, key), self.path(table))
        if self.outcome(rc, reasons, err):
            # mv keeps the moved file's TTL
            self.write_leaf(table, key, field, value, t0 + ttl if ttl else None)
            row.moved_in = True
        else:
            # refused: the file is where it was, as it was
            with open(src, encoding="utf-8") as f:
                got = f.read()
            if got != text + "\n":
                self.fail(f"a refused mv left its source holding {got!r}, not {text!r}")
            os.unlink(src)
        return [("row", table, key, field), ("scratch",)]

    def rm_field(self, how):
        """rm ROW/FIELD through the mount, or kvfs rm S ROW/FIELD."""
        picked = self.pick_row()
        if not picked or not picked[2].fields:
            return None
        table, key, row = picked
        field = self.pick(row.fields)
        fields = {k: v for k, v in row.fields.items() if k != field}
        reasons = self.m.broken(table, key, fields) & {"required"}
        if how == "rm":
            # A removal the row's rules refuse, or any in a referenced row, is
            # held until the row goes (rm -r), else tried alone: sync tries it
            # now, and a refused one is back (issue 32 section 3, fs/rmhold.c).
            self.op = f"rm {table}/{key}/{field}"
            rc, _, err = self.run("rm", self.path(table, key, field))
            if rc == 0:
                self.run("sync", self.mnt)
                if os.path.lexists(self.path(table, key, field)):
                    rc = 1
            if rc != 0:
                err += self.mount_error(self.path(table, key), self.path(table))
        else:
            self.op = f"kvfs rm S /{table}/{key}/{field}"
            rc, _, err = self.cli("rm", self.store, self.spath(table, key, field))
        if self.outcome(rc, reasons, err):
            del row.fields[field]
            row.fttl.pop(field, None)
        return [("row", table, key, field)]

    def rm_row(self, how):
        """rm ROW.json or rm -r ROW through the mount, or kvfs rm -r S ROW."""
        table = self.pick(["p", "o"])
        key = self.row_key(table)
        if key is None:
            return None
        # half the time a row that an /o row names (chosen from the state,
        # whatever the oracle's rules say of it)
        named = {r.fields.get("who") for r in self.m.tables["o"].values()}
        held = sorted(k for k in self.m.tables[table] if table == "p" and k in named)
        if self.chance(0.5) and held:
            key = self.pick(held)
        reasons = {"busy"} if self.m.referenced(table, key) else set()
        if how == "view":
            self.op = f"rm {table}/{key}.json"
            rc, _, err = self.run("rm", self.path(table, key + ".json"))
            if rc != 0:
                err += self.mount_error(self.path(table))
        elif how == "rm -r":
            self.op = f"rm -r {table}/{key}"
            rc, _, err = self.run("rm", "-r", self.path(table, key))
            if rc != 0:
                err += self.mount_error(self.path(table, key), self.path(table))
        else:
            self.op = f"kvfs rm -r S /{table}/{key}"
            rc, _, err = self.cli("rm", "-r", self.store, self.spath(table, key))
        if self.outcome(rc, reasons, err):
            del self.m.tables[table][key]
        return [("row", table, key)]

    def mkdir_row(self):
        """mkdir ROW through the mount: an empty row (refused in /p: age is required)."""
        table = self.pick(["p", "o", "o"])
        key = self.row_key(table, existing=False)
        if key in self.m.tables[table]:
            return None
        reasons = self.m.broken(table, key, {})
        self.op = f"mkdir {table}/{key}"
        t0 = time.time()
        rc, _, err = self.run("mkdir", self.path(table, key))
        if rc != 0:
            err += self.mount_error(self.path(table))
        if self.outcome(rc, reasons, err):
            self.m.tables[table][key] = Row({}, t0 + O_TTL if table == "o" else None)
        return [("row", table, key)]

    def set_ttl(self):
        """setfattr -n user.kvfs.ttl -v S ROW or ROW/FIELD through the mount."""
        if not (picked := self.pick_row()):
            return None
        table, key, row = picked
        field = self.pick(row.fields) if row.fields and self.chance(0.5) else None
        ttl = self.pick(TTLS)
        parts = [table, key] + ([field] if field else [])
        self.op = f"setfattr -n user.kvfs.ttl -v {ttl} {'/'.join(parts)}"
        t0 = time.time()
        rc, _, err = self.run("setfattr", "-n", "user.kvfs.ttl", "-v", str(ttl), self.path(*parts))
        if self.outcome(rc, set(), err):
            if field:
                row.fttl[field] = t0 + ttl
            else:
                row.ttl = t0 + ttl
        return [("row", table, key)]

    def import_lines(self):
        """kvfs import --lines S /p FILE (rows named by id) or S /o FILE (the next integers)."""
        table = self.pick(["p", "o"])
        lines = []
        nxt = int(self.m.next_int_key("o"))
        for _ in range(self.rng.randint(1, 3)):
            if table == "p":
                key = self.row_key("p", existing=False)
                doc = self.gen_row("p", key, 0.05)
                doc["id"] = key
            else:
                key = str(nxt)
                nxt += 1
                doc = self.gen_row("o", key, 0.05)
            lines.append((key, doc))
        if not lines:
            return None
        text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for _, d in lines)
        self.op = f"kvfs import --lines S /{table} <<{text!r}"
        t0 = time.time()
        rc, _, err = self.cli("import", "--lines", self.store, self.spath(table), "-", stdin=text)
        # each line is a row, checked as any write with the lines before it
        # in place: a refused line stops the import, those before it committed
        reasons = set()
        for n, (key, doc) in enumerate(lines, 1):
            reasons = self.m.broken(table, key, doc)
            if reasons:
                break
            self.m.tables[table][key] = Row(doc, t0 + O_TTL if table == "o" else None)
        line = re.search(r"line (\d+):", err)
        if reasons and rc != 0 and (not line or int(line.group(1)) != n):
            self.fail(f"refused at {line.group(0) if line else '?'} the oracle refuses line {n} "
                      f"({sorted(reasons)}): {err.strip()!r}")
        self.outcome(rc, reasons, err)
        return [("row", table, k) + tuple(d) for k, d in lines]

    # -- the sparse array /d/a --

    def arr_write(self, how):
        """echo V > d/a/N through the mount, or kvfs put S /d/a/N V (N new or not)."""
        idx = self.pick(list(self.m.arr) + list(range(0, 12)))
        text = self.pick(["v", "w z", "13", "0"])
        old = self.m.arr.get(idx)
        value = text
        if old is not None and kind_of(old) not in (None, "string"):
            v = text_as(kind_of(old), text)
            value = text if v is None else v
        if how == "echo":
            self.op = f"echo {text!r} > d/a/{idx}"
            rc, _, err = self.sh('/bin/echo "$1" >"$2"', text, self.path("d", "a", str(idx)))
        else:
            self.op = f"kvfs put S /d/a/{idx} {text!r}"
            rc, _, err = self.cli("put", self.store, f"/d/a/{idx}", text)
        if self.outcome(rc, set(), err):
            self.m.arr[idx] = value
        return [("arr",)]

    def arr_rm(self, how):
        if not self.m.arr:
            return None
        idx = self.pick(self.m.arr)
        if how == "rm":
            self.op = f"rm d/a/{idx}"
            rc, _, err = self.run("rm", self.path("d", "a", str(idx)))
        else:
            self.op = f"kvfs rm S /d/a/{idx}"
            rc, _, err = self.cli("rm", self.store, f"/d/a/{idx}")
        if self.outcome(rc, set(), err):
            del self.m.arr[idx]
        return [("arr",)]

    def arr_append(self, how):
        """echo JSON >> d/a.json, or kvfs import --lines S /d/a FILE: the next indexes."""
        values = [self.pick([1, -5, "s", "t u", 99]) for _ in range(self.rng.randint(1, 2))]
        if how == "echo":
            values = values[:1]
            text = json.dumps(values[0])
            self.op = f"echo {text} >> d/a.json"
            rc, _, err = self.sh('/bin/echo "$1" >>"$2"', text, self.path("d", "a.json"))
        else:
            text = "".join(json.dumps(v) + "\n" for v in values)
            self.op = f"kvfs import --lines S /d/a <<{text!r}"
            rc, _, err = self.cli("import", "--lines", self.store, "/d/a", "-", stdin=text)
        if self.outcome(rc, set(), err):
            for v in values:
                self.m.arr[max(self.m.arr) + 1 if self.m.arr else 0] = v
        return [("arr",)]

    def arr_replace(self):
        """cp of a dense array onto d/a.json."""
        values = [self.pick([1, "s", 7]) for _ in range(self.rng.randint(0, 4))]
        self.op = f"cp {json.dumps(values)} d/a.json"
        rc, _, err = self.run("cp", self.tmpfile(json.dumps(values)), self.path("d", "a.json"))
        if self.outcome(rc, set(), err):
            self.m.arr = dict(enumerate(values))
        return [("arr",)]

    # -- /c, the target of a reference over two fields --

    def c_row(self, how):
        """rm -r of a row of /c or of a key level (through the mount or kvfs
        rm -r), refused while an /o row references it; or kvfs import of a
        row that is not there."""
        a, b = self.pick(["A", "B"]), self.pick(["1", "2", "10"])
        if not self.m.c_has(a, b):
            # import makes no parents: a missing key level comes whole
            path, doc = (f"/c/{a}/{b}", C_ROW) if a in self.m.c else (f"/c/{a}", {b: C_ROW})
            self.op = f"kvfs import S {path} {json.dumps(doc)}"
            rc, _, err = self.cli("import", self.store, path, "-", stdin=json.dumps(doc))
            if self.outcome(rc, set(), err):
                self.m.c.setdefault(a, set()).add(b)
            return [("c",)]
        whole = self.chance(0.25)	# the key level /c/a, every row under it
        parts = ["c", a] + ([] if whole else [b])
        reasons = {"busy"} if self.m.c_referenced(a, None if whole else b) else set()
        if how == "rm -r":
            self.op = f"rm -r {'/'.join(parts)}"
            rc, _, err = self.run("rm", "-r", self.path(*parts))
            if rc != 0:
                err += self.mount_error(self.path(*parts), self.path(*parts[:-1]))
        else:
            self.op = f"kvfs rm -r S /{'/'.join(parts)}"
            rc, _, err = self.cli("rm", "-r", self.store, self.spath(*parts))
        if self.outcome(rc, reasons, err):
            if whole:
                del self.m.c[a]
            else:
                self.m.c[a].discard(b)	# the key level stays, empty
        elif whole and how == "rm -r":
            # the mount's rm -r goes a row at a time: the rows no /o row
            # references go, each whole; the referenced ones and the level stay
            self.m.c[a] = {r for r in self.m.c[a] if self.m.c_referenced(a, r)}
        return [("c",)]

    # -- the schema and the whole store --

    def schema_write(self):
        """Writes /o/@schema.json through the mount as read there, with the
        index by_who_tag dropped, or declared again (refused, EEXIST, when two
        rows hold the same who and tag)."""
        table, index = TOGGLED
        p = self.path(table, "@schema.json")
        with open(p, encoding="utf-8") as f:
            schema = json.load(f)
        declared = index in self.m.indexes[table]
        if declared != (index in schema["indexes"]):
            self.fail(f"cat {table}/@schema.json: index {index} "
                      f"{'missing' if declared else 'there'}, the model: {declared}")
        ixf = INDEXES[table][index][0]
        if declared:
            del schema["indexes"][index]
            reasons = set()
        else:
            schema["indexes"][index] = {"fields": list(ixf), "unique": True}
            reasons = {"unique"} if self.m.index_dups(table, ixf) else set()
        self.op = f"{'drop' if declared else 'declare'} {index} by a write of {table}/@schema.json"
        rc, err = 0, ""
        try:
            with open(p, "w", encoding="utf-8") as f:	# judged at close
                json.dump(schema, f)
        except OSError as e:
            rc, err = e.errno, str(e) + self.mount_error(self.path(table))
        if self.outcome(rc, reasons, err):
            if declared:
                del self.m.indexes[table][index]
            else:
                self.m.indexes[table][index] = INDEXES[table][index]
        got = self.must("index", "list", self.store, self.spath(table)).split("\n")
        if any(x.startswith(index + " ") for x in got) != (index in self.m.indexes[table]):
            self.fail(f"kvfs index list /{table}: {got}, the model "
                      f"{'declares' if index in self.m.indexes[table] else 'has no'} {index}")
        return []

    def dump_load(self):
        """kvfs dump of the store, kvfs load of it into a new store: the copy
        equals the model (kvfs export, kvfs check, its indexes, kvfs find on
        one) and keeps its rules; a load into the store (not empty) is refused."""
        remote = "://" in self.store	# etcd://H:P/PREFIX: a prefix beside it
        if remote:
            copy = f"{self.store.rstrip('/')}-load{self.step}"
        else:
            copy = os.path.join(self.tmp, f"load{self.step}")
        self.op = "kvfs dump S | kvfs load COPY"
        dump = self.must("dump", self.store)
        rc, _, err = self.cli("load", self.store, stdin=dump)
        if rc == 0:
            self.fail("kvfs load into the store (not empty) was accepted")
        self.must("load", copy, stdin=dump)
        got = json.loads(self.must("export", "--compact", copy))
        if canon(got) != canon(self.m.export()):
            self.fail("the loaded copy differs from the model:\n" + diff(self.m.export(), got))
        self.c_order(got["c"], "the loaded copy's export")
        rc, out, err = self.cli("check", copy)
        if rc != 0 or ", 0 problems" not in out + err:
            self.fail(f"kvfs check of the loaded copy (exit {rc}): {(out + err).strip()}")
        for table in self.m.tables:
            want = sorted(self.must("index", "list", self.store, self.spath(table)).split("\n"))
            got = sorted(self.must("index", "list", copy, self.spath(table)).split("\n"))
            if got != want:
                self.fail(f"kvfs index list /{table}: the copy {got}, the store {want}")
        store, self.store = self.store, copy	# the comparisons, on the copy
        try:
            table = self.pick(self.m.indexes)
            index = self.pick(self.m.indexes[table])
            self.compare_index(table, index)
            self.query_index(table, index)
            # a row the rules refuse is refused in the copy too
            rc, _, err = self.cli("import", copy, "/p/zz", "-", stdin='{"name": "x"}')
            if rc == 0 or REASON_TEXT["required"] not in err:
                self.fail(f"the copy took /p/zz without its age (exit {rc}): {err.strip()}")
        finally:
            self.store = store
        if not remote:
            shutil.rmtree(copy, ignore_errors=True)
        self.outcome(0, set(), "")
        return []

    OPS = [
        # (weight, name, method, argument)
        (14, "echo >", "leaf_write", "echo"),
        (8, "kvfs put", "leaf_write", "put"),
        (5, ": > then >>", "trunc_append", None),
        (8, "cp ROW.json", "replace_row", "cp"),
        (5, "kvfs import", "replace_row", "import"),
        (5, "mv into a row", "mv_field", None),
        (5, "rm FIELD", "rm_field", "rm"),
        (3, "kvfs rm FIELD", "rm_field", "kvfs"),
        (2, "rm ROW.json", "rm_row", "view"),
        (2, "rm -r ROW", "rm_row", "rm -r"),
        (3, "kvfs rm -r ROW", "rm_row", "kvfs"),
        (2, "mkdir ROW", "mkdir_row", None),
        (4, "setfattr ttl", "set_ttl", None),
        (6, "kvfs import --lines", "import_lines", None),
        (3, "echo > d/a/N", "arr_write", "echo"),
        (2, "kvfs put d/a/N", "arr_write", "put"),
        (2, "rm d/a/N", "arr_rm", "rm"),
        (1, "kvfs rm d/a/N", "arr_rm", "kvfs"),
        (2, "echo >> d/a.json", "arr_append", "echo"),
        (1, "kvfs import --lines d/a", "arr_append", "lines"),
        (1, "cp d/a.json", "arr_replace", None),
        (2, "write @schema.json", "schema_write", None),
        (1, "kvfs dump | kvfs load", "dump_load", None),
        (2, "rm -r c/ROW", "c_row", "rm -r"),
        (1, "kvfs rm -r c/ROW", "c_row", "kvfs"),
    ]

    def one_step(self):
        ops = [op for op in self.OPS if op[1] not in self.without]
        weights = [w for w, *_ in ops]
        while True:
            _, self.opname, method, arg = self.rng.choices(ops, weights)[0]
            fn = getattr(self, method)
            touched = fn(arg) if arg is not None else fn()
            if touched is not None:
                return touched

    # ---- comparing ----

    def compare_export(self, arr=True):
        """kvfs export --compact against the model; arr: kvfs ls of /d/a's indexes too."""
        rc, out, err = self.cli("export", "--compact", self.store)
        if rc != 0:
            self.fail(f"kvfs export: {err.strip()}")
        got = json.loads(out)
        want = self.m.export()
        if canon(got) != canon(want):
            self.fail("kvfs export differs from the model:\n" + diff(want, got))
        self.c_order(got["c"], "kvfs export")
        if not arr:
            return
        rc, out, err = self.cli("ls", self.store, "/d/a")
        idx = [int(x) for x in out.split()]
        if idx != sorted(self.m.arr):
            self.fail(f"kvfs ls /d/a: {idx}, the model: {sorted(self.m.arr)}")

    def c_order(self, levels, what):
        """/c's second key level is an integer column: its rows in numeric order."""
        for a, rows in levels.items():
            if list(rows) != sorted(rows, key=int):
                self.fail(f"{what} of /c/{a}: {list(rows)}, not in numeric order")

    def find_arg(self, v):
        """A value as kvfs find takes it; a composite index's tuple as V1/V2."""
        if isinstance(v, tuple):
            return "/".join(self.find_arg(x) for x in v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return fmt_double(v)
        return str(v)

    def compare_index(self, table, index):
        """kvfs find over the whole index: the model's rows, in value order."""
        field = self.m.indexes[table][index][0][0]	# a composite's first
        low = "" if field in ("email", "who", "ca") else str(-10 ** 18)
        rc, out, err = self.cli("find", "--from", low, self.store, self.spath(table), index)
        if rc != 0:
            self.fail(f"kvfs find --from {low!r} /{table} {index}: {err.strip()}")
        got = out.split()
        want = self.m.index_rows(table, index)
        if sorted(got) != sorted(k for _, k in want):
            self.fail(f"kvfs find /{table} {index}: {got}, the model: {[k for _, k in want]}")
        value = dict((k, index_order(v)) for v, k in want)
        values = [value[k] for k in got]
        if values != sorted(values):
            self.fail(f"kvfs find /{table} {index}: not in value order: {list(zip(got, values))}")

    def query_index(self, table, index):
        """One exact and one range query on the index. On a composite index
        the exact query gives all its fields or the first one (a prefix), the
        range the first field's bounds."""
        ixf = self.m.indexes[table][index][0]
        want = self.m.index_rows(table, index)
        if len(ixf) > 1:
            # "ann/" is not ("ann", ""), nor is a null given as V2
            full = [v for v, _ in want if "" not in v and None not in v]
            want = [(v[0], k, v) for v, k in want]
        else:
            full = []
            want = [(v, k, v) for v, k in want]
        misses = {"email": ["a@x", "zz"], "who": ["zed", "ann"], "ca": ["A", "Z"]}
        pool = [v for v, *_ in want] + misses.get(ixf[0], [7, -3, 100])
        v = self.pick(pool + full)
        arg = self.find_arg(v)
        rc, out, err = self.cli("find", self.store, self.spath(table), index, arg)
        exp = sorted(k for x, k, whole in want if v in (x, whole))
        if rc != 0 or sorted(out.split()) != exp:
            self.fail(f"kvfs find /{table} {index} {arg!r}: {out.split()} {err.strip()}, "
                      f"the model: {exp}")
        a, b = sorted([self.pick(pool), self.pick(pool)])
        rc, out, err = self.cli("find", "--from", self.find_arg(a), "--to",
                                self.find_arg(b), self.store, self.spath(table), index)
        exp = [k for x, k, _ in want if a <= x <= b]
        got = out.split()
        if rc != 0 or sorted(got) != sorted(exp):
            self.fail(f"kvfs find --from {a!r} --to {b!r} /{table} {index}: {got} "
                      f"{err.strip()}, the model: {exp}")

    def ttl_left(self, path):
        try:
            return int(os.getxattr(path, "user.kvfs.ttl"))
        except OSError as e:
            if e.errno == errno.ENODATA:
                return None
            raise

    def compare_ttl(self, table, key):
        row = self.m.tables[table].get(key)
        if row is None:
            return
        now = time.time()
        nodes = [((table, key), row.ttl)] + [((table, key, f), row.fttl.get(f)) for f in row.fields]
        for parts, deadline in nodes:
            left = self.ttl_left(self.path(*parts))
            if deadline is None and left is None:
                continue
            if deadline is None or left is None or abs(left - (deadline - now)) > 5:
                want = None if deadline is None else round(deadline - now)
                self.fail(f"ttl of {'/'.join(parts)}: {left} s left, the model: {want}")

    def settle(self, touched):
        """Waits (5 s at most) until the mount shows what the model holds at
        every row, field and directory the step touched."""
        deadline = time.time() + 5
        while True:
            problem = self.mount_differs(touched)
            if problem is None:
                return
            if time.time() > deadline:
                self.fail("the mount differs from the model after 5 s: " + problem)
            time.sleep(0.05)

    def mount_differs(self, touched):
        for t in touched:
            if t[0] == "arr":
                got = sorted(int(x) for x in os.listdir(self.path("d", "a")))
                if got != sorted(self.m.arr):
                    return f"ls d/a: {got}, the model: {sorted(self.m.arr)}"
                continue
            if t[0] == "c":
                got = {a: os.listdir(self.path("c", a)) for a in os.listdir(self.path("c"))}
                for a, names in got.items():	# readdir's order, as ls -f shows it
                    if names != sorted(names, key=int):
                        return f"ls -f c/{a}: {names}, not in numeric order"
                got = {a: sorted(names) for a, names in got.items()}
                want = {a: sorted(bs) for a, bs in self.m.c.items()}
                if got != want:
                    return f"ls c/*: {got}, the model: {want}"
                continue
            if t[0] == "scratch":
                got = sorted(os.listdir(self.path("t")))
                if got != sorted(self.m.scratch):
                    return f"ls t: {got}, the model: {sorted(self.m.scratch)}"
                continue
            _, table, key, *fields = t
            row = self.m.tables[table].get(key)
            p = self.path(table, key)
            if os.path.isdir(p) != (row is not None):
                return f"{table}/{key} {'is' if os.path.isdir(p) else 'is not'} a directory"
            if row is None:
                continue
            got = sorted(os.listdir(p))
            if got != sorted(row.fields):
                return f"ls {table}/{key}: {got}, the model: {sorted(row.fields)}"
            for f in fields:
                if f not in row.fields:
                    continue
                with open(os.path.join(p, f), encoding="utf-8") as fh:
                    text = fh.read()
                if text not in cat_text(row.fields[f]):
                    return f"cat {table}/{key}/{f}: {text!r}, the model: {row.fields[f]!r}"
        return None

    def full_check(self):
        rc, out, err = self.cli("check", self.store)
        if rc != 0 or ", 0 problems" not in out + err:
            self.fail(f"kvfs check (exit {rc}): {(out + err).strip()}")
        for table in self.m.tables:
            for key in list(self.m.tables[table]):
                self.compare_ttl(table, key)
            for index in self.m.indexes[table]:
                self.compare_index(table, index)
                self.query_index(table, index)
            # the mount's view of each table, as the daemon renders it
            with open(self.path(table + ".json"), encoding="utf-8") as fh:
                got = json.load(fh)
            want = self.m.export()[table]
            if canon(got) != canon(want):
                self.fail(f"cat {table}.json differs from the model:\n" + diff(want, got))

    # ---- the run ----

    def setup(self):
        for d in ("p", "o", "d", "t"):
            os.mkdir(self.path(d))
        self.must("table", "create", self.store, "/p", "--key-depth", "1", "--key-fields", "id")
        for name, (typ, required, maxlen, _) in COLUMNS["p"].items():
            self.must("table", "column", self.store, "/p", name, typ,
                      *(["--required"] if required else []),
                      *(["--max-length", str(maxlen)] if maxlen else []))
        self.must("index", "create", self.store, "/p", "by_email", "email", "--unique")
        self.must("index", "create", self.store, "/p", "by_age", "age")
        self.must("table", "create", self.store, "/o", "--key-depth", "1", "--ttl", str(O_TTL))
        self.must("table", "column", self.store, "/o", "who", "string", "--references", "/p")
        self.must("table", "column", self.store, "/o", "qty", "integer")
        self.must("table", "column", self.store, "/o", "tag", "string", "--max-length", "3")
        self.must("index", "create", self.store, "/o", "by_qty", "qty")
        self.must("index", "create", self.store, "/o", "by_who_tag", "who,tag", "--unique")
        self.must("import", self.store, "/c", "-", stdin=json.dumps(self.m.export()["c"]))
        self.must("table", "create", self.store, "/c", "--key-depth", "2", "--key-fields",
                  "c1,c2")
        self.must("table", "column", self.store, "/c", "c2", "integer")
        for fields, target in MULTI_REFS["o"]:
            self.must("table", "reference", self.store, "/o", ",".join(fields), "/" + target)
        got = self.must("index", "list", self.store, "/o").split("\n")
        if "@who who" not in got:
            self.fail(f"kvfs index list /o: {got}: no @who")
        self.m.arr = {0: 1, 1: "x", 2: 3}
        rc, _, err = self.run("cp", self.tmpfile('[1, "x", 3]'), self.path("d", "a.json"))
        if rc != 0:
            self.fail(f"cp d/a.json: {err}")
        self.compare_export()

    def run_steps(self, steps):
        self.setup()
        for self.step in range(1, steps + 1):
            self.op = "?"
            touched = self.one_step()
            if self.trace:
                print(f"step {self.step}: {self.op}", file=sys.stderr)
            self.compare_export(arr=("arr",) in touched)
            self.settle(touched)
            for t in touched:
                if t[0] == "row":
                    self.compare_ttl(t[1], t[2])
            table = self.pick(self.m.indexes)
            self.compare_index(table, self.pick(self.m.indexes[table]))
            if self.step % self.check_every == 0 or self.step == steps:
                self.full_check()


def mount(args):
    """--mount: kvfs mount -f --create STORE MNT in the background; the process."""
    os.makedirs(args.mountpoint, exist_ok=True)
    log = open(args.mountpoint.rstrip("/") + ".log", "ab")
    proc = subprocess.Popen([args.kvfs, "mount", "-f", "--create", args.store, args.mountpoint],
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    for _ in range(500):
        if os.path.ismount(args.mountpoint):
            return proc
        if proc.poll() is not None:
            sys.exit(f"model-tables: kvfs mount exited {proc.returncode}; "
                     f"log: {args.mountpoint.rstrip('/')}.log")
        time.sleep(0.02)
    proc.kill()
    sys.exit("model-tables: not mounted after 10 s")


def unmount(args, proc):
    subprocess.run(["fusermount3", "-u", args.mountpoint])
    try:
        rc = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return "the daemon did not exit after fusermount3 -u"
    return None if rc == 0 else f"the daemon exited {rc}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("kvfs")
    ap.add_argument("store")
    ap.add_argument("mountpoint")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--check-every", type=int, default=25)
    ap.add_argument("--mount", action="store_true", help="mount STORE at MOUNTPOINT first")
    ap.add_argument("--trace", action="store_true", help="print each operation to stderr")
    ap.add_argument("--stats", action="store_true", help="print each kind of operation's outcomes")
    ap.add_argument("--without", action="append", default=[], metavar="OPERATION",
                    help="leave out an operation, by its --stats name (a known defect)")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little")
    args.kvfs = os.path.abspath(args.kvfs)
    print(f"model-tables: seed {args.seed}, {args.steps} steps", flush=True)
    proc = mount(args) if args.mount else None
    d = Driver(args)
    start = time.time()
    status = 0
    try:
        d.run_steps(args.steps)
    except Exception as e:	# a Failure, or what the mount or a tool did to the driver
        what = str(e) if isinstance(e, Failure) else f"{type(e).__name__}: {e!r}"
        print(f"model-tables: FAILED: seed {args.seed}, step {d.step}\n"
              f"  operation: {d.op}\n  {what}", flush=True)
        if not isinstance(e, Failure):
            traceback.print_exc()
        status = 1
    finally:
        shutil.rmtree(d.tmp, ignore_errors=True)
        if proc is not None:
            problem = unmount(args, proc)
            if problem and not status:
                print(f"model-tables: FAILED: seed {args.seed}: {problem}", flush=True)
                status = 1
    if not status:
        why = ", ".join(f"{k} {v}" for k, v in sorted(d.reasons.items()))
        print(f"model-tables: seed {args.seed}: {args.steps} steps in {time.time() - start:.1f} s, "
              f"{d.counts['ok']} accepted, {d.counts['refused']} refused ({why})", flush=True)
        if args.stats:
            for _, name, *_ in Driver.OPS:
                ok, no = d.by_op.get(name, [0, 0])
                print(f"  {name:26} {ok:4} accepted {no:4} refused")
    sys.exit(status)


if __name__ == "__main__":
    main()
