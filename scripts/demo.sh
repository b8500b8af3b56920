#!/usr/bin/env bash
# The main job in one go: install what is missing, build, install kvfs (as
# root: `make install`, so that `kvfs` and `man kvfs` work as the README
# shows them), create a demo store, mount it, list and read it through the
# mount, then unmount and delete the store, saying where both were.
# KEEP=1 keeps the store mounted to explore and prints how to end it.
# PREFIX and DESTDIR are make install's (the Makefile passes them on).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make --no-print-directory all >/dev/null

prefix=${PREFIX:-/usr/local} destdir=${DESTDIR:-}
if [ "$(id -u)" -eq 0 ]; then
	make --no-print-directory install PREFIX="$prefix" DESTDIR="$destdir" >/dev/null
	bin=$destdir$prefix/bin/kvfs
	echo "demo: installed $bin, its man page and $destdir/sbin/mount.kvfs (make install;" \
	     "make uninstall removes them)"
else
	bin=$PWD/kvfs
	echo "demo: not root, so kvfs is not installed: it is $bin (make install as root" \
	     "puts it on PATH)"
fi
# The transcript says `kvfs` when that name runs what was just installed.
shown=$bin
[ "$(command -v kvfs || true)" = "$bin" ] && shown=kvfs

work=$(mktemp -d /tmp/kvfs-demo.XXXXXX)
store=$work/store mnt=$work/mnt
mkdir -p "$mnt"
# On any failure, leave nothing behind (KEEP only keeps a demo that worked).
trap 'fusermount3 -u "$mnt" 2>/dev/null || true; rm -rf "$work"' EXIT

run() { printf '$ %s\n' "$*"; "$@"; }
kvfs_run() { printf '$ %s %s\n' "$shown" "$*"; "$bin" "$@"; }
kvfs_run import "$store" / scripts/demo.json
kvfs_run mount "$store" "$mnt"
cd "$mnt"
run ls
run ls -l users/42
run cat users/42/name
run cat users/42/tags/1
run getfattr -n user.kvfs.type users/42/age
printf '$ echo 43 > users/42/age\n'; echo 43 > users/42/age
run cat users/42.json
cd - >/dev/null

if [ -n "${KEEP:-}" ] && [ "${KEEP}" != 0 ]; then
	kvfs_run get "$store" users/42/age
	trap - EXIT
	echo
	echo "demo: kept the store $store, mounted at $mnt. Explore it, then end with:"
	echo "  $shown umount $mnt && rm -r $work"
	exit 0
fi
kvfs_run umount "$mnt"
kvfs_run get "$store" users/42/age
trap - EXIT
rm -rf "$work"
echo
echo "demo: unmounted $mnt and deleted the store $store (all of $work)."
echo "demo: KEEP=1 make demo keeps them to explore."
