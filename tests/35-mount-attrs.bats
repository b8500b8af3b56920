#!/usr/bin/env bats
# The mount's per-node attributes: name length limits, modes and owners
# kept across remounts (and enforced for other users with allow_other),
# directory times, ctime and atime.

# bats file_tags=mount,backends

load 'test_helper/common'

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
}

teardown() {
	mount_teardown
}

@test "names longer than 255 bytes: ENAMETOOLONG for lookup, create, mkdir, rename" {
	mount_store
	local long=$(printf 'a%.0s' {1..256}) ok=$(printf 'b%.0s' {1..255})
	run -1 stat "$MNT/$long"
	assert_output --partial 'File name too long'
	run -1 touch "$MNT/$long"
	assert_output --partial 'File name too long'
	run -1 mkdir "$MNT/$long"
	assert_output --partial 'File name too long'
	echo x >"$MNT/f"
	run -1 mv "$MNT/f" "$MNT/$long"
	assert_output --partial 'File name too long'
	run -0 cat "$MNT/f"
	assert_output x
	# 255 bytes is still a name
	run -0 touch "$MNT/$ok"
	run -0 stat -c %s "$MNT/$ok"
	run -0 mkdir "$MNT/d"
	run -1 stat "$MNT/d/$long"
	assert_output --partial 'File name too long'
}

@test "a value user.kvfs.type, .ttl or .expires does not take: EINVAL, and what it takes in user.kvfs.error" {
	mount_store
	echo x >"$MNT/f"
	run -1 setfattr -n user.kvfs.ttl -v 1h "$MNT/f"
	assert_output --partial 'Invalid argument'
	run -0 err "$MNT/f"
	assert_output '/f: user.kvfs.ttl takes a whole number of seconds, 1 or more'
	run -1 setfattr -n user.kvfs.expires -v tomorrow "$MNT/f"
	run -0 err "$MNT/f"
	assert_output '/f: user.kvfs.expires takes an RFC 3339 time after 1970, such as 2030-01-02T03:04:05Z'
	run -1 setfattr -n user.kvfs.type -v "$(printf 's%.0s' {1..80})" "$MNT/f"
	run -0 err "$MNT/f"
	assert_output --partial '/f: user.kvfs.type takes a type'
	run -0 cat "$MNT/f"
	assert_output x
}

@test "chmod, chown and the creator's umask persist across a remount" {
	mount_store
	echo v >"$MNT/f"
	mkdir "$MNT/d"
	chmod 600 "$MNT/f"
	chmod 711 "$MNT/d"
	chown 65534:65534 "$MNT/d"
	(umask 077 && echo w >"$MNT/private" && mkdir "$MNT/pdir")
	(umask 022 && echo x >"$MNT/plain" && mkdir "$MNT/pldir")
	run -0 stat -c '%n %a %u %g' "$MNT/f" "$MNT/d" "$MNT/private" "$MNT/pdir" "$MNT/plain" "$MNT/pldir"
	local before=$output
	remount
	run -0 stat -c '%n %a %u %g' "$MNT/f" "$MNT/d" "$MNT/private" "$MNT/pdir" "$MNT/plain" "$MNT/pldir"
	assert_equal "$output" "$before"
	assert_line --index 0 "$MNT/f 600 0 0"
	assert_line --index 1 "$MNT/d 711 65534 65534"
	assert_line --index 2 "$MNT/private 600 0 0"
	assert_line --index 3 "$MNT/pdir 700 0 0"
	assert_line --index 4 "$MNT/plain 644 0 0"
	assert_line --index 5 "$MNT/pldir 755 0 0"
	# back to the defaults: the record is dropped again (kvfs check counts records)
	chmod 644 "$MNT/f"
	run -0 stat -c %a "$MNT/f"
	assert_output 644
}

