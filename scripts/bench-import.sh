#!/usr/bin/env bash
# scripts/bench-import.sh - import speed and memory, and big documents
# through the mount (issue 11, "Import and big documents"). Prints one line
# per figure, as ratios against a reference measured in the same run:
#   import N MB      kvfs import of a document with shuffled keys, against
#                    mdb_load of the same keys in sorted order (mdb_dump of
#                    the imported store's data space); peak RSS / document,
#                    mdb_load's own peak RSS / document, and the store's
#                    pages per byte of JSON (kvfs's, mdb_load's)
#   pipe N MB        the same document imported through a pipe: time /
#                    mdb_load, peak RSS / document
#   cp N MB          a document written through the mount with cp: the
#                    daemon's VmHWM / document (one of small values, one
#                    of 1 MiB strings)
#   leaf N MB        one string leaf written through the mount: VmHWM / leaf
# Usage: scripts/bench-import.sh [SIZES_MB...]  (default 40 100; the mount
# figures use BENCH_CP_MB, default 300, and BENCH_LEAF_MB, default 1024;
# 0 skips one; BENCH_BIG_MB, default 0, adds one more import size without
# the pipe run, e.g. 1800 for a document of about 2 GB: check df first, the
# store takes about five times the document). Work files go under BENCH_DIR (default /var/tmp: a disk,
# not tmpfs, so the timings mean something). Needs python3, mdb_load,
# mdb_dump, /usr/bin/time and root for FUSE.
set -euo pipefail

kvfs=${KVFS_BIN:-$PWD/kvfs}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(40 100)
cp_mb=${BENCH_CP_MB:-300}
leaf_mb=${BENCH_LEAF_MB:-1024}
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/kvfs-bench-import.XXXXXX")
mnt=$work/mnt
pid=

