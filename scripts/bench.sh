#!/usr/bin/env bash
# make bench: kvfs between the floor and the FUSE daemons people already run.
# Each workload runs on tmpfs (the reference), on scripts/fuse-floor.c over
# /dev/fuse and over io_uring (a FUSE file system that keeps nothing: what
# the round trips cost by themselves), on mergerfs and bindfs over tmpfs
# (Debian's packages, installed here with apt-get when missing), and on
# kvfs in its default mode and with -o commit=100, over /dev/fuse
# (-o no_io_uring) and over io_uring (-o io_uring); every
# figure is a ratio to tmpfs in the same run, best of KVFS_BENCH_ROUNDS
# (default 3) on each side, since the machines this runs on are shared.
#   scripts/bench.sh [DIRS [LEAVES_PER_DIR]]     default 50 x 100 = 5,000 leaves
# The workloads: cp -a of the tree (typed leaves with their user.kvfs.type
# xattrs, as a kvfs mount shows them) into an empty mount; 500 x
# `echo N > kN` into the root of an empty mount; `find -exec cat` over the
# tree, warm (a second pass on the same mount); `tar --xattrs -c` of the
# tree, cold (a fresh mount). A write's requests per file are the daemon's
# own count (kvfs's and the floor's user.kvfs.stats); the daemon's CPU
# seconds (utime + stime of all its threads) are printed for every FUSE side.
# The io_uring sides need /sys/module/fuse/parameters/enable_uring: it is
# set to Y for the run and put back as it was on every way out; without it
# (an older kernel) those columns say "-". kvfs's stores live on disk in
# KVFS_BENCH_DIR (default /var/tmp): a commit's cost is mostly its sync.
# Root. The CSV goes to KVFS_BENCH_CSV (default: a file in /tmp, named at
# the end).
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=${1:-50} leaves=${2:-100}
rounds=${KVFS_BENCH_ROUNDS:-3}
floor=${KVFS_FLOOR:-$PWD/build/fuse-floor}
uring_param=/sys/module/fuse/parameters/enable_uring
. scripts/bench-lib.sh
bench_setup 2g "${KVFS_BENCH_DIR:-/var/tmp}"
nfiles=$((dirs * leaves))
csv=${KVFS_BENCH_CSV:-/tmp/kvfs-bench-$(date -u +%Y%m%dT%H%M%SZ).csv}

# ---- the neighbours, and the io_uring switch put back on every way out ----
for tool in mergerfs bindfs; do
	command -v "$tool" >/dev/null && continue
	echo "# installing $tool (Debian package)"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$tool"; } >/dev/null
done
uring_old=
restore() {
	[ -z "$uring_old" ] || echo "$uring_old" >"$uring_param"
	bench_cleanup
}
trap restore EXIT
trap 'exit 130' INT TERM
sides=(tmpfs floor floor-uring mergerfs bindfs kvfs kvfs-commit kvfs-uring kvfs-commit-uring)
if [ -w "$uring_param" ]; then
	uring_old=$(cat "$uring_param")
	echo Y >"$uring_param"
else
	echo "# no $uring_param (a kernel without FUSE over io_uring): no io_uring columns"
	sides=(tmpfs floor mergerfs bindfs kvfs kvfs-commit)
fi

# ---- the tree: typed leaves with their xattrs, as a kvfs mount shows them ----
echo "# building a tree of $dirs x $leaves leaves"
python3 - "$dirs" "$leaves" >"$work/tree.json" <<'PY'
import json, sys
d, l = int(sys.argv[1]), int(sys.argv[2])
json.dump({"d%04d" % i: {"k%04d" % j: (j if j % 2 else "value %d/%d" % (i, j)) for j in range(l)} for i in range(d)}, sys.stdout)
PY
tree_store=$work/tree-store
"$kvfs" import --create "$tree_store" / "$work/tree.json" >/dev/null
mkdir "$ref/tree"
"$kvfs" mount "$tree_store" "$mnt"
cp -a "$mnt/." "$ref/tree/"
fusermount3 -u "$mnt"

