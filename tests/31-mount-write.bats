#!/usr/bin/env bats
# The mount, writing side: echo, printf, cp, dd, truncate, mkdir/rmdir/rm/mv,
# mtimes, xattrs, and changes made by the CLI while mounted.

# bats file_tags=mount,backends,smoke

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

@test "echo > creates a string leaf; the bytes written are the bytes read" {
	echo hello >"$MNT/a"
	assert_file_bytes "$MNT/a" 'hello\n'
	run -0 kvfs get "$STORE" /a
	assert_output hello
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/a"
	assert_output string
	printf 'no newline' >"$MNT/b"
	assert_file_bytes "$MNT/b" 'no newline'
	printf 'two\n\n' >"$MNT/c"
	assert_file_bytes "$MNT/c" 'two\n\n'
	printf '' >"$MNT/e"
	assert_file_bytes "$MNT/e" ''
	run -0 stat -c %s "$MNT/a" "$MNT/b" "$MNT/c" "$MNT/e"
	assert_output $'6\n10\n5\n0'
}

@test "echo > keeps an existing leaf's type when the text parses as it" {
	run -0 kvfs put --create -t integer "$STORE" /n 42
	echo 43 >"$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output integer
	run -0 jq -c . "$MNT/.json"
	assert_output '{"n":43}'
	echo forty >"$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output string
}

@test "echo >> appends to a leaf" {
	echo one >"$MNT/log"
	echo two >>"$MNT/log"
	assert_file_bytes "$MNT/log" 'one\ntwo\n'
}

@test "cp of a binary file reads back equal" {
	head -c 300000 /dev/urandom >"$BATS_TEST_TMPDIR/bin"
	cp "$BATS_TEST_TMPDIR/bin" "$MNT/bin"
	cmp "$BATS_TEST_TMPDIR/bin" "$MNT/bin"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/bin"
	assert_output bytes
	run -0 stat -c %s "$MNT/bin"
	assert_output 300000
	cat "$MNT/bin" | cmp - "$BATS_TEST_TMPDIR/bin"
}

@test "dd writes at offsets, sparse writes fill with zeros" {
	printf 'abcdefghij' >"$MNT/f"
	printf 'XY' | dd of="$MNT/f" bs=1 seek=3 conv=notrunc status=none
	assert_file_bytes "$MNT/f" 'abcXYfghij'
	printf 'Z' | dd of="$MNT/f" bs=1 seek=12 conv=notrunc status=none
	assert_file_bytes "$MNT/f" 'abcXYfghij\0\0Z'
	printf 'Q' | dd of="$MNT/f" bs=1 seek=1 status=none
	assert_file_bytes "$MNT/f" 'aQ'
}

@test "truncate grows with zeros and shrinks" {
	printf 'hello world' >"$MNT/t"
	truncate -s 5 "$MNT/t"
	assert_file_bytes "$MNT/t" 'hello'
	truncate -s 8 "$MNT/t"
	assert_file_bytes "$MNT/t" 'hello\0\0\0'
	run -0 stat -c %s "$MNT/t"
	assert_output 8
	truncate -s 0 "$MNT/t"
	assert_file_bytes "$MNT/t" ''
	: >"$MNT/u"
	run -0 stat -c %s "$MNT/u"
	assert_output 0
}

@test "a file opened for writing but not written keeps its mtime" {
	echo v >"$MNT/a"
	touch -d '2001-02-03 04:05:06' "$MNT/a"
	exec 5>>"$MNT/a"
	exec 5>&-
	run -0 stat -c %y "$MNT/a"
	assert_output --partial '2001-02-03 04:05:06'
	assert_file_bytes "$MNT/a" 'v\n'
}

@test "mkdir, rmdir (ENOTEMPTY), rm, rm -r" {
	mkdir "$MNT/d"
	run -0 stat -c %F "$MNT/d"
	assert_output directory
	run -0 jq -c . "$MNT/d.json"
	assert_output '{}'
	echo x >"$MNT/d/x"
	run ! rmdir "$MNT/d"
	assert_output --partial 'Directory not empty'
	run ! rm "$MNT/d"
	rm "$MNT/d/x"
	run -0 ls "$MNT/d"
	assert_output ''
	rmdir "$MNT/d"
	run ! ls "$MNT/d"
	mkdir -p "$MNT/t/a/b"
	echo 1 >"$MNT/t/a/b/c"
	echo 2 >"$MNT/t/a/d"
	run ! mkdir "$MNT/t/a/d/e"
	assert_output --partial 'Not a directory'
	rm -r "$MNT/t"
	run -0 ls -A "$MNT"
	assert_output ''
	run -0 kvfs export "$STORE" /
	assert_output '{}'
}

