#!/usr/bin/env bash
# The main job in one go: install what is missing, build, create a demo store,
# mount it, list and read it through the mount, then unmount.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make --no-print-directory all >/dev/null
work=$(mktemp -d /tmp/kvfs-demo.XXXXXX)
store=$work/store mnt=$work/mnt
mkdir -p "$mnt"
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$work"' EXIT

run() { printf '$ %s\n' "$*"; "$@"; }
run ./kvfs import "$store" / scripts/demo.json
run ./kvfs mount "$store" "$mnt"
cd "$mnt"
run ls
run ls -l users/42
run cat users/42/name
run cat users/42/tags/1
run getfattr -n user.kvfs.type users/42/age
printf '$ echo 43 > users/42/age\n'; echo 43 > users/42/age
run cat users/42.json
cd - >/dev/null
run ./kvfs umount "$mnt"
run ./kvfs get "$store" users/42/age
