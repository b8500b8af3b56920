# scripts/model_tables_oracle.py - the oracle of scripts/model-tables.py
# (issue 32, section 7): the tables it declares, what a leaf write of text
# stores, the rules a row breaks, and the model of the store's state.
#
#   /p  key depth 1, key field id; age integer required, name string of at
#       most 6 characters, score double, ok boolean; a unique index by_email
#       (email) and an index by_age (age); id, email and note undeclared.
#   /o  key depth 1, no key fields (import --lines names rows by the next
#       integer), a default TTL; who string referencing /p (its index @who),
#       qty integer, tag string of at most 3; an index by_qty, a unique
#       composite index by_who_tag (who, tag) that writes of /o/@schema.json
#       drop and declare again; note.
#       Its fields ca and cb (no columns) reference /c over both fields.
#   /c  key depth 2 (/c/A/1), rows {"n": 1}: the target of /o's reference
#       over several fields, its rows removed (rm -r) and put back.
#   /d/a  a sparse array in a plain document; /t a scratch directory.
#
# A row is judged whole, as the product judges it when a write completes:
# type, required (null counts as missing), max length (in characters), key
# field, unique, reference; removing a referenced row is refused. TTLs are
# deadlines (or none), compared with the seconds left within a few.
import json
import re

# ---- the schema ----

P_KEYS = ["ann", "bob", "cy", "dee", "eve", "fay", "gus"]
O_NAMES = ["x1", "x2", "x3", "2", "5", "8"]	# /o names given by cp, mkdir, import
O_TTL = 50000			# /o's default TTL (seconds)
TTLS = [600, 3000, 20000, 86400]	# what setfattr, put --ttl, import --ttl give

# column: (type, required, max length, referenced table)
COLUMNS = {
    "p": {"age": ("integer", True, None, None), "name": ("string", False, 6, None),
          "score": ("double", False, None, None), "ok": ("boolean", False, None, None)},
    "o": {"who": ("string", False, None, "p"), "qty": ("integer", False, None, None),
          "tag": ("string", False, 3, None)},
}
KEY_FIELDS = {"p": ["id"], "o": []}
# index name -> (fields, unique) as declared at the start; @who and @ca,cb
# are the indexes references make. Model.indexes holds them as they are now.
INDEXES = {
    "p": {"by_email": (("email",), True), "by_age": (("age",), False)},
    "o": {"@who": (("who",), False), "by_qty": (("qty",), False),
          "by_who_tag": (("who", "tag"), True), "@ca,cb": (("ca", "cb"), False)},
}
TOGGLED = ("o", "by_who_tag")	# the index @schema.json writes drop and declare
FIELDS = {"p": ["age", "name", "score", "ok", "email", "id", "note"],
          "o": ["who", "qty", "tag", "note", "ca", "cb"]}
# references over several fields: table -> [(fields, target)]; a row that
# leaves one out or holds null there references nothing (MATCH SIMPLE)
MULTI_REFS = {"o": [(("ca", "cb"), "c")]}
# /c at the start: level 1 -> level 2 (an integer key column: rows in numeric order)
C_ROWS = {"A": {"1", "2", "10"}, "B": {"1"}}
C_ROW = {"n": 1}

# What a refusal's message says for each rule (model/table/table_row.c).
REASON_TEXT = {
    "type": "must be", "required": "is required", "length": "is longer than",
    "reference": "which does not exist", "key": "key field", "unique": "unique index",
    "busy": "still referenced",
}

# ---- values and text ----

INT_RE = re.compile(r"(0|-?[1-9][0-9]*)\Z")
DOUBLES = [0.5, 2.25, -1.75, 10.0, 3.0]
BIG = 12345678901234567890	# past int64: a big integer


def fmt_double(x):
    """A double as kvfs prints it (number_format_double): Python's repr for DOUBLES."""
    return repr(x)


def text_as(kind, text):
    """The value text parses as for a leaf kind ('integer', 'double', 'boolean',
    'string'), as a file's text must be written (canonical); None: it does not."""
    if kind == "integer":
        return int(text) if INT_RE.match(text) else None
    if kind == "double":
        try:
            v = float(text)
        except ValueError:
            return None
        return v if fmt_double(v) == text else None
    if kind == "boolean":
        return {"true": True, "false": False}.get(text)
    return text


def whole_double(typ, v):
    """A double column takes a whole number a double holds exactly (48 as 48.0;
    model/table/table_row.c, type_ok)."""
    return typ == "double" and kind_of(v) == "integer" and abs(v) <= 2 ** 53


