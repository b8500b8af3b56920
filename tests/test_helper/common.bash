# tests/test_helper/common.bash - shared by every bats suite:
#   load 'test_helper/common'
# Loads bats-support and bats-assert, finds the kvfs binary, and gives each
# test its own store directory. Mount helpers are appended further down.

bats_require_minimum_version 1.5.0

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

# Debian's python3 (scripts/deps.sh), not a version manager's shim under
# /root that other users cannot run (as_nobody) and that costs a chain of
# bash scripts per call (scripts/run-tests.sh does the same).
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/\.pyenv/' | paste -sd:)
export PATH

# The binary under test: scripts/run-tests.sh exports KVFS_BIN.
KVFS_BIN=${KVFS_BIN:-$BATS_TEST_DIRNAME/../kvfs}

# kvfs ARGS... runs the binary under test (works with bats' `run`).
kvfs() {
	"$KVFS_BIN" "$@"
}

# A fresh store directory per test (not created: verbs that create it do).
# Under KVFS_TEST_BACKEND=etcd (make test-etcd) the store is a fresh prefix
# of the cluster KVFS_ETCD_URL names instead.
common_setup() {
	STORE=$BATS_TEST_TMPDIR/store
	if [ "${KVFS_TEST_BACKEND:-}" = etcd ]; then
		STORE=$KVFS_ETCD_URL/kvfs-bats/$$-${BATS_TEST_NUMBER:-0}-$RANDOM$RANDOM
	fi
	export STORE
	san_setup
}

# ---- sanitizer reports (the ASan and TSan passes) ----
# scripts/run-tests.sh sends every report of a sanitizer pass to files
# (log_path), since a test that expects a refusal (`run kvfs ...;
# [ "$status" -ne 0 ]`) would pass over one on stderr. san_setup gives the
# test's processes a directory of the test's own, $SAN_DIR, and puts the
# check after the file's teardown: a report there fails the test, whatever
# the test itself checked.
san_setup() {
	local opt
	[ -n "${KVFS_SAN_DIR:-}" ] || return 0
	SAN_DIR=$BATS_TEST_TMPDIR/sanitizer
	mkdir -p "$SAN_DIR" && chmod 1777 "$SAN_DIR"	# as_nobody's kvfs reports too
	# the last log_path in the options is the one that counts
	for opt in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
		[ -z "${!opt:-}" ] || export "$opt=${!opt}:log_path=$SAN_DIR/report"
	done
	san_wrap_teardown
}

# The check runs after every file's teardown, its own or bats' empty one,
# rather than in each: 44 files define one, and a check each must call is
# one a new file forgets. The file's teardown is renamed, and called first
# (its unmounts end the daemons, whose leak reports come at exit).
san_wrap_teardown() {
	! declare -F san_file_teardown >/dev/null || return 0
	eval "san_file_teardown() $(declare -f teardown | tail -n +2)"
	teardown() {
		local status=0
		san_file_teardown || status=$?
		san_check || status=1
		return "$status"
	}
}

# san_check: fails when this test's processes wrote a sanitizer report,
# and prints each once (a report shown is kept as seen.*, still failing).
san_check() {
	local r status=0
	[ -n "${SAN_DIR:-}" ] || return 0
	for r in "$SAN_DIR"/*; do
		[ -f "$r" ] || continue
		status=1
		[ "${r##*/seen.}" = "$r" ] || continue
		echo "sanitizer report ${r##*/} of this test's processes:" >&2
		cat "$r" >&2
		mv "$r" "$SAN_DIR/seen.${r##*/}"
	done
	return "$status"
}

# is_sanitized: the kvfs under test is an ASan or TSan build (the asan and
# tsan passes set KVFS_ASAN or KVFS_TSAN): a test whose volume only makes
# a sanitizer slower takes a smaller size there, the same path.
is_sanitized() {
	[ -n "${KVFS_ASAN:-}${KVFS_TSAN:-}" ]
}

# True under make test-etcd.
is_etcd() {
	[ "${KVFS_TEST_BACKEND:-}" = etcd ]
}

# skip_on_etcd WHY: skips the test under make test-etcd (KVFS_TEST_BACKEND=etcd),
# for a test of something only the LMDB backend has (its files, mdb tools,
# hot copy, file sizes); WHY says what.
skip_on_etcd() {
	if [ "${KVFS_TEST_BACKEND:-}" = etcd ]; then
		skip "not on etcd: $1"
	fi
}

# A test file that defines its own setup() should call common_setup in it.
setup() {
	common_setup
}

