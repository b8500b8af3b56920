#!/usr/bin/env bash
# make bench: the read workloads (scripts/bench.sh) and the write workloads
# (scripts/bench-write.sh) in one run, then one table of ratios to tmpfs and
# one CSV of it (KVFS_BENCH_CSV, default /tmp/kvfs-bench-all-TIME.csv). The
# two scripts' own tables and CSVs are kept beside it.
#   scripts/bench-all.sh [DIRS [LEAVES_PER_DIR]]   passed on to both scripts
set -euo pipefail
cd "$(dirname "$0")/.."
out=${KVFS_BENCH_CSV:-/tmp/kvfs-bench-all-$(date -u +%Y%m%dT%H%M%SZ).csv}
read_csv=${out%.csv}.read.csv write_csv=${out%.csv}.write.csv

KVFS_BENCH_CSV=$read_csv bash scripts/bench.sh "$@"
KVFS_BENCH_CSV=$write_csv bash scripts/bench-write.sh "$@"

# one row per workload: kind, workload, tmpfs seconds, kvfs seconds (cold
# or only pass), kvfs seconds warm (reads), ratios, commits per file (writes)
{
	echo "kind,workload,tmpfs_s,kvfs_s,kvfs_warm_s,ratio,ratio_warm,commits_per_file"
	tail -n +2 "$read_csv" | awk -F, -v OFS=, '{ print "read", $1, $2, $3, $4, $5, $6, "" }'
	# bench-write.sh: label, mode (default, commit=100), tmpfs, kvfs, ratio, commits, requests
	tail -n +2 "$write_csv" | awk -F, -v OFS=, '{ print "write", $1 " [" $2 "]", $3, $4, "", $5, "", $6 }'
} >"$out"
echo
echo "# all workloads, ratio kvfs / tmpfs in the same run"
awk -F, 'NR == 1 { next }
	{ printf "%-6s %-42s %8s %8s %6s\n", $1, $2, $6, ($7 == "" ? "-" : $7), ($8 == "" ? "-" : $8) }' \
	"$out" | { printf '%-6s %-42s %8s %8s %6s\n' kind workload ratio warm commits; cat; }
echo "# CSV: $out"
