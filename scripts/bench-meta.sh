#!/usr/bin/env bash
# make bench-meta: an mdtest-style metadata benchmark. P processes each
# create, stat and remove N files (BYTES each, default 0 as mdtest's), first
# each in a directory of its own, then all in one shared directory, timed per
# phase between barriers by build/bench-meta (scripts/bench-meta.c), on tmpfs
# (the reference), an LMDB mount (default mode and -o commit=100) and an
# etcd mount over a 3-member loopback cluster it starts and stops. Prints
# files per second, each kvfs figure's ratio to tmpfs, JuiceFS's published
# etcd figures beside them, then FUSE requests and etcd requests per file
# and phase. Nothing here is a test: run it by hand (docs/SPEED.md).
# Environment: KVFS_META_PROCS (4), KVFS_META_FILES (300 per process),
# KVFS_META_BYTES (0), KVFS_META_SIDES ("tmpfs lmdb lmdb-c100 etcd"),
# KVFS_META_DIR (where the stores, tmpfs side and cluster live; /dev/shm, so
# that neither side pays for a disk's syncs), KVFS_ETCD_PORT (24930).
set -eu
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
kvfs=${KVFS_BIN:-$PWD/kvfs}
helper=${KVFS_META_BIN:-$PWD/build/bench-meta}
procs=${KVFS_META_PROCS:-4}
files=${KVFS_META_FILES:-300}
bytes=${KVFS_META_BYTES:-0}
sides=${KVFS_META_SIDES:-tmpfs lmdb lmdb-c100 etcd}
export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24930}
tmp=$(mktemp -d "${KVFS_META_DIR:-/dev/shm}/kvfs-bench-meta.XXXXXX")
export KVFS_ETCD_DIR=$tmp/etcd
cluster=0
cleanup() {
	bench_unmount_all "$tmp"
	[ "$cluster" = 0 ] || scripts/etcd-cluster.sh stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# --- counters between phases (the helper's hook, outside the timed span) ---
# --counters MNT ENDPOINTS LOG PHASE: appends "PHASE FUSE RANGE TXN PUT DELETE"
# to LOG: the FUSE requests MNT's daemon answered and the cluster's key-value
# requests by kind, so far ("-" for a side that has none)
if [ "${1:-}" = --counters ]; then
	ops=0 kv="Range 0 Txn 0 Put 0 DeleteRange 0"
	[ "$2" = - ] || ops=$(bench_fuse_requests "$2")
	[ "$3" = - ] || kv=$(bench_etcd_requests "$3")
	read -r _ range _ txn _ put _ del <<<"$kv"
	echo "$5 $ops $range $txn $put $del" >>"$4"
	exit 0
fi

# run SIDE LAYOUT DIR MNT ENDPOINTS: the helper's rates into res[SIDE,LAYOUT,PHASE],
# and into req[SIDE,LAYOUT,PHASE] what each phase cost per file: "FUSE RANGE TXN PUT DELETE"
declare -A res req
run() {
	local side=$1 layout=$2 dir=$3 log=$tmp/counters-$1-$2 out ph line
	mkdir -p "$dir"
	: >"$log"
	out=$(BENCH_META_HOOK="bash scripts/bench-meta.sh --counters '$4' '$5' '$log'" \
		"$helper" "$dir" "$procs" "$files" "$layout" "$bytes")
	while read -r ph line; do
		res[$side,$layout,$ph]=$line
	done <<<"$out"
	while read -r ph line; do
		req[$side,$layout,$ph]=$line
	done < <(awk -v n=$((procs * files)) 'NR > 1 {
			printf "%s", ph
			for (i = 2; i <= 6; i++) printf " %.1f", ($i - v[i]) / n
			printf "\n"
		}
		{ ph = $1; for (i = 2; i <= 6; i++) v[i] = $i }' "$log")
}

# --- the sides, one after the other ---
for side in $sides; do
	case $side in
	tmpfs)
		run tmpfs own "$tmp/tmpfs/own" - -
		run tmpfs shared "$tmp/tmpfs/shared" - -
		;;
	lmdb | lmdb-c100)
		m=$tmp/mnt-$side opts=()
		[ "$side" = lmdb ] || opts=(-o commit=100)
		bench_mount "$m" "$tmp/$side.log" "$tmp/store-$side" "${opts[@]}"
		run "$side" own "$m/own" "$m" -
		run "$side" shared "$m/shared" "$m" -
		fusermount3 -u "$m"
		;;
	etcd)
		cluster=1
		url=$(scripts/etcd-cluster.sh start)
		m=$tmp/mnt-etcd
		bench_mount "$m" "$tmp/etcd.log" "$url/meta"
		run etcd own "$m/own" "$m" "${url#etcd://}"
		run etcd shared "$m/shared" "$m" "${url#etcd://}"
		fusermount3 -u "$m"
		;;
	*)
		echo "bench-meta: unknown side $side (tmpfs, lmdb, lmdb-c100, etcd)" >&2
		exit 2
		;;
	esac
done

# --- the table ---
# JuiceFS's mdtest figures with its metadata on a 3-member etcd cluster
# (12 processes; its "Metadata Engines Benchmark" page): no removal figure.
declare -A juicefs=([create]=1802 [stat]=6277)
echo "# mdtest-style: $procs processes x $files files each ($bytes bytes), files/s;"
echo "# (x): how many times tmpfs's rate; tmpfs in $(stat -f -c %T "$tmp"), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-7s %-7s' layout phase
for side in $sides; do printf ' %18s' "$side"; done
printf ' %20s\n' 'JuiceFS etcd (12 p)'
for layout in own shared; do
	for ph in create stat remove; do
		printf '%-7s %-7s' "$layout" "$ph"
		for side in $sides; do
			r=${res[$side,$layout,$ph]:-0} t=${res[tmpfs,$layout,$ph]:-}
			if [ "$side" = tmpfs ] || [ -z "$t" ]; then
				printf ' %18.0f' "$r"
			else
				printf ' %10.0f (%5.1fx)' "$r" "$(echo "$t / $r" | bc -l)"
			fi
		done
		printf ' %20s\n' "${juicefs[$ph]:--}"
	done
done
echo
echo "# requests per file: FUSE requests; on etcd, the cluster's Range, Txn, Put, DeleteRange"
for side in $sides; do
	[ "$side" = tmpfs ] && continue
	for layout in own shared; do
		for ph in create stat remove; do
			read -r f r t p d <<<"${req[$side,$layout,$ph]}"
			if [ "$side" = etcd ]; then
				printf '%-10s %-7s %-7s fuse %5s  range %5s txn %5s put %5s delete %5s\n' \
					"$side" "$layout" "$ph" "$f" "$r" "$t" "$p" "$d"
			else
				printf '%-10s %-7s %-7s fuse %5s\n' "$side" "$layout" "$ph" "$f"
			fi
		done
	done
done
