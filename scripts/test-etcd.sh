#!/usr/bin/env bash
# The etcd pass (make test-etcd, and a pass of make test): the suites
# tagged "backends" with every test's store on etcd instead of LMDB, and the
# etcd suites (tag "etcd"). Starts, for each of KVFS_JOBS job slots
# (default 2), a cluster of KVFS_ETCD_SLOT_MEMBERS members (default 1;
# scripts/etcd-cluster.sh) in a directory of its own, and runs the files
# KVFS_JOBS at a time, each file alone on one cluster: a store's
# generation is its cluster's revision, so two files on one cluster would
# count each other's commits (tests 38 and 45 count them). A test's store
# is etcd://.../kvfs-bats/<unique> (tests/test_helper/common.bash, under
# KVFS_TEST_BACKEND=etcd). The suites that need replication or limits of
# their own start their own 3-member cluster (80, 81, 82, 88: members
# stopped, frozen, failed over; 90 its own hosts): the others need etcd's
# semantics, not its replication, which costs a third more time (tests/87:
# 115 s on 3 members, 74 s on 1, 2026-11-30 at load 5). Every cluster is
# stopped again, whatever happened. Ends with one "N passed, N failed" line.
#
# Environment: KVFS_JOBS (job slots: files at once, default 2),
# KVFS_ETCD_PORT (the first cluster's base port; default the first base
# from 24790 on, in steps of 20, whose six ports are free), KVFS_TAGS
# (default "backends;etcd"), KVFS_SUITES, and those of scripts/run-tests.sh.
set -u
cd "$(dirname "$0")/.."

# True when something listens on 127.0.0.1:$1.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_base FROM: the first base port from FROM on (steps of 20) whose six ports are free.
free_base() {
	local base p free
	for ((base = $1; base < 30000; base += 20)); do
		free=1
		for ((p = base; p < base + 6; p++)); do
			port_busy "$p" && free=0 && break
		done
		[ "$free" = 1 ] && echo "$base" && return 0
	done
	return 1
}

# The CLI suites, the mount suites (34-mount-ext4's fsx/SQLite included),
# backups, tables, TTL; then the etcd suites themselves. The trust (5x) and
# crash (6x) suites corrupt or kill LMDB files: nothing of theirs applies.
export KVFS_TAGS=${KVFS_TAGS:-backends;etcd}
export KVFS_TEST_BACKEND=etcd
jobs=${KVFS_JOBS:-2}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
command -v parallel >/dev/null || jobs=1
work=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-test-etcd.XXXXXX")
stop_clusters() {
	local d
	for d in "$work"/cluster*; do
		[ -d "$d" ] && KVFS_ETCD_DIR=$d scripts/etcd-cluster.sh stop >/dev/null 2>&1
	done
	rm -rf "$work"
}
trap stop_clusters EXIT

