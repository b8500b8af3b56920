# scripts/bench-lib.sh - the setup both benchmarks share; sourced by
# scripts/bench.sh and scripts/bench-backup.sh from the top of the tree,
# never run on its own.
#   bench_setup TMPFS_SIZE   sets kvfs (KVFS_BIN, else ./kvfs), work (a new
#                            temporary directory), store, mnt and ref (the
#                            reference side: a tmpfs of TMPFS_SIZE, needs root);
#                            on exit unmounts both and removes work.
#   now                      the time in seconds, with nanoseconds.
# shellcheck shell=bash disable=SC2034  # the variables are for the callers

bench_cleanup() {
	fusermount3 -u "$mnt" 2>/dev/null || true
	umount "$ref" 2>/dev/null || true
	rm -rf "$work"
}

bench_setup() {
	kvfs=${KVFS_BIN:-$PWD/kvfs}
	work=$(mktemp -d /tmp/kvfs-bench.XXXXXX)
	store=$work/store mnt=$work/mnt ref=$work/tmpfs
	mkdir -p "$mnt" "$ref"
	trap bench_cleanup EXIT
	mount -t tmpfs -o size="$1" tmpfs "$ref"
}

now() { date +%s.%N; }