# assert_file_bytes FILE EXPECTED_PRINTF_FORMAT [ARGS...]
# Fails unless FILE holds exactly the bytes printf would produce.
assert_file_bytes() {
	local file=$1
	shift
	# shellcheck disable=SC2059
	printf "$@" >"$BATS_TEST_TMPDIR/expected.bytes"
	if ! cmp "$BATS_TEST_TMPDIR/expected.bytes" "$file"; then
		echo "expected: $(od -An -c "$BATS_TEST_TMPDIR/expected.bytes")" >&2
		echo "actual:   $(od -An -c "$file")" >&2
		return 1
	fi
}

# ---- mount helpers (owned by the fs engineer; append below) ----

# mount_store [MOUNT OPTIONS...]
# Mounts a fresh store ($STORE, created) at $BATS_TEST_TMPDIR/mnt in the
# foreground, in the background of the test; sets MNT, MOUNT_PID, MOUNT_LOG.
# Fails (with the daemon's log) when the mount does not appear within 10 s.
# KVFS_MOUNT_OPTS (e.g. entry_timeout=0,attr_timeout=0: make test-nocache)
# is passed to every mount_store and mount_extra as one more -o list, and
# so is KVFS_TRANSPORT's (mount_transport), both before the test's own.
mount_store() {
	MNT=$BATS_TEST_TMPDIR/mnt
	MOUNT_LOG=$BATS_TEST_TMPDIR/mount.log
	mkdir -p "$MNT"
	"$KVFS_BIN" mount -f --create ${KVFS_MOUNT_OPTS:+-o "$KVFS_MOUNT_OPTS"} $(mount_transport) \
		"$@" "$STORE" "$MNT" >>"$MOUNT_LOG" 2>&1 3>&- &
	MOUNT_PID=$!
	export MNT MOUNT_PID MOUNT_LOG
	local i
	for ((i = 0; i < 500; i++)); do
		mountpoint -q "$MNT" && return 0
		if ! kill -0 "$MOUNT_PID" 2>/dev/null; then
			echo "mount_store: kvfs mount exited before mounting; log:" >&2
			cat "$MOUNT_LOG" >&2
			MOUNT_PID=
			return 1
		fi
		sleep 0.02
	done
	echo "mount_store: $MNT not mounted after 10 s; log:" >&2
	cat "$MOUNT_LOG" >&2
	return 1
}

# mount_transport: the -o a pass's KVFS_TRANSPORT forces on the mount
# helpers (scripts/test-all.sh): fuse (-o no_io_uring) or io_uring (-o
# io_uring: the mount is refused when the kernel has it off); unset or
# empty, nothing: kvfs's default.
mount_transport() {
	case ${KVFS_TRANSPORT:-} in
	fuse) echo -o no_io_uring ;;
	io_uring) echo -o io_uring ;;
	'') ;;
	*) echo "KVFS_TRANSPORT=$KVFS_TRANSPORT: give fuse or io_uring" >&2; echo -o "$KVFS_TRANSPORT" ;;
	esac
}

# Waits up to $2 tenths of a second for process $1 to end; fails if it does not.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.02
	done
	return 1
}

# assert_log_clean [LOG]: fails when a daemon's log (default $MOUNT_LOG)
# shows a sanitizer report (ASan, UBSan, or TSan under `make tsan`), or
# when any process of the test wrote one to its file (san_check: the
# sanitizer passes send them there).
assert_log_clean() {
	local log=${1:-$MOUNT_LOG} status=0
	if grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$log" >/dev/null 2>&1; then
		echo "sanitizer report in the kvfs log $log:" >&2
		cat "$log" >&2
		status=1
	fi
	san_check || status=1
	return "$status"
}

# daemon_stop PID DIR LOG: unmounts DIR (lazily if busy), waits for the
# daemon PID to exit (killing it after 10 s), and fails on a non-zero exit
# or a sanitizer report in LOG. Every mount helper below ends through it.
daemon_stop() {
	local pid=$1 dir=$2 log=$3 status=0
	if mountpoint -q "$dir"; then
		fusermount3 -u "$dir" 2>/dev/null || fusermount3 -uz "$dir"
	fi
	if ! wait_gone "$pid" 100; then
		echo "kvfs at $dir did not exit after unmounting; killing it" >&2
		# where each of its threads waits, for whoever reads the failure
		if command -v gdb >/dev/null; then
			timeout 20 gdb -batch -p "$pid" -ex 'thread apply all bt 12' 2>/dev/null |
				grep -E '^(Thread|#[0-9]+ )' | sed 's/^/  /' >&2
		fi
		kill -9 "$pid" 2>/dev/null
		# a killed daemon's mount answers ENOTCONN, which mountpoint -q
		# takes for no mount: detach it whatever mountpoint says
		fusermount3 -uz "$dir" 2>/dev/null || true
		return 1
	fi
	wait "$pid" || status=$?
	assert_log_clean "$log" || return 1
	if [ "$status" -ne 0 ]; then
		echo "kvfs at $dir exited with status $status; log:" >&2
		cat "$log" >&2
		return 1
	fi
}

