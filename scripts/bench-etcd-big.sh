#!/bin/sh
# scripts/bench-etcd-big.sh - a document bigger than one etcd request
# written through `cp` on a mount, LMDB and etcd in the same run (docs/ETCD.md
# section 6): a document of small values (MB_SMALL, default 50) and one of
# 1 MiB strings (MB_STRINGS, default 50); then documents of one string leaf
# of each size in LEAF_MB (default "20 100"; section 3: chunked values),
# with the daemon's peak memory (VmHWM) over the leaf's size. Usage: bench-etcd-big.sh [MB_SMALL [MB_STRINGS]] Uses the cluster named by KVFS_ETCD_URL, or starts one with
# scripts/etcd-cluster.sh (KVFS_ETCD_PORT, KVFS_ETCD_DIR) and stops it after.
# Prints one line per workload: seconds on each backend and their ratio.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
kvfs=${KVFS_BIN:-$here/kvfs}
mb=${1:-50}
mbs=${2:-50}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-bench-big.XXXXXX")
own=0
url=${KVFS_ETCD_URL:-}
if [ -z "$url" ]; then
	url=$("$here/scripts/etcd-cluster.sh" start)
	own=1
fi
cleanup() {
	for m in "$tmp"/mnt-*; do
		[ -d "$m" ] && mountpoint -q "$m" && fusermount3 -u "$m"
	done
	[ "$own" = 1 ] && "$here/scripts/etcd-cluster.sh" stop >/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

python3 - "$tmp" "$mb" "$mbs" <<'PY'
import json, sys
d, mb, mbs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
n = mb * 1000000 // 40	# records of about 40 bytes of JSON: small leaves
with open(d + "/small.json", "w") as f:
    json.dump({"rows": [{"i": k, "s": "v%d" % k} for k in range(n)]}, f)
with open(d + "/strings.json", "w") as f:
    json.dump({"s%03d" % k: chr(97 + k % 26) * (1 << 20) for k in range(mbs)}, f)
PY
leaf_mb=${LEAF_MB:-20 100}
for n in $leaf_mb; do
	python3 -c 'import json,sys; json.dump({"s": "x" * (int(sys.argv[1]) << 20)}, open(sys.argv[2], "w"))' \
		"$n" "$tmp/leaf$n.json"
done

# run_cp STORE NAME: mounts STORE, times cp of NAME.json into it, unmounts; prints seconds.
run_cp() {
	m=$tmp/mnt-$2-$(echo "$1" | cksum | cut -d' ' -f1)
	mkdir -p "$m"
	"$kvfs" mount --create "$1" "$m"
	t0=$(date +%s.%N)
	cp "$tmp/$2.json" "$m/$2.json"
	t1=$(date +%s.%N)
	pid=$(pgrep -f -- "mount --create $1 $m\$" | head -1)
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
	fusermount3 -u "$m"
	echo "$t0 $t1 $hwm" | awk '{ printf "%.2f %d", $2 - $1, $3 }'
}

printf '%-28s %10s %10s %8s %10s %10s\n' workload lmdb_s etcd_s ratio lmdb_hwm etcd_hwm
for w in small strings $(for n in $leaf_mb; do echo "leaf$n"; done); do
	size=$(du -m "$tmp/$w.json" | cut -f1)
	set -- $(run_cp "$tmp/lmdb-$w" "$w")
	l=$1 lh=$2
	set -- $(run_cp "$url/kvfs-bench-big/$$-$w" "$w")
	e=$1 eh=$2
	printf '%-28s %10s %10s %8s %10s %10s\n' "cp $w ($size MB)" "$l" "$e" \
		"$(echo "$l $e" | awk '{ printf "%.1fx", $2 / ($1 > 0 ? $1 : 0.01) }')" \
		"$(echo "$lh $size" | awk '{ printf "%.2fx", $1 / 1024 / $2 }')" \
		"$(echo "$eh $size" | awk '{ printf "%.2fx", $1 / 1024 / $2 }')"
done
