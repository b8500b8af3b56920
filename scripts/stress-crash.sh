#!/usr/bin/env bash
# scripts/stress-crash.sh - the crash-consistency probe: kills the real kvfs
# daemon with SIGKILL at random moments while documents are written, subtrees
# moved and leaves rewritten through its mount, and kills offline imports of
# a large document the same way; after every kill it checks the store.
#
# Usage: scripts/stress-crash.sh [KILLS]          (default 10; make stress: 200)
#        scripts/stress-crash.sh --verify SNAP.json STATE_DIR
# Env:   KVFS_BIN (default ./kvfs), STRESS_DIR (work directory, default a new
#        one under /tmp, removed on success), STRESS_SEED (bash $RANDOM seed),
#        STRESS_IMPORT_EVERY (default 3: every third kill also kills an import).
#
# Every version N of a document holds N in every leaf, and its leaf count is
# a function of N, so a document is whole iff its leaves agree and the count
# fits. After each kill (and `fusermount3 -uz` of the dead mount):
#   - `kvfs check` reports 0 problems;
#   - each document is absent or whole, at the version its writer last
#     finished or the one it was writing when the daemon died;
#   - each moved subtree is at exactly one of its two places, whole;
#   - each rewritten leaf holds its previous or its new value;
#   - the imported document is absent or whole, old or new;
#   - the remounted tree renders exactly as `kvfs export` prints it.
# Needs root (FUSE), fusermount3, python3. Prints one line per kill; exits 1
# at the first problem, keeping the work directory for inspection.
set -u

# ---- the verifier: python, reads the export of the whole store ----
# shellcheck disable=SC2016
VERIFY='
import json, os, sys

snap_path, state = sys.argv[1], sys.argv[2]
with open(snap_path) as f:
    snap = json.load(f)
problems = []
seen = {}	# state file -> the version the store holds

def state_int(name, default=0):
    try:
        with open(os.path.join(state, name)) as f:
            return int(f.read().split()[0])
    except FileNotFoundError:
        return default

def leaves(node):
    if isinstance(node, dict):
        for v in node.values():
            yield from leaves(v)
    elif isinstance(node, list):
        for v in node:
            yield from leaves(v)
    else:
        yield node

def count(node):
    return sum(1 for _ in leaves(node))

def doc_items(size, n):
    return size + n % 7

def whole_doc(name, node, size):
    """The generation of a whole document, or None after reporting why not."""
    if not isinstance(node, dict) or not isinstance(node.get("gen"), int):
        problems.append("%s: not a document: %.200r" % (name, node))
        return None
    n = node["gen"]
    bad = [v for v in leaves(node) if v != n and v != "g%d" % n]
    if bad:
        problems.append("%s: torn: generation %d with other leaves %.200r" % (name, n, bad[:5]))
        return None
    want = 3 + doc_items(size, n)
    if count(node) != want:
        problems.append("%s: torn: generation %d has %d leaves, not %d"
                        % (name, n, count(node), want))
        return None
    return n

# documents d0.. written through views: absent only before the first write
for name in sorted(os.listdir(state)):
    if not name.startswith("doc-"):
        continue
    i, size = name[4:].split("-")
    key = "d" + i
    tried = state_int(name)
    node = snap.get(key)
    if node is None:
        if tried > 1:
            problems.append("%s: missing, its writer had finished version %d" % (key, tried - 1))
        seen[name] = 0
        continue
    n = whole_doc(key, node, int(size))
    if n is not None and n not in (tried - 1, tried):
        problems.append("%s: version %d, but the writer was at %d" % (key, n, tried))
    seen[name] = 0 if n is None else n

# moved subtrees: m<j>/a/t or m<j>/b/t, never both, never neither
for name in sorted(os.listdir(state)):
    if not name.startswith("move-"):
        continue
    key = "m" + name[5:]
    node = snap.get(key)
    if not isinstance(node, dict) or set(node) != {"a", "b"}:
        problems.append("%s: expected the objects a and b: %.200r" % (key, node))
        continue
    here = [side for side in ("a", "b") if "t" in node[side]]
    if len(here) != 1:
        problems.append("%s: the subtree t is in %d places" % (key, len(here)))
        continue
    t = node[here[0]]["t"]
    if sorted(map(repr, leaves(t))) != sorted(map(repr, ["moved"] * 20 + [int(name[5:])])):
        problems.append("%s/%s/t: changed: %.200r" % (key, here[0], t))

