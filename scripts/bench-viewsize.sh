#!/usr/bin/env bash
# scripts/bench-viewsize.sh - what a view's stat costs over a big document
# (model/tree/view_size.c): `cp big.json MNT/big.json` over the existing
# document, two `stat`s of its view and two `ls -l` of it and the root's
# view, on LMDB and (with KVFS_ETCD_URL) on etcd, each against the same
# work on a tmpfs in the same run (ratio: kvfs / tmpfs; the machine is
# shared). Per workload: wall seconds (best of KVFS_BENCH_ROUNDS, default
# 3), the daemon's CPU seconds for that round (utime + stime from
# /proc/PID/stat), and the views rendered for a size and the sizes kept
# (user.kvfs.stats; a binary without those lines shows "-": there every
# stat of a view renders it).
#   scripts/bench-viewsize.sh [RECORDS]      default 40000 records of {"i", "s"}
# KVFS_BENCH_BINS="new=./kvfs old=/path/to/kvfs" runs other binaries in
# the same run (default: new=$KVFS_BIN or ./kvfs).
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-40000}
rounds=${KVFS_BENCH_ROUNDS:-3}
read -r -a bins <<<"${KVFS_BENCH_BINS:-new=${KVFS_BIN:-$PWD/kvfs}}"
. scripts/bench-lib.sh
bench_setup 1g "${TMPDIR:-/tmp}"
trap 'bench_unmount_all "$work"; bench_cleanup' EXIT
python3 - "$work/big.json" "$records" <<'PY'
import json, sys
json.dump({"rows": [{"i": k, "s": "v%d" % k} for k in range(int(sys.argv[2]))]}, open(sys.argv[1], "w"))
PY

# cpu PID: the process's user + system CPU seconds so far
cpu() { awk -v t="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
# counter MNT NAME: a line of the mount's user.kvfs.stats, or "-"
counter() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$1" |
		awk -v n="$2" '$1 == n { print $2; f = 1 } END { if (!f) print "-" }'
}
delta() { [ "$1" = - ] && echo - || echo $(($2 - $1)); }

# the workloads, on DIR (a mount or the tmpfs)
w_cp() { cp "$work/big.json" "$1/big.json"; }
w_stat() { stat "$1/big.json" >/dev/null; stat "$1/big.json" >/dev/null; }
w_ls() {
	local v=("$1/big.json")
	[ -f "$1/.json" ] && v+=("$1/.json")	# the tmpfs has no root view
	ls -l "${v[@]}" >/dev/null
	ls -l "${v[@]}" >/dev/null
}

# best_ref WORKLOAD: best wall time of the workload on the tmpfs
best_ref() {
	local r best= s
	cp "$work/big.json" "$ref/big.json"
	for ((r = 0; r < rounds; r++)); do
		s=$(seconds "$1" "$ref")
		best=$(min "$best" "$s")
	done
	echo "$best"
}

# run BACKEND NAME BIN WORKLOAD REF: one line, the best round of WORKLOAD on a
# mount of a fresh store of BACKEND holding the document already
run() {
	local backend=$1 name=$2 bin=$3 w=$4 refs=$5 st m r s best= pid c0 c1 cpu_s r0 k0 r1 k1 out
	m=$work/mnt-$backend-$name-$w
	if [ "$backend" = lmdb ]; then st=$work/store-$name-$w; else st=$KVFS_ETCD_URL/kvfs-bench-viewsize/$$-$name-$w; fi
	kvfs=$bin bench_mount "$m" "$m.log" "$st"
	pid=${bench_pids[-1]}
	cp "$work/big.json" "$m/big.json"
	for ((r = 0; r < rounds; r++)); do
		c0=$(cpu "$pid") r0=$(counter "$m" view_size_renders) k0=$(counter "$m" view_size_kept)
		s=$(seconds "$w" "$m")
		c1=$(cpu "$pid") r1=$(counter "$m" view_size_renders) k1=$(counter "$m" view_size_kept)
		if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$s
			cpu_s=$(awk -v a="$c1" -v b="$c0" 'BEGIN { printf "%.2f", a - b }')
			out="$(delta "$r0" "$r1") $(delta "$k0" "$k1")"
		fi
	done
	fusermount3 -u "$m"
	wait "$pid" || true
	printf '%-6s %-5s %-8s %9s %9s %7s %8s %8s %6s\n' "$backend" "$name" "$w" "$best" "$refs" \
		"$(ratio "$best" "$refs")" "$cpu_s" $out
}

backends=(lmdb)
[ -n "${KVFS_ETCD_URL:-}" ] && backends+=(etcd)
printf '%-6s %-5s %-8s %9s %9s %7s %8s %8s %6s\n' backend bin workload kvfs_s tmpfs_s ratio daemon_s renders kept
echo "# $records records, $(du -k "$work/big.json" | cut -f1) KiB; $(uptime)"
for w in w_cp w_stat w_ls; do
	refs=$(best_ref "$w")
	for backend in "${backends[@]}"; do
		for b in "${bins[@]}"; do
			run "$backend" "${b%%=*}" "${b#*=}" "$w" "$refs"
		done
	done
done
