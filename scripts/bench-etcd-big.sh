#!/bin/sh
# scripts/bench-etcd-big.sh - a document bigger than one etcd request
# written through `cp` on a mount, LMDB and etcd in the same run (docs/ETCD.md
# section 6): a document of small values (MB_SMALL, default 50) and one of
# 1 MiB strings (MB_STRINGS, default 50). Usage: bench-etcd-big.sh [MB_SMALL [MB_STRINGS]] Uses the cluster named by KVFS_ETCD_URL, or starts one with
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

# run_cp STORE NAME: mounts STORE, times cp of NAME.json into it, unmounts; prints seconds.
run_cp() {
	m=$tmp/mnt-$2-$(echo "$1" | cksum | cut -d' ' -f1)
	mkdir -p "$m"
	"$kvfs" mount --create "$1" "$m"
	t0=$(date +%s.%N)
	cp "$tmp/$2.json" "$m/$2.json"
	t1=$(date +%s.%N)
	fusermount3 -u "$m"
	echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }'
}

printf '%-28s %10s %10s %8s\n' workload lmdb_s etcd_s ratio
for w in small strings; do
	size=$(du -m "$tmp/$w.json" | cut -f1)
	l=$(run_cp "$tmp/lmdb-$w" "$w")
	e=$(run_cp "$url/kvfs-bench-big/$$-$w" "$w")
	printf '%-28s %10s %10s %8s\n' "cp $w ($size MB)" "$l" "$e" \
		"$(echo "$l $e" | awk '{ printf "%.1fx", $2 / ($1 > 0 ? $1 : 0.01) }')"
done
