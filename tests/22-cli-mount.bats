#!/usr/bin/env bats
# The mount and umount verbs and the mount.kvfs helper against a real FUSE
# mount, and the offline verbs working on a store while it is mounted.

# bats file_tags=cli,backends

load 'test_helper/common'

setup() {
	common_setup
	MNT=$BATS_TEST_TMPDIR/mnt
	mkdir "$MNT"
}

teardown() {
	local m
	for m in "$MNT" "$BATS_TEST_TMPDIR"/{a,b,d*}/mnt; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
		fi
	done
}

@test "kvfs mount serves the store and returns; kvfs umount ends it" {
	echo '{"users":{"42":{"name":"Bob"}}}' | kvfs import "$STORE" / -
	run -0 kvfs mount "$STORE" "$MNT"
	mountpoint -q "$MNT"
	run -0 cat "$MNT/users/42/name"
	assert_output 'Bob'
	run -0 kvfs umount "$MNT"
	run -32 mountpoint -q "$MNT"
}

@test "the offline verbs work on a mounted store, in both directions" {
	echo '{"a":"one"}' | kvfs import "$STORE" / -
	kvfs mount "$STORE" "$MNT"
	echo two >"$MNT/b"
	run -0 kvfs get "$STORE" /b
	assert_output 'two'
	kvfs put "$STORE" /c three
	run -0 cat "$MNT/c"
	assert_output 'three'
	if is_etcd; then	# no hot copy of an etcd store: its portable copy is a dump
		kvfs dump "$STORE" | kvfs load --create "$BATS_TEST_TMPDIR/copy"
	else
		run -0 kvfs backup "$STORE" "$BATS_TEST_TMPDIR/copy"
	fi
	kvfs umount "$MNT"
	run -0 kvfs export --compact "$BATS_TEST_TMPDIR/copy"
	assert_output '{"a":"one","b":"two","c":"three"}'
}

@test "kvfs mount -o ro refuses writes; other -o options reach FUSE" {
	kvfs put --create "$STORE" /a 1
	run -0 kvfs mount -o ro,noatime "$STORE" "$MNT"
	run -1 bash -c "echo 2 >'$MNT/a'"
	assert_output --partial 'Read-only file system'
	run -0 grep " $MNT fuse" /proc/mounts
	assert_output --regexp '[ ,]ro[ ,]'
	run -0 kvfs get "$STORE" /a
	assert_output '1'
}

@test "kvfs mount of a missing store fails unless --create" {
	run -1 kvfs mount "$STORE" "$MNT"
	assert_output --regexp "$STORE"
	run -32 mountpoint -q "$MNT"
	run -0 kvfs mount --create "$STORE" "$MNT"
	run -0 ls -A "$MNT"
	assert_output ''
}

@test "mount.kvfs mounts with mount(8)'s argument order and options" {
	kvfs put --create "$STORE" /a 1
	run -0 env KVFS_BIN="$KVFS_BIN" sh "$BATS_TEST_DIRNAME/../scripts/mount.kvfs" \
		"$STORE" "$MNT" -o rw,defaults,noauto,_netdev,ro
	mountpoint -q "$MNT"
	run -0 cat "$MNT/a"
	assert_output '1'
	run -1 bash -c "echo 2 >'$MNT/a'"
}

# log_of MNT: where the daemon of the mount at MNT logs, as user.kvfs.stats says
log_of() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$1" | sed -n 's/^log //p'
}

@test "without syslog, mounts whose mountpoints share a name log to files of their own, which user.kvfs.stats names" {
	if [ -e /dev/log ]; then
		skip "this machine has syslog (/dev/log): messages go there"
	fi
	local run=$BATS_TEST_TMPDIR/run a=$BATS_TEST_TMPDIR/a/mnt b=$BATS_TEST_TMPDIR/b/mnt
	mkdir -m 0700 "$run"
	mkdir -p "$a" "$b"
	kvfs put --create "$STORE" /x 1
	# stderr a pipe: neither a file the daemon keeps nor a terminal it names the file on
	XDG_RUNTIME_DIR=$run kvfs mount "$STORE" "$a" 2>&1 | cat
	XDG_RUNTIME_DIR=$run kvfs mount "$STORE" "$b" 2>&1 | cat
	run -0 ls "$run/kvfs"
	assert_output "$(log_name "$a")"$'\n'"$(log_name "$b")"
	run -0 log_of "$a"
	assert_output "$run/kvfs/$(log_name "$a")"
	run -0 log_of "$b"
	assert_output "$run/kvfs/$(log_name "$b")"
	if command -v systemd-escape >/dev/null; then
		[ "$(log_name "$a")" = "$(systemd-escape --path "$(realpath "$a")").log" ]
	fi
	# a path whose escape passes a file name's length: its start, then a hash of the whole
	local c=$BATS_TEST_TMPDIR/$(printf 'd%.0s' {1..230})/mnt name
	mkdir -p "$c"
	XDG_RUNTIME_DIR=$run kvfs mount "$STORE" "$c" 2>&1 | cat
	run -0 log_of "$c"
	name=$(log_name "$c")
	[[ $output == "$run/kvfs/${name:0:200}-"* ]]
	assert_output --regexp '-[0-9a-f]{16}\.log$'
	[ -f "$output" ]
	run -0 kvfs umount "$c"
	run -0 kvfs umount "$a"
	run -0 kvfs umount "$b"
	run -0 cat "$run/kvfs/$(log_name "$a")"
	assert_output --regexp "serving .* at $a"
	refute_output --partial "at $b"
	run -0 cat "$run/kvfs/$(log_name "$b")"
	assert_output --regexp "serving .* at $b"
	refute_output --partial "at $a"
}
