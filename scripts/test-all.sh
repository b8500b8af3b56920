#!/usr/bin/env bash
# make test: every pass of the test suite, one after the other, each with
# its wall time and its "N passed, N failed", then one line summing them
# (the line CI reads). Which pass runs what, and why, is in tests/README.md.
# Usage: scripts/test-all.sh [PASS...]   (default: every pass, in the order
# below; make asan, make tsan, make test-etcd and make test-nocache run one)
# The builds must exist: make test builds build/, build-asan/, build-tsan/.
set -u
cd "$(dirname "$0")/.." || exit 2
log=$(mktemp "${TMPDIR:-/tmp}/kvfs-test.XXXXXX")

# plain: the optimized build that is installed, on LMDB: the tests tagged
# "plain" (memory peaks a sanitizer's shadow memory would hide, hundreds of
# megabytes that a sanitizer only makes slower), "smoke" (the mount's
# reading and writing suites, once more on this build) and "covered" (files
# whose every line of fs/, model/, store/ and lib/ the asan pass's other
# tests reach: scripts/coverage-by-file.sh), and its unit programs.
pass_plain() {
	KVFS_BIN=$PWD/kvfs KVFS_TAGS='plain;smoke;covered' bash scripts/run-tests.sh build
}

# asan: the ASan+UBSan build, on LMDB, every test tagged none of "plain",
# "covered" (the plain pass runs those: the tests left reach every line
# they reach) and "etcd", its unit programs, and the etcd suites tagged
# "asan" with their C programs built with ASan too (80: the gateway
# client's program and calls; 82: the program that runs every operation of
# the etcd backend, less its two volume tests, which the etcd pass runs),
# each on a cluster of its own: so the etcd client and backend are checked
# for memory errors.
pass_asan() {
	KVFS_BIN=$PWD/build-asan/kvfs KVFS_ASAN=1 KVFS_TAGS='!plain,!covered,!etcd;etcd,asan' \
		KVFS_ETCD_TEST=$PWD/build-asan/etcd/test_etcd_client \
		KVFS_ETCD_STORE_TEST=$PWD/build-asan/etcd/test_etcd_store \
		KVFS_ETCD_STORE_SKIP='test_many_guards test_big_value' \
		bash scripts/run-tests.sh build-asan
}

# etcd: (KVFS_ETCD_JOBS files at once, default 2: three took the pass
# from 863 s to 919 s in a clean-clone run of 3115d05, every test slower by
# half, for it was already using the CPUs with the clusters' members) the
# optimized build with every store on a 3-member etcd cluster
# (two clusters, one file on each at a time: scripts/test-etcd.sh): the
# suites tagged "backends", and every etcd suite (80 and 82 with their
# optimized programs, whole). Their time is volume and round trips (big values in chunks,
# listings of thousands of directories, kills mid-commit), which a
# sanitizer only slows: measured under ASan on a loaded machine, 83 and 84
# took over 15 minutes each, and 24-import-big over 3 on etcd.
pass_etcd() {
	if ! command -v etcd >/dev/null || ! command -v etcdctl >/dev/null; then
		echo "not ok - etcd is not installed (scripts/deps.sh installs it)"
		echo "0 passed, 1 failed"
		return 1
	fi
	KVFS_BIN=$PWD/kvfs KVFS_TAGS='backends;etcd,!partition' KVFS_JOBS=${KVFS_ETCD_JOBS:-2} \
		bash scripts/test-etcd.sh
}

# partition: tests/90 alone (make test-partition): three etcd members and
# two kvfs hosts as network namespaces of its own, cut, split and slowed
# while both hosts write. Its time is waiting on the network and on the
# refusals of the cut-off side, not CPU, so make test runs it beside the
# asan pass (which needs the CPUs) rather than after it.
pass_partition() {
	KVFS_BIN=$PWD/kvfs KVFS_SUITES=tests/90-etcd-partition.bats KVFS_TAGS=partition \
		bash scripts/run-tests.sh none
}