# leaves rewritten with echo N >
for name in sorted(os.listdir(state)):
    if not name.startswith("leaf-"):
        continue
    key = name[5:]
    tried = state_int(name)
    v = snap.get("leaves", {}).get(key)
    if v not in (str(tried - 1), str(tried)):
        problems.append("leaves/%s: %r, but its writer was writing %d" % (key, v, tried))
    else:
        seen[name] = int(v)

# the big document, imported offline: 1 + 100 * (3000 + 1000 * (N % 2)) leaves
prev, tried = state_int("big-prev"), state_int("big-tried")
node = snap.get("big")
seen["big-prev"] = 0
if node is None:
    if prev != 0:
        problems.append("big: missing, it held version %d" % prev)
elif not isinstance(node, dict) or not isinstance(node.get("gen"), int):
    problems.append("big: not a document")
else:
    n = node["gen"]
    bad = [v for v in leaves(node) if v != n]
    want = 1 + 100 * (3000 + 1000 * (n % 2))
    if bad or count(node) != want:
        problems.append("big: torn: generation %d, %d leaves (not %d), others %.200r"
                        % (n, count(node), want, bad[:5]))
    elif n not in (prev, tried):
        problems.append("big: version %d; it held %d and the import wrote %d" % (n, prev, tried))
    seen["big-prev"] = n

for p in problems:
    print("stress-crash: " + p)
if problems:
    sys.exit(1)
# Settle the state: each writer goes on from the version the store holds.
for name, n in seen.items():
    with open(os.path.join(state, name), "w") as f:
        f.write("%d\n" % n)

'

if [ "${1:-}" = --verify ]; then
	[ $# -eq 3 ] || { echo "usage: $0 --verify SNAP.json STATE_DIR" >&2; exit 2; }
	exec python3 -c "$VERIFY" "$2" "$3"
fi

kills=${1:-10}
case $kills in
'' | *[!0-9]*) echo "usage: $0 [KILLS]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 2
kvfs=${KVFS_BIN:-$PWD/kvfs}
import_every=${STRESS_IMPORT_EVERY:-3}
seed=${STRESS_SEED:-$$}
RANDOM=$seed
if [ -n "${STRESS_DIR:-}" ]; then
	work=$STRESS_DIR
	mkdir -p "$work"
else
	work=$(mktemp -d /tmp/kvfs-stress.XXXXXX)
fi
store=$work/store mnt=$work/mnt state=$work/state gen=$work/gen
mkdir -p "$mnt" "$state" "$gen"
daemon="" import_pid="" writers=() keep=""

