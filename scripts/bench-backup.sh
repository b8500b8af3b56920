#!/usr/bin/env bash
# Backup and restore timings with standard tools, as ratios against the same
# tree on tmpfs in the same run (this machine is shared and noisy), and a
# check that every restore gives the store back.
#   scripts/bench-backup.sh [LEAVES]      default 100,000 leaves (100 a directory)
# Needs root (it mounts a tmpfs). The tree is objects of integer leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves=${1:-100000}
per_dir=100
. scripts/bench-lib.sh
bench_setup 4g
out=$work/out
mkdir -p "$out"

# seconds CMD...: prints the wall time of CMD; its status goes to $work/rc.
seconds() {
	local t0 t1 rc=0
	t0=$(now)
	"$@" >/dev/null 2>"$work/stderr" || rc=$?
	t1=$(now)
	echo "$rc" >"$work/rc"
	awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.3f", a - b }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
# status: what the last timed command did: "ok", or its exit status and the
# first line it printed on stderr.
status() {
	local rc
	rc=$(cat "$work/rc")
	if [ "$rc" -ne 0 ] || [ -s "$work/stderr" ]; then
		printf 'exit %s: %s' "$rc" "$(head -c 70 "$work/stderr" | head -1)"
	else
		printf ok
	fi
}
# same_store: "same" when the mounted store exports like the original.
same_store() {
	if cmp -s "$work/orig.export" <("$kvfs" export --compact "$store"); then
		printf 'store identical'
	else
		printf 'STORE DIFFERS (%s)' "$(diff <(tr , '\n' <"$work/orig.export") \
			<("$kvfs" export --compact "$store" | tr , '\n') | grep -c '^>' || true) lines"
	fi
}
fresh_mount() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$store"
	"$kvfs" mount --create "$store" "$mnt"
}

awk -v n="$leaves" -v per="$per_dir" 'BEGIN {
	printf "{"
	for (i = 0; i < n / per; i++) {
		printf "%s\"d%05d\": {", (i ? ", " : ""), i
		for (j = 0; j < per; j++)
			printf "%s\"k%03d\": %d", (j ? ", " : ""), j, i * per + j
		printf "}"
	}
	printf "}\n"
}' >"$work/tree.json"
"$kvfs" import "$store" / "$work/tree.json"
"$kvfs" export --compact "$store" >"$work/orig.export"
"$kvfs" mount "$store" "$mnt"
cp -a "$mnt/." "$ref/"
echo "# $leaves leaves in $((leaves / per_dir)) directories; seconds, and kvfs/tmpfs"
printf '| %-28s | %8s | %8s | %6s | %s |\n' step tmpfs kvfs ratio result
echo '|---|---:|---:|---:|---|'
row() { printf '| %-28s | %8s | %8s | %6s | %s |\n' "$1" "$2" "$3" "$(ratio "$3" "$2")" "$4"; }

# Backups out of the mount (and out of tmpfs as the reference).
a=$(seconds cp -a "$ref/." "$out/cp-ref"); b=$(seconds cp -a "$mnt/." "$out/cp-kvfs"); t_cp=$b
row "cp -a out" "$a" "$b" "$(status)"
a=$(seconds tar -cf "$out/ref-plain.tar" -C "$ref" .); b=$(seconds tar -cf "$out/kvfs-plain.tar" -C "$mnt" .)
row "tar -c out" "$a" "$b" "$(status)"
a=$(seconds tar --xattrs -cf "$out/ref.tar" -C "$ref" .); b=$(seconds tar --xattrs -cf "$out/kvfs.tar" -C "$mnt" .)
row "tar --xattrs -c out" "$a" "$b" "$(status)"
a=$(seconds rsync -aX "$ref/" "$out/rs-ref/"); b=$(seconds rsync -aX "$mnt/" "$out/rs-kvfs/")
row "rsync -aX out" "$a" "$b" "$(status)"
a=$(seconds rsync -aX "$ref/" "$out/rs-ref/"); b=$(seconds rsync -aX "$mnt/" "$out/rs-kvfs/")
row "rsync -aX again (no change)" "$a" "$b" "$(status)"
a=$(seconds cp -a "$ref/." "$out/cp-ref2"); b=$(seconds "$kvfs" backup "$store" "$out/hot"); t_backup=$b
row "kvfs backup (vs cp -a tmpfs)" "$a" "$b" "$(status)"
a=$(seconds cp -a "$ref/." "$out/cp-ref3"); b=$(seconds sh -c '"$1" dump "$2" >"$3"' sh "$kvfs" "$store" "$out/dump")
row "kvfs dump (vs cp -a tmpfs)" "$a" "$b" "$(status)"
echo "# kvfs backup is $(ratio "$t_cp" "$t_backup") times faster than cp -a out of the mount"

# Restores into an empty mount (and into an empty tmpfs directory).
mkdir "$ref/r1" "$ref/r2" "$ref/r3" "$ref/r4"
fresh_mount; a=$(seconds cp -a "$out/cp-kvfs/." "$ref/r1/"); b=$(seconds cp -a "$out/cp-kvfs/." "$mnt/")
row "cp -a restore" "$a" "$b" "$(status); $(same_store)"
fresh_mount; a=$(seconds tar --xattrs -xf "$out/kvfs.tar" -C "$ref/r2"); b=$(seconds tar --xattrs -xf "$out/kvfs.tar" -C "$mnt")
row "tar --xattrs -x restore" "$a" "$b" "$(status); $(same_store)"
fresh_mount; a=$(seconds rsync -aX "$out/rs-kvfs/" "$ref/r3/"); b=$(seconds rsync -aX "$out/rs-kvfs/" "$mnt/")
row "rsync -aX restore" "$a" "$b" "$(status); $(same_store)"
fusermount3 -u "$mnt"
rm -rf "$store"
a=$(seconds cp -a "$out/hot/." "$ref/r4/"); b=$(seconds sh -c '"$1" load "$2" <"$3"' sh "$kvfs" "$store" "$out/dump")
"$kvfs" mount "$store" "$mnt"
row "kvfs load (vs cp store file)" "$a" "$b" "$(status); $(same_store)"
