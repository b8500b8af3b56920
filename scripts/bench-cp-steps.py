#!/usr/bin/env python3
"""scripts/bench-cp-steps.py - one file's copy by cp -a (coreutils 9), call by
call, on a kvfs mount: what each call costs in FUSE requests (the daemon's
user.kvfs.stats) and, on etcd, in the cluster's key-value requests (the
members' /metrics). Part of scripts/bench-etcd.sh; a benchmark, not a test.

Usage: bench-cp-steps.py DIR ENDPOINTS N
  DIR        a new directory inside the mount, made here (its parent is read
             for the stats, so DIR must sit in the mount's root)
  ENDPOINTS  host:port,... of the cluster, or - for none
  N          files to copy; the table shows the mean per file
"""
import os
import re
import struct
import sys
import time
import urllib.request

KV_RE = re.compile(r'^grpc_server_handled_total\{.*grpc_method="(\w+)".*'
                   r'grpc_service="etcdserverpb\.KV".*\} (\d+)', re.M)


def fuse_counts(root):
    """The daemon's answered requests by kind, the getxattrs of this read
    included (Python asks the size first when its buffer is too small)."""
    text = os.getxattr(root, "user.kvfs.stats").decode()
    counts = {}
    for line in text.splitlines():
        kind, _, n = line.partition(" ")
        if n.isdigit() and not kind.startswith(("notify_", "ahead_", "store_")):
            counts[kind] = int(n)
    return counts


def kv_counts(endpoints):
    counts = {}
    for ep in endpoints.split(",") if endpoints != "-" else []:
        text = urllib.request.urlopen("http://%s/metrics" % ep, timeout=5).read().decode()
        for method, n in KV_RE.findall(text):
            counts[method] = counts.get(method, 0) + int(n)
    return counts


def snapshot(root, endpoints):
    return fuse_counts(root), kv_counts(endpoints)


def add_delta(total, before, after):
    for k in after:
        total[k] = total.get(k, 0) + after[k] - before.get(k, 0)


# the ACL cp -a sets on each copy (mode 0644, no named entries): version 2,
# then (tag, permissions, id) for the owner, the group and others
ACL_0644 = struct.pack("<I", 2) + b"".join(
    struct.pack("<HHI", tag, perm, 0xFFFFFFFF) for tag, perm in ((1, 6), (4, 4), (0x20, 4)))


def steps(path, data, state):
    """cp -a's calls on the copy, in its order, each yielded after it ran;
    the lookup its open makes is asked first by a stat, to be counted apart
    (the kernel keeps the negative answer: the open then sends the create)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    yield "stat (ENOENT)"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    yield "open O_CREAT|O_EXCL"
    os.fstat(fd)
    yield "fstat"
    os.write(fd, data)
    yield "write"
    os.utime(fd, ns=(state["t"], state["t"]))
    yield "futimens"
    os.setxattr(fd, "system.posix_acl_access", ACL_0644)
    yield "fsetxattr posix_acl_access"
    os.close(fd)
    yield "close"


def wait_release(root, want):
    """Waits (1 s at most) for the kernel's release of the closed file (sent
    after close returns); returns the stats reads it made (a getxattr each)."""
    deadline, polls = time.monotonic() + 1, 1
    while fuse_counts(root).get("release", 0) < want and time.monotonic() < deadline:
        time.sleep(0.002)
        polls += 1
    return polls


def main():
    d, endpoints, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    root = os.path.dirname(d.rstrip("/"))
    os.mkdir(d)
    order, fuse, kv = [], {}, {}
    state = {"t": time.time_ns()}
    # what one read of the stats costs in getxattrs, taken off every step's
    first = fuse_counts(root)["getxattr"]
    per_read = fuse_counts(root)["getxattr"] - first
    for i in range(n):
        prev = snapshot(root, endpoints)
        for name in steps(os.path.join(d, "f%d" % i), b"leaf %d\n" % i, state):
            polls = 0
            if name == "close":
                polls = wait_release(root, prev[0].get("release", 0) + 1)
            cur = snapshot(root, endpoints)
            if name not in fuse:
                order.append(name)
                fuse[name], kv[name] = {}, {}
            add_delta(fuse[name], prev[0], cur[0])
            add_delta(kv[name], prev[1], cur[1])
            fuse[name]["getxattr"] -= per_read * (1 + polls)
            prev = cur
    for name in order:
        f = " ".join("%s %.2f" % (k, v / n) for k, v in sorted(fuse[name].items()) if v)
        e = " ".join("%s %.2f" % (k, v / n) for k, v in sorted(kv[name].items()) if v)
        print("%-28s %s | %s" % (name, f or "none", e or "none"))


if __name__ == "__main__":
    main()
