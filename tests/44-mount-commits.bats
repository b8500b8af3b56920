#!/usr/bin/env bats
# tests/44-mount-commits.bats - the commits a restore costs, counted by the
# store's generation, and what the default mode promises when each tool
# returns: a leaf made by mknod (tar -x) is held until the close of the open
# that follows, seen through the mount at once, and lands even when nothing
# opens it (after FS_HOLD_MS, at fsync, at unmount); a daemon killed right
# after tar or rsync returns leaves every file whole.

# bats file_tags=mount,threads

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	crash_teardown
	if [ -n "${TMPFS:-}" ] && mountpoint -q "$TMPFS"; then
		umount "$TMPFS" || umount -l "$TMPFS"
	fi
}

# typed_leaves DIR N: N integer leaves k1..kN in DIR, each its own mode and mtime.
typed_leaves() {
	mkdir -p "$1"
	for i in $(seq "$2"); do
		printf '%d\n' "$((i * 7))" >"$1/k$i"
		setfattr -n user.kvfs.type -v integer "$1/k$i"
		chmod "$((600 + (i % 5) * 10))" "$1/k$i"
		touch -d "2001-02-03 04:05:$((i % 60))" "$1/k$i"
	done
}

# leaf_facts [--type] DIR NAME...: one line per NAME in DIR: its content,
# size, mode and mtime (what cat and stat -c '%s %a %Y' show) and, with
# --type, its user.kvfs.type; one process for all of them (a cat, two stats
# and a getfattr per leaf cost 30 s of this file's time on a loaded machine).
leaf_facts() {
	python3 - "$@" <<'EOF'
import os, sys
args = sys.argv[1:]
typed = args[0] == "--type"
if typed:
    args = args[1:]
d, names = args[0], args[1:]
for name in names:
    p = os.path.join(d, name)
    with open(p, "rb") as f:
        content = f.read()
    st = os.stat(p)
    line = "%s: %r %d %o %d" % (name, content.rstrip(b"\n"), st.st_size, st.st_mode & 0o7777,
                                st.st_mtime_ns // 1000000000)
    if typed:
        line += " " + os.getxattr(p, "user.kvfs.type").decode()
    print(line)
EOF
}

# assert_same_leaves SRC DIR N [SKIP]: DIR (in the mount) holds k1..kN of
# SRC (but kSKIP) with the same content, mode, mtime and type integer; when
# one differs, what the store holds for each is shown.
assert_same_leaves() {
	local n names=() want got
	for n in $(seq "$3"); do
		[ "$n" = "${4:-}" ] || names+=("k$n")
	done
	want=$(leaf_facts "$1" "${names[@]}" | sed 's/$/ integer/')
	got=$(leaf_facts --type "$2" "${names[@]}") || true
	if [ "$got" != "$want" ]; then
		for n in "${names[@]}"; do
			echo "$n: $(kvfs get --json "$STORE" "${2#"$MNT"}/$n" 2>&1)"
		done
	fi
	assert_equal "$got" "$want"
}

@test "tar --xattrs -x: one commit per file; killed right after tar returns, every file is whole" {
	typed_leaves "$BATS_TEST_TMPDIR/src" 30
	tar --xattrs -C "$BATS_TEST_TMPDIR/src" -cf "$BATS_TEST_TMPDIR/t.tar" $(cd "$BATS_TEST_TMPDIR/src" && echo k*)
	mkdir "$MNT/t"
	g0=$(gen)
	tar --xattrs -C "$MNT/t" -xf "$BATS_TEST_TMPDIR/t.tar"
	g1=$(gen)
	assert_equal "$((g1 - g0))" 30
	kill_daemon
	run -0 kvfs export --compact "$STORE" /t
	assert_output --partial '"k1":7'
	assert_output --partial '"k30":210'
	mount_store
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/t" 30
}

@test "rsync -aX: killed right after rsync returns, every file is whole; after a sync, with its name, mode, mtime and type" {
	typed_leaves "$BATS_TEST_TMPDIR/src" 20
	rsync -aX "$BATS_TEST_TMPDIR/src/" "$MNT/r/"
	kill_daemon
	# rsync's last file (k9) was closed, so it is whole; its touches after
	# the close (type, mtime, mode, the rename from its temporary name) may
	# have been queued (at most FS_LATER_MS) and lost with the daemon
	run -0 kvfs export --compact "$STORE" /r
	assert_output --regexp '^\{("\.k9\.[A-Za-z0-9]{6}":"63",)?"k1":7,'
	assert_output --regexp '"k8":56(,"k9":63)?\}$'
	mount_store
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/r" 20 9
	run -0 sh -c 'cat "$1"/k9 2>/dev/null || cat "$1"/.k9.*' _ "$MNT/r"
	assert_output 63
	# an fsync of anything in the mount commits the queue: then nothing is lost
	rm -rf "$MNT/r"
	rsync -aX "$BATS_TEST_TMPDIR/src/" "$MNT/r/"
	sync "$MNT/r/k1"
	kill_daemon
	mount_store
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/r" 20
	run -0 kvfs ls "$STORE" /r
	refute_output --partial '.k'	# no temporary name left behind
}

@test "a leaf made by mknod: listed and stat-able by other processes at once, one commit with its content" {
	mkdir "$MNT/d"
	run -0 python3 - "$MNT/d" "$KVFS_BIN" "$STORE" <<'PY'
import os, stat, subprocess, sys, time
d, kvfs, store = sys.argv[1:]
gen = lambda: int([l.split()[1] for l in subprocess.run([kvfs, "info", store],
        capture_output=True, text=True).stdout.splitlines() if l.startswith("generation:")][0])
other = lambda *a: subprocess.run(list(a), capture_output=True, text=True).stdout.strip()
g0 = gen()
p = os.path.join(d, "m")
t0 = time.monotonic()
os.mknod(p, 0o640 | stat.S_IFREG)
print("ls:", other("ls", d))
print("stat:", other("stat", "-c", "%F %s %a", p))
os.setxattr(p, "user.kvfs.type", b"integer")
fd = os.open(p, os.O_WRONLY)
late = time.monotonic() - t0 >= 1.0
os.write(fd, b"42\n")
os.utime(fd, (1000000000, 1000000000))
os.close(fd)
# an open over the hold's 1 s after the mknod (two tools and an xattr took
# that under ASan at load 30) finds the empty file committed by the watcher
# first, as promised: then its close is the second commit
n = gen() - g0
print("commits:", 1 if late and n == 2 else n)
print("store:", other(kvfs, "get", store, "/d/m"))
print("after:", other("stat", "-c", "%s %a %Y", p))
PY
	assert_output "ls: m
stat: regular empty file 0 640
commits: 1
store: 42
after: 3 640 1000000000"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/m"
	assert_output integer
}

@test "a leaf made by mknod and never opened lands: after the bound, at fsync, at unmount" {
	mkdir "$MNT/d"
	python3 -c 'import os, stat, sys; os.mknod(sys.argv[1], 0o600 | stat.S_IFREG)' "$MNT/d/late"
	# held at most FS_HOLD_MS (1 s): the watcher commits it
	eventually 10 kvfs get "$STORE" /d/late
	run -0 stat -c '%F %a' "$MNT/d/late"
	assert_output 'regular empty file 600'
	# an fsync of anything in the mount commits it before it returns
	echo x >"$MNT/d/other"
	python3 - "$MNT/d/synced" "$MNT/d/other" <<'PY'
import os, stat, sys
os.mknod(sys.argv[1], 0o644 | stat.S_IFREG)
fd = os.open(sys.argv[2], os.O_RDONLY)
os.fsync(fd)
os.close(fd)
PY
	run -0 kvfs get "$STORE" /d/synced
	# unmount commits it
	python3 -c 'import os, stat, sys; os.mknod(sys.argv[1], 0o644 | stat.S_IFREG)' "$MNT/d/atexit"
	unmount_store
	run -0 kvfs get "$STORE" /d/atexit
	run -0 kvfs ls "$STORE" /d
	assert_output $'atexit\nlate\nother\nsynced'
}

@test "a leaf made by mknod, then renamed, unlinked or made again before it lands" {
	mkdir "$MNT/d"
	run -0 python3 - "$MNT/d" <<'PY'
import errno, os, stat, sys
d = sys.argv[1]
p = lambda n: os.path.join(d, n)
os.mknod(p("a"), 0o644 | stat.S_IFREG)
os.rename(p("a"), p("b"))
os.mknod(p("gone"), 0o644 | stat.S_IFREG)
os.unlink(p("gone"))
os.mknod(p("c"), 0o644 | stat.S_IFREG)
try:
    os.mknod(p("c"), 0o644 | stat.S_IFREG)
    print("again: made")
except OSError as e:
    print("again:", errno.errorcode[e.errno])
fd = os.open(p("c"), os.O_WRONLY | os.O_APPEND)
os.write(fd, b"one\n")
fd2 = os.open(p("c"), os.O_RDONLY)
print("read:", os.read(fd2, 10))
os.close(fd2)
os.close(fd)
print(sorted(os.listdir(d)))
PY
	assert_output "again: EEXIST
read: b'one\\n'
['b', 'c']"
	run -0 kvfs get "$STORE" /d/c
	assert_output one
	run -0 kvfs ls "$STORE" /d
	assert_output $'b\nc'
}

@test "a directory holding only a leaf made by mknod is not empty: rmdir and a rename over it refuse" {
	mkdir "$MNT/d" "$MNT/e" "$MNT/src"
	run -0 python3 - "$MNT" <<'PY'
import errno, os, stat, sys
m = sys.argv[1]
os.mknod(os.path.join(m, "d/f"), 0o644 | stat.S_IFREG)
os.mknod(os.path.join(m, "e/g"), 0o644 | stat.S_IFREG)
for what, call in (("rmdir", lambda: os.rmdir(os.path.join(m, "d"))),
                   ("rename", lambda: os.rename(os.path.join(m, "src"), os.path.join(m, "e")))):
    try:
        call()
        print(what, "done")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
PY
	assert_output $'rmdir ENOTEMPTY\nrename ENOTEMPTY'
	run -0 kvfs ls "$STORE" /d
	assert_output f
	run -0 kvfs ls "$STORE" /e
	assert_output g
	[ -d "$MNT/src" ]
	[ -f "$MNT/d/f" ]
	[ -f "$MNT/e/g" ]
}

@test "rsync -aX: one commit per file (its touches after the close join the next file's commit)" {
	typed_leaves "$BATS_TEST_TMPDIR/src" 30
	# a wait of 1 s for the next close (100 ms in use): the count then
	# holds on a sanitizer build beside other work (CI of 2026-11-29)
	unmount_store
	KVFS_TEST_LATER_MS=1000 mount_store
	mkdir "$MNT/r"
	g0=$(gen)
	local t0 max
	t0=$SECONDS
	rsync -aX "$BATS_TEST_TMPDIR/src/" "$MNT/r/"
	g1=$(gen)
	# 30 files, and the directory's own mode and times: 32 when each file's
	# touches meet the next close within the wait; a slow run commits some
	# alone. Each file
	# alone: the close, type, mtime, mode and rename, 4.5 commits per file.
	# A file's touches go alone only after a wait of 1 s without a close:
	# at most 4 more commits for each second rsync took (under ASan at load
	# 40 it took minutes, 45 was too few), never over 137 (every file alone)
	max=$((32 + 4 * (SECONDS - t0)))
	[ "$max" -ge 45 ] || max=45
	[ "$max" -le 137 ] || max=137
	[ "$((g1 - g0))" -ge 30 ]
	[ "$((g1 - g0))" -le "$max" ]
	# all of it in the store when rsync returns (its last directory touch commits)
	run -0 kvfs ls "$STORE" /r
	refute_output --partial '.k'
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/r" 30
	unmount_store
	mount_store
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/r" 30
}

# touch_up DIR NAME N: writes N to DIR/.NAME.tmp as rsync does (create 0600,
# write, close), then types it integer, sets its mtime to N, its mode to
# 0640, and renames it to DIR/NAME: all by the one process that wrote it.
touch_up_py='
import os, sys
def touch_up(d, name, n):
    tmp = os.path.join(d, "." + name + ".tmp")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"%d\n" % n)
    os.close(fd)
    fd = os.open(tmp, os.O_RDONLY)
    os.setxattr(fd, "user.kvfs.type", b"integer")
    os.utime(tmp, (n, n))
    os.chmod(tmp, 0o640)
    os.close(fd)
    os.rename(tmp, os.path.join(d, name))
'

@test "a tool's touches to the file it just wrote: one commit with the next file; other processes see them at once" {
	unmount_store
	KVFS_TEST_LATER_MS=1000 mount_store	# as in the rsync -aX test above
	mkdir "$MNT/d"
	run -0 python3 - "$MNT/d" "$KVFS_BIN" "$STORE" <<PY
$touch_up_py
import subprocess
d, kvfs, store = sys.argv[1:]
gen = lambda: int([l.split()[1] for l in subprocess.run([kvfs, "info", store],
        capture_output=True, text=True).stdout.splitlines() if l.startswith("generation:")][0])
g0 = gen()
for n in (1, 2, 3):
    touch_up(d, "f%d" % n, n)
# another process reading the store itself, at once: f3's touches are
# queued, and its open waits for their commit
print("store:", subprocess.run([kvfs, "export", "--compact", store, "/d"],
        capture_output=True, text=True).stdout.strip())
# 4 when each file's touches meet the next close within the wait (one
# more per file on a slow run); each alone, 15
c = gen() - g0
print("commits:", c if c > 6 else "4 to 6")
st = os.stat(os.path.join(d, "f3"))
print("mount:", sorted(os.listdir(d)), oct(st.st_mode & 0o777), int(st.st_mtime))
print("type:", os.getxattr(os.path.join(d, "f3"), "user.kvfs.type").decode())
PY
	# each close committed the touches of the file before it; f3's, one more
	assert_output 'store: {"f1":1,"f2":2,"f3":3}
commits: 4 to 6
mount: ['"'"'f1'"'"', '"'"'f2'"'"', '"'"'f3'"'"'] 0o640 3
type: integer'
	run -0 stat -c '%a %Y' "$MNT/d/f1"
	assert_output '640 1'
}

@test "touches by another process, or to an old file, are each committed before they return" {
	mkdir "$MNT/d"
	echo 5 >"$MNT/d/f"
	g0=$(gen)
	chmod 600 "$MNT/d/f"
	assert_equal "$(gen)" "$((g0 + 1))"
	touch -d '2001-01-01' "$MNT/d/f"
	assert_equal "$(gen)" "$((g0 + 2))"
	mv "$MNT/d/f" "$MNT/d/g"
	assert_equal "$(gen)" "$((g0 + 3))"
	run -0 kvfs ls "$STORE" /d
	assert_output g
	# the writer itself, once its file is over a second old
	run -0 python3 - "$MNT/d" "$KVFS_BIN" "$STORE" <<'PY'
import os, subprocess, sys, time
d, kvfs, store = sys.argv[1:]
gen = lambda: int([l.split()[1] for l in subprocess.run([kvfs, "info", store],
        capture_output=True, text=True).stdout.splitlines() if l.startswith("generation:")][0])
p = os.path.join(d, "h")
with open(p, "w") as f:
    f.write("1\n")
time.sleep(1.5)
g0 = gen()
os.rename(p, os.path.join(d, "i"))
print("rename:", gen() - g0)
PY
	assert_output "rename: 1"
}

@test "killed after a tool's touches: fsynced ones are all there, later ones whole under one of the two names" {
	mkdir "$MNT/d"
	run -0 python3 - "$MNT/d" <<PY
$touch_up_py
d = sys.argv[1]
touch_up(d, "a", 7)
fd = os.open(os.path.join(d, "a"), os.O_RDONLY)
os.fsync(fd)
os.close(fd)
touch_up(d, "b", 8)
PY
	kill_daemon
	run -0 kvfs export --compact "$STORE" /d
	# a: synced whole, touches and all; b: its content committed at its
	# close, its touches and rename maybe lost with the daemon
	assert_output --regexp '^\{("\.b\.tmp":"8",)?"a":7(,"b":8)?\}$'
	refute_output '{"a":7}'
	mount_store
	assert_equal "$(stat -c '%a %Y' "$MNT/d/a")" '640 7'
	assert_equal "$(getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/a")" integer
}