@test "imported documents have no attribute records; chmod adds exactly one; rm -r drops them" {
	mount_store
	printf '{"a": {"b": 1, "c": [1, 2]}, "d": "x"}' >"$BATS_TEST_TMPDIR/doc.json"
	run -0 kvfs import "$STORE" / "$BATS_TEST_TMPDIR/doc.json"
	run -0 bash -c "\"$KVFS_BIN\" dump \"$STORE\" | grep -c '^attr ' || true"
	assert_output 0
	chmod 600 "$MNT/a/b"
	run -0 bash -c "\"$KVFS_BIN\" dump \"$STORE\" | grep -c '^attr ' || true"
	assert_output 1
	# the same document imported again keeps the attributes of nodes it keeps
	run -0 kvfs import "$STORE" / "$BATS_TEST_TMPDIR/doc.json"
	run -0 stat -c %a "$MNT/a/b"
	assert_output 600
	run -0 bash -c "\"$KVFS_BIN\" dump \"$STORE\" | grep -c '^attr ' || true"
	assert_output 1
	# a document without the node drops its record
	printf '{"a": {"c": 3}, "d": "x"}' >"$BATS_TEST_TMPDIR/doc2.json"
	run -0 kvfs import "$STORE" / "$BATS_TEST_TMPDIR/doc2.json"
	run -0 bash -c "\"$KVFS_BIN\" dump \"$STORE\" | grep -c '^attr ' || true"
	assert_output 0
	chmod 600 "$MNT/a/c"
	rm -r "$MNT/a"
	run -0 bash -c "\"$KVFS_BIN\" dump \"$STORE\" | grep -c '^attr 02' || true"
	assert_output 0
	run -0 kvfs check "$STORE"
}

@test "mv and rename carry a subtree's modes and owners; the target's are replaced" {
	mount_store
	mkdir -p "$MNT/src/sub"
	echo 1 >"$MNT/src/sub/f"
	chmod 700 "$MNT/src/sub"
	chmod 640 "$MNT/src/sub/f"
	chown 65534 "$MNT/src/sub/f"
	echo 2 >"$MNT/t"
	chmod 600 "$MNT/t"
	mv "$MNT/src" "$MNT/dst"
	echo 3 >"$MNT/u"
	mv "$MNT/u" "$MNT/t"
	remount
	run -0 stat -c '%n %a %u' "$MNT/dst/sub" "$MNT/dst/sub/f" "$MNT/t"
	assert_line --index 0 "$MNT/dst/sub 700 0"
	assert_line --index 1 "$MNT/dst/sub/f 640 65534"
	assert_line --index 2 "$MNT/t 644 0"
	# a new node at an old name starts with the defaults
	mkdir -p "$MNT/src/sub"
	echo 4 >"$MNT/src/sub/f"
	run -0 stat -c '%a %u' "$MNT/src/sub" "$MNT/src/sub/f"
	assert_output $'755 0\n644 0'
	run -0 kvfs check "$STORE"
}

# kind_attrs DIR: "NAME MODE UID GID MTIME" of DIR/0 and DIR/1.
kind_attrs() {
	stat -c '%n %a %u %g %y' "$1/0" "$1/1" | sed "s|^$1/||"
}

