#!/usr/bin/env bash
# Which lines of fs/, model/, store/ and lib/ each bats file of the asan
# pass executes, on a gcc --coverage build (make coverage), and which files
# that pass can leave to the plain pass because the files it keeps reach
# every line they reach (tag "covered"; tests/README.md, "Passes").
# Rerun it when tests change: it says which files the asan pass could
# leave, and fails when a file tagged "covered" reaches a line no other
# test of the asan pass reaches.
# Usage: scripts/coverage-by-file.sh [SUITES...]  (default tests/*.bats)
# Environment:
#   KVFS_COV_BUILD  the coverage build (default build-cov, made by make coverage)
#   KVFS_COV_DIR    counts, TAP logs and the report (default $TMPDIR/kvfs-cov)
#   KVFS_COV_TIMES  an asan pass's log (scripts/test-times.py reads it), to
#                   weigh the files by their time under ASan; default the
#                   coverage run's own times
#   KVFS_COV_TAGS   the tests measured (default "!plain,!etcd": those of the
#                   asan pass, with the files tagged "covered" measured too)
#   KVFS_JOBS       bats files at once (default 2)
#   KVFS_COV_REPORT=1  reads the counts of an earlier run, runs nothing
set -u
cd "$(dirname "$0")/.." || exit 2
build=${KVFS_COV_BUILD:-build-cov}
out=${KVFS_COV_DIR:-${TMPDIR:-/tmp}/kvfs-cov}
tags=${KVFS_COV_TAGS:-!plain,!etcd}
jobs=${KVFS_JOBS:-2}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(tests/*.bats)
[ -x "$build/kvfs" ] || { echo "no $build/kvfs: make coverage builds it" >&2; exit 2; }
# as run-tests.sh: Debian's python3, not a version manager's shim
PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/\.pyenv/' | paste -sd:)
export PATH

# counts_dir NAME: an empty count file for every object of the build,
# under the prefix that NAME's processes write to (GCOV_PREFIX): each
# bats file's counts apart, so files can run side by side and nothing
# needs zeroing. The files exist, writable by all, before any process
# exits: a kvfs run as another user (as_nobody) adds its counts too.
counts_dir() {
	local prefix=$out/counts/$1 gcno gcda
	rm -rf "$prefix"
	while read -r gcno; do
		gcda=$prefix$PWD/${gcno%.gcno}.gcda
		mkdir -p "${gcda%/*}" && : >"$gcda"
	done < <(find "$build" -name '*.gcno')
	find "$prefix" -type d -exec chmod 1777 {} +
	find "$prefix" -type f -exec chmod 666 {} +
	echo "$prefix"
}

# run_suite SUITE: its tests of the asan pass on the coverage build, its
# TAP output (with times) into $out/tap/NAME.tap
run_suite() {
	local name prefix start
	name=$(basename "$1" .bats)
	[ "$(bats --count --filter-tags "$tags" "$1")" -gt 0 ] || return 0
	prefix=$(counts_dir "$name")
	start=$SECONDS
	GCOV_PREFIX=$prefix KVFS_BIN=$PWD/$build/kvfs \
		bats --tap --timing --filter-tags "$tags" "$1" >"$out/tap/$name.tap" 2>&1
	echo "# $name: $(grep -c '^ok ' "$out/tap/$name.tap") ok, $(grep -c '^not ok ' "$out/tap/$name.tap") not ok in $((SECONDS - start)) s"
}

# run_units: the unit programs, which the asan pass runs too
run_units() {
	local prefix t
	prefix=$(counts_dir unit)
	for t in "$build"/tests/test_*; do
		[ -x "$t" ] || continue
		GCOV_PREFIX=$prefix "$t" >"$out/tap/unit-${t##*/}.tap" 2>&1 ||
			echo "# unit ${t##*/} exited with status $?"
	done
}

if [ "${KVFS_COV_REPORT:-0}" != 1 ]; then
	rm -rf "$out"
	mkdir -p "$out/tap"
	run_units
	export -f run_suite counts_dir
	export out build tags
	printf '%s\n' "${suites[@]}" | xargs -P "$jobs" -I{} bash -c 'run_suite "$1"' _ {}
fi
times=${KVFS_COV_TIMES:-}
if [ -z "$times" ]; then
	times=$out/coverage-run.log
	cat "$out"/tap/[0-9]*.tap >"$times"
fi
scripts/test-times.py "$times" "${suites[@]}" >"$out/times.txt"
scripts/coverage-pick.py "$out" "$build" "$out/times.txt" "${suites[@]}" | tee "$out/report.txt"
exit "${PIPESTATUS[0]}"
