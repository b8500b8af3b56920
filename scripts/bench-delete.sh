#!/usr/bin/env bash
# Deleting stays flat: the cost of one unlink, rmdir or rename through the
# mount must not grow with the size of the directory (issue 31, item 5).
#   scripts/bench-delete.sh        (as root: it mounts)
# For each mode (KVFS_BENCH_MODES, default "default commit=100", plus "etcd"
# when the etcd binary is installed and KVFS_BENCH_ETCD is not 0) and each
# directory size (1,000 and 16,000 entries), a fresh store and mount, then
# KVFS_BENCH_OPS (default 200) of each operation from one process (python,
# so no process is started per operation):
#   unlink      leaves of a directory of N leaves
#   rename      leaves renamed within that directory
#   rmdir       empty directories of a directory of N directories
#   rename-dir  directories moved from that directory to another one
# The sizes alternate within each round (KVFS_BENCH_ROUNDS, default 3) and
# each figure is the best round: the machine is shared, only ratios mean
# much. Printed: ms per operation at each size and their ratio (the goal:
# within 1.3), as the mean (every cost, a count once per batch included)
# and as the median (what one operation costs, without another process's
# turn on a busy CPU). Then rm -r through a fresh mount of a directory of
# KVFS_BENCH_RMR (default 8,000; on etcd KVFS_BENCH_RMR_ETCD, default
# 2,000, its commits taking tens of ms each) leaves, against `kvfs rm -r`
# of the same directory in another store. The LMDB stores live in KVFS_BENCH_DIR
# (default /var/tmp: a real disk, whose syncs the default mode pays per
# operation); etcd runs its own 3-member cluster (scripts/etcd-cluster.sh,
# KVFS_ETCD_PORT default 24990), stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
kvfs=${KVFS_BIN:-$PWD/kvfs}
rounds=${KVFS_BENCH_ROUNDS:-3}
ops=${KVFS_BENCH_OPS:-200}
rmr=${KVFS_BENCH_RMR:-8000}
rmr_etcd=${KVFS_BENCH_RMR_ETCD:-2000}
sizes=(1000 16000)
read -r -a modes <<<"${KVFS_BENCH_MODES:-default commit=100}"
if [ "${KVFS_BENCH_ETCD:-1}" != 0 ] && command -v etcd >/dev/null; then
	modes+=(etcd)
fi
work=$(mktemp -d "${KVFS_BENCH_DIR:-/var/tmp}/kvfs-dbench.XXXXXX")
mnt=$work/mnt
mkdir -p "$mnt"
url=

cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	if [ -n "$url" ]; then
		KVFS_ETCD_DIR=$work/etcd scripts/etcd-cluster.sh stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if [[ " ${modes[*]} " == *" etcd "* ]]; then
	export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24990}
	url=$(KVFS_ETCD_DIR=$work/etcd scripts/etcd-cluster.sh start)
fi

# The trees, as JSON: tree N K (the operations' directories), flat N (rm -r).
cat >"$work/tree.py" <<'EOF'
import json, sys
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "flat":
    json.dump({"big": {"k%06d" % i: "v" for i in range(n)}}, sys.stdout)
    sys.exit()
k = int(sys.argv[3])
d = {"k%06d" % i: "v" for i in range(n)}           # N leaves, then the victims
d.update({"u%06d" % i: "v" for i in range(k)})     # unlinked
d.update({"r%06d" % i: "v" for i in range(k)})     # renamed in place
e = {"k%06d" % i: {} for i in range(n)}            # N directories, then
e.update({"u%06d" % i: {} for i in range(k)})      # removed
e.update({"m%06d" % i: {} for i in range(k)})      # moved to f
json.dump({"d": d, "e": e, "f": {}}, sys.stdout)
EOF