def kind_of(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "string"
    return None


def value_from_text(table, field, text, old, file_text):
    """What a leaf write of text stores at table/ROW/field (model/tree/node.c,
    leaf_for_write): a column's type when the text parses as it (a file's
    text canonically; a kvfs put VALUE as any JSON number for a double),
    else the old leaf's type when it parses as that, else a string."""
    col = COLUMNS.get(table, {}).get(field)
    if col:
        v = text_as(col[0], text)
        if v is None and not file_text and col[0] == "double" and INT_RE.match(text):
            v = float(int(text))
        if v is not None:
            return v
    if old is not None and kind_of(old) not in (None, "string"):
        v = text_as(kind_of(old), text)
        if v is not None:
            return v
    return text


def canon(v):
    """A value with its JSON type made explicit (True == 1 == 1.0 in Python)."""
    if isinstance(v, dict):
        return ("o", tuple(sorted((k, canon(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("a", tuple(canon(x) for x in v))
    return (kind_of(v) or "null", v)


def cat_text(v):
    """What cat prints for a leaf (a string may have been written without its newline)."""
    if isinstance(v, bool):
        return ["true\n" if v else "false\n"]
    if isinstance(v, float):
        return [fmt_double(v) + "\n"]
    if isinstance(v, int):
        return [str(v) + "\n"]
    if v is None:
        return ["null\n"]
    return [v + "\n", v]


# ---- the model ----

class Row:
    def __init__(self, fields, ttl=None):
        self.fields = dict(fields)
        self.ttl = ttl		# deadline (time.time() seconds) or None
        self.fttl = {}		# field -> deadline
        self.moved_in = False	# a file was moved in: it brought its attribute record


class Model:
    def __init__(self):
        self.tables = {"p": {}, "o": {}}
        self.arr = {}		# /d/a: index -> value (sparse)
        self.scratch = {}	# /t: name -> text
        self.indexes = {t: dict(ix) for t, ix in INDEXES.items()}
        self.c = {a: set(bs) for a, bs in C_ROWS.items()}	# /c's key levels

    def broken(self, table, key, fields):
        """The rules a row holding fields at table/key breaks (empty: none)."""
        out = set()
        for name, (typ, required, maxlen, ref) in COLUMNS[table].items():
            v = fields.get(name)
            if v is None:
                if required:
                    out.add("required")	# null counts as missing
                continue
            if kind_of(v) != typ and not whole_double(typ, v):
                out.add("type")
                if ref:
                    out.add("reference")
                continue
            if maxlen is not None and len(v) > maxlen:
                out.add("length")
            if ref and v not in self.tables[ref]:
                out.add("reference")
        for f in KEY_FIELDS[table]:
            if f in fields and fields[f] != key:
                out.add("key")
        for rf, _ in MULTI_REFS.get(table, []):
            vs = [fields.get(f) for f in rf]
            if None not in vs and not self.c_has(*vs):
                out.add("reference")
        for ix, (ixf, unique) in self.indexes[table].items():
            if unique and self.clashes(table, ixf, key, fields):
                out.add("unique")
        return out

    def clashes(self, table, ixf, key, fields):
        """Whether another row of table has the values fields has for the
        index fields ixf. A row is in an index when it holds every field of
        it, null as a value (docs/FORMAT.md, "Index entries")."""
        def values(f):
            return canon([f[x] for x in ixf]) if all(x in f for x in ixf) else None
        c = values(fields)
        return c is not None and any(
            k2 != key and values(r2.fields) == c for k2, r2 in self.tables[table].items())

    def c_has(self, a, b):
        return isinstance(a, str) and isinstance(b, str) and b in self.c.get(a, ())

    def c_referenced(self, a, b=None):
        """Whether a row of /o references /c/a/b (b None: any row under /c/a)."""
        for (fa, fb), _ in MULTI_REFS["o"]:
            for r in self.tables["o"].values():
                va, vb = r.fields.get(fa), r.fields.get(fb)
                if va == a and vb is not None and (b is None or vb == b):
                    return True
        return False

    def referenced(self, table, key):
        """Whether a row of another table references table/key."""
        for t2, cols in COLUMNS.items():
            for name, col in cols.items():
                if col[3] == table:
                    if any(r.fields.get(name) == key for r in self.tables[t2].values()):
                        return True
        return False

    def next_int_key(self, table):
        ints = [int(k) for k in self.tables[table] if INT_RE.match(k) and not k.startswith("-")]
        return str(max(ints) + 1 if ints else 1)

    def export(self):
        doc = {"d": {"a": [self.arr[i] for i in sorted(self.arr)]},
               "t": dict(self.scratch),
               "c": {a: {b: dict(C_ROW) for b in bs} for a, bs in self.c.items()}}
        for t, rows in self.tables.items():
            doc[t] = {k: dict(r.fields) for k, r in rows.items()}
        return doc

    def index_rows(self, table, index):
        """(value, key) of every row in the index whose first field is not
        null (a null sorts first, below the bounds the driver's finds give),
        in value order; a composite index's value is the tuple of its fields'
        values."""
        ixf = self.indexes[table][index][0]
        out = []
        for k, r in self.tables[table].items():
            if all(f in r.fields for f in ixf) and r.fields[ixf[0]] is not None:
                vs = tuple(r.fields[f] for f in ixf)
                out.append((vs[0] if len(vs) == 1 else vs, k))
        return sorted(out, key=lambda vk: (index_order(vk[0]), vk[1]))

    def index_dups(self, table, ixf):
        """Whether two rows hold the same values, none null, for the fields ixf
        (a unique index declared over them is refused)."""
        seen = set()
        for r in self.tables[table].values():
            if not all(f in r.fields for f in ixf):
                continue
            c = canon([r.fields[f] for f in ixf])
            if c in seen:
                return True
            seen.add(c)
        return False


def index_order(v):
    """A sort key for an index value: a composite's nulls first."""
    if isinstance(v, tuple):
        return tuple((0, "") if x is None else (1, x) for x in v)
    return v


def diff(want, got):
    """The top-level entries (and rows) where two exports differ."""
    out = []
    for k in sorted(set(want) | set(got)):
        a, b = want.get(k), got.get(k)
        if canon(a) == canon(b):
            continue
        if isinstance(a, dict) and isinstance(b, dict) and k in ("p", "o"):
            for r in sorted(set(a) | set(b)):
                if canon(a.get(r)) != canon(b.get(r)):
                    out.append(f"  {k}/{r}: model {json.dumps(a.get(r), ensure_ascii=False)}, "
                               f"store {json.dumps(b.get(r), ensure_ascii=False)}")
        else:
            out.append(f"  {k}: model {json.dumps(a, ensure_ascii=False)}, "
                       f"store {json.dumps(b, ensure_ascii=False)}")
    return "\n".join(out)
