#!/usr/bin/env bash
# make bench-etcd: the etcd backend beside LMDB, in one run, two tables.
#  1. store level (build/etcd/test_etcd_store bench): a point get (one read
#     transaction each), the commit of one put, and listing 1,000 children
#     whose subtrees hold 3 and 100 keys each.
#  2. mount level: the same tree (documents and text files in directories)
#     copied in with cp -a, then ls -l of a directory of 1,000 children
#     holding 40 keys each, cat of 320 files (text, and documents as
#     NAME.json), find -exec cat of the 4,000 leaves of 20 documents (their
#     directory view), and cp -a out
#     to a local directory, on an LMDB mount and on an etcd mount: seconds
#     (best of 3 for the reads) and etcd / LMDB. Then, through a fresh
#     mount (nothing cached; one run each), ls -l of those 1,000 documents
#     and of 1,000 documents holding an object, an array and an empty
#     object each (imported with kvfs import), and ls of the latter; and
#     ls of 1,000 documents of 200 keys each, through a fresh mount and with
#     the CLI's kvfs ls (one process, no mount), whose 200,000 keys a
#     listing must not read; and, through fresh mounts, ls -l after ls of
#     the documents with containers (the kernel keeps the listing, so each
#     name it gave no attributes is stat'ed) and stat of the names a glob
#     found.
# Starts its own cluster (scripts/etcd-cluster.sh, KVFS_ETCD_PORT default
# 24890) and stops it again; unmounts what it mounted. Only the ratios mean
# much: the cluster's three members share this machine's CPUs.
set -eu
cd "$(dirname "$0")/.."
bin=${KVFS_ETCD_STORE_TEST:-build/etcd/test_etcd_store}
kvfs=${KVFS_BIN:-$PWD/kvfs}
export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24890}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-bench-etcd.XXXXXX")
export KVFS_ETCD_DIR=$tmp/etcd
pids=()
cleanup() {
	for m in "$tmp"/mnt-*; do	# (set -e: a failed unmount must not end the cleanup)
		if grep -q " $m " /proc/mounts; then fusermount3 -u "$m" 2>/dev/null || true; fi
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	scripts/etcd-cluster.sh stop >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
url=$(scripts/etcd-cluster.sh start)

echo "# store level (ms; ratio etcd / LMDB)"
for per in 3 100; do
	"$bin" bench "$tmp/lmdb-$per" "$per"
	"$bin" bench "$url/bench-$per" "$per"
done

# ---- mount level ----
now() { date +%s.%N; }
secs() { # secs CMD...: seconds CMD took (its output dropped)
	local t0
	t0=$(now)
	"$@" >/dev/null
	echo "$(now) - $t0" | bc
}
best3() { # best3 CMD...: the least of three runs
	local a b c
	a=$(secs "$@") b=$(secs "$@") c=$(secs "$@")
	printf '%s\n%s\n%s\n' "$a" "$b" "$c" | sort -g | head -1
}
# the source tree: wide/ (1,000 documents of 40 keys), docs/ (200 documents
# of 200 keys in 10 directories), text/ (300 small text files)
src=$tmp/src
mkdir -p "$src/wide" "$src/text"
doc() { # doc I N: a JSON object of N keys
	local j
	printf '{"id":%d' "$1"
	for ((j = 1; j < $2; j++)); do printf ',"k%d":"value %d of %d"' "$j" "$j" "$1"; done
	printf '}\n'
}
for ((i = 0; i < 1000; i++)); do doc "$i" 40 >"$src/wide/d$i.json"; done
for ((d = 0; d < 10; d++)); do
	mkdir -p "$src/docs/dir$d"
	for ((i = 0; i < 20; i++)); do doc "$i" 200 >"$src/docs/dir$d/d$i.json"; done
done
for ((i = 0; i < 300; i++)); do echo "line $i of a small text file" >"$src/text/t$i.txt"; done
# nested.json: 1,000 documents of 20 leaves, an object, an array and an empty object each
{
	printf '{'
	for ((i = 0; i < 1000; i++)); do
		printf '%s"n%04d":{"addr":{"city":"c%d","zip":%d},"tags":["a","b"],"prefs":{}' \
			"$([ $i -gt 0 ] && echo ,)" "$i" "$i" "$i"
		for ((j = 0; j < 20; j++)); do printf ',"f%02d":%d' "$j" "$j"; done
		printf '}'
	done
	printf '}\n'
} >"$tmp/nested.json"
# deep.json: 1,000 documents of 200 keys
{
	printf '{'
	for ((i = 0; i < 1000; i++)); do
		printf '%s"d%04d":' "$([ $i -gt 0 ] && echo ,)" "$i"
		doc "$i" 200 | tr -d '\n'
	done
	printf '}\n'
} >"$tmp/deep.json"

mount_one() { # mount_one NAME STORE: mounts STORE at $tmp/mnt-NAME
	local m=$tmp/mnt-$1 i
	mkdir -p "$m"
	"$kvfs" mount -f --create "$2" "$m" >"$tmp/$1.log" 2>&1 &
	pids+=($!)
	for ((i = 0; i < 200; i++)); do
		grep -q " $m " /proc/mounts && return 0
		sleep 0.05
	done
	cat "$tmp/$1.log" >&2
	return 1
}
mkdir -p "$tmp/want"
cp -a "$src/text" "$src/docs/dir0/"*.json "$tmp/want/"	# what a copy out must hold
declare -A res
for side in lmdb etcd; do
	store=$tmp/store-lmdb
	[ "$side" = etcd ] && store=$url/bench-mount
	mount_one "$side" "$store"
	m=$tmp/mnt-$side
	res[$side,cp_in]=$(secs cp -a "$src/." "$m/")
	res[$side,ls]=$(best3 ls -l "$m/wide")
	# a document reads as NAME.json (not listed: the listing shows its directory view)
	res[$side,cat]=$(best3 sh -c "cat '$m'/text/*.txt $(printf "'$m/docs/dir0/d%d.json' " $(seq 0 19))")
	res[$side,find]=$(best3 sh -c "cd '$m/docs/dir0' && find . -type f -exec cat {} +")
	rm -rf "$tmp/out-$side"
	mkdir -p "$tmp/out-$side"
	res[$side,cp_out]=$(secs sh -c "cp -a '$m/text' $(printf "'$m/docs/dir0/d%d.json' " $(seq 0 19)) '$tmp/out-$side/'")
	diff -r "$tmp/want/text" "$tmp/out-$side/text" >/dev/null || echo "# $side: the text files copied out differ from the source" >&2
	"$kvfs" import "$store" /nested "$tmp/nested.json" >/dev/null
	"$kvfs" import "$store" /deep "$tmp/deep.json" >/dev/null
	fusermount3 -u "$m"
	mount_one "$side" "$store"	# nothing cached: each listing reads the store
	res[$side,ls_cold]=$(secs ls -l "$m/wide")
	res[$side,ls_nested]=$(secs ls -l "$m/nested")
	fusermount3 -u "$m"
	mount_one "$side" "$store"
	res[$side,ls_plain]=$(secs ls "$m/nested")
	fusermount3 -u "$m"
	mount_one "$side" "$store"
	res[$side,ls_deep]=$(secs ls "$m/deep")
	fusermount3 -u "$m"
	# the kernel keeps the listing: ls -l then stats each name it did not give attributes
	mount_one "$side" "$store"
	ls "$m/nested" >/dev/null
	res[$side,ls_then]=$(secs ls -l "$m/nested")
	fusermount3 -u "$m"
	mount_one "$side" "$store"
	res[$side,stat_glob]=$(secs sh -c "cd '$m/nested' && stat -c '%n %s %h' *")
	fusermount3 -u "$m"
	res[$side,cli_deep]=$(best3 "$kvfs" ls "$store" /deep)
done
echo
echo "# mount level (seconds; etcd / LMDB)"
printf '%-52s %10s %10s %8s\n' workload LMDB etcd ratio
row() {
	printf '%-52s %10.3f %10.3f %7.1fx\n' "$1" "${res[lmdb,$2]}" "${res[etcd,$2]}" \
		"$(echo "${res[etcd,$2]} / ${res[lmdb,$2]}" | bc -l)"
}
row "cp -a of the tree in (1,500 files, 80,000 keys)" cp_in
row "ls -l of 1,000 documents of 40 keys (best of 3)" ls
row "cat of 320 files: text and documents (best of 3)" cat
row "find -exec cat: the 4,000 leaves of 20 documents (best of 3)" find
row "cp -a out: 300 text files and 20 documents" cp_out
row "fresh mount: ls -l of the 1,000 documents of 40 keys" ls_cold
row "fresh mount: ls -l of 1,000 documents with containers" ls_nested
row "fresh mount: ls of 1,000 documents with containers" ls_plain
row "fresh mount: ls of 1,000 documents of 200 keys" ls_deep
row "fresh mount: ls, then ls -l of the 1,000 with containers" ls_then
row "fresh mount: stat of the 1,000 names a glob found" stat_glob
row "kvfs ls of 1,000 documents of 200 keys (best of 3)" cli_deep