# ops.py MNT K: ms per operation of each kind, one "op mean median" line each.
cat >"$work/ops.py" <<'EOF'
import os, sys, time
mnt, k = sys.argv[1], int(sys.argv[2])
d, e, f = (os.path.join(mnt, x) for x in "def")
runs = [
    ("unlink", d, lambda i: os.unlink("%s/u%06d" % (d, i))),
    ("rename", d, lambda i: os.rename("%s/r%06d" % (d, i), "%s/s%06d" % (d, i))),
    ("rmdir", e, lambda i: os.rmdir("%s/u%06d" % (e, i))),
    ("rename-dir", e, lambda i: os.rename("%s/m%06d" % (e, i), "%s/m%06d" % (f, i))),
]
for name, where, op in runs:
    os.stat(where)      # its nlink counted once, before the clock starts
    os.stat(f)
    times = []
    for i in range(k):
        t0 = time.monotonic()
        op(i)
        times.append((time.monotonic() - t0) * 1000)
    print(name, "%.4f %.4f" % (sum(times) / k, sorted(times)[k // 2]))
EOF

# store_for MODE NAME: a fresh store's name (a directory, or a prefix on etcd)
store_for() {
	if [ "$1" = etcd ]; then
		echo "$url/bench-delete-$2-$$-$RANDOM"
	else
		echo "$work/store-$2"
	fi
}

mount_mode() { # mount_mode MODE STORE
	local opts=()
	case $1 in
	default | etcd) ;;
	*) opts=(-o "$1") ;;
	esac
	"$kvfs" mount "${opts[@]}" "$2" "$mnt"
}

unmount() {
	fusermount3 -u "$mnt"
	while mountpoint -q "$mnt"; do sleep 0.05; done
}

min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }

declare -A best
for mode in "${modes[@]}"; do
	for ((r = 1; r <= rounds; r++)); do
		for n in "${sizes[@]}"; do
			store=$(store_for "$mode" "$n-$r")
			python3 "$work/tree.py" tree "$n" "$ops" >"$work/tree.json"
			"$kvfs" import "$store" / "$work/tree.json"
			mount_mode "$mode" "$store"
			while read -r op mean median; do
				best[$mode/$op/$n]=$(min "${best[$mode/$op/$n]:-}" "$mean")
				best[$mode/$op/$n/m]=$(min "${best[$mode/$op/$n/m]:-}" "$median")
			done < <(python3 "$work/ops.py" "$mnt" "$ops")
			unmount
			[ "$mode" = etcd ] || rm -rf "$store"
		done
	done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b / a }'; }
printf '# ms per operation (best of %d rounds of %d), and 16,000 / 1,000\n' "$rounds" "$ops"
printf '%-10s %-10s %9s %9s %6s %9s %9s %6s\n' mode op mean@1000 @16000 ratio \
	median@1k @16k ratio
for mode in "${modes[@]}"; do
	for op in unlink rename rmdir rename-dir; do
		a=${best[$mode/$op/1000]} b=${best[$mode/$op/16000]}
		c=${best[$mode/$op/1000/m]} d=${best[$mode/$op/16000/m]}
		printf '%-10s %-10s %9s %9s %6s %9s %9s %6s\n' "$mode" "$op" "$a" "$b" \
			"$(ratio "$a" "$b")" "$c" "$d" "$(ratio "$c" "$d")"
	done
done

seconds() { # seconds CMD...: wall seconds CMD took
	local t0
	t0=$(date +%s.%N)
	"$@" >/dev/null
	awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }'
}

printf '\n# rm -r of a directory of leaves: through the mount, kvfs rm -r (s), and mount / kvfs\n'
printf '%-10s %7s %10s %10s %7s\n' mode leaves mount kvfs ratio
for mode in "${modes[@]}"; do
	n=$rmr
	[ "$mode" != etcd ] || n=$rmr_etcd
	python3 "$work/tree.py" flat "$n" >"$work/flat.json"
	store=$(store_for "$mode" rm-mount)
	"$kvfs" import "$store" / "$work/flat.json"
	mount_mode "$mode" "$store"
	through=$(seconds rm -r "$mnt/big")
	unmount
	store=$(store_for "$mode" rm-cli)
	"$kvfs" import "$store" / "$work/flat.json"
	cli=$(seconds "$kvfs" rm -r "$store" /big)
	printf '%-10s %7s %10s %10s %7s\n' "$mode" "$n" "$through" "$cli" \
		"$(awk -v a="$through" -v b="$cli" 'BEGIN { printf "%.0f", a / b }')"
done
