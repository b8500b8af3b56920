#!/usr/bin/env bash
# scripts/damage-probe.sh - random bit flips in the keys of a store's LMDB
# pages (issue 31, sections 3 and 4): each flip goes into a fresh copy of
# one store, and what kvfs ls, kvfs export and a read-only mount (find and
# cat of every file) show of the damaged copy is compared with the
# undamaged store. Each answer must be the same or an error (a nonzero
# exit, EIO); a different answer with exit 0 is a silent difference, and a
# command still running after its time limit is a hang (so is a sanitizer
# report, counted with them: KVFS_BIN an ASan build). All are failures.
#
#   scripts/damage-probe.sh [-n FLIPS] [-s SEED] [--small] [--no-mount] [-k]
#
# -n: flips (default 200); -s: the seed of the flips (default: a fresh one,
# printed, so a failing run can be repeated); --small: a store of a third
# the size (a bounded run); --no-mount: the CLI only; -k: keep the work
# directory. KVFS_BIN: the kvfs under test (default:
# ./kvfs). tests/56-trust-damage.bats runs a bounded form (20 flips, fixed
# seed); run the full one as a stress test (see the report of issue 31).
# Exit 0 when every flip was the same or an error, 1 otherwise.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
KVFS_BIN=${KVFS_BIN:-$here/kvfs}
FLIP=$here/tests/fixtures/lmdb-flip.py
# python3 itself, not a version manager's shim (seconds a start on a busy machine)
PY=${PY:-$(command -v /usr/bin/python3 || command -v python3)}
flips=200
seed=
mount=1
keep=0
small=0
while [ $# -gt 0 ]; do
	case $1 in
	-n) flips=$2; shift ;;
	-s) seed=$2; shift ;;
	--no-mount) mount=0 ;;
	-k) keep=1 ;;
	--small) small=1 ;;
	*) echo "usage: $0 [-n FLIPS] [-s SEED] [--small] [--no-mount] [-k]" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$seed" ] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
echo "damage-probe: $flips flips, seed $seed, kvfs $KVFS_BIN"

work=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-damage.XXXXXX")
mnt=$work/mnt
daemon=
# mounted, by the mount table (mountpoint stats the root, which damage may fail)
mounted() {
	grep -qs " $mnt fuse" /proc/mounts
}
cleanup() {
	if mounted; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
	fi
	[ -z "$daemon" ] || kill -KILL "$daemon" 2>/dev/null
	[ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$mnt"

# The store: a directory of leaves (one leaf page or a few), one of
# directories (seeks past each child), an array, and enough keys for a
# branch level.
"$PY" - "$work/doc.json" "$small" <<'EOF'
import json, sys
dirs = 200 if sys.argv[2] == "1" else 600
doc = {
    "d": {"k%03d" % i: "value %d" % i for i in range(100)},
    "e": {"k%04d" % i: {"a": "v%d" % i, "b": i} for i in range(dirs)},
    "arr": ["x%d" % i for i in range(50)],
    "z": "last",
}
json.dump(doc, open(sys.argv[1], "w"))
EOF
"$KVFS_BIN" import --create "$work/good" / "$work/doc.json" || exit 1

T=10	# seconds any one command may take

# flip_bit FILE OFFSET BIT (dd: a python start per flip costs more than the flip's checks)
flip_bit() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ (1 << $3))))" |
		dd of="$1" bs=1 seek="$2" count=1 conv=notrunc status=none
}

# cli_views STORE OUT: what the CLI shows, one file per view; a view that
# failed records its status only.
cli_views() {
	local s=$1 out=$2 v rc
	mkdir -p "$out"
	for v in / /d /e /arr; do
		timeout -k 2 $T "$KVFS_BIN" ls "$s" "$v" >"$out/ls${v//\//_}" 2>>"$out/stderr"
		rc=$?
		echo "$rc" >"$out/ls${v//\//_}.rc"
	done
	timeout -k 2 $T "$KVFS_BIN" export "$s" / >"$out/export" 2>>"$out/stderr"
	echo "$?" >"$out/export.rc"
	timeout -k 2 $T "$KVFS_BIN" export "$s" /e >"$out/export_e" 2>>"$out/stderr"
	echo "$?" >"$out/export_e.rc"
}