# tsan: the ThreadSanitizer build on the suites tagged "threads", those
# whose tests set the daemon's threads against each other (readers beside
# writers, other processes' commits and the watcher, the invalidation
# worker, the commit queue and the touch queue, several writers at once,
# the TTL reaper), with the kernel's name and attribute caches off, so that
# every lookup and getattr reaches those threads too (a report in a
# daemon's log fails the test). Every mount suite runs under TSan with
# `KVFS_TSAN_TAGS='mount,!plain' make tsan`; CI leaves the others to the asan pass.
pass_tsan() {
	KVFS_BIN=$PWD/build-tsan/kvfs KVFS_TSAN=1 KVFS_TAGS=${KVFS_TSAN_TAGS:-threads,!plain} \
		KVFS_MOUNT_OPTS=entry_timeout=0,attr_timeout=0 bash scripts/run-tests.sh none
}

# nocache: the mount suites with the caches off on the optimized build
# (make test-nocache; make test runs them so under TSan instead).
pass_nocache() {
	KVFS_BIN=$PWD/kvfs KVFS_TAGS=mount KVFS_MOUNT_OPTS=entry_timeout=0,attr_timeout=0 \
		bash scripts/run-tests.sh none
}

# children_cpu PID: the CPU time (user + system, in seconds) of the
# finished children of the shell PID (this script, or a lane): a pass's
# share of the two CPUs, which load elsewhere on the machine does not
# change as it changes the wall time.
children_cpu() {
	local stat
	read -ra stat <"/proc/$1/stat"
	echo $(((stat[15] + stat[16]) / $(getconf CLK_TCK)))
}

# The sanitizer passes keep their temporary files (stores, mounts' spill
# files, the etcd clusters' data) in memory when /dev/shm is a tmpfs with
# room: a commit's fdatasync costs 0.75 ms on this machine's disk and 0.01
# ms there, and etcd syncs its log on every write of every member. What
# they check does not need the disk: the crash suites kill the daemon,
# which loses nothing the page cache holds, and a full disk is a tmpfs of
# the test's own. The plain pass, the build that is installed, stays on
# the disk. KVFS_TEST_SHM=0 keeps every pass on the disk.
in_memory() {
	local avail
	[ "${KVFS_TEST_SHM:-1}" != 0 ] || return 1
	[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] || return 1
	avail=$(df --output=avail -k /dev/shm 2>/dev/null | tail -1)
	[ "${avail:-0}" -ge $((8 * 1024 * 1024)) ] || return 1	# 8 GiB
}

# ---- the transport each pass mounts over (tests/README.md, "Passes") ----
# FUSE over io_uring (kvfs mount -o io_uring) needs the fuse module's
# enable_uring: it is set to Y for the run (root only) and put back on
# every way out, for tests/47 and for the passes over the rings. Each pass's
# mount helpers are forced onto one transport (KVFS_TRANSPORT, common.bash's
# mount_transport): the asan pass, every mount suite but the plain-tagged,
# over io_uring, the others over /dev/fuse, so that each transport serves
# the mount suites in every run (the whole suite passed over io_uring twice
# on 2026-11-30: tests/README.md). KVFS_TRANSPORT set for the run forces
# every pass onto one; where the parameter cannot be Y (no such file: a
# kernel before 6.14; not root) every pass mounts over /dev/fuse, said once.
uring_param=/sys/module/fuse/parameters/enable_uring
uring_old=
uring_on() {
	if [ ! -e "$uring_param" ]; then
		echo "# no $uring_param (a kernel without FUSE over io_uring): every pass over /dev/fuse"
	elif [ ! -w "$uring_param" ]; then
		echo "# $uring_param is $(cat "$uring_param") and only root may set it"
	elif [ "$(cat "$uring_param")" != Y ]; then
		uring_old=$(cat "$uring_param")
		echo Y >"$uring_param" && echo "# $uring_param: Y for the run, $uring_old again after it"
	fi
}
uring_restore() {
	[ -z "$uring_old" ] || echo "$uring_old" >"$uring_param"
	uring_old=
}
# pass_transport PASS: KVFS_TRANSPORT when given, else io_uring for the
# asan pass and fuse for the others; fuse where the rings are impossible.
pass_transport() {
	local want=${KVFS_TRANSPORT:-}
	if [ -z "$want" ]; then
		case $1 in
		asan) want=io_uring ;;
		*) want=fuse ;;
		esac
	fi
	if [ "$want" = io_uring ] && [ "$(cat "$uring_param" 2>/dev/null)" != Y ]; then
		echo fuse
	else
		echo "$want"
	fi
}