@test "mv renames a leaf and moves a subtree; replaces a target" {
	echo 1 >"$MNT/a"
	mv "$MNT/a" "$MNT/b"
	run ! cat "$MNT/a"
	run -0 cat "$MNT/b"
	assert_output 1
	mkdir -p "$MNT/x/y"
	echo 2 >"$MNT/x/y/z"
	mkdir "$MNT/dst"
	mv "$MNT/x" "$MNT/dst/"
	run -0 cat "$MNT/dst/x/y/z"
	assert_output 2
	run ! ls "$MNT/x"
	echo 3 >"$MNT/c"
	mv -f "$MNT/c" "$MNT/b"
	run -0 cat "$MNT/b"
	assert_output 3
	run -0 ls "$MNT"
	assert_output $'b\ndst'
	run ! mv -T "$MNT/b" "$MNT/dst"
}

@test "touch and utimens keep per-leaf mtimes; cp -p preserves them" {
	echo v >"$MNT/a"
	touch -d '2010-01-02 03:04:05.123456789' "$MNT/a"
	run -0 stat -c %y "$MNT/a"
	assert_output --partial '2010-01-02 03:04:05.123456789'
	echo w >"$BATS_TEST_TMPDIR/src"
	touch -d '2011-01-01 00:00:00' "$BATS_TEST_TMPDIR/src"
	cp -p "$BATS_TEST_TMPDIR/src" "$MNT/p"
	run -0 stat -c %y "$MNT/p"
	assert_output --partial '2011-01-01 00:00:00'
	assert_file_bytes "$MNT/p" 'w\n'
	touch "$MNT/dir-ok" && mkdir "$MNT/dd" && touch "$MNT/dd"
}

@test "chmod and chown are accepted and kept (tests/35-mount-attrs.bats has the rest)" {
	echo v >"$MNT/a"
	chmod 600 "$MNT/a"
	chown "$(id -u):$(id -g)" "$MNT/a"
	run -0 stat -c '%a %u' "$MNT/a"
	assert_output "600 $(id -u)"
}

@test "xattr user.kvfs.type shows and sets a type; other names are refused" {
	echo 42 >"$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output string
	setfattr -n user.kvfs.type -v integer "$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output integer
	run -0 jq -c . "$MNT/.json"
	assert_output '{"n":42}'
	run ! setfattr -n user.kvfs.type -v integer "$MNT/nothere"
	echo abc >"$MNT/s"
	run ! setfattr -n user.kvfs.type -v integer "$MNT/s"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/s"
	assert_output string
	run -0 getfattr --absolute-names -d -m - "$MNT/n"
	assert_output --partial 'user.kvfs.type="integer"'
	mkdir "$MNT/d"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d"
	assert_output object
	run ! setfattr -n user.other -v 1 "$MNT/n"
	assert_output --partial 'Operation not supported'
	run ! getfattr --absolute-names -n user.other "$MNT/n"
	assert_output --partial 'No such attribute'
	run ! setfattr -x user.other "$MNT/n"
	assert_output --partial 'No such attribute'
}

@test "CLI changes while mounted show through the mount within a second" {
	echo old >"$MNT/a"
	run -0 cat "$MNT/a"
	ls "$MNT" >/dev/null
	run -0 kvfs put "$STORE" /a newer-value
	run -0 kvfs put --create "$STORE" /b fresh
	check_a() { [ "$(cat "$MNT/a")" = newer-value ]; }
	check_b() { [ "$(cat "$MNT/b" 2>/dev/null)" = fresh ]; }
	check_ls() { [ "$(ls "$MNT" | tr '\n' ' ')" = 'a b ' ]; }
	eventually 2 check_a
	eventually 2 check_b
	eventually 2 check_ls
	run -0 kvfs rm "$STORE" /b
	check_gone() { ! [ -e "$MNT/b" ]; }
	eventually 2 check_gone
	run -0 stat -c %s "$MNT/a"
	assert_output 12
}

