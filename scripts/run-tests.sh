#!/usr/bin/env bash
# Runs the unit-test programs of one build and a set of bats suites, counts
# the results, and ends with the single line "N passed, N failed" that CI
# reads. One pass of scripts/test-all.sh (tests/README.md says which).
# Usage: scripts/run-tests.sh BUILD_DIR   (BUILD_DIR "none": no unit programs)
# Environment:
#   KVFS_BIN     the binary under test (default ./kvfs)
#   KVFS_SUITES  the bats files (default tests/*.bats)
#   KVFS_TAGS    which tests of them run, as bats tag filters: one filter,
#                or several separated by ";" (a test runs when any matches);
#                a filter is tags joined by "," that must all be present,
#                "!tag" for one that must not be (e.g. "mount,!plain")
#   KVFS_JOBS    bats files run at once (default 2; tests of one file always
#                run one after the other, in order)
#   KVFS_ASAN, KVFS_TSAN  set for the sanitizer builds (their options below)
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
export KVFS_BIN=${KVFS_BIN:-$PWD/kvfs}
# A sanitizer's report goes to a file (log_path), never to the process's
# stderr, which a test expecting a refusal (`run kvfs ...; [ "$status"
# -ne 0 ]`) does not read: each test's processes write into a directory of
# the test's own, which fails the test at its teardown (common_setup in
# tests/test_helper/common.bash); the pass's directory gets the rest (the
# unit programs', a setup_file's), and each report there fails the pass.
san_dir=
if [ -n "${KVFS_ASAN:-}${KVFS_TSAN:-}" ]; then
	san_dir=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-sanitizer.XXXXXX") || exit 2
	chmod 1777 "$san_dir"	# kvfs run as another user (as_nobody) reports too
	export KVFS_SAN_DIR=$san_dir
fi
# ASan: UBSan's checks trap (Makefile: UBSAN_TRAP), and handle_sigill has
# ASan report the trap, its stack naming the file and line (UBSAN_OPTIONS
# serves a build with UBSAN_TRAP=0).
if [ -n "${KVFS_ASAN:-}" ]; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:handle_sigill=1}:log_path=$san_dir/report
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}:log_path=$san_dir/report
fi
# TSan: the process goes on after a report, and then exits 66.
if [ -n "${KVFS_TSAN:-}" ]; then
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}:log_path=$san_dir/report
fi
# The tests call Debian's python3 (scripts/deps.sh): a version manager's
# shim in front of it (pyenv) runs a chain of bash scripts per call, 0.1 s
# idle and 4 s measured under load, and the suites call python3 hundreds
# of times.
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/\.pyenv/' | paste -sd:)
export PATH
suites=${KVFS_SUITES:-$(echo tests/*.bats)}
jobs=${KVFS_JOBS:-2}

# log_path_for PREFIX CMD...: runs CMD with its sanitizer reports to PREFIX.PID.
log_path_for() {
	local prefix=$1
	shift
	[ -n "$san_dir" ] || { "$@"; return; }
	ASAN_OPTIONS=${ASAN_OPTIONS:-}:log_path=$prefix UBSAN_OPTIONS=${UBSAN_OPTIONS:-}:log_path=$prefix \
		TSAN_OPTIONS=${TSAN_OPTIONS:-}:log_path=$prefix "$@"
}

# Unit programs print TAP lines: "ok N - name" / "not ok N - name". They
# run before the bats files, not beside them: beside them (tried on
# 2026-11-30) they took CPU from the files' timed waits for about 15 s saved.
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	# its reports, if any, named for it (report.PID would not say whose)
	out=$(log_path_for "$san_dir/${t##*/}" "$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $t exited with status $rc"; f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
done

# bats suites, in TAP form so they can be counted the same way. Files run
# $jobs at a time (GNU parallel, from scripts/deps.sh): most of a mount
# test's time is spent waiting on a daemon, a disk or a cluster.
args=(--tap --timing)
if [ -n "${KVFS_TAGS:-}" ]; then
	IFS=';' read -ra filters <<<"$KVFS_TAGS"
	for f in "${filters[@]}"; do
		args+=(--filter-tags "$f")
	done
fi
if [ "$jobs" -gt 1 ] && command -v parallel >/dev/null; then
	args+=(--jobs "$jobs" --no-parallelize-within-files)
fi
if ls $suites >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	out=$(bats "${args[@]}" $suites 2>&1); rc=$?
	printf '%s\n' "$out"
	# A skipped test ("ok N name # skip why") is neither passed nor failed.
	skipped=$(grep -c '^ok .* # skip' <<<"$out")
	p=$(($(grep -c '^ok ' <<<"$out") - skipped)); f=$(grep -c '^not ok ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - bats exited with status $rc"; f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
fi

# Reports no test claimed: each is a failure, shown whole.
if [ -n "$san_dir" ]; then
	for r in "$san_dir"/*; do
		[ -f "$r" ] || continue
		echo "not ok - sanitizer report ${r##*/} (a unit program's, or a process outside any test):"
		sed 's/^/# /' "$r"
		failed=$((failed + 1))
	done
	rm -rf "$san_dir"
fi

[ "$skipped" -eq 0 ] || echo "# $skipped skipped (see '# skip' lines above for why)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
