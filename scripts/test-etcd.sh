#!/usr/bin/env bash
# make test-etcd: runs the CLI and mount suites with every test's store on
# etcd instead of LMDB. Starts a 3-member cluster (scripts/etcd-cluster.sh)
# in a directory of its own, names each test's store
# etcd://.../kvfs-bats/<unique> (tests/test_helper/common.bash, under
# KVFS_TEST_BACKEND=etcd), runs the suites and the etcd suites (8x) on that
# cluster, and stops it again, whatever happened. Ends with the "N passed,
# N failed" line of scripts/run-tests.sh.
# Environment: KVFS_ETCD_PORT (default 24790), KVFS_ETCD_DIR (default a new
# temporary directory), KVFS_SUITES (default: the list below).
set -u
cd "$(dirname "$0")/.."
export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24790}
own_dir=0
if [ -z "${KVFS_ETCD_DIR:-}" ]; then
	KVFS_ETCD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-test-etcd.XXXXXX")
	own_dir=1
fi
export KVFS_ETCD_DIR
cleanup() {
	scripts/etcd-cluster.sh stop >/dev/null 2>&1
	[ "$own_dir" = 1 ] && rm -rf "$KVFS_ETCD_DIR"
}
trap cleanup EXIT
url=$(scripts/etcd-cluster.sh start) || { echo "test-etcd: the cluster did not start"; exit 1; }
export KVFS_ETCD_URL=$url KVFS_TEST_BACKEND=etcd
# The CLI suites, the mount suites (34-mount-ext4's fsx/SQLite included),
# backups, tables, TTL; then the etcd suites themselves. The trust (5x) and
# crash (6x) suites corrupt or kill LMDB files: nothing of theirs applies.
default_suites="$(echo tests/2[0-5]-*.bats tests/3[0-9]-*.bats tests/40-*.bats tests/7[0-9]-*.bats tests/8[1-9]-*.bats)"
export KVFS_SUITES=${KVFS_SUITES:-$default_suites}
bash scripts/run-tests.sh none
