#!/usr/bin/env bash
# What one change by another process costs a mount that knows many nodes:
# the daemon's CPU (utime + stime from /proc/PID/stat) per outside
# `kvfs put`, and the time until `stat` and `cat` through the mount show
# the new value, for a reference build and this one in the same run.
#   KVFS_BASE=OLD/kvfs scripts/bench-changes.sh [LEAVES] [PUTS]
# LEAVES (default 1,000,000) integer leaves, 1,000 a directory, imported
# with `kvfs import`; `find MNT -ls` once makes the kernel learn every node
# (a plain find reads most names with readdir alone, and learns few leaves);
# then PUTS (default 10) puts, each waiting until cat shows it and the
# daemon's CPU time stops moving. Each put writes a longer value than the
# last: stat shows its size only once the watcher dropped the cached
# attributes (cat alone may see it sooner: its open reaches the daemon,
# which notices the new mtime itself). Without KVFS_BASE only
# this build is measured. Needs root (FUSE mounts) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
leaves=${1:-1000000}
puts=${2:-10}
per_dir=1000
new=${KVFS_BIN:-$PWD/kvfs}
base=${KVFS_BASE:-}
work=$(mktemp -d /tmp/kvfs-bench-changes.XXXXXX)
mnt=$work/mnt
pid=
mkdir -p "$mnt"

cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
hz=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime of the whole process (threads that ended included).
cpu_ticks() {
	awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}

# cpu_snap PID FILE: each live thread's CPU nanoseconds (schedstat), finer
# than the clock ticks of /proc/PID/stat, which a cheap change stays below.
cpu_snap() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null || echo 0)"
	done >"$2"
}

# cpu_delta_ns BEFORE AFTER: nanoseconds the threads ran in between (a
# thread that ended meanwhile is missed; a new one counts whole).
cpu_delta_ns() {
	awk 'NR == FNR { a[$1] = $2; next } { d += $2 - ($1 in a ? a[$1] : 0) } END { printf "%d", d }' "$1" "$2"
}

# settle PID: waits until the daemon's CPU time has not moved for 0.6 s.
settle() {
	local a b
	a=$(cpu_ticks "$1")
	while :; do
		sleep 0.3
		b=$(cpu_ticks "$1")
		if [ "$a" = "$b" ]; then
			sleep 0.3
			[ "$(cpu_ticks "$1")" = "$b" ] && return 0
		fi
		a=$(cpu_ticks "$1")
	done
}

python3 - "$leaves" "$per_dir" >"$work/doc.json" <<'PY'
import sys
leaves, per = int(sys.argv[1]), int(sys.argv[2])
dirs = (leaves + per - 1) // per
sys.stdout.write("{")
for d in range(dirs):
    n = min(per, leaves - d * per)
    sys.stdout.write("%s\"d%d\": {%s}" % ("," if d else "", d,
                     ",".join("\"f%d\": %d" % (i, i) for i in range(n))))
sys.stdout.write("}")
PY

# measure NAME KVFS: prints one result line for that build.
measure() {
	local name=$1 kvfs=$2 store=$work/store-$1 i t0 t1 c0 c1 ms lat
	local total_ms=0 total_ns=0 worst=0 sum_lat=0 find_s idle rss
	"$kvfs" import --create "$store" / "$work/doc.json" >/dev/null
	"$kvfs" mount -f "$store" "$mnt" >"$work/$name.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		mountpoint -q "$mnt" && break
		sleep 0.05
	done
	t0=$(now)
	find "$mnt" -ls >/dev/null
	t1=$(now)
	find_s=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
	settle "$pid"
	# the watcher's own cost while nothing changes, over 3 s
	c0=$(cpu_ticks "$pid")
	sleep 3
	c1=$(cpu_ticks "$pid")
	idle=$(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.1f", d * 1000 / hz / 3 }')
	rss=$(awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$pid/status")
	for ((i = 1; i <= puts; i++)); do
		local path=/d$((i * 7 % (leaves / per_dir)))/f$((i * 13 % per_dir))
		local value
		value=$(printf 'value-%d-%*s' "$i" "$i" '' | tr ' ' x)
		# the kernel caches the old size and pages again (a re-check
		# of everything before dropped them all)
		stat "$mnt$path" >/dev/null
		cat "$mnt$path" >/dev/null
		settle "$pid"
		c0=$(cpu_ticks "$pid")
		cpu_snap "$pid" "$work/snap0"
		t0=$(now)
		"$kvfs" put "$store" "$path" "$value"
		until [ "$(stat -c %s "$mnt$path")" = $((${#value} + 1)) ] &&
			[ "$(cat "$mnt$path")" = "$value" ]; do
			sleep 0.005
		done
		t1=$(now)
		settle "$pid"
		c1=$(cpu_ticks "$pid")
		cpu_snap "$pid" "$work/snap1"
		total_ns=$((total_ns + $(cpu_delta_ns "$work/snap0" "$work/snap1")))
		ms=$(awk -v d=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.1f", d * 1000 / hz }')
		lat=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.0f", (a - b) * 1000 }')
		total_ms=$(awk -v a="$total_ms" -v b="$ms" 'BEGIN { print a + b }')
		sum_lat=$((sum_lat + lat))
		[ "$lat" -gt "$worst" ] && worst=$lat
	done
	fusermount3 -u "$mnt"
	wait "$pid" || true
	pid=
	rm -rf "$store"
	awk -v n="$name" -v t="$total_ms" -v p="$puts" -v s="$sum_lat" -v w="$worst" \
	    -v f="$find_s" -v idle="$idle" -v rss="$rss" -v ns="$total_ns" \
	    'BEGIN { printf "%-5s  cpu/put %8.1f ms (schedstat %8.3f ms)   stat+cat show it: mean %4.0f ms, worst %4.0f ms   (find -ls %s s; daemon %s MiB; idle %s ms/s)\n",
		     n, t / p, ns / p / 1e6, s / p, w, f, rss, idle }' | tee -a "$work/results"
}

echo "$leaves leaves in $((leaves / per_dir)) directories, $puts outside puts each"
[ -z "$base" ] || measure base "$base"
measure new "$new"
if [ -n "$base" ]; then
	awk '{ cpu[$1] = $3; ns[$1] = $6; lat[$1] = $12 }
	     END { if (ns["new"] > 0) printf "cpu per put (schedstat): base/new = %.0fx", ns["base"] / ns["new"];
		   printf "; mean latency base/new = %.2fx\n", lat["base"] / lat["new"] }' \
		"$work/results"
fi