@test "CLI changes deep in a listed and stat'ed tree show through the mount within a second" {
	echo '{"b": {"c": {"leaf": "one", "other": 1}}}' >"$MNT/a.json"
	ls -lR "$MNT" >/dev/null
	run -0 stat -c %s "$MNT/a/b/c/leaf"
	assert_output 4
	run -0 kvfs put "$STORE" /a/b/c/leaf 'a longer value'
	run -0 kvfs put --create "$STORE" /a/b/c/new fresh
	check_leaf() { [ "$(cat "$MNT/a/b/c/leaf")" = 'a longer value' ]; }
	check_size() { [ "$(stat -c %s "$MNT/a/b/c/leaf")" = 15 ]; }
	check_ls() { [ "$(ls "$MNT/a/b/c" | tr '\n' ' ')" = 'leaf new other ' ]; }
	eventually 1 check_leaf
	eventually 1 check_size
	eventually 1 check_ls
}

@test "a cached leaf's content follows an offline put of the same size" {
	echo aaaa >"$MNT/x"
	run -0 cat "$MNT/x"
	assert_output aaaa
	run -0 cat "$MNT/x"
	run -0 kvfs put "$STORE" /x bbbb
	check() { [ "$(cat "$MNT/x")" = bbbb ]; }
	eventually 1 check
}

@test "the mount's own writes keep the kernel's caches; pending writes are not lost" {
	echo v1 >"$MNT/k"
	stat "$MNT/k" >/dev/null
	echo v2 >"$MNT/k"
	run -0 cat "$MNT/k"
	assert_output v2
	run -0 stat -c %s "$MNT/k"
	assert_output 3
}

@test "fsync commits; close reports the commit's error" {
	run -0 python3 - "$MNT" <<'PY'
import os, sys
m = sys.argv[1]
fd = os.open(m + "/f", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"synced\n")
os.fsync(fd)
print(open(m + "/f").read().strip())
os.close(fd)
fd = os.open(m + "/bad.json", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"{not json")
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print(e.strerror)
PY
	assert_output $'synced\nInvalid argument'
}

@test "a close racing rename or unlink never writes under the old name" {
	mkdir "$MNT/rc"
	echo v >"$MNT/rc/x"
	run -0 python3 - "$MNT/rc" <<'PY'
import os, sys, threading, time
d = sys.argv[1]
x, y = d + "/x", d + "/y"
fd = os.open(x, os.O_RDWR)
stop = False
def writer():
    i = 0
    while not stop:
        os.pwrite(fd, b"%08d\n" % i, 0)
        os.close(os.dup(fd))    # a flush: commits
        i += 1
ts = [threading.Thread(target=writer) for _ in range(4)]
for t in ts:
    t.start()
bad, cur, oth = 0, x, y
end = time.time() + 4
while time.time() < end:
    os.rename(cur, oth)
    if os.path.exists(cur):
        bad += 1
        os.unlink(cur)
    cur, oth = oth, cur
os.unlink(cur)
time.sleep(0.05)
stop = True
for t in ts:
    t.join()
os.close(fd)
left = os.listdir(d)
print("resurrected:", bad, "left:", left)
sys.exit(1 if bad or left else 0)
PY
	assert_output 'resurrected: 0 left: []'
	run -0 kvfs ls "$STORE" /rc
	assert_output ''
}

@test "a failed commit stays dirty: close after a failed fsync fails the same way" {
	run -0 python3 - "$MNT" <<'PY'
import os, sys
m = sys.argv[1]
fd = os.open(m + "/doc.json", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"{not json")
for step in (os.fsync, os.close):
    try:
        step(fd)
        print(step.__name__, "ok")
    except OSError as e:
        print(step.__name__, e.strerror)
fd = os.open(m + "/fixed.json", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"{bad")
try:
    os.fsync(fd)
except OSError as e:
    print("fsync", e.strerror)
os.pwrite(fd, b'{"a":1}', 0)
os.close(fd)
print("close ok")
PY
	assert_output $'fsync Invalid argument\nclose Invalid argument\nfsync Invalid argument\nclose ok'
	run -0 jq -c . "$MNT/fixed.json"
	assert_output '{"a":1}'
}

