#!/usr/bin/env bats
# tests/47-mount-io-uring.bats - the io_uring transport (fs/uring.c): with
# the fuse module's enable_uring on, `-o io_uring` serves requests through
# the rings (user.kvfs.stats says "transport io_uring"; the daemon logs
# how many requests the rings served when it unmounts)
# while the shell's tools work as over /dev/fuse; with it off the mount is
# refused naming the parameter; `-o no_io_uring` keeps /dev/fuse; without
# either, the rings when the parameter is on, else /dev/fuse. Each test
# turns the parameter on and puts the old value back in teardown; without
# root or without the parameter (a kernel before 6.14) they skip. The whole
# of tests/30 and 31 over the rings: KVFS_MOUNT_OPTS=io_uring with the
# parameter on (docs in fs/uring.c's opening comment).

# bats file_tags=mount,io_uring

load 'test_helper/common'

URING_PARAM=/sys/module/fuse/parameters/enable_uring

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	[ -w "$URING_PARAM" ] || skip "needs root and a kernel with FUSE over io_uring ($URING_PARAM)"
	URING_OLD=$(cat "$URING_PARAM")
	echo Y >"$URING_PARAM"
}

teardown() {
	local status=0
	mount_teardown || status=1
	[ -z "${URING_OLD:-}" ] || echo "$URING_OLD" >"$URING_PARAM"
	return "$status"
}

# stat_of NAME: the value of NAME in $MNT's user.kvfs.stats
stat_of() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$MNT" |
		awk -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }'
}

transport_is() {
	[ "$(stat_of transport)" = "$1" ]
}

# not_in_uring_pass: skips a test that turns the parameter off when the
# pass mounts every file over the rings (KVFS_TRANSPORT=io_uring): the
# files beside it (bats -j) would have their mounts refused meanwhile.
# Such tests are tagged plain: make test runs them in the plain pass, over
# /dev/fuse (the asan pass mounts over the rings).
not_in_uring_pass() {
	[ "${KVFS_TRANSPORT:-}" != io_uring ] ||
		skip "turns $URING_PARAM off, which would refuse the mounts of the files beside it in a pass over io_uring"
}

@test "-o io_uring: ls, cat, echo, cp and rm are served through the rings" {
	mount_store -o io_uring
	eventually 5 transport_is io_uring
	echo hello >"$MNT/a"
	mkdir "$MNT/d"
	echo 42 >"$MNT/d/n"
	run -0 ls "$MNT"
	assert_output $'a\nd'
	run -0 cat "$MNT/a" "$MNT/d/n"
	assert_output $'hello\n42'
	# writes and reads of more than one payload (1 MiB each way)
	head -c 3000000 /dev/urandom >"$BATS_TEST_TMPDIR/big"
	cp "$BATS_TEST_TMPDIR/big" "$MNT/big"
	cmp "$BATS_TEST_TMPDIR/big" "$MNT/big"
	cp -a "$MNT/d" "$MNT/d2"
	run -0 cat "$MNT/d2/n"
	assert_output 42
	rm "$MNT/a"
	rm -r "$MNT/d"
	run -0 ls "$MNT"
	assert_output $'big\nd2'
	run -0 kvfs get "$STORE" /d2/n
	assert_output 42
	transport_is io_uring
	unmount_store
	# every request above went through the rings (a few dozen at least)
	run -0 sed -n 's/.*io_uring: \([0-9]*\) requests served through the rings.*/\1/p' "$MOUNT_LOG"
	[ "$output" -ge 40 ]
}

# bats test_tags=plain
@test "-o io_uring is refused, naming the parameter, when the kernel has it off" {
	not_in_uring_pass
	echo N >"$URING_PARAM"
	mkdir "$BATS_TEST_TMPDIR/m2"
	run -1 kvfs mount --create -o io_uring "$STORE" "$BATS_TEST_TMPDIR/m2"
	assert_output --partial "$URING_PARAM is N"
	run ! mountpoint -q "$BATS_TEST_TMPDIR/m2"
}

@test "-o no_io_uring and the last of the two given keep /dev/fuse" {
	mount_store -o io_uring,no_io_uring
	echo x >"$MNT/a"
	run -0 cat "$MNT/a"
	assert_output x
	transport_is dev_fuse
	remount -o no_io_uring,io_uring
	eventually 5 transport_is io_uring
}

# Without either option kvfs serves through the rings when the fuse module
# does (the parameter Y), and through /dev/fuse, saying nothing, when it
# has them off (KVFS_TRANSPORT emptied: the mount helpers add no option).
@test "without either option: the rings when the kernel serves them" {
	KVFS_TRANSPORT= mount_store
	echo x >"$MNT/a"
	run -0 cat "$MNT/a"
	assert_output x
	eventually 5 transport_is io_uring
}

# bats test_tags=plain
@test "without either option and the parameter off: /dev/fuse, and no complaint" {
	not_in_uring_pass
	echo N >"$URING_PARAM"
	KVFS_TRANSPORT= mount_store
	echo x >"$MNT/a"
	run -0 cat "$MNT/a"
	assert_output x
	transport_is dev_fuse
	run ! grep -i 'io_uring' "$MOUNT_LOG"
}

# The benchmarks' floor (scripts/fuse-floor.c) links fs/uring.c alone and
# serves through the same rings: the make bench column "floor-uring".
@test "the benchmarks' floor serves through the same rings as kvfs" {
	local floor=${KVFS_FLOOR:-$BATS_TEST_DIRNAME/../build/fuse-floor} m=$BATS_TEST_TMPDIR/floor
	[ -x "$floor" ] || skip "no $floor (make floor builds it)"
	mkdir "$m"
	"$floor" -f -o io_uring "$m" 2>"$m.log" &
	EXTRA_PIDS+=($!) EXTRA_MNTS+=("$m")
	eventually 5 mountpoint -q "$m"
	floor_uring() { getfattr --only-values -n user.kvfs.stats "$m" | grep -qx 'transport io_uring'; }
	eventually 5 floor_uring
	mkdir "$m/d"
	echo 12 >"$m/d/a"
	run -0 stat -c %s "$m/d/a"
	assert_output 3
	run -0 ls "$m/d"
	assert_output a
	unmount_extras
	run -0 sed -n 's/.*io_uring: \([0-9]*\) requests served through the rings.*/\1/p' "$m.log"
	[ "$output" -ge 5 ]
}
