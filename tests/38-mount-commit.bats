#!/usr/bin/env bats
# tests/38-mount-commit.bats - the commit model: one commit per file however
# the tool orders its calls (create, write, utimens, setxattr, chmod, close),
# commits counted by the store's generation; a created leaf is in the store
# only once it is closed; refusals at close (an O_EXCL create whose name
# another process stored meanwhile among them); group commit of parallel writers;
# -o commit=MS: changes queued at close, committed together later.

# bats file_tags=mount,backends,threads

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	exec 5>&-	# a test's descriptor held open on a file in the mount
	mount_teardown
}

@test "cp -a of typed leaves: one commit per file, with content, type, mode and mtime together" {
	src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	for i in $(seq 20); do
		printf '%d\n' "$i" >"$src/k$i"
		setfattr -n user.kvfs.type -v integer "$src/k$i"
		touch -d '2001-02-03 04:05:06' "$src/k$i"
	done
	chmod 600 "$src/k1"
	mkdir "$MNT/d"
	g0=$(gen)
	cp -a "$src"/k* "$MNT/d/"
	g1=$(gen)
	commits_were 20 "$((g1 - g0))"
	# each landed whole: another process (the CLI) sees it typed, right after cp
	run -0 kvfs export --compact "$STORE" /d
	assert_output --partial '"k5":5'
	assert_output --partial '"k20":20'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/k7"
	assert_output integer
	run -0 stat -c '%Y %a' "$MNT/d/k1" "$MNT/d/k2"
	assert_line "$(stat -c %Y "$src/k1") 600"
	assert_line "$(stat -c %Y "$src/k2") 644"
}

# commits_were N COUNT: a generation moved by COUNT where the test made N
# commits: exactly, on LMDB; on etcd the generation is the cluster's
# revision, which any commit on the cluster moves, another test's daemon
# finishing its exit too (a clean-clone etcd pass counted one more, twice in
# 38; alone these counts are exact every time), so up to 2 more there.
commits_were() {
	if is_etcd; then
		[ "$2" -ge "$1" ] && [ "$2" -le $(($1 + 2)) ]
	else
		[ "$2" -eq "$1" ]
	fi
}