# chosen FILE: whether one of the filters of KVFS_TAGS (";" between
# filters, "," between the tags of one) can choose a test of FILE: each of
# its tags on the file or one of its tests, none of its "!" tags on the
# file (bats then chooses the tests; a file none can choose is not started,
# so no cluster or network of its own is made for nothing).
chosen() {
	local all own filter tag ok
	all=$(grep -E '^# bats (file|test)_tags=' "$1" | sed 's/.*=//' | tr ',' '\n')
	own=$(grep -E '^# bats file_tags=' "$1" | sed 's/.*=//' | tr ',' '\n')
	IFS=';' read -ra filters <<<"$KVFS_TAGS"
	for filter in "${filters[@]}"; do
		ok=1
		IFS=',' read -ra tags <<<"$filter"
		for tag in "${tags[@]}"; do
			case $tag in
			!*) ! grep -qxF "${tag#!}" <<<"$own" || ok=0 ;;
			*) grep -qxF "$tag" <<<"$all" || ok=0 ;;
			esac
		done
		[ "$ok" = 0 ] || return 0
	done
	return 1
}
files=()
for f in ${KVFS_SUITES:-tests/*.bats}; do
	chosen "$f" && files+=("$f")
done

# Per job slot one cluster (above: why one member).
slot_members=${KVFS_ETCD_SLOT_MEMBERS:-1}
base=$(free_base "${KVFS_ETCD_PORT:-24790}") || base=
for ((slot = 1; slot <= jobs; slot++)); do
	mkdir -p "$work/cluster$slot"
	url=
	[ -z "$base" ] || url=$(KVFS_ETCD_PORT=$base KVFS_ETCD_DIR=$work/cluster$slot \
		KVFS_ETCD_MEMBERS=$slot_members scripts/etcd-cluster.sh start) || url=
	if [ -z "$url" ]; then
		echo "not ok - test-etcd: cluster $slot did not start (ports from ${base:-none free})"
		echo "0 passed, 1 failed"
		exit 1
	fi
	export "KVFS_ETCD_URL_$slot=$url"
	base=$(free_base $((base + 20))) || base=
done

# One file on the cluster of its job slot (parallel's {%}, 1..jobs).
run_file() {
	local url_var=KVFS_ETCD_URL_$1
	KVFS_ETCD_URL=${!url_var} KVFS_JOBS=1 KVFS_SUITES=$2 bash scripts/run-tests.sh none
}
export -f run_file
out=$work/out
# longest first, so that no long file starts last and runs alone: the
# files whose wall time in the clean-clone run of f52a8f3 (2026-11-30, one
# 1-member cluster per slot) was over 15 s (83 52 s, 87 48, 81 47, 85 44,
# 82 30, 86 30, 39 27, 74 26, 88 23, 75 23, 40 21, 80 20, 89 19, 84 16),
# then the others by size, which stands for time; the per-file wall times
# each pass prints below keep this list right
slow='83-etcd-big 87-etcd-values 81-etcd-mounts 85-etcd-ttl 82-etcd-store 86-etcd-kids
	39-mount-bigdoc 74-ttl 88-etcd-limits 75-tables-write-paths 40-backup 80-etcd-client
	89-etcd-ahead 84-etcd-list'
order() {
	local f name rank
	for f in "$@"; do
		name=${f##*/}
		rank=$(tr -s ' \t\n' '\n' <<<"$slow" | grep -nxF "${name%.bats}" | cut -d: -f1)
		echo "${rank:-99} $(stat -c %s "$f") $f"
	done | sort -k1,1n -k2,2rn | cut -d' ' -f3
}
# each file's wall time (its setup_file and clusters of its own included,
# which the tests' own times leave out) goes to parallel's joblog, printed
# below: what the order above is kept by
joblog=$work/joblog
if command -v parallel >/dev/null; then
	order "${files[@]}" | parallel --jobs "$jobs" --group --joblog "$joblog" \
		run_file '{%}' '{}' >"$out" 2>&1
else
	for f in "${files[@]}"; do run_file 1 "$f"; done >"$out" 2>&1
fi
# each file's run ends with its own count: print them, then their sum
grep -vE '^[0-9]+ passed, [0-9]+ failed$' "$out"
# per file: wall seconds and start, from the pass's start, longest first
[ ! -s "$joblog" ] || awk -F'\t' 'NR == 1 && $1 == "Seq" { next }
	{ n++; t[n] = $3; d[n] = $4; f[n] = $9; sub(/.* /, "", f[n]); if (!s || $3 < s) s = $3 }
	END { for (i = 1; i <= n; i++) printf "# %6.1f s from +%.0f s  %s\n", d[i], t[i] - s, f[i] }' \
	"$joblog" | sort -k2,2rn
read -r passed failed < <(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" |
	awk '{p += $1; f += $3} END {print p + 0, f + 0}')
runs=$(grep -cE '^[0-9]+ passed, [0-9]+ failed$' "$out")
if [ "$runs" -ne "${#files[@]}" ]; then
	echo "not ok - test-etcd: $runs of ${#files[@]} files reported a count"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
