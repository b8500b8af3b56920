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
	if mountpoint -q "$MNT" 2>/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null || true
	fi
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
