#!/usr/bin/env bash
# scripts/make-v1-fixture.sh KVFS_V1_BINARY - rebuilds tests/fixtures/v1-store.*
# with a kvfs that writes format 1 (git archive of a commit before format 2,
# built with make): a small document covering every leaf type, a string
# without the newline flag and a bytes leaf written through a mount, fixed
# leaf mtimes; the store as `mdb_dump -a` text, its export and its leaves.
# The committed fixture was made once with this script; tests never run it.
set -euo pipefail
v1=$1
out=$(cd "$(dirname "$0")/../tests/fixtures" && pwd)
tmp=$(mktemp -d)
trap 'mountpoint -q "$tmp/mnt" && fusermount3 -u "$tmp/mnt"; rm -rf "$tmp"' EXIT
cat >"$tmp/doc.json" <<'JSON'
{
  "str": "hello",
  "int": 42,
  "neg": -7,
  "max": 9223372036854775807,
  "dbl": 1.5,
  "tiny": 1e-300,
  "t": true,
  "f": false,
  "n": null,
  "eo": {},
  "ea": [],
  "nested": [[1, [2, "x"]], [], {"k": [true]}],
  "esc": {"a/b": "slash", "x.json": "view-like", "": "empty", "%p": "pct", ".": "dot"},
  "utf8": "h\u00e9llo \u2713",
  "nul": "a\u0000b"
}
JSON
"$v1" import "$tmp/s" / "$tmp/doc.json" 2>/dev/null || "$v1" import --create "$tmp/s" / "$tmp/doc.json"
mkdir "$tmp/mnt"
"$v1" mount "$tmp/s" "$tmp/mnt"
printf 'abc' >"$tmp/mnt/raw"			# a string without the newline flag
printf '\377\000\001bin' >"$tmp/mnt/bin"	# bytes
find "$tmp/mnt" -type f -print0 | xargs -0 touch -m -d '@1614834367.123456789'
touch -m -d '@1600000000.5' "$tmp/mnt/str"
(cd "$tmp/mnt" && find . -type f -printf '%P %s %T@\n' | LC_ALL=C sort) >"$out/v1-store.leaves"
"$v1" umount "$tmp/mnt"
"$v1" export "$tmp/s" >"$out/v1-store.json"
mdb_dump -a "$tmp/s" >"$out/v1-store.mdbdump"
