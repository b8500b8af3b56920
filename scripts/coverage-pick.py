#!/usr/bin/env python3
# The choice behind the tag "covered": reads the per-file line counts that
# scripts/coverage-by-file.sh gathered, and prints per bats file the lines of
# fs/, model/, store/ and lib/ it reached, which files the asan pass can
# leave (greedy, most expensive first: a file goes when the files kept and
# the unit programs reach every line it reached), and whether the files
# tagged "covered" today lose a line. Exits 1 when they do.
# Usage: scripts/coverage-pick.py COV_DIR BUILD TIMES SUITES...
#   TIMES: scripts/test-times.py's output for the pass the files are weighed by
import json, os, re, subprocess, sys

LAYERS = ("fs/", "model/", "store/", "lib/")
# A process killed with SIGKILL writes no counts: the lines only it ran
# would be missing from its file's set, so such a file is never chosen
# (one that kills, or of the crash family: tests/60 kills through a script).
KILLS = re.compile(r"^[^#\n]*\b(kill\s+-(9|KILL|s\s+KILL)\b|kill_daemon\b)", re.M)
TAGS = re.compile(r"^# bats file_tags=(.*)$", re.M)


def reached(prefix, build):
    """The set of "file:line" of LAYERS (and of cli/, apart) that the
    processes writing under prefix executed."""
    gcdas = []
    for root, _, names in os.walk(prefix):
        for n in names:
            path = os.path.join(root, n)
            if n.endswith(".gcda") and os.path.getsize(path) > 0:
                gcno = os.path.join(build, os.path.relpath(path[:-5] + ".gcno", prefix + os.getcwd() + "/" + build))
                link = path[:-5] + ".gcno"
                if not os.path.exists(link):
                    os.symlink(os.path.abspath(gcno), link)
                gcdas.append(path)
    lines, cli = set(), set()
    if not gcdas:
        return lines, cli
    out = subprocess.run(["gcov", "--json-format", "--stdout", *gcdas], cwd=prefix,
                         capture_output=True, text=True, check=True).stdout
    for doc in out.splitlines():
        if not doc.startswith("{"):
            continue
        for f in json.loads(doc)["files"]:
            into = lines if f["file"].startswith(LAYERS) else cli if f["file"].startswith("cli/") else None
            if into is None:
                continue
            for ln in f["lines"]:
                if ln["count"] > 0:
                    into.add(f"{f['file']}:{ln['line_number']}")
    return lines, cli


def failed(tap_path):
    """Whether the file's TAP output has a failed test (or none at all)."""
    try:
        text = open(tap_path, encoding="utf-8", errors="replace").read()
    except OSError:
        return True
    return re.search(r"^not ok ", text, re.M) is not None or re.search(r"^ok ", text, re.M) is None


def seconds(times_path):
    """Per bats file name, its seconds in TIMES (test-times.py's lines)."""
    secs = {}
    for line in open(times_path, encoding="utf-8"):
        m = re.match(r"\s*([\d.]+) s\s+\d+ tests\s+(\S+\.bats)$", line.rstrip())
        if m:
            secs[m.group(2)[:-5]] = float(m.group(1))
    return secs


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: coverage-pick.py COV_DIR BUILD TIMES SUITES...")
    cov, build, times, suites = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    secs = seconds(times)
    unit, unit_cli = reached(os.path.join(cov, "counts", "unit"), build)
    files, clis, pinned, tagged, short = {}, {}, set(), set(), set()
    os.makedirs(os.path.join(cov, "lines"), exist_ok=True)
    for path in suites:
        name = os.path.basename(path)[:-5]
        prefix = os.path.join(cov, "counts", name)
        if not os.path.isdir(prefix):
            continue    # none of its tests is in the asan pass
        files[name], clis[name] = reached(prefix, build)
        with open(os.path.join(cov, "lines", name + ".txt"), "w") as f:
            f.write("".join(line + "\n" for line in sorted(files[name])))
        text = open(path, encoding="utf-8").read()
        m = TAGS.search(text)
        file_tags = m.group(1).split(",") if m else []
        if KILLS.search(text) or "crash" in file_tags:
            pinned.add(name)
        if failed(os.path.join(cov, "tap", name + ".tap")):
            short.add(name)
        if "covered" in file_tags:
            tagged.add(name)
    every = set(unit).union(*files.values())
    every_cli = set(unit_cli).union(*clis.values())

    def union(names):
        return set(unit).union(*(files[n] for n in names))

    # greedy, most expensive first: a file goes when the rest kept reach all its lines
    kept = set(files)
    moved = []
    for name in sorted(files, key=lambda n: -secs.get(n, 0.0)):
        if name in pinned or name in short:
            continue
        if files[name] <= union(kept - {name}):
            kept.discard(name)
            moved.append(name)

    print(f"# lines of {', '.join(LAYERS)} reached on the coverage build (LMDB):"
          f" {len(every)} by the asan pass's tests ({len(unit)} by the unit programs);"
          f" cli/ {len(every_cli)}")
    print(f"# {'file':28} {'s':>6} {'lines':>6} {'only it':>7}  verdict")
    for name in sorted(files, key=lambda n: -secs.get(n, 0.0)):
        only = len(files[name] - union(set(files) - {name}))
        verdict = ("pinned: kills a process (SIGKILL), whose counts are lost" if name in pinned
                   else "pinned: a test failed on the coverage build, so its lines may be short" if name in short
                   else "can go" if name in moved
                   else f"kept: {len(files[name] - union(kept - {name}))} lines no other kept file reaches")
        print(f"  {name:28} {secs.get(name, 0.0):6.1f} {len(files[name]):6} {only:7}  {verdict}")
    gain = sum(secs.get(n, 0.0) for n in moved)
    print(f"# greedy choice: {len(moved)} files can go ({gain:.1f} s of {sum(secs.get(n, 0.0) for n in files):.1f} s): {' '.join(sorted(moved))}")
    print(f"#   kept files reach {len(union(kept))} of {len(every)} lines;"
          f" cli/ {len(set(unit_cli).union(*(clis[n] for n in kept)))} of {len(every_cli)}")
    now = set(files) - tagged
    lost = every - union(now)
    print(f"# tagged covered today: {' '.join(sorted(tagged)) or '(none)'}")
    print(f"#   the asan pass keeps {len(union(now))} of {len(every)} lines;"
          f" cli/ {len(set(unit_cli).union(*(clis[n] for n in now)))} of {len(every_cli)}")
    for line in sorted(lost):
        owners = " ".join(sorted(n for n in tagged if line in files[n]))
        print(f"not ok - {line} is reached only by files tagged covered: {owners}")
    sys.exit(1 if lost else 0)


main()
