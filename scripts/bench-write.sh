#!/usr/bin/env bash
# Write benchmarks: restores into an empty mount, small documents, shell
# redirections, parallel writers. Every figure is a ratio against the same
# work on tmpfs in the same run (the machines are shared and noisy), best of
# ROUNDS rounds (KVFS_BENCH_ROUNDS, default 3) on each side. The store lives
# on a real disk (KVFS_BENCH_DIR, default /var/tmp): the cost of a commit is
# mostly its fdatasync there. "commits/file" is the store's generation
# delta (`kvfs info`) divided by the files written.
#   scripts/bench-write.sh [DIRS [LEAVES_PER_DIR]]   default 200 x 100 = 20,000 leaves
# Extra mount options go in KVFS_BENCH_OPTS (e.g. commit=100); the CSV goes to
# KVFS_BENCH_CSV (default bench-write.csv).
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=${1:-200} leaves=${2:-100}
rounds=${KVFS_BENCH_ROUNDS:-3}
opts=${KVFS_BENCH_OPTS:-}
csv=${KVFS_BENCH_CSV:-bench-write.csv}
kvfs=${KVFS_BIN:-$PWD/kvfs}
work=$(mktemp -d "${KVFS_BENCH_DIR:-/var/tmp}/kvfs-wbench.XXXXXX")
store=$work/store mnt=$work/mnt ref=$work/tmpfs src=$work/src
mkdir -p "$mnt" "$ref"

cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	umount "$ref" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o size=2g tmpfs "$ref"

now() { date +%s.%N; }
seconds() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.4f", a - b }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
min() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || b < a) ? b : a }'; }
generation() { "$kvfs" info "$store" | awk '/^generation:/ { print $2 }'; }

# A fresh empty store and mount, and an empty tmpfs directory.
fresh() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$store" "$ref/out"
	mkdir "$ref/out"
	"$kvfs" mount -o "create${opts:+,$opts}" "$store" "$mnt"
}
umount_kvfs() { fusermount3 -u "$mnt"; }

echo "# building $dirs x $leaves leaves (typed, as a kvfs mount gives them), 2,000 documents"
python3 - "$dirs" "$leaves" >"$work/tree.json" <<'PY'
import json, sys
d, l = int(sys.argv[1]), int(sys.argv[2])
json.dump({"d%04d" % i: {"k%04d" % j: (j if j % 2 else "value %d/%d" % (i, j)) for j in range(l)} for i in range(d)}, sys.stdout)
PY
# the source tree: a mount's copy on tmpfs, with the user.kvfs.type xattrs
"$kvfs" import --create "$store" / "$work/tree.json" >/dev/null 2>&1 ||
	"$kvfs" import "$store" / "$work/tree.json"
"$kvfs" mount "$store" "$mnt"
mkdir "$ref/src"
cp -a "$mnt/." "$ref/src/"
umount_kvfs
tar --xattrs -C "$ref/src" -cf "$ref/src.tar" .
mkdir "$ref/docs"
python3 - "$ref/docs" <<'PY'
import json, os, sys
for i in range(2000):
    with open(os.path.join(sys.argv[1], "doc%04d.json" % i), "w") as f:
        json.dump({"id": i, "name": "document %d" % i, "tags": ["a", "b"], "n": {"x": i * 2}}, f)
PY
nfiles=$((dirs * leaves))
src=$ref/src

# the workloads: each runs in the current directory, an empty one
w_cp_a() { cp -a "$src/." .; }
w_rsync() { rsync -aX "$src/" ./; }
w_tar() { tar --xattrs -xf "$ref/src.tar"; }
w_docs() { cp "$ref/docs/"*.json .; }
w_echo() { mkdir e && for i in $(seq 1000); do echo "$i" >"e/k$i"; done; }
# one writer writing 800 leaves, or four writers writing 200 each at once
w_write1() { mkdir w && for i in $(seq 800); do echo "$i" >"w/k$i"; done; }
w_write4() {
	local j
	for j in 1 2 3 4; do
		(mkdir "w$j" && for i in $(seq 200); do echo "$i" >"w$j/k$i"; done) &
	done
	wait
}

names=(cp_a rsync tar docs echo write1 write4)
labels=("restore $nfiles leaves: cp -a" "restore $nfiles leaves: rsync -aX"
	"restore $nfiles leaves: tar --xattrs -x" "cp of 2000 documents"
	"1000 echo > leaf" "1 writer: 800 echo >" "4 writers: 4 x 200 echo >")
files=("$nfiles" "$nfiles" "$nfiles" 2000 1000 800 800)
declare -A t_ref t_kvfs cpf

for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]}
	for ((r = 0; r < rounds; r++)); do
		rm -rf "$ref/out"
		mkdir "$ref/out"
		t_ref[$w]=$(min "${t_ref[$w]:-}" "$(cd "$ref/out" && seconds "w_$w")")
		fresh
		g0=$(generation)
		t=$(cd "$mnt" && seconds "w_$w")
		g1=$(generation)
		umount_kvfs
		t_kvfs[$w]=$(min "${t_kvfs[$w]:-}" "$t")
		cpf[$w]=$(awk -v a="$g1" -v b="$g0" -v n="${files[$k]}" 'BEGIN { printf "%.2f", (a - b) / n }')
	done
done
rm -rf "$ref/out"

echo "workload,tmpfs_s,kvfs_s,ratio,commits_per_file" >"$csv"
printf '%-42s %9s %9s %8s %12s\n' "workload${opts:+ (-o $opts)}" tmpfs kvfs ratio commits/file
for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]}
	printf '%-42s %9.3f %9.3f %8s %12s\n' "${labels[$k]}" "${t_ref[$w]}" "${t_kvfs[$w]}" \
		"$(ratio "${t_kvfs[$w]}" "${t_ref[$w]}")" "${cpf[$w]}"
	echo "${labels[$k]},${t_ref[$w]},${t_kvfs[$w]},$(ratio "${t_kvfs[$w]}" "${t_ref[$w]}"),${cpf[$w]}" >>"$csv"
done
speedup=$(ratio "${t_kvfs[write1]}" "${t_kvfs[write4]}")
echo "4 writers vs 1 on kvfs: throughput ratio $speedup (tmpfs: $(ratio "${t_ref[write1]}" "${t_ref[write4]}"))"
echo "4 writers vs 1,,,$speedup," >>"$csv"
echo "# CSV: $csv"
