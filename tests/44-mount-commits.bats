#!/usr/bin/env bats
# tests/44-mount-commits.bats - the commits a restore costs, counted by the
# store's generation, and what the default mode promises when each tool
# returns: a leaf made by mknod (tar -x) is held until the close of the open
# that follows, seen through the mount at once, and lands even when nothing
# opens it (after FS_HOLD_MS, at fsync, at unmount); a daemon killed right
# after tar or rsync returns leaves every file whole.

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	crash_teardown
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

# assert_same_leaves SRC DIR N: DIR (in the mount) holds k1..kN of SRC with
# the same content, mode, mtime and type.
assert_same_leaves() {
	local n
	for n in $(seq "$3"); do
		assert_equal "$(cat "$2/k$n")" "$(cat "$1/k$n")"
		assert_equal "$(stat -c '%s %a %Y' "$2/k$n")" "$(stat -c '%s %a %Y' "$1/k$n")"
		assert_equal "$(getfattr --absolute-names --only-values -n user.kvfs.type "$2/k$n")" integer
	done
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

@test "rsync -aX: killed right after rsync returns, every file is whole with its mode, mtime and type" {
	typed_leaves "$BATS_TEST_TMPDIR/src" 20
	rsync -aX "$BATS_TEST_TMPDIR/src/" "$MNT/r/"
	kill_daemon
	mount_store
	assert_same_leaves "$BATS_TEST_TMPDIR/src" "$MNT/r" 20
	run -0 kvfs ls "$STORE" /r
	refute_output --partial '.k'	# no temporary name left behind
}

@test "a leaf made by mknod: listed and stat-able by other processes at once, one commit with its content" {
	mkdir "$MNT/d"
	run -0 python3 - "$MNT/d" "$KVFS_BIN" "$STORE" <<'PY'
import os, stat, subprocess, sys
d, kvfs, store = sys.argv[1:]
gen = lambda: int([l.split()[1] for l in subprocess.run([kvfs, "info", store],
        capture_output=True, text=True).stdout.splitlines() if l.startswith("generation:")][0])
other = lambda *a: subprocess.run(list(a), capture_output=True, text=True).stdout.strip()
g0 = gen()
p = os.path.join(d, "m")
os.mknod(p, 0o640 | stat.S_IFREG)
print("ls:", other("ls", d))
print("stat:", other("stat", "-c", "%F %s %a", p))
os.setxattr(p, "user.kvfs.type", b"integer")
fd = os.open(p, os.O_WRONLY)
os.write(fd, b"42\n")
os.utime(fd, (1000000000, 1000000000))
os.close(fd)
print("commits:", gen() - g0)
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