cleanup() {
	if [ -n "$pid" ]; then
		fusermount3 -u "$mnt" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# make_doc MB FILE: an object of user records under shuffled keys (fixed seed).
make_doc() {
	python3 - "$1" "$2" <<'EOF'
import json, random, sys
mb, path = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(11)
n = mb * 1024 * 1024 // 150
ids = list(range(n))
rnd.shuffle(ids)
with open(path, "w") as f:
    f.write('{"users": {')
    for i, u in enumerate(ids):
        rec = {"name": "user %d" % u, "age": u % 97, "email": "u%d@example.org" % u,
               "score": (u % 1000) / 8, "tags": ["t%d" % (u % 7), "x\u00e9\n"],
               "big": 10**20 + u, "ok": u % 2 == 0, "none": None}
        f.write((',' if i else '') + json.dumps("k%09d" % u) + ':' +
                json.dumps(rec, ensure_ascii=False, separators=(',', ':')))
    f.write('}}\n')
EOF
}

# used_bytes STORE: the pages the data space holds, in bytes.
used_bytes() {
	local ps; ps=$(mdb_stat -e "$1" | awk '/Page size/ { print $3 }')
	mdb_stat -s data "$1" | awk -v ps="$ps" '/Branch pages|Leaf pages|Overflow pages/ { n += $3 } END { print n * ps }'
}

# import_one MB [nopipe]: file import, mdb_load of the same keys, pipe import.
import_one() {
	local mb=$1 doc=$work/doc$1.json store=$work/s$1 lmdb=$work/l$1 kv ml mlrss rss pv prss
	make_doc "$mb" "$doc"
	local bytes; bytes=$(stat -c %s "$doc")
	sync
	/usr/bin/time -f "%e %M" -o "$work/time" "$kvfs" import "$store" / "$doc" 2>/dev/null
	read -r kv rss <"$work/time"
	mdb_dump -s data "$store" >"$work/dump"
	local kvpages; kvpages=$(used_bytes "$store")
	rm -rf "$store"
	sync
	mkdir -p "$lmdb"
	/usr/bin/time -f "%e %M" -o "$work/time" mdb_load -s data -f "$work/dump" "$lmdb" 2>/dev/null
	read -r ml mlrss <"$work/time"
	local mlpages; mlpages=$(used_bytes "$lmdb")
	rm -rf "$lmdb" "$work/dump"
	printf 'import %4d MB  kvfs %6.2f s  mdb_load %6.2f s  ratio %s  peak RSS %d MB = %sx doc' \
		"$mb" "$kv" "$ml" "$(ratio "$kv" "$ml")" \
		$((rss / 1024)) "$(ratio $((rss * 1024)) "$bytes")"
	printf '  (mdb_load %sx)  store pages / doc: kvfs %s, mdb_load %s\n' \
		"$(ratio $((mlrss * 1024)) "$bytes")" "$(ratio "$kvpages" "$bytes")" \
		"$(ratio "$mlpages" "$bytes")"
	if [ "${2:-}" != nopipe ]; then
		sync
		cat "$doc" | /usr/bin/time -f "%e %M" -o "$work/time" "$kvfs" import "$store" / - 2>/dev/null
		read -r pv prss <"$work/time"
		printf 'pipe   %4d MB  kvfs %6.2f s  ratio to mdb_load %s  peak RSS %d MB = %sx doc\n' \
			"$mb" "$pv" "$(ratio "$pv" "$ml")" $((prss / 1024)) \
			"$(ratio $((prss * 1024)) "$bytes")"
		rm -rf "$store"
	fi
	[ "$mb" = "$cp_mb" ] || rm -f "$doc"
}

mount_kvfs() {
	mkdir -p "$mnt"
	"$kvfs" mount -f --create "$work/m" "$mnt" >"$work/mount.log" 2>&1 &
	pid=$!
	for _ in $(seq 200); do
		mountpoint -q "$mnt" && return 0
		sleep 0.05
	done
	echo "bench-import: mount failed" >&2
	cat "$work/mount.log" >&2
	exit 1
}

umount_kvfs() {
	fusermount3 -u "$mnt"
	wait "$pid" || true
	pid=
	rm -rf "$work/m"
}

hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$pid/status"; }

cp_one() {
	local mb=$1 doc=$work/doc$1.json t0 t1 hwm bytes
	[ -f "$doc" ] || make_doc "$mb" "$doc"
	bytes=$(stat -c %s "$doc")
	mount_kvfs
	t0=$(now)
	cp "$doc" "$mnt/d.json"
	t1=$(now)
	hwm=$(hwm_kib)
	printf 'cp     %4d MB  %6.2f s  daemon VmHWM %d MB = %sx doc\n' "$mb" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" $((hwm / 1024)) \
		"$(ratio $((hwm * 1024)) "$bytes")"
	umount_kvfs
	rm -f "$doc"
}

# cp_strings MB: a document of 1 MiB strings (few keys: the buffer, not the
# store's pages, is what the daemon's memory follows).
cp_strings() {
	local mb=$1 doc=$work/strings.json hwm bytes
	python3 -c '
import sys
mb, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write("{")
    for i in range(mb):
        f.write(("" if i == 0 else ",") + "\"s%04d\":\"" % i + chr(97 + i % 26) * (1 << 20) + "\\n\"")
    f.write("}\n")' "$mb" "$doc"
	bytes=$(stat -c %s "$doc")
	mount_kvfs
	cp "$doc" "$mnt/s.json"
	hwm=$(hwm_kib)
	printf 'cp     %4d MB of 1 MiB strings  daemon VmHWM %d MB = %sx doc\n' "$mb" \
		$((hwm / 1024)) "$(ratio $((hwm * 1024)) "$bytes")"
	umount_kvfs
	rm -f "$doc"
}

leaf_one() {
	local mb=$1 t0 t1 hwm size
	mount_kvfs
	t0=$(now)
	head -c "$((mb * 1024 * 1024))" /dev/zero | tr '\0' a >"$mnt/big"
	t1=$(now)
	hwm=$(hwm_kib)
	size=$(stat -c %s "$mnt/big")
	[ "$size" = $((mb * 1024 * 1024)) ] || echo "bench-import: leaf size $size" >&2
	printf 'leaf   %4d MB  %6.2f s  daemon VmHWM %d MB = %sx leaf\n' "$mb" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" $((hwm / 1024)) \
		"$(ratio "$hwm" $((mb * 1024)))"
	umount_kvfs
}

for mb in "${sizes[@]}"; do
	import_one "$mb"
done
[ "${BENCH_BIG_MB:-0}" = 0 ] || import_one "$BENCH_BIG_MB" nopipe
[ "$cp_mb" = 0 ] || cp_one "$cp_mb"
[ "$cp_mb" = 0 ] || cp_strings "$cp_mb"
[ "$leaf_mb" = 0 ] || leaf_one "$leaf_mb"
