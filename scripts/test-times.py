#!/usr/bin/env python3
# Where a pass's time goes: reads the TAP output of scripts/run-tests.sh
# (bats --timing: "ok N name in 123ms") and prints the seconds its tests
# took per bats file, largest first, with the count of tests of each.
# Usage: scripts/test-times.py LOG [SUITES...]  (default tests/*.bats)
import glob, re, sys
from collections import defaultdict

def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test-times.py LOG [SUITES...]")
    suites = sys.argv[2:] or sorted(glob.glob("tests/*.bats"))
    owner = {}
    for path in suites:
        for line in open(path, encoding="utf-8"):
            m = re.match(r'\s*@test\s+"(.*)"\s*\{', line) or re.match(r"\s*@test\s+'(.*)'\s*\{", line)
            if m:
                owner.setdefault(m.group(1), path.split("/")[-1])
    ms, count = defaultdict(int), defaultdict(int)
    tap = re.compile(r'^(?:not )?ok \d+ (.*?)(?: # skip.*)? in (\d+) ?ms$')
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        m = tap.match(line.rstrip("\n"))
        if not m:
            continue
        name = owner.get(m.group(1), "(unknown)")
        ms[name] += int(m.group(2))
        count[name] += 1
    total = sum(ms.values())
    for name in sorted(ms, key=ms.get, reverse=True):
        print(f"{ms[name] / 1000:8.1f} s {count[name]:4d} tests  {name}")
    print(f"{total / 1000:8.1f} s {sum(count.values()):4d} tests  (sum; files ran side by side)")

main()
