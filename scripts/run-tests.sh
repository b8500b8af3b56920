#!/usr/bin/env bash
# Runs every unit-test program and every bats suite, counts results, and ends
# with the single line "N passed, N failed" that CI reads.
# Usage: scripts/run-tests.sh BUILD_DIR   (binary: $KVFS_BIN, default ./kvfs;
# BUILD_DIR "none" runs no unit programs, only the bats suites)
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
passed=0 failed=0 skipped=0
export KVFS_BIN=${KVFS_BIN:-$PWD/kvfs}
if [ -n "${KVFS_ASAN:-}" ]; then
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
	export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
# make tsan: a report goes to the daemon's log (the mount log, which the
# test helper checks) and the run goes on; the daemon then exits 66.
if [ -n "${KVFS_TSAN:-}" ]; then
	export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:exitcode=66:log_path=stderr:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}
fi
# KVFS_SUITES (make tsan: the mount suites) replaces the list of bats files.
suites=${KVFS_SUITES:-$(echo tests/*.bats)}

# Unit programs print TAP lines: "ok N - name" / "not ok N - name".
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	out=$("$t" 2>&1); rc=$?
	printf '%s\n' "$out"
	p=$(grep -c '^ok ' <<<"$out"); f=$(grep -c '^not ok ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - $t exited with status $rc"; f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
done

# bats suites, in TAP form so they can be counted the same way.
if ls $suites >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	out=$(bats --tap $suites 2>&1); rc=$?
	printf '%s\n' "$out"
	# A skipped test ("ok N name # skip why") is neither passed nor failed.
	skipped=$(grep -c '^ok .* # skip' <<<"$out")
	p=$(($(grep -c '^ok ' <<<"$out") - skipped)); f=$(grep -c '^not ok ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "not ok - bats exited with status $rc"; f=1
	fi
	passed=$((passed + p)); failed=$((failed + f))
fi

[ "$skipped" -eq 0 ] || echo "# $skipped skipped (see '# skip' lines above for why)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