# run_pass PASS SHOW: runs one pass, its output into $work/PASS.log and
# to SHOW as it goes (/dev/stdout, or /dev/null in a lane), and leaves
# "PASSED FAILED SECONDS CPU" in $work/PASS.result.
run_pass() {
	local pass=$1 show=$2 start=$SECONDS me=$BASHPID cpu line p=0 f=1 dir
	local transport
	transport=$(pass_transport "$pass")
	local KVFS_TRANSPORT=$transport
	export KVFS_TRANSPORT
	cpu=$(children_cpu "$me")
	{
		echo "# ---- pass $pass (mounts over $KVFS_TRANSPORT) ----"
		if [ "$pass" != plain ] && in_memory && dir=$(mktemp -d /dev/shm/kvfs-test.XXXXXX); then
			echo "# temporary files in $dir"
			TMPDIR=$dir "pass_$pass" 2>&1
			rm -rf "$dir"
		else
			"pass_$pass" 2>&1
		fi
	} | tee "$work/$pass.log" >"$show"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/$pass.log" | tail -1)
	[ -z "$line" ] || read -r p _ f _ <<<"$line"
	echo "$p $f $((SECONDS - start)) $(($(children_cpu "$me") - cpu))" >"$work/$pass.result"
}

# summary PASS: the pass's own summary line
summary() {
	local p f secs cpu
	read -r p f secs cpu <"$work/$1.result"
	echo "# pass $1: $p passed, $f failed in $secs s ($cpu s of CPU)"
}

# lane: takes the next pass from the queue until none is left, and prints
# each pass's log whole when it ends (lanes' logs never interleave: the
# print holds a lock).
lane() {
	local i pass
	while :; do
		i=$(flock "$work/queue" bash -c 'read -r i <"$1"; echo $((i + 1)) >"$1"; echo "$i"' _ "$work/queue")
		[ "$i" -lt ${#passes[@]} ] || return 0
		pass=${passes[$i]}
		run_pass "$pass" /dev/null
		summary "$pass" >>"$work/$pass.log"
		flock "$work/print" cat "$work/$pass.log"
	done
}

# beside MAIN SIDE: runs pass SIDE in the background while MAIN runs as
# usual, and prints SIDE's log whole when both ended.
beside() {
	run_pass "$2" /dev/null &
	local side=$!
	run_pass "$1" /dev/stdout
	summary "$1"
	wait "$side"
	cat "$work/$2.log"
	summary "$2"
}

# Passes run one after the other, each printed as it goes, except that the
# partition pass (waits on the network) runs beside the asan pass (CPU);
# with KVFS_PASS_JOBS=2 in two lanes, longest first, each pass's output
# printed when it ends. Lanes stay off by default: in a clean-clone run of
# 64cc625 (2026-11-29, machine otherwise idle) the etcd pass took 1,576 s
# and the asan pass 1,763 s side by side, against about 900 and 630 s
# alone, so the lanes saved nothing (the two passes' 2,274 s of CPU filled
# 64% of the two CPUs: they contend for more than CPU).
work=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-test-all.XXXXXX")
trap 'uring_restore; rm -rf "$work"' EXIT
# a signal ends the run through the EXIT trap, once the pass in the
# foreground has returned (bash runs a trap after the command it waits on;
# Ctrl-C reaches the pass too): enable_uring is put back then
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
uring_on
passes=("$@")
[ ${#passes[@]} -gt 0 ] || passes=(etcd asan partition plain tsan)
lanes=${KVFS_PASS_JOBS:-1}
[ "$lanes" -ge 1 ] 2>/dev/null || lanes=1
[ "$lanes" -le ${#passes[@]} ] || lanes=${#passes[@]}
all=$SECONDS
if [ "$lanes" -eq 1 ]; then
	for pass in "${passes[@]}"; do
		case " ${passes[*]} :$pass" in
		*" partition "*:asan) beside asan partition ;;
		*" asan "*:partition) ;;	# ran beside asan
		*)	run_pass "$pass" /dev/stdout
			summary "$pass" ;;
		esac
	done
else
	echo 0 >"$work/queue"
	echo "# passes ${passes[*]} in $lanes lanes; each pass's output when it ends"
	for ((l = 0; l < lanes; l++)); do
		lane &
	done
	wait
fi
passed=0 failed=0
for pass in "${passes[@]}"; do
	p=0 f=1
	[ ! -s "$work/$pass.result" ] || read -r p f _ <"$work/$pass.result"
	passed=$((passed + p)) failed=$((failed + f))
done
echo "# every pass: $((SECONDS - all)) s ($(children_cpu $$) s of CPU)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
