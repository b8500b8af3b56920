#!/usr/bin/env bash
# scripts/make-v2-fixture.sh KVFS_V2_BINARY - rebuilds tests/fixtures/v2-store.mdbdump
# with a kvfs that writes format 2 (before tables, format 3): the document of
# tests/fixtures/v1-store.json imported, as `mdb_dump -a` text. The committed
# fixture was made once with this script; tests never run it.
set -euo pipefail
v2=$1
out=$(cd "$(dirname "$0")/../tests/fixtures" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$v2" import --create "$tmp/store" / "$out/v1-store.json"
mdb_dump -a "$tmp/store" >"$out/v2-store.mdbdump"
