#!/usr/bin/env bash
# Read benchmarks (make bench-read; make bench is scripts/bench.sh, the
# table of kvfs beside the floor and other FUSE daemons). Every figure is a ratio against a reference measured in
# the same run (the same tree on tmpfs, or a raw LMDB load of the same keys),
# because the machines this runs on are shared and noisy.
# Each operation is timed in ROUNDS rounds (KVFS_BENCH_ROUNDS, default 3),
# each on a fresh mount (first pass, then second pass) and on tmpfs, and the
# best time of each column is kept: the same rule for both sides, and the
# least disturbed by other load on the machine.
# Copies (cp -a, idle rsync -aX) go to a tmpfs in both cases, so the only
# difference between the columns is where the tree is read from.
# Then the write workloads (scripts/bench-write.sh: restores, documents,
# echo >, parallel writers, in each commit mode; KVFS_BENCH_WRITE=0 skips
# them), and one table of every workload's ratio to tmpfs, written as CSV
# to $KVFS_BENCH_CSV (default: a file in /tmp, named at the end); the read
# and write tables' own CSVs are kept beside it (NAME.read.csv,
# NAME.write.csv). With KVFS_BENCH_STATS=1 each read operation's FUSE
# requests per opcode (the mount root's user.kvfs.stats, first and second
# pass of the last round) are written beside it as NAME.requests.csv.
#   scripts/bench-read.sh [DIRS [LEAVES_PER_DIR]]     default 100 x 100 = 10,000 files
# (given, DIRS and LEAVES_PER_DIR are passed on to bench-write.sh too, whose
# default is 200 x 100 = 20,000 leaves)
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=${1:-100} leaves=${2:-100}
rounds=${KVFS_BENCH_ROUNDS:-3}
. scripts/bench-lib.sh
bench_setup 2g

mount_kvfs() { "$kvfs" mount "$store" "$mnt" && mountpoint -q "$mnt"; }
umount_kvfs() { fusermount3 -u "$mnt"; }

echo "# building a tree of $dirs x $leaves leaves"
python3 - "$dirs" "$leaves" >"$work/tree.json" <<'PY'
import json, sys
d, l = int(sys.argv[1]), int(sys.argv[2])
json.dump({"d%04d" % i: {"k%04d" % j: "value %d/%d" % (i, j) for j in range(l)} for i in range(d)}, sys.stdout)
PY
t_import=$(seconds "$kvfs" import "$store" / "$work/tree.json")
mdb_dump -n -a "$store/data.mdb" >"$work/raw.dump" 2>/dev/null || mdb_dump -a "$store" >"$work/raw.dump"
mkdir "$work/raw"
t_raw=$(seconds mdb_load -f "$work/raw.dump" "$work/raw")
echo "import of $((dirs * leaves)) leaves: ${t_import}s; raw mdb_load of the same keys: ${t_raw}s; ratio $(ratio "$t_import" "$t_raw")"

# The tree is $ref/tree; copies land in $ref/dst/{tmpfs,kvfs} (the same tmpfs).
mkdir -p "$ref/tree" "$ref/dst/tmpfs" "$ref/dst/kvfs"
mount_kvfs
cp -a "$mnt/." "$ref/tree/"
# idle rsync: each side's copy is brought up to date once, before timing
rsync -aX "$mnt/" "$ref/dst/kvfs/rs/"
umount_kvfs
rsync -aX "$ref/tree/" "$ref/dst/tmpfs/rs/"

all_csv=${KVFS_BENCH_CSV:-/tmp/kvfs-bench-$(date -u +%Y%m%dT%H%M%SZ).csv}
csv=${all_csv%.csv}.read.csv write_csv=${all_csv%.csv}.write.csv
stats_csv=${all_csv%.csv}.requests.csv
echo "operation,tmpfs_s,kvfs_first_s,kvfs_second_s,ratio_first,ratio_second" >"$csv"
[ "${KVFS_BENCH_STATS:-0}" = 1 ] && echo "operation,pass,opcode,requests" >"$stats_csv"

# stats_of: the daemon's request counters, one "opcode count" a line
stats_of() { getfattr --only-values -n user.kvfs.stats "$mnt" 2>/dev/null || true; }
# stats_diff BEFORE AFTER OP PASS: the requests OP made, as CSV lines
stats_diff() {
	awk -v op="$3" -v pass="$4" 'NR == FNR { a[$1] = $2; next }
		{ d = $2 - a[$1]; if ($1 == "getxattr") d--; if (d > 0) printf "\"%s\",%s,%s,%d\n", op, pass, $1, d }' \
		<(printf '%s\n' "$1") <(printf '%s\n' "$2")
}

