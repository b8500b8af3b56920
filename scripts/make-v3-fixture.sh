#!/usr/bin/env bash
# scripts/make-v3-fixture.sh KVFS_V3_BINARY - rebuilds tests/fixtures/v3-store.mdbdump
# with a kvfs that writes format 3 (tables and attributes, before TTLs, format 4):
# the document of tests/fixtures/v1-store.json imported, plus a table /people
# with a unique index by_email and two rows, as `mdb_dump -a` text. The
# committed fixture was made once with this script; tests never run it.
set -euo pipefail
v3=$1
out=$(cd "$(dirname "$0")/../tests/fixtures" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$v3" import --create "$tmp/store" / "$out/v1-store.json"
"$v3" mkdir "$tmp/store" /people
"$v3" table create "$tmp/store" /people --key-depth 1
"$v3" index create "$tmp/store" /people by_email email --unique
"$v3" import "$tmp/store" /people/ann <(printf '{"email": "ann@x", "age": 30}')
"$v3" import "$tmp/store" /people/bob <(printf '{"email": "bob@x", "age": -4.5}')
mdb_dump -a "$tmp/store" >"$out/v3-store.mdbdump"
