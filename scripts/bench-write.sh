#!/usr/bin/env bash
# Write benchmarks: restores into an empty mount, small documents, shell
# redirections, parallel writers. Every figure is a ratio against the same
# work on tmpfs in the same run (the machines are shared and noisy), best of
# ROUNDS rounds (KVFS_BENCH_ROUNDS, default 3) on each side. The store lives
# on a real disk (KVFS_BENCH_DIR, default /var/tmp): the cost of a commit is
# mostly its fdatasync there. "commits/file" is the store's generation
# delta (`kvfs info`) divided by the files written.
#   scripts/bench-write.sh [DIRS [LEAVES_PER_DIR]]   default 200 x 100 = 20,000 leaves
# Each workload runs on tmpfs and on kvfs once per mode of KVFS_BENCH_MODES
# (default "default commit=100": the default commit model and -o commit=100,
# in the same run); KVFS_BENCH_OPTS, when set, is the one mode (extra mount
# options, e.g. commit=100). "commits/file" is counted after the unmount
# (which commits a queued batch); "requests/file" is the FUSE requests the
# daemon answered (user.kvfs.stats). The CSV goes to KVFS_BENCH_CSV (default
# bench-write.csv). A mode MODE@BIN runs another kvfs binary in the same run
# (KVFS_BENCH_MODES="default default@/work/main/kvfs": before and after a
# change); KVFS_BENCH_WORKLOADS picks workloads by name (default: all of
# cp_a rsync tar docs echo write1 write4). Mode "floor" (added by default
# when KVFS_FLOOR names the built scripts/fuse-floor.c, as make bench-write
# does) runs each workload on a FUSE file system that answers the same
# requests and keeps nothing: what the round trips cost by themselves, the
# least any FUSE daemon can take.
set -euo pipefail
cd "$(dirname "$0")/.."
dirs=${1:-200} leaves=${2:-100}
rounds=${KVFS_BENCH_ROUNDS:-3}
if [ -n "${KVFS_BENCH_OPTS:-}" ]; then
	read -r -a modes <<<"$KVFS_BENCH_OPTS"
else
	read -r -a modes <<<"${KVFS_BENCH_MODES:-default commit=100${KVFS_FLOOR:+ floor}}"
fi
floor=${KVFS_FLOOR:-$PWD/build/fuse-floor}
opts=
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

. scripts/bench-lib.sh	# now, seconds, ratio, min, bench_fuse_requests (not its setup)
generation() {
	[ "$opts" = floor ] && { echo 0; return; }	# it commits nothing
	"$kvfs" info "$store" | awk '/^generation:/ { print $2 }'
}

# A fresh empty store and mount (or the floor's), and an empty tmpfs directory.
fresh() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	rm -rf "$store" "$ref/out"
	mkdir "$ref/out"
	if [ "$opts" = floor ]; then
		"$floor" "$mnt"
		return
	fi
	"${mbin:-$kvfs}" mount -o "create${opts:+,$opts}" "$store" "$mnt"
}
umount_kvfs() { fusermount3 -u "$mnt"; }
requests() { bench_fuse_requests "$mnt"; }

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
declare -A t_ref t_kvfs cpf rpf
picked=" ${KVFS_BENCH_WORKLOADS:-${names[*]}} "

for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]}
	[[ $picked == *" $w "* ]] || continue
	for ((r = 0; r < rounds; r++)); do
		rm -rf "$ref/out"
		mkdir "$ref/out"
		t_ref[$w]=$(min "${t_ref[$w]:-}" "$(cd "$ref/out" && seconds "w_$w")")
		for m in "${modes[@]}"; do
			mbin=$kvfs
			[[ $m == *@* ]] && mbin=${m#*@}
			opts=${m%%@*}
			opts=${opts#default}
			fresh
			g0=$(generation)
			t=$(cd "$mnt" && seconds "w_$w")
			n=$(requests)
			umount_kvfs
			g1=$(generation)	# after the unmount: a queued batch is committed by then
			t_kvfs[$w/$m]=$(min "${t_kvfs[$w/$m]:-}" "$t")
			cpf[$w/$m]=$(awk -v a="$g1" -v b="$g0" -v n="${files[$k]}" 'BEGIN { printf "%.2f", (a - b) / n }')
			rpf[$w/$m]=$(awk -v a="$n" -v n="${files[$k]}" 'BEGIN { printf "%.1f", a / n }')
		done
	done
done
rm -rf "$ref/out"

echo "workload,mode,tmpfs_s,kvfs_s,ratio,commits_per_file,requests_per_file" >"$csv"
printf '%-42s %-12s %9s %9s %8s %12s %13s\n' workload mode tmpfs kvfs ratio commits/file requests/file
for ((k = 0; k < ${#names[@]}; k++)); do
	w=${names[$k]}
	[[ $picked == *" $w "* ]] || continue
	for m in "${modes[@]}"; do
		printf '%-42s %-12s %9.3f %9.3f %8s %12s %13s\n' "${labels[$k]}" "$m" "${t_ref[$w]}" \
			"${t_kvfs[$w/$m]}" "$(ratio "${t_kvfs[$w/$m]}" "${t_ref[$w]}")" "${cpf[$w/$m]}" "${rpf[$w/$m]}"
		echo "${labels[$k]},$m,${t_ref[$w]},${t_kvfs[$w/$m]},$(ratio "${t_kvfs[$w/$m]}" "${t_ref[$w]}"),${cpf[$w/$m]},${rpf[$w/$m]}" >>"$csv"
	done
done
for m in "${modes[@]}"; do
	[[ $picked == *" write1 "* && $picked == *" write4 "* ]] || break
	speedup=$(ratio "${t_kvfs[write1/$m]}" "${t_kvfs[write4/$m]}")
	echo "4 writers vs 1 on kvfs ($m): throughput ratio $speedup (tmpfs: $(ratio "${t_ref[write1]}" "${t_ref[write4]}"))"
	echo "4 writers vs 1,$m,,,$speedup,," >>"$csv"
done
echo "# CSV: $csv"