@test "cp of documents and echo > leaf: one commit per file" {
	docs=$BATS_TEST_TMPDIR/docs
	mkdir -p "$docs"
	for i in $(seq 12); do
		printf '{"id":%d,"tags":["a","b"],"n":{"x":%d}}\n' "$i" "$i" >"$docs/doc$i.json"
	done
	g0=$(gen)
	cp "$docs"/*.json "$MNT/"
	g1=$(gen)
	commits_were 12 "$((g1 - g0))"
	run -0 cat "$MNT/doc7/n/x"
	assert_output 7
	mkdir "$MNT/e"
	g1=$(gen)
	for i in $(seq 15); do echo "v$i" >"$MNT/e/k$i"; done
	g2=$(gen)
	commits_were 15 "$((g2 - g1))"
	run -0 kvfs get "$STORE" /e/k15
	assert_output v15
}

@test "a created leaf is seen through the mount before its close, in the store only after it" {
	# the other process starts before the file is opened: a fork would
	# duplicate the descriptor, and its close at exec flushes (commits) it
	run -0 python3 - "$MNT" "$KVFS_BIN" "$STORE" <<'PY'
import os, subprocess, sys
mnt, kvfs, store = sys.argv[1:]
ls = subprocess.Popen(["sh", "-c", 'read go; "$0" ls "$1" /', kvfs, store],
                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
p = os.path.join(mnt, "new")
fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o640)
os.write(fd, b"42\n")
st = os.stat(p)
assert st.st_size == 3 and (st.st_mode & 0o777) == 0o640, st
listed = ls.communicate("go\n")[0]
assert "new" not in listed, listed
os.close(fd)
out = subprocess.run([kvfs, "get", store, "/new"], capture_output=True, text=True)
assert out.stdout == "42\n", out
print("ok")
PY
	assert_output ok
	run -0 stat -c %a "$MNT/new"
	assert_output 640
	# an empty created file is committed at close too (touch); with O_TRUNC
	# and nothing written (the shell's >, which first closes a copy of its
	# descriptor) at the release that follows the close
	touch "$MNT/empty"
	run -0 kvfs get "$STORE" /empty
	assert_output ''
	: >"$MNT/empty2"
	eventually 5 kvfs get "$STORE" /empty2
}

# docs/COMMITS.md, "O_EXCL at close": the open's check is not confirmed at
# an etcd store's newest revision, so the commit judges the name again.
# Before, it wrote the leaf over the other's.
@test "an O_EXCL create whose name another process stored before its close fails at close with EEXIST" {
	# the put starts before the file is opened: a fork would duplicate
	# the descriptor, and its close at exec flushes (commits) it
	run -0 python3 - "$MNT" "$KVFS_BIN" "$STORE" <<'PY'
import os, subprocess, sys
mnt, kvfs, store = sys.argv[1:]
put = subprocess.Popen(["sh", "-c", 'read go; "$0" put "$1" /race second', kvfs, store],
                       stdin=subprocess.PIPE, text=True)
fd = os.open(os.path.join(mnt, "race"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
os.write(fd, b"first\n")
put.communicate("go\n")
assert put.returncode == 0, put.returncode
try:
    os.close(fd)
except OSError as e:
    print(os.strerror(e.errno))
    sys.exit(0)
print("closed without an error")
PY
	assert_output 'File exists'
	run -0 kvfs get "$STORE" /race
	assert_output second
}

# docs/COMMITS.md, "A directory another process removes": a file created
# in a directory and not closed yet goes with that directory when another
# process removes it, as on ext4, even if the other makes it again before
# the close. Before, the close stored the file in the new directory.
@test "a created leaf still open goes with its directory when another process removes it and makes it again" {
	echo '{"obj": {"a": 1}, "plain": {}, "kept": {"x": 1, "a": [], "c": {}}, "t": {"x": 1}}' |
		kvfs import "$STORE" / -
	# many keys in one commit: told as one subtree changed, not removed
	seq 0 99 | jq -s . | kvfs import "$STORE" /kept/a -
	M2=$BATS_TEST_TMPDIR/m2
	mount_extra "$M2" "$STORE"
	caught_up
	# the other process starts before the files are opened: a fork would
	# duplicate the descriptors, and their close at exec flushes (commits)
	run -0 python3 - "$MNT" "$KVFS_BIN" "$STORE" "$M2" <<'PY'
import os, subprocess, sys
mnt, kvfs, store, m2 = sys.argv[1:]
other = subprocess.Popen(["sh", "-ec", """read go
"$0" rm -r "$1" /obj
echo '{"b": 2}' | "$0" import "$1" /obj -
"$0" rm -r "$1" /plain
"$0" mkdir "$1" /plain
"$0" rm -r "$1" /t
"$0" mkdir "$1" /t
"$0" put "$1" /kept/y 2
mv "$2/kept/a" "$2/kept/b"
rmdir "$2/kept/c"
mkdir "$2/kept/c"
""", kvfs, store, m2], stdin=subprocess.PIPE, text=True)
fds = {}
# t/x is stored before: emptied by this open (O_TRUNC), it is not put back in the new t
for name in ("obj/f", "plain/g", "plain/e", "kept/h", "kept/c/i", "t/x"):
    fds[name] = os.open(os.path.join(mnt, name), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    if name != "plain/e":	# created and left empty (: >), as the others go
        os.write(fds[name], name.encode() + b"\n")
other.communicate("go\n")
assert other.returncode == 0, other.returncode
# fsync and close of a file dropped with its directory say so, as NFS's stale handle
try:
    os.fsync(fds["obj/f"])
    print("obj/f fsync: ok")
except OSError as e:
    print("obj/f fsync:", os.strerror(e.errno))
for name, fd in fds.items():
    try:
        os.close(fd)
        print(name + ": ok")
    except OSError as e:
        print(name + ":", os.strerror(e.errno))
PY
	assert_output "obj/f fsync: Stale file handle
obj/f: Stale file handle
plain/g: Stale file handle
plain/e: Stale file handle
kept/h: ok
kept/c/i: Stale file handle
t/x: Stale file handle"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.error "$MNT/plain"
	assert_output "/plain/e: not stored: another process removed its directory (or one above it) after it was opened, and the file went with it, even if a directory was made again at its path"
	# what the other process made stays exactly so; the files went with
	# the directories they were made in
	run -0 kvfs export "$STORE" /
	run -0 jq -c '{obj, plain, t, c: .kept.c, h: .kept.h, y: .kept.y, b: (.kept.b | length)}' <<<"$output"
	assert_output '{"obj":{"b":2},"plain":{},"t":{},"c":{},"h":"kept/h","y":"2","b":100}'
	caught_up
	run -0 ls -A "$MNT/obj"
	assert_output b
	run -0 ls -A "$MNT/plain"
	assert_output ''
	run -0 ls -A "$MNT/kept/c"
	assert_output ''
}

# The test above through a shell: a descriptor held open (exec 5>) on a
# leaf created in a directory that another process then removes and makes
# again; a tool writing through it (cat) fails at its close with ESTALE and
# says so, the reason is in user.kvfs.error, and the new directory holds
# exactly what the other process put there. Nothing is written before the
# removal: the kvfs processes inherit the descriptor, and a close of a
# written file commits it. Fails on revarray at 0586f91 (cat exits 0: the
# close dropped the file and said nothing).
@test "a created leaf whose directory another process removed and made again fails its close with ESTALE" {
	echo '{"d": {"old": 1}}' | kvfs import "$STORE" / -
	caught_up
	exec 5>"$MNT/d/F"
	kvfs rm -r "$STORE" /d
	echo '{"new": 2}' | kvfs import "$STORE" /d -
	caught_up
	write_held 'data'
	assert_failure 1
	assert_output --partial 'Stale file handle'
	# more writes and closes through it: each says ESTALE, the log said it once
	write_held 'more'
	assert_failure 1
	assert_output --partial 'Stale file handle'
	run sh -c 'echo x >&5; exit 0'
	exec 5>&-
	run -0 grep -c '/d/F: not stored' "$MOUNT_LOG"
	assert_output 1
	export_is /d '{"new":2}'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.error "$MNT/d"
	assert_output --partial "/d/F: not stored: another process removed its directory"
	run -0 ls -A "$MNT/d"
	assert_output new
}

# A removal only counts against the files that were under it: a leaf
# created in d and still open, whose mount moves d into e after another
# process removed e and made it again, was never in the removed e, and is
# stored where d went. Fails on revarray2 at 1149174 (cat's close says
# ESTALE and the leaf is dropped: the commit read the removal of e, an
# ancestor of the leaf's path at its close, not at its open).
@test "a created leaf still open whose directory its mount moves into one another process made again is stored there" {
	echo '{"d": {"old": 1}, "e": {"x": 1}}' | kvfs import "$STORE" / -
	caught_up
	exec 5>"$MNT/d/F"
	kvfs rm -r "$STORE" /e 5>&-
	kvfs mkdir "$STORE" /e 5>&-
	caught_up
	mv "$MNT/d" "$MNT/e/d"
	write_held 'data'
	exec 5>&-
	assert_success
	export_is /e '{"d":{"F":"data","old":1}}'
}

# And the other way: the leaf's own directory d is removed by another
# process and made again, and this mount then moves the new d into e. The
# leaf went with the old d: its close says ESTALE, and the moved d holds
# what the other made. Fails on revarray2 at 1149174 (cat exits 0: the
# close read the removals against the path e/d/F, which none names, and
# stored the leaf in the other's d).
@test "a created leaf still open whose directory another process made again, then its mount moved, goes with the old one" {
	echo '{"d": {"old": 1}, "e": {"x": 1}}' | kvfs import "$STORE" / -
	caught_up
	exec 5>"$MNT/d/F"
	kvfs rm -r "$STORE" /d 5>&-
	echo '{"new": 2}' | kvfs import "$STORE" /d - 5>&-
	caught_up
	mv "$MNT/d" "$MNT/e/d"
	write_held 'data'
	exec 5>&-
	assert_failure 1
	assert_output --partial 'Stale file handle'
	export_is /e '{"d":{"new":2},"x":1}'
}

# The other way round from the test above: another host removed the
# directory and made it again, and only then is a leaf created in it,
# while this mount's watch has not brought those commits yet. The open
# came after the removal, so the leaf belongs to the new directory and is
# stored there; fails on arrayre at 0a0dd1d (the removal's revision is
# past the watch's position taken at the open: the close drops the file).
@test "etcd: a leaf created after another host removed its directory and made it again is stored, the watch lagging" {
	is_etcd || skip "a lagging watch is etcd's (LMDB's position is current at the open)"
	echo '{"d": {"k": 1}}' | kvfs import "$STORE" / -
	M2=$BATS_TEST_TMPDIR/m2
	KVFS_ETCD_TEST_WATCH_LAG_MS=500 mount_extra "$M2" "$STORE"
	caught_up "$M2"
	run -0 ls "$M2/d"
	kvfs rm -r "$STORE" /d
	kvfs mkdir "$STORE" /d
	target=$(store_gen)
	# no process started after the open: its exec would flush the file
	run -0 python3 - "$M2" "$target" <<'PY'
import os, sys, time
m2, target = sys.argv[1], int(sys.argv[2])
def position():
    stats = os.getxattr(m2, "user.kvfs.stats").decode().splitlines()
    return int([l.split()[1] for l in stats if l.startswith("position ")][0])
fd = os.open(os.path.join(m2, "d", "F"), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"data\n")
opened_behind = position() < target
for _ in range(200):	# the close after the watch brought the removal
    if position() >= target:
        break
    time.sleep(0.05)
os.close(fd)
print("behind at the open" if opened_behind else "caught up at the open")
PY
	assert_output "behind at the open"
	run -0 kvfs get "$STORE" /d/F
	assert_output data
}

# This mount's own removals are not another process's, however many of its
# commits come between: a directory it renames away and back keeps the
# leaf created in it, as on ext4. On etcd a commit is known as its own by
# its revision among the last 256 it made, and by the writer its change-log
# entry names; fails on arrayre at 0a0dd1d on etcd (past 256 revisions the
# rename's removal of /a read as another's: the close dropped the file).
@test "a created leaf still open survives its mount renaming its directory away and back, 270 commits of its own after" {
	echo '{"k": 1}' | kvfs import "$STORE" /a -
	mkdir "$MNT/z"
	caught_up
	run -0 python3 - "$MNT" <<'PY'
import os, subprocess, sys
mnt = sys.argv[1]
# started before the open: a fork after it would flush (commit) the file at exec
other = subprocess.Popen(["bash", "-ec", """read go
mv "$0/a" "$0/b"
mv "$0/b" "$0/a"
for i in $(seq 270); do echo $i >"$0/z/$i"; done
""", mnt], stdin=subprocess.PIPE, text=True)
fd = os.open(os.path.join(mnt, "a", "F"), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"data\n")
other.communicate("go\n")
assert other.returncode == 0, other.returncode
os.close(fd)
print("closed")
PY
	assert_output closed
	run -0 kvfs get "$STORE" /a/F
	assert_output data
	run -0 kvfs get "$STORE" /a/k
	assert_output 1
}

@test "a type that the text written does not parse as is refused at once; close reports a refused commit" {
	run -0 python3 - "$MNT" <<'PY'
import errno, os, sys
mnt = sys.argv[1]
fd = os.open(os.path.join(mnt, "t"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"abc\n")
try:
    os.setxattr(fd, "user.kvfs.type", b"integer")
    print("accepted")
except OSError as e:
    print("refused", errno.errorcode[e.errno])
os.setxattr(fd, "user.kvfs.type", b"string")
os.close(fd)
print(open(os.path.join(mnt, "t")).read(), end="")
PY
	assert_line 'refused EINVAL'
	assert_line abc
	# a refusal found by the commit itself (a unique index) comes back from close
	mkdir -p "$MNT/users/ann" "$MNT/users/bob"
	run -0 kvfs table create "$STORE" /users --key-depth 1
	run -0 kvfs table column "$STORE" /users name string
	run -0 kvfs index create "$STORE" /users by_name name --unique
	echo ann >"$MNT/users/ann/name"
	run -0 python3 - "$MNT/users/bob/name" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"ann\n")
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print("close failed", errno.errorcode[e.errno])
PY
	assert_output --regexp '^close failed E'
	run -0 kvfs export --compact "$STORE" /users
	assert_output '{"ann":{"name":"ann"},"bob":{}}'
}

@test "unlink, rename and a second open of a created leaf still open; fsync commits it" {
	run -0 python3 - "$MNT" "$KVFS_BIN" "$STORE" <<'PY'
import os, subprocess, sys
mnt, kvfs, store = sys.argv[1:]
j = lambda n: os.path.join(mnt, n)
fd = os.open(j("a"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"one\n")
os.rename(j("a"), j("b"))
os.write(fd, b"two\n")
os.close(fd)
assert open(j("b")).read() == "one\ntwo\n"
assert not os.path.exists(j("a"))
fd = os.open(j("c"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"gone\n")
os.unlink(j("c"))
os.close(fd)
assert not os.path.exists(j("c"))
fd = os.open(j("d"), os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b"dd\n")
assert open(j("d")).read() == "dd\n"	# another open sees it
os.write(fd, b"ee\n")
os.fsync(fd)
out = subprocess.run([kvfs, "get", store, "/d"], capture_output=True, text=True)
assert out.stdout == "dd\nee\n", out
os.close(fd)
print("ok")
PY
	assert_output ok
	run -0 kvfs ls "$STORE" /
	assert_output $'b\nd'
}

@test "four writers at once: every file committed, commits shared between them" {
	g0=$(gen)
	pids=()
	for j in 1 2 3 4; do
		(mkdir "$MNT/w$j" && for i in $(seq 50); do echo "$j.$i" >"$MNT/w$j/k$i"; done) &
		pids+=("$!")
	done
	wait "${pids[@]}"	# not the daemon, also a child of the test
	g1=$(gen)
	# at most one commit per mkdir and per file: 204 (a second commit per
	# file would be 400). On etcd the generation is the cluster's revision,
	# which moved past 204 once in a clean-clone etcd pass (alone it is 204
	# every time; the extra commit is not yet identified): a slack of 4 there
	local most=204
	! is_etcd || most=208
	[ "$((g1 - g0))" -le "$most" ]
	for j in 1 2 3 4; do
		run -0 kvfs get "$STORE" "/w$j/k50"
		assert_output "$j.50"
		[ "$(kvfs ls "$STORE" "/w$j" | wc -l)" -eq 50 ]
	done
}

@test "tar and rsync restores: what the calls after close cost, per file" {
	src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/d"
	for i in $(seq 10); do
		printf '%d\n' "$i" >"$src/d/k$i"
		setfattr -n user.kvfs.type -v integer "$src/d/k$i"
	done
	tar --xattrs -C "$src" -cf "$BATS_TEST_TMPDIR/t.tar" d
	mkdir "$MNT/t" "$MNT/r"
	g0=$(gen)
	tar --xattrs -C "$MNT/t" -xf "$BATS_TEST_TMPDIR/t.tar"
	g1=$(gen)
	# mknod, then the close with content, type, mtime and mode; the directory's own
	[ "$((g1 - g0))" -le $((2 * 10 + 6)) ]
	rsync -aX "$src/d/" "$MNT/r/"
	g2=$(gen)
	# the close, then by path: type, utimens, chmod, rename (docs/COMMITS.md)
	[ "$((g2 - g1))" -le $((5 * 10 + 4)) ]
	run -0 kvfs export --compact "$STORE" /t/d
	assert_output --partial '"k3":3'
	run -0 kvfs export --compact "$STORE" /r
	assert_output --partial '"k3":3'
}

# close_report FILE TEXT: writes TEXT to FILE (created) and prints what close said.
close_report() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, sys.argv[2].encode())
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print("close failed", errno.errorcode[e.errno])
PY
}

@test "-o commit=MS: close returns queued; the mount sees it at once, others after an fsync, in one commit" {
	skip_on_etcd "-o commit=MS queues commits in LMDB (store/lmdb/lmdb_queue.c); an etcd store refuses the option at mount"
	unmount_store
	mount_store -o commit=600000
	docs=$BATS_TEST_TMPDIR/docs
	mkdir -p "$docs"
	for i in $(seq 8); do printf '{"id":%d,"t":["a","b"]}\n' "$i" >"$docs/doc$i.json"; done
	g0=$(gen)
	cp "$docs"/*.json "$MNT/"
	mkdir "$MNT/d"
	for i in $(seq 8); do echo "$i" >"$MNT/d/k$i"; done
	mv "$MNT/d/k8" "$MNT/d/k9"
	# through the mount: at once, every way of reading
	run -0 cat "$MNT/doc3/id" "$MNT/d/k7" "$MNT/d/k9"
	assert_output $'3\n7\n8'
	run -0 ls "$MNT/d"
	assert_line k1
	refute_line k8
	run -0 cat "$MNT/doc2.json"
	assert_output --partial '"id": 2'
	# nothing committed yet: another process sees none of it
	[ "$(gen)" -eq "$g0" ]
	run ! kvfs get "$STORE" /d/k1
	run ! kvfs get "$STORE" /doc8/id
	# an fsync of any file commits the whole batch, in one commit
	sync "$MNT/d/k1"
	run -0 kvfs get "$STORE" /d/k9
	assert_output 8
	run -0 kvfs get "$STORE" /doc8/t/1
	assert_output b
	g1=$(gen)
	[ "$((g1 - g0))" -eq 1 ]
	unmount_store
	run -0 kvfs check "$STORE"
}

@test "-o commit=MS: other processes see queued changes within MS; unmount commits the rest" {
	skip_on_etcd "-o commit=MS queues commits in LMDB (store/lmdb/lmdb_queue.c); an etcd store refuses the option at mount"
	unmount_store
	mount_store -o commit=200
	g0=$(gen)
	echo first >"$MNT/first"
	run -0 cat "$MNT/first"
	assert_output first
	# committed by the committer's clock, without an fsync (polled, bounded)
	eventually 20 kvfs get "$STORE" /first
	local t0 t1
	t0=$(date +%s%N)
	mkdir "$MNT/m"
	for i in $(seq 60); do echo "$i" >"$MNT/m/k$i"; done
	t1=$(date +%s%N)
	unmount_store
	run -0 kvfs get "$STORE" /m/k60
	assert_output 60
	run -0 kvfs ls "$STORE" /m
	[ "${#lines[@]}" -eq 60 ]
	# 62 changes in far fewer commits: one per 200 ms the writes took, and
	# the first, the last at unmount and one to spare (a count against the
	# clock, not a fixed figure: under TSan beside other work the loop took
	# over 4 s, CI of 2026-11-29)
	g1=$(gen)
	echo "# $((g1 - g0)) commits for writes of $(((t1 - t0) / 1000000)) ms" >&3
	[ "$((g1 - g0))" -ge 1 ]
	[ "$((g1 - g0))" -le "$(((t1 - t0) / 200000000 + 4))" ]
	run -0 kvfs check "$STORE"
}

@test "-o commit=MS: refusals (bad JSON, unique index) still fail at close, with nothing queued" {
	skip_on_etcd "-o commit=MS queues commits in LMDB (store/lmdb/lmdb_queue.c); an etcd store refuses the option at mount"
	unmount_store
	mount_store -o commit=600000
	mkdir "$MNT/people"
	printf '%s' '{"key_depth":1,"columns":{"email":{"type":"string"}},"indexes":{"by_email":{"fields":["email"],"unique":true}}}' >"$MNT/people/@schema.json"
	run -0 close_report "$MNT/people/ann.json" '{"email":"a@x"}'
	assert_output closed
	# the clash is with a row only in the queued batch: checked against it
	run -0 close_report "$MNT/people/bob.json" '{"email":"a@x"}'
	assert_output 'close failed EEXIST'
	run -0 close_report "$MNT/bad.json" '{"a": '
	assert_output 'close failed EINVAL'
	run -0 err "$MNT"
	assert_output --partial 'invalid JSON'
	run -0 close_report "$MNT/people/cy.json" '{"email":"c@x"}'
	assert_output closed
	run -0 ls "$MNT/people/@by_email"
	assert_output $'a@x\nc@x'
	run ! kvfs get "$STORE" /people/ann/email
	sync "$MNT/people/ann/email"
	run -0 kvfs get "$STORE" /people/ann/email
	assert_output a@x
	run -0 kvfs get "$STORE" /people/cy/email
	run ! kvfs get "$STORE" /people/bob/email
	run ! kvfs get "$STORE" /bad
	unmount_store
	run -0 kvfs check "$STORE"
}

@test "-o commit=MS: another process's write waits for the queued batch; both are kept" {
	skip_on_etcd "-o commit=MS queues commits in LMDB (store/lmdb/lmdb_queue.c); an etcd store refuses the option at mount"
	unmount_store
	rm -rf "$STORE"
	# a store the mount creates: its lock file must stay locked by the daemon
	mount_store -o commit=1000
	echo mine >"$MNT/mine"
	kvfs put "$STORE" /theirs other
	run -0 kvfs get "$STORE" /mine
	assert_output mine
	eventually 10 cat "$MNT/theirs"
	unmount_store
	run -0 kvfs get "$STORE" /theirs
	assert_output other
	run -0 kvfs get "$STORE" /mine
	assert_output mine
}

@test "-o commit=MS: batches that fill a small map: it grows, nothing acknowledged is lost" {
	skip_on_etcd "-o commit=MS queues commits in LMDB (store/lmdb/lmdb_queue.c); an etcd store refuses the option at mount"
	unmount_store
	rm -rf "$STORE"
	KVFS_MAPSIZE=256k mount_store -o commit=400
	# 300 files of 4,000 bytes, each close checked (one python for all of them)
	run -0 python3 - "$MNT" <<'PY'
import errno, os, sys
for i in range(1, 301):
    fd = os.open(os.path.join(sys.argv[1], "f%d" % i), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, (b"%04d" % i) * 1000)
    try:
        os.close(fd)
    except OSError as e:
        print("f%d: close failed" % i, errno.errorcode[e.errno])
print("closed")
PY
	assert_output closed
	unmount_store
	run -0 kvfs ls "$STORE" /
	[ "${#lines[@]}" -eq 300 ]
	run -0 kvfs get "$STORE" /f300
	[ "${#output}" -eq 4000 ]
	run -0 kvfs check "$STORE"
}

@test "-o commit=MS: a bad value is refused at mount" {
	unmount_store
	run ! "$KVFS_BIN" mount -f --create -o commit=0 "$STORE" "$MNT"
	assert_output --partial 'commit=0'
	run ! "$KVFS_BIN" mount -f --create -o commit=-3 "$STORE" "$MNT"
	run ! mountpoint -q "$MNT"
}