# mount_views STORE OUT: find and cat of every file through a read-only mount.
mount_views() {
	local s=$1 out=$2 i rc
	mkdir -p "$out"
	"$KVFS_BIN" mount -f -o ro "$s" "$mnt" >"$out/mount.log" 2>&1 &
	daemon=$!
	for ((i = 0; i < 100; i++)); do
		mounted && break
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.05
	done
	if ! mounted; then
		echo 1 >"$out/find.rc"
		echo 1 >"$out/cat.rc"
	else
		(cd "$mnt" && set -o pipefail && timeout -k 2 $T find . | LC_ALL=C sort) \
			>"$out/find" 2>/dev/null
		echo "$?" >"$out/find.rc"
		(cd "$mnt" && set -o pipefail && find . -type f 2>/dev/null | LC_ALL=C sort |
			timeout -k 2 $T xargs -d '\n' cat) >"$out/cat" 2>/dev/null
		echo "$?" >"$out/cat.rc"
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
	fi
	for ((i = 0; i < 50; i++)); do
		kill -0 "$daemon" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$daemon" 2>/dev/null; then
		echo 124 >"$out/daemon.rc"	# would not end: a hang
		kill -KILL "$daemon" 2>/dev/null
		sleep 0.2
		! mounted || fusermount3 -uz "$mnt"
	fi
	wait "$daemon" 2>/dev/null
	daemon=
}

# compare GOOD GOT: prints "same", "error", "silent VIEWS" or "hang VIEWS".
compare() {
	local good=$1 got=$2 f name rc silent="" hang=""
	for f in "$got"/*.rc; do
		name=$(basename "$f" .rc)
		rc=$(cat "$f")
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			hang="$hang $name"
		elif [ "$rc" = 0 ] && ! cmp -s "$good/$name" "$got/$name"; then
			silent="$silent $name"
		fi
	done
	if cat "$got"/stderr "$got"/mount.log 2>/dev/null |
		grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error:'; then
		echo "hang (a sanitizer report: see $got)"
	elif [ -n "$hang" ]; then
		echo "hang$hang"
	elif [ -n "$silent" ]; then
		echo "silent$silent"
	elif grep -qvx 0 "$got"/*.rc; then
		echo error
	else
		echo same
	fi
}

cli_views "$work/good" "$work/ref"
[ "$mount" = 0 ] || mount_views "$work/good" "$work/ref"
if grep -qvx 0 "$work"/ref/*.rc; then
	echo "damage-probe: the undamaged store does not read back" >&2
	exit 1
fi

same=0 error=0 silent=0 hang=0 n=0
while read -r off bit kind; do
	n=$((n + 1))
	rm -rf "$work/bad" "$work/got"
	cp -a "$work/good" "$work/bad"
	flip_bit "$work/bad/data.mdb" "$off" "$bit"
	cli_views "$work/bad" "$work/got"
	[ "$mount" = 0 ] || mount_views "$work/bad" "$work/got"
	result=$(compare "$work/ref" "$work/got")
	case $result in
	same) same=$((same + 1)) ;;
	error) error=$((error + 1)) ;;
	silent*) silent=$((silent + 1)); echo "flip $n: offset $off bit $bit ($kind page): $result" ;;
	hang*) hang=$((hang + 1)); echo "flip $n: offset $off bit $bit ($kind page): $result" ;;
	esac
done < <("$PY" "$FLIP" pick "$work/good/data.mdb" data "$seed" "$flips")

echo "damage-probe: $n flips (seed $seed): $same same, $error errors, $silent silent, $hang hangs"
[ "$silent" = 0 ] && [ "$hang" = 0 ]