cleanup() {
	local p
	for p in "${writers[@]}" $import_pid; do
		kill "$p" 2>/dev/null
	done
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null
		wait "$daemon" 2>/dev/null
	fi
	if grep -qs " $mnt " /proc/mounts; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt"
	fi
	if [ -n "$keep" ]; then
		echo "stress-crash: work directory kept: $work (seed $seed)" >&2
	elif [ -z "${STRESS_DIR:-}" ]; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT

fail() {
	echo "stress-crash: $*" >&2
	keep=1
	exit 1
}

# A random delay in seconds, between $1 and $2 milliseconds.
rand_delay() {
	local ms=$(($1 + (RANDOM * 32768 + RANDOM) % ($2 - $1 + 1)))
	printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

now_ms() { date +%s%3N; }

# The sum of the numbers in the files given.
sum_files() {
	local f v total=0
	for f; do
		read -r v <"$f"
		total=$((total + v))
	done
	echo "$total"
}

# Version N of document d<i> with `size` (+ N % 7) array items: every leaf is
# N, or the string "gN".
doc_text() {
	local n=$1 items=$(($2 + $1 % 7)) list
	list=$(printf "$n,%.0s" $(seq "$items"))
	printf '{"gen":%d,"items":[%s],"nested":{"x":{"y":%d},"s":"g%d"}}\n' \
		"$n" "${list%,}" "$n" "$n"
}

# ---- writers: each owns its paths and stops at its first failure ----
# The attempt is recorded before it starts, so after the kill the store must
# hold that version or the one before it.
writer_failed() {
	[ -e "$state/killed" ] || echo "$1 failed while the daemon was alive: $2" >>"$state/errors"
	exit 0
}

doc_writer() {
	local i=$1 size=$2 n f=$gen/doc-$1.json
	n=$(cat "$state/doc-$i-$size")
	while :; do
		n=$((n + 1))
		doc_text "$n" "$size" >"$f"
		echo "$n" >"$state/doc-$i-$size"
		out=$(cp "$f" "$mnt/d$i.json" 2>&1) || writer_failed "cp onto d$i.json" "$out"
	done
}

# Its state file counts the moves done (the verifier only needs it to exist).
move_writer() {
	local j=$1 from=a to=b x moves
	moves=$(cat "$state/move-$j")
	[ -d "$mnt/m$j/a/t" ] || { from=b to=a; }
	while :; do
		out=$(mv "$mnt/m$j/$from/t" "$mnt/m$j/$to/t" 2>&1) || writer_failed "mv m$j/$from/t" "$out"
		moves=$((moves + 1))
		echo "$moves" >"$state/move-$j"
		x=$from from=$to to=$x
	done
}

leaf_writer() {
	local k=$1 n
	n=$(cat "$state/leaf-$k")
	while :; do
		n=$((n + 1))
		echo "$n" >"$state/leaf-$k"
		# coreutils' echo, not the shell's: it reports a failed close (the
		# commit), so an acknowledged value is really the last one written.
		out=$( (/bin/echo "$n" >"$mnt/leaves/$k") 2>&1) || writer_failed "echo > leaves/$k" "$out"
	done
}

start_writers() {
	local f i j leaf size
	writers=()
	for f in "$state"/doc-*; do
		i=${f##*/doc-} size=${i#*-} i=${i%-*}
		doc_writer "$i" "$size" &
		writers+=($!)
	done
	for j in 0 1; do
		move_writer "$j" &
		writers+=($!)
	done
	for leaf in k0 k1; do
		leaf_writer "$leaf" &
		writers+=($!)
	done
}

# Mounts the store in the foreground, in the background of this script.
mount_daemon() {
	"$kvfs" mount -f "$store" "$mnt" >>"$work/daemon.log" 2>&1 &
	daemon=$!
	local i
	for ((i = 0; i < 200; i++)); do
		mountpoint -q "$mnt" && return 0
		kill -0 "$daemon" 2>/dev/null || fail "kvfs mount exited; log: $work/daemon.log"
		sleep 0.05
	done
	fail "$mnt not mounted after 10 s"
}

# Offline checks of the store after a kill, then a remount that must render it.
verify_store() {
	local out
	out=$("$kvfs" check "$store" 2>&1) || fail "kvfs check failed: $out"
	case $out in *", 0 problems") ;; *) fail "kvfs check: $out" ;; esac
	"$kvfs" export --compact "$store" / >"$work/snap.json" 2>"$work/export.err" ||
		fail "kvfs export failed: $(cat "$work/export.err")"
	python3 -c "$VERIFY" "$work/snap.json" "$state" || fail "inconsistent store after kill $1"
	"$kvfs" export "$store" / >"$work/snap.pretty" || fail "kvfs export failed"
	mount_daemon
	cmp -s "$work/snap.pretty" "$mnt/.json" ||
		fail "after remount, $mnt/.json differs from kvfs export"
}

# ---- set-up: the big document (two versions), an import to time, the docs ----
python3 - "$gen" <<'EOF' || fail "cannot write the big documents"
import json, sys
for n in (1, 2):
    parts = [{"k%d" % j: n for j in range(100)} for _ in range(3000 + 1000 * (n % 2))]
    with open("%s/big-%d.json" % (sys.argv[1], n), "w") as f:
        json.dump({"gen": n, "parts": parts}, f)
EOF
t0=$(now_ms)
"$kvfs" import "$store" /big "$gen/big-1.json" || fail "kvfs import failed"
import_ms=$(($(now_ms) - t0 + 1))
echo 1 >"$state/big-prev"
echo 1 >"$state/big-tried"
echo "stress-crash: $kills kills, seed $seed, import of the big document takes $import_ms ms"

mount_daemon
mkdir -p "$mnt/leaves" || fail "mkdir leaves"
for leaf in k0 k1; do
	echo 0 >"$mnt/leaves/$leaf" || fail "create leaves/$leaf"
	echo 0 >"$state/leaf-$leaf"
done
for j in 0 1; do
	mkdir -p "$mnt/m$j/a/t" "$mnt/m$j/b" || fail "mkdir m$j"
	# shellcheck disable=SC2046
	printf '{"id":%d,"leaves":[%s]}' "$j" "$(printf '"moved",%.0s' $(seq 19))\"moved\"" \
		>"$gen/t$j.json"
	cp "$gen/t$j.json" "$mnt/m$j/a/t.json" || fail "write m$j/a/t"
	echo 0 >"$state/move-$j"
done
# three documents of 5, 200 and 3000 items: small and large commits
echo 0 >"$state/doc-0-5"
echo 0 >"$state/doc-1-200"
echo 0 >"$state/doc-2-3000"

for ((k = 1; k <= kills; k++)); do
	rm -f "$state/killed"
	start_writers
	note=
	if [ "$import_every" -gt 0 ] && [ $((k % import_every)) -eq 0 ]; then
		big=$(($(cat "$state/big-prev") % 2 + 1))
		echo "$big" >"$state/big-tried"
		"$kvfs" import "$store" /big "$gen/big-$big.json" 2>>"$work/import.log" &
		import_pid=$!
		# mostly while it runs (writers slow it down), sometimes after it ended
		d=$(rand_delay 0 $((import_ms * 3 / 2)))
		sleep "$d"
		kill -9 "$import_pid" 2>/dev/null
		wait "$import_pid" 2>/dev/null
		st=$?
		import_pid=
		case $st in
		0) note=" (import of version $big finished before its kill at $d s)" ;;
		137) note=" (import of version $big killed at $d s)" ;;
		*) fail "kvfs import exited with status $st: $(cat "$work/import.log")" ;;
		esac
	fi
	d=$(rand_delay 100 1000)
	sleep "$d"
	touch "$state/killed"
	kill -9 "$daemon"
	wait "$daemon" 2>/dev/null
	st=$?
	daemon=
	# 137 is our SIGKILL; anything else means the daemon had died by itself.
	[ "$st" -eq 137 ] || fail "the daemon had exited with status $st before its kill; log: $work/daemon.log"
	for p in "${writers[@]}"; do
		wait "$p"
	done
	writers=()
	fusermount3 -uz "$mnt" || fail "fusermount3 -uz $mnt failed"
	if [ -s "$state/errors" ]; then
		fail "a writer failed before the kill: $(cat "$state/errors")"
	fi
	verify_store "$k"
	echo "kill $k/$kills: daemon killed after $d s$note; consistent;" \
		"d0..d2 at versions $(cat "$state"/doc-* | paste -sd" ")"
done
# The last remount ends cleanly.
fusermount3 -u "$mnt" || fail "fusermount3 -u $mnt failed"
wait "$daemon"
st=$?
daemon=
[ "$st" -eq 0 ] || fail "the daemon exited with status $st after unmounting"
grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$work/daemon.log" >&2 &&
	fail "sanitizer report in $work/daemon.log"
echo "stress-crash: $kills kills, every store consistent"
echo "stress-crash: the documents reached $(sum_files "$state"/doc-*) versions in all," \
	"the leaves $(sum_files "$state"/leaf-*); $(sum_files "$state"/move-*) moves were done"
