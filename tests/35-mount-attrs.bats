#!/usr/bin/env bats
# The mount's per-node attributes: name length limits, modes and owners
# kept across remounts (and enforced for other users with allow_other),
# directory times, ctime and atime.

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
