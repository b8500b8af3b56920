#!/usr/bin/env bash
# scripts/run-fuzz.sh - runs each libFuzzer target for a fixed time on its
# seed corpus (tests/fuzz/corpus/TARGET/, with the dictionary TARGET.dict
# when there is one) and counts the results like scripts/run-tests.sh: one
# TAP line per target, then "N passed, N failed".
# Usage: scripts/run-fuzz.sh BUILD_DIR SECONDS TARGET...   (make fuzz)
# New inputs go to BUILD_DIR/corpus/TARGET (the repository's seeds stay as
# they are); a failing input is saved as BUILD_DIR/artifacts/TARGET-crash-*.
set -u
build=$1 seconds=$2
shift 2
cd "$(dirname "$0")/.." || exit 2
passed=0 failed=0 n=0
# Leaks are reported too; a sanitizer report ends the run with an artifact.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one TARGET: runs it; its exit status is libFuzzer's.
fuzz_one() {
	local target=$1 bin=$build/fuzz/$1 work=$build/corpus/$1 dict=()
	mkdir -p "$work"
	[ -f "tests/fuzz/corpus/$target.dict" ] && dict=(-dict="tests/fuzz/corpus/$target.dict")
	# -max_len: inputs beyond what the targets keep are skipped by them anyway.
	"$bin" "$work" "tests/fuzz/corpus/$target" "${dict[@]}" -max_total_time="$seconds" \
		-max_len=65536 -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$build/artifacts/$target-" >"$build/fuzz-$target.log" 2>&1
}

# Each target is one process on one CPU: as many run at once as there are
# CPUs (FUZZ_JOBS), so the step takes SECONDS per round, not per target.
jobs=${FUZZ_JOBS:-$(nproc)}
mkdir -p "$build/artifacts"
declare -A pid_of
for target in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	fuzz_one "$target" &
	pid_of[$target]=$!
done

for target in "$@"; do
	n=$((n + 1))
	wait "${pid_of[$target]}"
	rc=$?
	log=$build/fuzz-$target.log
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ "$rc" -eq 0 ]; then
		echo "ok $n - fuzz $target: ${execs:-?} runs in $seconds s, nothing found"
		passed=$((passed + 1))
	else
		echo "not ok $n - fuzz $target: exit $rc after ${execs:-?} runs; log $log:"
		grep -E -A 30 '^==[0-9]+==|runtime error|^fuzz_|deadly signal' "$log" | head -60 | sed 's/^/# /'
		for a in "$build/artifacts/$target-"*; do [ -e "$a" ] && echo "# input: $a"; done
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
