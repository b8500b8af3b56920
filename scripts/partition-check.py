#!/usr/bin/env python3
# scripts/partition-check.py - the writers and the checker of
# tests/90-etcd-partition.bats (docs/ETCD.md "Partitions").
#
#   write MNT NAME DIR   one writer on a mount: in turn a leaf write
#       (NAME/leafK), a document copy (NAME/docK.json), an append to the
#       shared log document (log.json) and a rename (NAME/r/a <-> NAME/r/b),
#       until DIR/stop exists. Each operation is one JSON line in
#       DIR/NAME.hist: what, its value, acknowledged or the errno, the
#       phase (DIR/phase) when it started and ended, its seconds, and
#       user.kvfs.error of the mount's root (the last refusal below it)
#       after a failure.
#   check DIR EXPORT BOUND REFUSED WHY [FAILING...]  compares every
#       history with the store (EXPORT: `kvfs export` of it, JSON): nothing
#       acknowledged lost, no document torn, no append applied twice; the
#       writers named FAILING (cut off from a quorum) failed every
#       operation of the phase "during" (the cut) with EIO or ETIMEDOUT
#       within REFUSED seconds and read its reason on the mount root within
#       WHY seconds; no operation took longer than BOUND seconds (the
#       reason's read not counted). Prints the slowest operation, and the
#       slowest refusal and reason's read of the cut.
#   same EXPORT MNT...   exits 0 when every mount shows the store's tree
#       (EXPORT "-": the same tree as each other)
#   heal DIR MNT0 MNT1 BOUND   from when DIR/phase says "healed", the
#       seconds until MNT0 has taken in every commit MNT1 had taken in then
#       (the position lines of their roots' user.kvfs.stats); exits 1 past
#       BOUND. Started before the heal, so that no process start is timed.
import errno, json, os, sys, time

DOCS, LEAVES = 3, 4
OK_ERRNOS = (errno.EIO, errno.ETIMEDOUT)


def phase(d):
    try:
        with open(os.path.join(d, "phase")) as f:
            return f.read().strip()
    except OSError:
        return "?"


def doc_value(name, i):
    # every field derives from i: a document mixing two writes is torn
    return {"w": name, "i": i, "items": [i] * 8, "tag": "%s-%d" % (name, i)}


def put(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)


class Writer:
    def __init__(self, mnt, name, d):
        self.mnt, self.name, self.d = mnt, name, d
        self.hist = open(os.path.join(d, name + ".hist"), "a", buffering=1)
        self.i = 0

    def run_op(self, op, path, val, fn):
        rec = {"op": op, "path": path, "val": val, "p0": phase(self.d)}
        t = time.monotonic()
        try:
            fn()
            rec["ok"] = True
        except OSError as e:
            rec["ok"], rec["errno"] = False, e.errno
        rec["secs"] = round(time.monotonic() - t, 3)
        if not rec["ok"]:
            t = time.monotonic()
            try:
                # the root's: a path below it may not even be looked up now
                rec["why"] = os.getxattr(self.mnt, "user.kvfs.error").decode(errors="replace")
            except OSError as e2:
                rec["why_errno"] = e2.errno
            rec["why_secs"] = round(time.monotonic() - t, 3)
        rec["p1"] = phase(self.d)
        self.hist.write(json.dumps(rec) + "\n")
        return rec["ok"]

    def where_rename(self):
        # after a rename whose outcome is unknown, the mount says where it is
        return "a" if os.path.exists(os.path.join(self.mnt, self.name, "r", "a")) else "b"

    def step(self):
        n, m, i = self.name, self.mnt, self.i
        self.i += 1
        k = i % 4
        if k == 0:
            p = "%s/leaf%d" % (n, i % LEAVES)
            v = "%s-%d" % (n, i)
            ok = self.run_op("leaf", p, v, lambda: put(os.path.join(m, p), v + "\n"))
        elif k == 1:
            p = "%s/doc%d.json" % (n, i % DOCS)
            ok = self.run_op("doc", p, i, lambda: put(os.path.join(m, p), json.dumps(doc_value(n, i))))
        elif k == 2:
            v = "%s-%d" % (n, i)
            ok = self.run_op("append", "log.json", v,
                             lambda: put(os.path.join(m, "log.json"), json.dumps(v) + "\n", "a"))
        else:
            try:
                src = self.where_rename()
            except OSError:
                src = "a"
            dst = "b" if src == "a" else "a"
            p = "%s/r/%s" % (n, dst)
            ok = self.run_op("rename", p, dst, lambda: os.rename(
                os.path.join(m, n, "r", src), os.path.join(m, p)))
        if not ok:
            time.sleep(0.05)  # pacing: a refusal that comes at once is not retried in a spin

    def loop(self):
        while not os.path.exists(os.path.join(self.d, "stop")):
            self.step()


def history(d, name):
    if not os.path.exists(os.path.join(d, name + ".hist")):
        return []  # the writer has not started yet
    with open(os.path.join(d, name + ".hist")) as f:
        return [json.loads(line) for line in f if line.strip()]


def writers(d):
    return sorted(f[:-5] for f in os.listdir(d) if f.endswith(".hist"))


def allowed(ops):
    """The values a key may hold: the last acknowledged one, and any that
    failed after it (a failure after a lost answer may have landed)."""
    vals, last = set(), None
    for r in ops:
        if r["ok"]:
            vals, last = {r["val"]}, r["val"]
        else:
            vals.add(r["val"])
    return vals, last