@test "a close whose commit fails after a queued touch reports it; the lost touch is reported by the next fsync" {
	unmount_store
	TMPFS=$BATS_TEST_TMPDIR/tmpfs
	mkdir "$TMPFS"
	mount -t tmpfs -o size=6m tmpfs "$TMPFS"
	STORE=$TMPFS/store
	# a small map: a 1.5 MB file is "big" (over an eighth of it), so the
	# queue commits it inside its round, where a failure used to be dropped;
	# the touch waits for that commit however long a loaded machine takes
	# to write the file (its bound is 100 ms otherwise)
	KVFS_TEST_LATER_MS=60000 KVFS_MAPSIZE=4194304 mount_store
	mkdir "$MNT/d"
	echo keep >"$MNT/d/keep"
	head -c 1500000 /dev/urandom | base64 -w 0 >"$BATS_TEST_TMPDIR/blob"
	# leave about 1 MB: the blob's commit cannot be written
	local free
	free=$(df --output=avail -B1 "$TMPFS" | tail -1)
	head -c "$((free - 1000000))" /dev/zero >"$TMPFS/filler"
	run python3 - "$MNT/d" "$BATS_TEST_TMPDIR/blob" <<'PY'
import errno, os, sys
d, blob = sys.argv[1:]
with open(os.path.join(d, "a"), "w") as f:
    f.write("1\n")
os.chmod(os.path.join(d, "a"), 0o600)	# the writer's touch: queued
try:
    with open(os.path.join(d, "b"), "w") as f:
        f.write(open(blob).read())
    print("close: ok")
except OSError as e:
    print("close:", errno.errorcode[e.errno])
PY
	assert_output 'close: ENOSPC'
	run ! kvfs get "$STORE" /d/b
	# the touch went with the failed commit: the next fsync says so, once
	run python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/d/keep"
	assert_output --partial 'No space left on device'
	rm "$TMPFS/filler"
	run -0 python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/d/keep"
	run -0 cp "$BATS_TEST_TMPDIR/blob" "$MNT/d/b"
	cmp "$BATS_TEST_TMPDIR/blob" "$MNT/d/b"
	run -0 kvfs get "$STORE" /d/keep
	assert_output keep
	unmount_store
}
