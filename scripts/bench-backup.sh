#!/usr/bin/env bash
# Backup and restore timings with standard tools, as ratios against the same
# tree on tmpfs in the same run (this machine is shared and noisy).
#   scripts/bench-backup.sh [LEAVES]      default 100,000 leaves (1,000 dirs)
set -euo pipefail
cd "$(dirname "$0")/.."
leaves=${1:-100000}
per_dir=100
kvfs=${KVFS_BIN:-$PWD/kvfs}
work=$(mktemp -d /tmp/kvfs-bench.XXXXXX)
store=$work/store mnt=$work/mnt ref=$work/tmpfs out=$work/out
mkdir -p "$mnt" "$ref" "$out"
cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	umount "$ref" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o size=4g tmpfs "$ref"

now() { date +%s.%N; }
seconds() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.3f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
fresh_mount() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$store"
	"$kvfs" mount --create "$store" "$mnt"
}

python3 - "$leaves" "$per_dir" >"$work/tree.json" <<'PY'
import json, sys
n, per = int(sys.argv[1]), int(sys.argv[2])
json.dump({"d%05d" % i: {"k%03d" % j: i * per + j for j in range(per)} for i in range(n // per)}, sys.stdout)
PY
"$kvfs" import "$store" / "$work/tree.json"
"$kvfs" mount "$store" "$mnt"
cp -a "$mnt/." "$ref/"
echo "# $leaves leaves in $((leaves / per_dir)) directories; seconds and ratio kvfs/tmpfs"
printf '%-34s %9s %9s %7s\n' step tmpfs kvfs ratio
row() { printf '%-34s %9s %9s %7s\n' "$1" "$2" "$3" "$(ratio "$3" "$2")"; }

# Backups out of the mount (and out of tmpfs as the reference).
a=$(seconds cp -a "$ref/." "$out/cp-ref"); b=$(seconds cp -a "$mnt/." "$out/cp-kvfs"); row "cp -a out" "$a" "$b"
a=$(seconds tar --xattrs -cf "$out/ref.tar" -C "$ref" .); b=$(seconds tar --xattrs -cf "$out/kvfs.tar" -C "$mnt" .); row "tar --xattrs -c out" "$a" "$b"
a=$(seconds rsync -aX "$ref/" "$out/rs-ref/"); b=$(seconds rsync -aX "$mnt/" "$out/rs-kvfs/"); row "rsync -aX out" "$a" "$b"
a=$(seconds rsync -aX "$ref/" "$out/rs-ref/"); b=$(seconds rsync -aX "$mnt/" "$out/rs-kvfs/"); row "rsync -aX again (no change)" "$a" "$b"
t_copy=$(seconds "$kvfs" backup "$store" "$out/hot")
echo "kvfs backup (LMDB compacting copy): ${t_copy}s, ratio to cp -a out of the mount: $(ratio "$t_copy" "$b")"

# Restores into an empty mount (and into an empty tmpfs directory).
mkdir "$ref/r1" "$ref/r2" "$ref/r3"
fresh_mount; a=$(seconds cp -a "$out/cp-kvfs/." "$ref/r1/"); b=$(seconds cp -a "$out/cp-kvfs/." "$mnt/"); row "cp -a restore" "$a" "$b"
fresh_mount; a=$(seconds tar --xattrs -xf "$out/kvfs.tar" -C "$ref/r2"); b=$(seconds tar --xattrs -xf "$out/kvfs.tar" -C "$mnt"); row "tar --xattrs -x restore" "$a" "$b"
fresh_mount; a=$(seconds rsync -aX "$out/rs-kvfs/" "$ref/r3/"); b=$(seconds rsync -aX "$out/rs-kvfs/" "$mnt/"); row "rsync -aX restore" "$a" "$b"