# ---- one side up and down: $dir is where a workload runs, $pid its daemon ----
# side_up SIDE empty|tree: an empty file system, or one holding the tree
# (a fresh mount: its caches cold).
side_up() {
	local side=$1 what=$2 branch=$ref/out seed=()
	pid= dir=$mnt
	rm -rf "$ref/out" "$store"
	mkdir "$ref/out"
	[ "$what" = tree ] && branch=$ref/tree seed=(-o "seed=$branch")
	case $side in
	tmpfs) dir=$branch; return ;;
	floor) "$floor" -f "${seed[@]}" "$mnt" 2>>"$work/daemon.log" & ;;
	floor-uring) "$floor" -f -o io_uring "${seed[@]}" "$mnt" 2>>"$work/daemon.log" & ;;
	# its default keeps 4 GB free on a branch: more than the tmpfs holds
	mergerfs) mergerfs -f -o minfreespace=0 "$branch" "$mnt" 2>>"$work/daemon.log" & ;;
	bindfs) bindfs -f "$branch" "$mnt" 2>>"$work/daemon.log" & ;;
	kvfs*) kvfs_up "$side" "$what" & ;;
	esac
	pid=$!
	wait_mounted
	[[ $side != *uring ]] || wait_uring
}
# kvfs in the foreground (so that $! is the daemon): a fresh store, or the tree's
# side, and its transport named (without either option kvfs takes the rings
# when the parameter is Y, which this script sets)
kvfs_up() {
	local opts=no_io_uring s=$store
	[[ $1 != *-uring ]] || opts=io_uring
	[[ $1 != *-commit* ]] || opts+=,commit=100
	[ "$2" = tree ] && s=$tree_store || opts+=,create
	exec "$kvfs" mount -f -o "$opts" "$s" "$mnt" 2>>"$work/daemon.log"
}
wait_mounted() {
	local i
	for ((i = 0; i < 400; i++)); do
		mountpoint -q "$mnt" && return
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.025
	done
	echo "bench: the mount at $mnt did not come up (log: $work/daemon.log)" >&2
	exit 1
}
# the rings register just after INIT: wait until the daemon serves through them
wait_uring() {
	local i
	for ((i = 0; i < 200; i++)); do
		getfattr --only-values -n user.kvfs.stats "$mnt" 2>/dev/null | grep -qx 'transport io_uring' &&
			return
		sleep 0.025
	done
	echo "bench: $mnt does not serve through io_uring" >&2
	exit 1
}
side_down() {
	[ -z "$pid" ] && return
	fusermount3 -u "$mnt"
	wait "$pid" || true
}
# the daemon's CPU seconds so far (utime + stime of every thread, dead ones too)
cpu() {
	[ -z "$pid" ] && { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$pid/stat"
}
requests() {
	case $1 in floor* | kvfs*) bench_fuse_requests "$mnt" ;; *) echo "" ;; esac
}

# ---- the workloads: run in $dir ----
w_cp_a() { cp -a "$ref/tree/." .; }
w_echo() { local i; for ((i = 1; i <= 500; i++)); do echo "$i" >"k$i"; done; }
w_find_cat() { find . -type f -exec cat {} + >/dev/null; }
w_tar() { tar --xattrs -cf - . | cat >/dev/null; }
names=(cp_a echo find_cat tar)
labels=("cp -a of $nfiles leaves into the mount" "500 x echo N > new"
	"find -exec cat, warm" "tar --xattrs -c, cold")
kinds=(empty empty tree tree)
files=("$nfiles" 500 "$nfiles" "$nfiles")
declare -A t rq cs

row() { printf '%-38s' "$1"; shift; printf ' %11s' "$@"; echo; }
# one workload's row, printed as soon as its rounds are done, and its CSV lines
print_row() {
	local k=$1 w=${names[$1]} side cells=()
	for side in "${sides[@]}"; do
		if [ "$side" = tmpfs ]; then
			cells+=("${t[$w/tmpfs]}")
		else
			cells+=("$(ratio "${t[$w/$side]}" "${t[$w/tmpfs]}")")
		fi
		echo "\"${labels[$k]}\",$side,${t[$w/$side]},$(ratio "${t[$w/$side]}" "${t[$w/tmpfs]}"),${rq[$w/$side]:-},${cs[$w/$side]:-}" >>"$csv"
	done
	row "${labels[$k]}" "${cells[@]}"
}

echo "# load before: $(uptime)"
echo "# ratio to tmpfs, best of $rounds (tmpfs: its seconds); $nfiles leaves in $dirs directories"
row workload "${sides[@]}"
echo "workload,side,seconds,ratio,requests_per_file,daemon_cpu_s" >"$csv"
for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]}
	for ((r = 0; r < rounds; r++)); do
		for side in "${sides[@]}"; do
			side_up "$side" "${kinds[$k]}"
			# warm: one untimed pass first, on the same mount
			[ "$w" = find_cat ] && (cd "$dir" && w_find_cat)
			c0=$(cpu)
			s=$(cd "$dir" && seconds "w_$w")
			c1=$(cpu)
			n=$(requests "$side")
			side_down
			# the best round's requests and CPU are kept with its time
			if [ "$(min "${t[$w/$side]:-}" "$s")" = "$s" ]; then
				t[$w/$side]=$s
				cs[$w/$side]=$(awk -v a="$c1" -v b="$c0" 'BEGIN { printf "%.2f", a - b }')
				rq[$w/$side]=${n:+$(awk -v a="$n" -v f="${files[$k]}" 'BEGIN { printf "%.1f", a / f }')}
			fi
		done
	done
	print_row "$k"
done
echo "# load after: $(uptime)"
echo
echo "# FUSE requests per file (the daemon's count; - where it keeps none)"
row workload "${sides[@]:1}"
for ((k = 0; k < 2; k++)); do
	w=${names[$k]} cells=()
	for side in "${sides[@]:1}"; do cells+=("${rq[$w/$side]:--}"); done
	row "${labels[$k]}" "${cells[@]}"
done
echo
echo "# the daemon's CPU seconds in the best run (all its threads)"
row workload "${sides[@]:1}"
for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]} cells=()
	for side in "${sides[@]:1}"; do cells+=("${cs[$w/$side]}"); done
	row "${labels[$k]}" "${cells[@]}"
done
echo "# CSV: $csv"