def check(d, export_path, bound, refused_bound, why_bound, failing):
    with open(export_path) as f:
        store = json.load(f)
    bad = []
    appended = store.get("log", [])
    seen = {}
    for v in appended:
        seen[v] = seen.get(v, 0) + 1
    for v, c in seen.items():
        if c > 1:
            bad.append("append %s applied %d times" % (v, c))
    slowest = None
    for name in writers(d):
        hist = history(d, name)
        mine = store.get(name, {})
        for r in hist:
            if slowest is None or r["secs"] > slowest[1]["secs"]:
                slowest = (name, r)
            if r["secs"] > bound:
                bad.append("%s: %s %s took %.1f s (bound %s s)" % (name, r["op"], r["path"], r["secs"], bound))
            if r["op"] == "append" and r["ok"] and seen.get(r["val"], 0) != 1:
                bad.append("%s: acknowledged append %s is not in the log" % (name, r["val"]))
        for key in set(r["path"] for r in hist if r["op"] in ("leaf", "doc")):
            ops = [r for r in hist if r["path"] == key]
            vals, last = allowed(ops)
            base = key.split("/", 1)[1]
            if key.endswith(".json"):
                got = mine.get(base[:-5])
                if got is None:
                    if last is not None:
                        bad.append("%s: acknowledged document %s is lost" % (name, key))
                    continue
                if not isinstance(got, dict) or got != doc_value(name, got.get("i")):
                    bad.append("%s: document %s is torn: %s" % (name, key, json.dumps(got)[:200]))
                elif got["i"] not in vals:
                    bad.append("%s: %s holds write %s, acknowledged last %s" % (name, key, got["i"], last))
            else:
                got = mine.get(base)
                if got is None and last is None:
                    continue
                if got not in vals:
                    bad.append("%s: %s holds %r, acknowledged last %r" % (name, key, got, last))
        r_dir = mine.get("r", {})
        if sorted(r_dir) not in (["a"], ["b"]) or list(r_dir.values()) != [name + "-r"]:
            bad.append("%s: renamed file lost or doubled: r = %s" % (name, json.dumps(r_dir)))
        if name in failing:
            cut = [r for r in hist if r["p0"] == r["p1"] == "during"]
            for r in cut:
                if r["ok"]:
                    bad.append("%s: %s %s acknowledged while cut off from every member" % (name, r["op"], r["path"]))
                elif r.get("errno") not in OK_ERRNOS:
                    bad.append("%s: %s %s failed with %s, not EIO or ETIMEDOUT" % (
                        name, r["op"], r["path"], errno.errorcode.get(r.get("errno"), r.get("errno"))))
                elif r["secs"] > refused_bound:
                    bad.append("%s: %s %s was refused after %.1f s (bound %s s)" % (
                        name, r["op"], r["path"], r["secs"], refused_bound))
                if not r["ok"] and (not r.get("why") or r["why_secs"] > why_bound):
                    bad.append("%s: the reason of %s %s: %s after %.1f s (bound %s s)" % (
                        name, r["op"], r["path"], r.get("why") or errno.errorcode.get(
                            r.get("why_errno"), "none"), r["why_secs"], why_bound))
            print("%s: %d refusals during the cut, the slowest %.2f s, its reason read in %.2f s "
                  "at most" % (name, len(cut), max([r["secs"] for r in cut] or [0]),
                               max([r.get("why_secs", 0) for r in cut] or [0])))
            if not cut:
                bad.append("%s: no operation both started and ended during the cut" % name)
    if slowest:
        name, r = slowest
        print("slowest: %s %s %s %.2f s (%s)" % (name, r["op"], r["path"], r["secs"],
                                                 "acknowledged" if r["ok"] else errno.errorcode.get(r.get("errno"))))
    for name in writers(d):
        hist = history(d, name)
        print("%s: %d operations, %d acknowledged" % (name, len(hist), sum(r["ok"] for r in hist)))
    for b in bad:
        print("BAD " + b)
    return 1 if bad else 0


def same(export_path, mounts):
    views = []
    for m in mounts:
        try:
            views.append({k: json.load(open(os.path.join(m, k + ".json"))) for k in os.listdir(m)})
        except (OSError, ValueError):
            return 1
    if export_path != "-":
        with open(export_path) as f:
            views.append(json.load(f))
    return 0 if all(v == views[0] for v in views) else 1


def position(mnt):
    for line in os.getxattr(mnt, "user.kvfs.stats").decode().splitlines():
        name, value = line.split()
        if name == "position":
            return int(value)
    raise SystemExit("%s: no position in user.kvfs.stats" % mnt)


def heal(d, behind, ahead, bound):
    while phase(d) != "healed":
        if os.path.exists(os.path.join(d, "stop")):
            return 1  # the test ended first
        time.sleep(0.01)
    t = time.monotonic()
    want = position(ahead)
    while position(behind) < want and time.monotonic() - t < bound + 30:
        time.sleep(0.01)
    secs = time.monotonic() - t
    print("took in revision %d, the other mount's at the heal, %.2f s after it (bound %s s)" % (
        want, secs, bound))
    return 0 if secs <= bound else 1


def main():
    a = sys.argv[1:]
    if a[0] == "write":
        Writer(a[1], a[2], a[3]).loop()
    elif a[0] == "check":
        sys.exit(check(a[1], a[2], float(a[3]), float(a[4]), float(a[5]), a[6:]))
    elif a[0] == "same":
        sys.exit(same(a[1], a[2:]))
    elif a[0] == "heal":
        sys.exit(heal(a[1], a[2], a[3], float(a[4])))
    else:
        sys.exit("usage: partition-check.py write|check|same ...")


if __name__ == "__main__":
    main()