@test "cp -a of an empty file over a leaf keeps the empty file's mtime" {
	echo old >"$MNT/f"
	: >"$BATS_TEST_TMPDIR/empty"
	touch -d '2001-01-01 00:00:00 UTC' "$BATS_TEST_TMPDIR/empty"
	cp -a "$BATS_TEST_TMPDIR/empty" "$MNT/f"
	run -0 stat -c '%s %Y' "$MNT/f"
	assert_output '0 978307200'
	run -0 kvfs get "$STORE" /f
	assert_output ''
}

@test "writers of one file share its content: appends and writes at offsets by two handles both land" {
	run -0 python3 - "$MNT" <<'PY'
import os, sys
m = sys.argv[1]
p = m + "/log"
open(p, "w").write("x\n")
a = os.open(p, os.O_WRONLY | os.O_APPEND)
b = os.open(p, os.O_WRONLY | os.O_APPEND)
os.write(a, b"a\n")
os.write(b, b"b\n")
os.close(a)
os.close(b)
print(repr(open(p).read()))
p = m + "/f"
open(p, "w").write("0123456789")
a = os.open(p, os.O_RDWR)
b = os.open(p, os.O_RDWR)
os.pwrite(a, b"A", 0)
os.pwrite(b, b"B", 5)
os.close(a)
os.close(b)
print(repr(open(p).read()))
p = m + "/t"
open(p, "w").write("long content\n")
a = os.open(p, os.O_RDWR)
os.pwrite(a, b"L", 0)
os.truncate(p, 4)
os.close(a)
print(repr(open(p).read()))
PY
	assert_output $'\'x\\na\\nb\\n\'\n\'A1234B6789\'\n\'Long\''
}

@test "parallel >> to one file keeps every line" {
	local pids=() i
	: >"$MNT/log"
	for i in $(seq 40); do
		echo "line $i" >>"$MNT/log" &
		pids+=($!)
	done
	wait "${pids[@]}"
	# both, said on a failure: whether the lines are lost, or only the read
	# missed them (38 of 40 once in a clean-clone run's asan pass, over
	# io_uring at load; 0 of 700 here alone, over either transport)
	local read stored
	read=$(wc -l <"$MNT/log")
	stored=$(kvfs get "$STORE" /log | wc -l)
	echo "read through the mount: $read lines; in the store: $stored"
	[ "$read" -eq 40 ]
	[ "$stored" -eq 40 ]
	run -0 sort -u "$MNT/log"
	assert_line -n 0 'line 1'
	[ "${#lines[@]}" -eq 40 ]
}

@test "a type set on an empty leaf survives the kernel forgetting it and goes after one commit" {
	: >"$MNT/n"
	setfattr -n user.kvfs.type -v integer "$MNT/n"
	sync
	echo 2 >/proc/sys/vm/drop_caches
	echo 5 >"$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output integer
	: >"$MNT/s"
	setfattr -n user.kvfs.type -v integer "$MNT/s"
	echo abc >"$MNT/s"
	run -0 cat "$MNT/s"
	assert_output abc
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/s"
	assert_output string
	echo def >"$MNT/s"
	run -0 cat "$MNT/s"
	assert_output def
}

# `: > n` is committed at its release, which the kernel sends after close
# returns; a daemon that took it after the setfattr that followed committed
# the empty text with the type, had it refused, and forgot the type (the
# next `echo 5 >` made a string). The test hook holds every release 100 ms.
@test "a type set on an empty leaf before its release is committed waits for its content" {
	unmount_store
	KVFS_TEST_RELEASE_LATE_MS=100 mount_store
	: >"$MNT/n"
	setfattr -n user.kvfs.type -v integer "$MNT/n"
	eventually 5 kvfs get "$STORE" /n	# the empty leaf, committed at its release
	echo 5 >"$MNT/n"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/n"
	assert_output integer
	run -0 kvfs export --compact "$STORE" /
	assert_output '{"n":5}'
}
