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
#  0. first (alone with `scripts/bench-etcd.sh leaves`): cp -a of 1,000 small
#     text files into an LMDB mount and into an etcd mount, seconds and
#     ratio (issue 35 wants at most 5x), the FUSE requests per file by kind
#     (user.kvfs.stats) and the cluster's requests per file by kind (the
#     members' /metrics); then one file's copy replayed call by call, as
#     cp -a makes them, on 100 more files (scripts/bench-cp-steps.py): what
#     each call costs in FUSE requests and in round trips to the cluster.
# Starts its own cluster (scripts/etcd-cluster.sh, KVFS_ETCD_PORT default
# 24890) and stops it again; unmounts what it mounted. Only the ratios mean
# much: the cluster's three members share this machine's CPUs.
set -eu
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
part=${1:-all}
bin=${KVFS_ETCD_STORE_TEST:-build/etcd/test_etcd_store}
kvfs=${KVFS_BIN:-$PWD/kvfs}
export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24890}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-bench-etcd.XXXXXX")
export KVFS_ETCD_DIR=$tmp/etcd
cleanup() {
	bench_unmount_all "$tmp"
	scripts/etcd-cluster.sh stop >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
url=$(scripts/etcd-cluster.sh start)

now() { date +%s.%N; }
secs() { # secs CMD...: seconds CMD took (its output dropped)
	local t0
	t0=$(now)
	"$@" >/dev/null
	echo "$(now) - $t0" | bc
}

# ---- cp -a of 1,000 small leaves: seconds, and requests per file ----
mkdir -p "$tmp/leaves"
for ((i = 0; i < 1000; i++)); do echo "leaf $i" >"$tmp/leaves/l$i"; done
fuse_kinds() { # fuse_kinds MNT: "kind count" lines of the daemon's answered requests
	getfattr --absolute-names --only-values -n user.kvfs.stats "$1" |
		awk '$1 !~ /^(notify_|ahead_|store_|transport|position)/ && $2 ~ /^[0-9]+$/'
}
per_file() { # per_file BEFORE AFTER: "kind count/1000" for each kind that moved
	join "$1" "$2" | awk '$3 != $2 { printf " %s %.2f", $1, ($3 - $2) / 1000 }'
}
declare -A leaves
for side in lmdb etcd; do
	store=$tmp/store-leaves
	[ "$side" = etcd ] && store=$url/bench-leaves
	m=$tmp/mnt-leaves-$side
	bench_mount "$m" "$tmp/leaves-$side.log" "$store"
	fuse_kinds "$m" | sort >"$tmp/fuse0"
	bench_etcd_requests "${url#etcd://}" | xargs -n2 | sort >"$tmp/kv0"
	leaves[$side,secs]=$(secs cp -a "$tmp/leaves" "$m/")
	fuse_kinds "$m" | sort >"$tmp/fuse1"
	bench_etcd_requests "${url#etcd://}" | xargs -n2 | sort >"$tmp/kv1"
	leaves[$side,fuse]=$(per_file "$tmp/fuse0" "$tmp/fuse1")
	leaves[$side,kv]=$(per_file "$tmp/kv0" "$tmp/kv1")
	diff -r "$tmp/leaves" "$m/leaves" >/dev/null || echo "# $side: the copied leaves differ from the source" >&2
	steps=""
	[ "$side" = etcd ] && steps=$(python3 scripts/bench-cp-steps.py "$m/steps" "${url#etcd://}" 100)
	leaves[$side,steps]=$steps
	fusermount3 -u "$m"
done
echo "# cp -a of 1,000 small leaves in (one directory; load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-8s %10s   %s\n' side seconds 'per file: FUSE requests by kind | the cluster'"'"'s requests by kind'
for side in lmdb etcd; do
	printf '%-8s %10.3f  %s |%s\n' "$side" "${leaves[$side,secs]}" "${leaves[$side,fuse]}" "${leaves[$side,kv]:- none}"
done
printf 'etcd / LMDB: %.1fx (issue 35: at most 5x)\n' "$(echo "${leaves[etcd,secs]} / ${leaves[lmdb,secs]}" | bc -l)"
echo "# one file's copy, call by call (etcd; mean of 100 files): FUSE requests | cluster requests"
echo "${leaves[etcd,steps]}"
[ "$part" = leaves ] && exit 0

echo
echo "# store level (ms; ratio etcd / LMDB)"
for per in 3 100; do
	"$bin" bench "$tmp/lmdb-$per" "$per"
	"$bin" bench "$url/bench-$per" "$per"
done

# ---- mount level ----
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
	bench_mount "$tmp/mnt-$1" "$tmp/$1.log" "$2"
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