# Each operation: "label|command" run with sh -c in the tree, DEST naming
# the side's own directory on the destination tmpfs; "prep" runs untimed
# before each timed run (removing the previous copy).
ops=(
	"find . -type f|find . -type f"
	"find . -type f -exec stat -c %s {} +|find . -type f -exec stat -c %s {} +"
	"ls -lR .|ls -lR ."
	"find . -type f -exec cat {} +|find . -type f -exec cat {} +"
	"tar -c .|tar -cf - . | cat"
	"tar --xattrs -c .|tar --xattrs -cf - . | cat"
	"cp -a . DEST|cp -a . \"\$DEST/cp\""
	"rsync -aX ./ DEST (idle)|rsync -aX ./ \"\$DEST/rs/\""
)
prep='rm -rf "$DEST/cp"'
timed() { (cd "$1" && export DEST=$2 && sh -c "$prep" && seconds sh -c "$3"); }
printf '%-40s %10s %10s %10s %8s %8s\n' operation tmpfs kvfs-1st kvfs-2nd ratio1 ratio2
for entry in "${ops[@]}"; do
	label=${entry%%|*} op=${entry#*|}
	t_ref='' t_first='' t_second=''
	for ((r = 0; r < rounds; r++)); do
		t=$(timed "$ref/tree" "$ref/dst/tmpfs" "$op") || exit 1
		t_ref=$(min "$t_ref" "$t")
		mount_kvfs
		s0=$(stats_of)
		t=$(timed "$mnt" "$ref/dst/kvfs" "$op") || exit 1
		t_first=$(min "$t_first" "$t")
		s1=$(stats_of)
		t=$(timed "$mnt" "$ref/dst/kvfs" "$op") || exit 1
		t_second=$(min "$t_second" "$t")
		s2=$(stats_of)
		umount_kvfs
	done
	if [ "${KVFS_BENCH_STATS:-0}" = 1 ]; then
		stats_diff "$s0" "$s1" "$label" first >>"$stats_csv"
		stats_diff "$s1" "$s2" "$label" second >>"$stats_csv"
	fi
	printf '%-40s %10.3f %10.3f %10.3f %8s %8s\n' "$label" "$t_ref" "$t_first" "$t_second" \
		"$(ratio "$t_first" "$t_ref")" "$(ratio "$t_second" "$t_ref")"
	printf '"%s",%s,%s,%s,%s,%s\n' "$label" "$t_ref" "$t_first" "$t_second" \
		"$(ratio "$t_first" "$t_ref")" "$(ratio "$t_second" "$t_ref")" >>"$csv"
done
rm -rf "$ref/dst"

echo "# ls cost against subtree size: 10 children holding 1 key each vs 100,000 each"
python3 - >"$work/small.json" <<'PY'
import json, sys
json.dump({"c%d" % i: i for i in range(10)}, sys.stdout)
PY
python3 - >"$work/big.json" <<'PY'
import json, sys
json.dump({"c%d" % i: {"k%06d" % j: j for j in range(100000)} for i in range(10)}, sys.stdout)
PY
"$kvfs" import "$store" /small "$work/small.json"
"$kvfs" import "$store" /big "$work/big.json"
mount_kvfs
t_small=$(cd "$mnt" && seconds sh -c 'for i in $(seq 200); do ls small >/dev/null; ls -f small >/dev/null; done')
t_big=$(cd "$mnt" && seconds sh -c 'for i in $(seq 200); do ls big >/dev/null; ls -f big >/dev/null; done')
umount_kvfs
echo "ls of 10 children, 200 times: small subtrees ${t_small}s, 100,000-key subtrees ${t_big}s; ratio $(ratio "$t_big" "$t_small")"
[ "${KVFS_BENCH_STATS:-0}" = 1 ] && echo "# requests per opcode: $stats_csv"

if [ "${KVFS_BENCH_WRITE:-1}" != 0 ]; then
	echo
	KVFS_BENCH_CSV=$write_csv bash scripts/bench-write.sh "$@"
fi

# One row per workload: kind, workload (a write's commit mode in brackets),
# tmpfs seconds, kvfs seconds (reads: first pass on a fresh mount; then
# the second pass), ratios, and for writes commits and requests per file.
{
	echo "kind,workload,tmpfs_s,kvfs_s,kvfs_warm_s,ratio,ratio_warm,commits_per_file,requests_per_file"
	tail -n +2 "$csv" | awk -F, -v OFS=, '{ print "read", $1, $2, $3, $4, $5, $6, "", "" }'
	printf 'store,"kvfs import of %d leaves vs mdb_load of its keys",%s,%s,,%s,,,\n' \
		"$((dirs * leaves))" "$t_raw" "$t_import" "$(ratio "$t_import" "$t_raw")"
	printf 'read,"ls of 100000-key subtrees vs 10-key ones (not tmpfs)",%s,%s,,%s,,,\n' \
		"$t_small" "$t_big" "$(ratio "$t_big" "$t_small")"
	if [ -s "$write_csv" ]; then
		# label, mode, tmpfs, kvfs, ratio, commits, requests (bench-write.sh)
		tail -n +2 "$write_csv" |
			awk -F, -v OFS=, '{ print "write", "\"" $1 " [" $2 "]\"", $3, $4, "", $5, "", $6, $7 }'
	fi
} >"$all_csv"
echo
echo "# every workload: ratio kvfs / tmpfs in the same run (reads: first pass, second pass)"
awk -F, 'function v(x) { return x == "" ? "-" : x }
	NR > 1 { gsub(/"/, ""); printf "%-6s %-48s %8s %8s %8s %9s\n", $1, $2, $6, v($7), v($8), v($9) }' "$all_csv" |
	{ printf '%-6s %-48s %8s %8s %8s %9s\n' kind workload ratio warm commits requests; cat; }
echo "# CSV: $all_csv"