# kind_is DIR KIND WANT [EXPIRES]: DIR is of KIND, kind_attrs DIR (in UTC)
# prints WANT, and DIR/1's user.kvfs.expires is EXPIRES when given.
kind_is() {
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$1"
	assert_output "$2"
	run -0 env TZ=UTC0 bash -c "$(declare -f kind_attrs); kind_attrs '$1'"
	assert_output "$3"
	if [ $# -ge 4 ]; then
		run -0 getfattr --absolute-names --only-values -n user.kvfs.expires "$1/1"
		assert_output "$4"
	fi
}

@test "an object <-> array change keeps its children's modes, owners, times and deadlines; cp -a, tar --xattrs and rsync -aX restore them" {
	mount_store
	local T=$BATS_TEST_TMPDIR want
	want=$'0 700 1000 1000 2000-01-01 00:00:00.123456789 +0000\n1 600 2000 2000 2001-02-03 00:00:00.000000000 +0000'
	mkdir -p "$MNT/t/0"
	echo x >"$MNT/t/1"
	chmod 700 "$MNT/t/0"
	chmod 600 "$MNT/t/1"
	chown 1000:1000 "$MNT/t/0"
	chown 2000:2000 "$MNT/t/1"
	touch -d '2000-01-01 00:00:00.123456789 UTC' "$MNT/t/0"
	touch -d '2001-02-03 UTC' "$MNT/t/1"
	setfattr -n user.kvfs.expires -v 2099-01-02T03:04:05Z "$MNT/t/1"
	run -0 env TZ=UTC0 bash -c "$(declare -f kind_attrs); kind_attrs '$MNT/t'"
	assert_output "$want"
	for kind in array object array; do
		setfattr -n user.kvfs.type -v $kind "$MNT/t"
		kind_is "$MNT/t" $kind "$want" '2099-01-02T03:04:05.000000000Z'
	done
	# the everyday form: a backup of the array, restored by cp -a and tar --xattrs
	cp -a "$MNT/t" "$T/bk"
	tar --xattrs -cf "$T/t.tar" -C "$MNT" t
	rm -r "$MNT/t"
	cp -a "$T/bk" "$MNT/t"
	remount
	kind_is "$MNT/t" array "$want"
	rm -r "$MNT/t"
	tar --xattrs -xf "$T/t.tar" -C "$MNT"
	remount
	kind_is "$MNT/t" array "$want" '2099-01-02T03:04:05.000000000Z'
	rm -r "$MNT/t"
	rsync -aX "$T/bk/" "$MNT/t/"
	remount
	kind_is "$MNT/t" array "$want" '2099-01-02T03:04:05.000000000Z'
	run -0 kvfs check "$STORE"
}

@test "with allow_other, modes and owners keep an unprivileged user out (and let it in)" {
	open_tmpdir_to_others
	mount_store -o allow_other
	echo secret >"$MNT/s"
	echo open >"$MNT/o"
	mkdir "$MNT/closed" "$MNT/mine"
	echo x >"$MNT/closed/f"
	chmod 600 "$MNT/s"
	chmod 700 "$MNT/closed"
	chown 65534:65534 "$MNT/mine"
	remount -o allow_other
	run -0 as_nobody cat "$MNT/o"
	assert_output open
	run -1 as_nobody cat "$MNT/s"
	assert_output --partial 'Permission denied'
	run ! as_nobody ls "$MNT/closed"
	assert_output --partial 'Permission denied'
	run -1 as_nobody cat "$MNT/closed/f"
	# a node's view carries its mode and owner
	run -1 as_nobody cat "$MNT/closed.json"
	assert_output --partial 'Permission denied'
	run -1 as_nobody cat "$MNT/s.json"
	run -0 as_nobody cat "$MNT/o.json"
	run -1 as_nobody touch "$MNT/new"
	assert_output --partial 'Permission denied'
	run -1 as_nobody chmod 666 "$MNT/o"
	assert_output --partial 'Operation not permitted'
	run -1 as_nobody chown 65534 "$MNT/o"
	# in its own directory: creates files it owns, with its umask
	run -0 as_nobody sh -c "umask 027 && echo n >'$MNT/mine/n' && mkdir '$MNT/mine/sub'"
	run -0 stat -c '%a %u %g' "$MNT/mine/n" "$MNT/mine/sub"
	assert_output $'640 65534 65534\n750 65534 65534'
	run -0 as_nobody chmod 600 "$MNT/mine/n"
	run -0 as_nobody mv "$MNT/mine/n" "$MNT/mine/m"
	run -0 as_nobody rm "$MNT/mine/m"
	# root reads everything
	run -0 cat "$MNT/s"
	assert_output secret
}

@test "directory mtime moves when an entry is added, removed or renamed; touch sets it" {
	mount_store
	mkdir -p "$MNT/d" "$MNT/e"
	touch -d '2001-02-03 04:05:06' "$MNT/d" "$MNT/e"
	run -0 stat -c %y "$MNT/d"
	assert_output --partial '2001-02-03 04:05:06'
	remount
	run -0 stat -c %y "$MNT/d"
	assert_output --partial '2001-02-03 04:05:06'
	local t
	t=$(stat -c %Y "$MNT/d")
	echo x >"$MNT/d/f"
	[ "$(stat -c %Y "$MNT/d")" -gt "$t" ]
	touch -d '2001-02-03 04:05:06' "$MNT/d"
	echo y >"$MNT/d/f"	# a write to an existing entry changes no entry
	[ "$(stat -c %Y "$MNT/d")" -eq "$t" ]
	mkdir "$MNT/d/sub"
	[ "$(stat -c %Y "$MNT/d")" -gt "$t" ]
	touch -d '2001-02-03 04:05:06' "$MNT/d"
	rm "$MNT/d/f"
	[ "$(stat -c %Y "$MNT/d")" -gt "$t" ]
	touch -d '2001-02-03 04:05:06' "$MNT/d"
	mv "$MNT/d/sub" "$MNT/e/sub"
	[ "$(stat -c %Y "$MNT/d")" -gt "$t" ]
	[ "$(stat -c %Y "$MNT/e")" -gt "$t" ]
	touch -d '2001-02-03 04:05:06' "$MNT/d"
	rmdir "$MNT/e/sub"
	[ "$(stat -c %Y "$MNT/d")" -eq "$t" ]
	[ "$(stat -c %Y "$MNT/e")" -gt "$t" ]
	# the root too
	touch -d '2001-02-03 04:05:06' "$MNT"
	echo z >"$MNT/g"
	[ "$(stat -c %Y "$MNT")" -gt "$t" ]
}

@test "cp -a, rsync -a and tar restore directory times; a second rsync -a between mounts has nothing to do" {
	mount_store
	local T=$BATS_TEST_TMPDIR
	mkdir -p "$MNT/a/b" "$MNT/c"
	echo 1 >"$MNT/a/b/f"
	echo 2 >"$MNT/c/g"
	touch -d '2001-01-01 00:00:01' "$MNT/a/b"
	touch -d '2002-01-01 00:00:02' "$MNT/a" "$MNT/c"
	cp -a "$MNT/." "$T/cp"
	rsync -a "$MNT/" "$T/rs/"
	tar -cf "$T/t.tar" -C "$MNT" .
	mkdir "$T/tar" && tar -xf "$T/t.tar" -C "$T/tar"
	dirtimes() { (cd "$1" && find . -mindepth 1 -type d -printf '%p %TY-%Tm-%Td %TT\n' | sort); }
	for d in cp rs tar; do
		diff <(dirtimes "$MNT" | sed 's/\.[0-9]*$//') <(dirtimes "$T/$d" | sed 's/\.[0-9]*$//')
	done
	run -0 dirtimes "$MNT"
	assert_line --partial './a/b 2001-01-01 00:00:01'
	# into another mount, and back out: times survive both ways
	mount_extra "$T/m2" "$T/store2"
	rsync -a "$MNT/" "$T/m2/"
	run -0 rsync -a --itemize-changes "$MNT/" "$T/m2/"
	assert_output ''
	diff <(dirtimes "$MNT") <(dirtimes "$T/m2")
	run -0 rsync -a --itemize-changes "$T/m2/" "$T/rs/"
	assert_output ''
}

# ctime_ns PATH: PATH's ctime in nanoseconds since the epoch.
ctime_ns() {
	stat -c %.9Z "$1" | tr -d .
}

@test "ctime moves on chmod, chown, write and rename; atime is mtime (noatime)" {
	mount_store
	echo v >"$MNT/f"
	touch -d '2001-01-01' "$MNT/f"
	# ctime in nanoseconds: each change is later than the one before, with
	# no sleep between them
	local c0 c1 c2 c3
	c0=$(ctime_ns "$MNT/f")
	[ "$(stat -c %Y "$MNT/f")" -lt "${c0:0:10}" ]	# utimens itself is a change
	chmod 600 "$MNT/f"
	c1=$(ctime_ns "$MNT/f")
	[ "$c1" -gt "$c0" ]
	chown 65534 "$MNT/f"
	c2=$(ctime_ns "$MNT/f")
	[ "$c2" -gt "$c1" ]
	mv "$MNT/f" "$MNT/g"
	c3=$(ctime_ns "$MNT/g")
	[ "$c3" -gt "$c2" ]
	echo w >>"$MNT/g"
	[ "$(ctime_ns "$MNT/g")" -gt "$c3" ]
	[ "$(stat -c %Z "$MNT/g")" -eq "$(stat -c %Y "$MNT/g")" ]
	# reads change nothing: atime shows mtime
	cat "$MNT/g" >/dev/null
	[ "$(stat -c %X "$MNT/g")" -eq "$(stat -c %Y "$MNT/g")" ]
	remount
	[ "$(stat -c %Z "$MNT/g")" -eq "$(stat -c %Y "$MNT/g")" ]
	run -0 stat -c '%a %u' "$MNT/g"
	assert_output '600 65534'
}

@test "offline: kvfs ls -l shows stored modes and owners; dump | load carries them; check verifies them" {
	mount_store
	local T=$BATS_TEST_TMPDIR
	mkdir "$MNT/d"
	echo v >"$MNT/d/f"
	echo w >"$MNT/g"
	chmod 600 "$MNT/d/f"
	chmod 700 "$MNT/d"
	chown 65534:65534 "$MNT/g"
	unmount_store
	run -0 kvfs ls -l "$STORE"
	assert_line --regexp '^drwx------ -  +object +-  d$'
	assert_line --regexp '^-rw-r--r-- 65534:65534 string +2  g$'
	run -0 kvfs ls -l "$STORE" /d
	assert_output --regexp '^-rw------- -  +string +2  f$'
	run -0 kvfs check "$STORE"
	kvfs dump "$STORE" >"$T/dump"
	run -0 grep -c '^attr ' "$T/dump"
	assert_output 4	# d, d/f, g and the root's mtime
	kvfs load "$T/loaded" <"$T/dump"
	run -0 kvfs ls -l "$T/loaded" /d
	assert_output --regexp '^-rw------- -  +string +2  f$'
	cmp "$T/dump" <(kvfs dump "$T/loaded")
	# a dump without the attr space (an older kvfs) still loads: all defaults
	local n
	n=$(grep -vc -e '^attr ' -e '^kvfs-dump' -e '^end ' "$T/dump")
	grep -v '^attr ' "$T/dump" | sed "s/^end .*/end $n/" >"$T/old"
	kvfs load "$T/old-store" <"$T/old"
	run -0 kvfs ls -l "$T/old-store" /d
	assert_output --regexp '^-rw-r--r-- -  +string +2  f$'
	run -0 kvfs check "$T/old-store"
	# an attribute record whose node is missing (g's data line taken out)
	n=$(grep -vc -e '^data 026700 ' -e '^kvfs-dump' -e '^end ' "$T/dump")
	grep -v '^data 026700 ' "$T/dump" | sed "s/^end .*/end $n/" >"$T/orphan"
	kvfs load "$T/orphan-store" <"$T/orphan"
	run -1 kvfs check "$T/orphan-store"
	assert_line --regexp '^check: 026700: attribute record of a node that does not exist$'
	assert_line --partial '1 problems'
	# a record that does not verify is refused by load
	sed 's/^\(attr 026700 01\)/\1ff/; s/^\(attr 026700 01ff\)../\1/' "$T/dump" >"$T/bad"
	! cmp -s "$T/dump" "$T/bad"
	run -1 kvfs load "$T/bad-store" <"$T/bad"
	assert_output --partial 'attribute record does not verify'
}

@test "a set-group-ID directory hands its group to new entries, and the bit to new directories" {
	open_tmpdir_to_others
	mount_store -o allow_other
	mkdir "$MNT/g"
	chown 0:65534 "$MNT/g"
	chmod 2777 "$MNT/g"
	mkdir "$MNT/g/sub"
	echo x >"$MNT/g/f"
	run -0 as_nobody sh -c "umask 022 && echo y >'$MNT/g/n'"
	remount -o allow_other
	run -0 stat -c '%n %a %u %g' "$MNT/g/sub" "$MNT/g/f" "$MNT/g/n"
	assert_line --index 0 "$MNT/g/sub 2755 0 65534"
	assert_line --index 1 "$MNT/g/f 644 0 65534"
	assert_line --index 2 "$MNT/g/n 644 65534 65534"
	# an unprivileged owner cannot give a file away
	run -1 as_nobody chown 0 "$MNT/g/n"
	assert_output --partial 'Operation not permitted'
}

# rsync sets a file's times, mode and type after it closed it, while the
# close's release may still hold the writer (async in the kernel): each
# must land in the store, not on a writer about to go (under ASan at load,
# tests/40 once restored a leaf with the time of the restore). The hook
# holds every release 600 ms between its commit and letting go.
@test "utimensat, chmod and a type set just after close, while its release runs, are kept" {
	KVFS_TEST_RELEASE_LAG_MS=600 mount_store
	touch -d '2020-05-06 07:08:09.123456789' "$BATS_TEST_TMPDIR/ref"
	printf -- '-17\n' >"$MNT/neg"
	touch -m -d '2020-05-06 07:08:09.123456789' "$MNT/neg"
	chmod 640 "$MNT/neg"
	setfattr -n user.kvfs.type -v integer "$MNT/neg"
	remount	# what the store holds, not what the kernel kept
	run -0 stat -c '%y %a' "$MNT/neg"
	assert_output "$(stat -c %y "$BATS_TEST_TMPDIR/ref") 640"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/neg"
	assert_output integer
}
