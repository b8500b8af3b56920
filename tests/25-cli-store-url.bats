#!/usr/bin/env bats
# Store names: a directory is an LMDB store, a URL (etcd://HOST:PORT/PREFIX)
# is passed through unchanged by every verb and by mount, never taken for a
# directory (nothing created, stat'ed or resolved under its name). Nothing
# listens on port 1, so with or without the etcd backend built in, a verb
# on etcd://127.0.0.1:1/p fails, saying which store, and leaves no trace.

# bats file_tags=cli,backends

load 'test_helper/common'

URL=etcd://127.0.0.1:1/team/docs

# Runs `kvfs ARGS...` in a directory holding the path the URL would name if
# it were taken for one (etcd:/127.0.0.1:1/team/): it must fail, name the
# URL, not speak of a missing path, and create nothing there.
fails_cleanly() {
	local here=$BATS_TEST_TMPDIR/cwd
	mkdir -p "$here/etcd:/127.0.0.1:1/team"
	run ! bash -c 'cd "$1" && shift && "$@" </dev/null' _ "$here" "$KVFS_BIN" "$@"
	assert_output --partial "$URL"
	refute_output --partial 'no store at'
	refute_output --partial 'No such file or directory'
	run -0 ls -A "$here/etcd:/127.0.0.1:1/team"
	assert_output ''
}

@test "every offline verb passes an etcd:// store through and fails clearly without a trace" {
	fails_cleanly get "$URL" /a
	fails_cleanly put --create "$URL" /a 1
	fails_cleanly ls "$URL"
	fails_cleanly rm "$URL" /a
	fails_cleanly mkdir --create "$URL" /d
	printf '{"x":1}' >"$BATS_TEST_TMPDIR/doc.json"
	fails_cleanly import --create "$URL" /doc "$BATS_TEST_TMPDIR/doc.json"
	fails_cleanly export "$URL"
	fails_cleanly dump "$URL"
	fails_cleanly load --create "$URL"
	fails_cleanly check "$URL"
	fails_cleanly info "$URL"
	fails_cleanly table show "$URL" /t
	fails_cleanly index list "$URL" /t
	fails_cleanly find "$URL" /t name x
}

@test "kvfs backup of an etcd:// store creates no backup directory" {
	fails_cleanly backup "$URL" "$BATS_TEST_TMPDIR/copy"
	[ ! -e "$BATS_TEST_TMPDIR/copy" ]
}

@test "kvfs mount of an etcd:// store fails clearly and mounts nothing" {
	mkdir -p "$BATS_TEST_TMPDIR/mnt"
	fails_cleanly mount -f "$URL" "$BATS_TEST_TMPDIR/mnt"
	run ! grep -F " $BATS_TEST_TMPDIR/mnt " /proc/mounts
}

@test "without the etcd backend built in, the message says so" {
	run ! kvfs info "$URL"
	if [[ $output != *"not built into this kvfs"* ]]; then
		# Built in: then the failure is the cluster's, not a directory's.
		refute_output --partial 'no store at'
		refute_output --partial 'No such file or directory'
	fi
}

@test "an unknown scheme is refused; a path that merely holds :// is a directory" {
	run -1 kvfs ls gopher://example.org/x
	assert_output --partial 'unknown kind of store'
	mkdir -p "$BATS_TEST_TMPDIR/w/odd:"
	cd "$BATS_TEST_TMPDIR/w"
	run -0 kvfs put --create ./odd://name /k 1
	[ -f "$BATS_TEST_TMPDIR/w/odd:/name/data.mdb" ]
	run -0 kvfs get ./odd://name /k
	assert_output '1'
	run -0 kvfs info ./odd://name
	assert_line --regexp '^used: +[0-9]+ bytes'
}

@test "libcurl is loaded only for etcd stores: without it, etcd:// names it and LMDB works" {
	local lib
	lib=$(ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')
	[ -n "$lib" ] || skip "libcurl.so.4 is not installed"
	# kvfs itself does not link it (lib/etcd/etcd_dl.c loads it with dlopen)
	run -0 ldd "$KVFS_BIN"
	refute_output --partial 'libcurl'
	# a private mount namespace hides the library from this one command
	run -1 unshare -m sh -c "mount --bind /dev/null '$lib' && \
		'$KVFS_BIN' put --create '$BATS_TEST_TMPDIR/s' /k 1 && \
		'$KVFS_BIN' get '$BATS_TEST_TMPDIR/s' /k && \
		'$KVFS_BIN' ls etcd://127.0.0.1:1/x /"
	assert_line '1'
	assert_output --partial 'etcd://127.0.0.1:1/x: the etcd backend needs libcurl.so.4'
}
