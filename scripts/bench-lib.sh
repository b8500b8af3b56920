# scripts/bench-lib.sh - what the benchmarks share; sourced by scripts/bench.sh,
# bench-read.sh, bench-write.sh and bench-backup.sh from the top of the tree,
# never run on its own.
#   bench_setup TMPFS_SIZE [DIR]  sets kvfs (KVFS_BIN, else ./kvfs), work (a new
#                            temporary directory in DIR, default /tmp), store,
#                            mnt and ref (the reference side: a tmpfs of
#                            TMPFS_SIZE, needs root); on exit unmounts both
#                            and removes work.
#   now                      the time in seconds, with nanoseconds.
#   bench_mount MNT LOG STORE [OPTION...]  mounts STORE at MNT (kvfs mount -f
#                            --create in the background, its output in LOG, its
#                            pid added to bench_pids) and waits up to 10 s
#                            for the mount (bench-etcd.sh, bench-meta.sh).
#   bench_unmount_all DIR    unmounts whatever is mounted at DIR/mnt-* and waits
#                            for the daemons bench_mount started (a cleanup's).
#   bench_fuse_requests MNT  the FUSE requests MNT's daemon has answered, summed
#                            from user.kvfs.stats.
#   bench_etcd_requests ENDPOINTS  "Range N Txn N Put N DeleteRange N": the
#                            key-value requests the members at ENDPOINTS
#                            (host:port,...) have answered, from their /metrics.
#   seconds CMD...           wall time of one run of CMD, output discarded; a
#                            failed run stops the benchmark (a quick failure
#                            would pass for the best time).
#   ratio A B, min A B       A / B to two places; the smaller (A may be empty).
# shellcheck shell=bash disable=SC2034  # the variables are for the callers

bench_cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	umount "$ref" 2>/dev/null || true
	rm -rf "$work"
}

bench_setup() {
	kvfs=${KVFS_BIN:-$PWD/kvfs}
	work=$(mktemp -d "${2:-/tmp}/kvfs-bench.XXXXXX")
	store=$work/store mnt=$work/mnt ref=$work/tmpfs
	mkdir -p "$mnt" "$ref"
	trap bench_cleanup EXIT
	mount -t tmpfs -o size="$1" tmpfs "$ref"
}

now() { date +%s.%N; }

bench_pids=()
bench_mount() {
	local m=$1 log=$2 st=$3 i
	shift 3
	mkdir -p "$m"
	"$kvfs" mount -f --create "$@" "$st" "$m" >"$log" 2>&1 &
	bench_pids+=($!)
	for ((i = 0; i < 200; i++)); do
		grep -q " $m " /proc/mounts && return 0
		sleep 0.05
	done
	cat "$log" >&2
	return 1
}

bench_unmount_all() {
	local m p
	for m in "$1"/mnt-*; do	# (set -e: a failed unmount must not end the cleanup)
		if grep -q " $m " /proc/mounts; then fusermount3 -u "$m" 2>/dev/null || true; fi
	done
	for p in "${bench_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}

bench_fuse_requests() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$1" |
		awk '$1 !~ /^(notify_|ahead_|store_|transport|position)/ { s += $2 } END { print s + 0 }'
}

bench_etcd_requests() {
	local ep
	for ep in ${1//,/ }; do
		curl -sf "http://$ep/metrics"
	done | awk '/^grpc_server_handled_total/ && /grpc_service="etcdserverpb.KV"/ {
			match($0, /grpc_method="[A-Za-z]*"/)
			n[substr($0, RSTART + 13, RLENGTH - 14)] += $2
		}
		END { printf "Range %d Txn %d Put %d DeleteRange %d\n", n["Range"], n["Txn"], n["Put"], n["DeleteRange"] }'
}

seconds() {
	local t0 t1 err
	err=$(mktemp)
	t0=$(now)
	if ! "$@" >/dev/null 2>"$err"; then
		echo "bench: failed in $PWD: $*" >&2
		cat "$err" >&2
		rm -f "$err"
		return 1
	fi
	t1=$(now)
	rm -f "$err"
	awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.4f", a - b }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