# unmount_store: unmounts $MNT (lazily if busy), waits for the daemon to exit
# (killing it after 10 s), and fails on a non-zero exit or a sanitizer report.
unmount_store() {
	[ -n "${MOUNT_PID:-}" ] || return 0
	local pid=$MOUNT_PID
	MOUNT_PID=
	daemon_stop "$pid" "$MNT" "$MOUNT_LOG"
}

# mount_extra DIR STORE: mounts STORE (created when missing) at DIR beside
# $MNT, in the foreground in the background of the test; its log is
# DIR.log. mount_teardown unmounts every extra mount through daemon_stop.
mount_extra() {
	mkdir -p "$1"
	"$KVFS_BIN" mount -f --create ${KVFS_MOUNT_OPTS:+-o "$KVFS_MOUNT_OPTS"} $(mount_transport) \
		"$2" "$1" >>"$1.log" 2>&1 3>&- &
	EXTRA_PIDS+=("$!")
	EXTRA_MNTS+=("$1")
	eventually 10 mountpoint -q "$1"
}

# Unmounts the extra mounts, newest first; fails if any daemon ended badly.
unmount_extras() {
	local i pid status=0
	for ((i = ${#EXTRA_PIDS[@]} - 1; i >= 0; i--)); do
		pid=${EXTRA_PIDS[$i]}
		[ -n "$pid" ] || continue
		EXTRA_PIDS[$i]=
		daemon_stop "$pid" "${EXTRA_MNTS[$i]}" "${EXTRA_MNTS[$i]}.log" || status=1
	done
	return "$status"
}

# remount [OPTS...]: unmounts $MNT and mounts the same store again.
remount() {
	unmount_store
	mount_store "$@"
}

# as_nobody CMD...: runs CMD as the unprivileged user 65534 (no groups).
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# Lets other users reach $BATS_TEST_TMPDIR (the test's own temporary dirs).
open_tmpdir_to_others() {
	local d=$BATS_TEST_TMPDIR
	while [ "$d" != / ] && [ "$d" != /tmp ]; do
		chmod o+x "$d"
		d=$(dirname "$d")
	done
}

# A test file with mounts uses these as its setup and teardown.
mount_setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	mount_store
}

mount_teardown() {
	local status=0
	unmount_extras || status=1
	unmount_store || status=1
	return "$status"
}

# eventually SECONDS CMD...: retries CMD every 0.1 s until it succeeds.
eventually() {
	local tries=$(($1 * 10)) i
	shift
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# in_time START SECONDS: true while fewer than SECONDS have passed since
# START (date +%s%N). A check that must come before a TTL's deadline proves
# something only when it did: a test asks this after it, and on a machine
# too slow for the deadline tries again with a longer TTL.
in_time() {
	[ $(($(date +%s%N) - $1)) -lt $(($2 * 1000000000)) ]
}

# past START SECONDS: the opposite, as a command of its own (bats does not
# fail a test on a `!` or on a group at the end of an || list).
past() {
	! in_time "$@"
}

# err PATH: the user.kvfs.error of PATH (fails when it has none).
err() {
	getfattr --absolute-names --only-values -n user.kvfs.error "$1"
}

# log_name MNT: the name of a detached daemon's default log file (without
# syslog) for the mount at MNT, its resolved path as systemd-escape --path
# spells it (fs/mount.c, log_name): "/a/mnt" is "a-mnt.log", "-" is "\x2d".
log_name() {
	python3 -c '
import os, sys
p, out = os.path.realpath(sys.argv[1]).strip("/").encode(), ""
for i, c in enumerate(p):
    ch = chr(c)
    if ch == "/":
        out += "-"
    elif (c < 128 and ch.isalnum()) or ch in ":_" or (ch == "." and i > 0):
        out += ch
    else:
        out += "\\x%02x" % c
print((out or "-") + ".log")' "$1"
}

# The store's generation: it moves by one per commit, by any process.
gen() {
	kvfs info "$STORE" | awk '/^generation:/ { print $2 }'
}

# mount_position MNT: the generation (etcd: revision) up to which the mount
# has taken in every commit, from its root's user.kvfs.stats
mount_position() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$1" | awk '$1 == "position" { print $2 }'
}

# mount_reached GEN MNT...: every mount's position is GEN or past it
mount_reached() {
	local gen=$1 m p
	shift
	for m in "$@"; do
		p=$(mount_position "$m") && [ "${p:-0}" -ge "$gen" ] || return 1
	done
}

# store_gen: the position a mount of $STORE reaches once it has taken in
# every commit of the store so far. On LMDB that is the generation; on etcd
# the revision of the store's newest key (a commit puts its values, or a
# removal's delete stamp), read with etcdctl, since kvfs info's generation
# there is the cluster's revision: other stores' commits move it, and their
# leases' ends, which a mount's watch of this store never brings. Waiting
# for that, a clean-clone etcd pass once waited 10 s in vain in tests/74,
# another test's store having lost keys to a lease right after the CLI's
# put (docs/ETCD.md section 8).
store_gen() {
	if is_etcd && [[ $STORE == "$KVFS_ETCD_URL"/* ]]; then
		ETCDCTL_API=3 etcdctl --endpoints="${KVFS_ETCD_URL#etcd://}" get --prefix \
			"${STORE#"$KVFS_ETCD_URL"/}" --sort-by=MODIFY --order=DESCEND --limit=1 \
			--keys-only -w json | jq -e '.kvs[0].mod_revision'
	else
		gen
	fi
}

# write_held TEXT: writes TEXT and a newline through descriptor 5, which
# the test holds open on a file of the mount, from a tool of its own (cat)
# whose exit status and message `run` keeps; the tool's close is the
# file's first, the test's own comes after (exec 5>&-).
write_held() {
	printf '%s\n' "$1" >"$BATS_TEST_TMPDIR/held-data"
	run sh -c 'exec cat "$0" >&5' "$BATS_TEST_TMPDIR/held-data"
}

# export_is PATH JSON: kvfs export of PATH in $STORE is JSON (compact form).
export_is() {
	run -0 kvfs export "$STORE" "$1"
	run -0 jq -c . <<<"$output"
	assert_output "$2"
}

# caught_up [MNT]: waits (bounded) until the mount ($MNT) has taken in every
# commit of $STORE so far: after another process's write (the CLI, another
# mount), before reading through the mount what that write changed; the
# mount notices such commits within a watcher tick (150 ms), not at once.
caught_up() {
	eventually 10 mount_reached "$(store_gen)" "${1:-$MNT}"
}

# peak_kib CMD...: runs CMD, prints the largest peak resident size (KiB) of
# its processes (a shell pipeline's too).
peak_kib() {
	python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
if r.returncode: sys.exit(r.returncode)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

# For suites that kill their daemon: crash_teardown as teardown (a mount
# still served is unmounted as usual, a dead one cleared); kill_daemon:
# SIGKILL, then the dead mount is cleared (as `kvfs umount` does).
crash_teardown() {
	if [ -n "${MOUNT_PID:-}" ] && grep -qs " $MNT " /proc/mounts; then
		mount_teardown
	fi
	grep -qs " $MNT " /proc/mounts && fusermount3 -uz "$MNT"
	true
}

kill_daemon() {
	kill -KILL "$MOUNT_PID"
	wait_gone "$MOUNT_PID" 100
	MOUNT_PID=
	fusermount3 -uz "$MNT"
}

# shapes ROOT: under ROOT/n, directories whose nlink a listing must give
# right: 40 documents of leaves only (2), a subdirectory (3), an empty
# object below (3), two empty containers (4), a subdirectory removed by
# rm -r (2: its entry stays behind on etcd), one emptied by rm (3: empty
# now), an empty directory (2), an array of arrays (4), an empty array
# rewritten as a number (2: its entry stays), a subdirectory that lost
# its first file (3: its entry's hint is gone).
shapes() {
	local r=$1/n i
	mkdir "$r"
	for ((i = 0; i < 40; i++)); do
		echo "{\"a\":$i,\"b\":\"x\"}" >"$r/flat$i.json"
	done
	mkdir "$r/sub" "$r/sub/inner"
	mkdir "$r/esub" && echo '{}' >"$r/esub/e.json"
	echo '{"k":[],"l":{},"m":1}' >"$r/marks.json"
	mkdir "$r/gone" "$r/gone/g" && echo 1 >"$r/gone/g/x" && echo 2 >"$r/gone/y"
	rm -r "$r/gone/g"
	mkdir "$r/emptied" "$r/emptied/g" && echo 1 >"$r/emptied/g/x" && rm "$r/emptied/g/x"
	mkdir "$r/bare"
	echo '[[1],[2],3]' >"$r/arr.json"
	echo '{"k":[],"m":1}' >"$r/turned.json" && echo '{"k":5,"m":1}' >"$r/turned.json"
	mkdir "$r/hg" "$r/hg/g" && echo 1 >"$r/hg/g/a" && echo 2 >"$r/hg/g/b" && rm "$r/hg/g/a"
}
