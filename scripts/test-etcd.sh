#!/usr/bin/env bash
# The etcd pass (make test-etcd, and a pass of make test): the suites
# tagged "backends" with every test's store on etcd instead of LMDB, and the
# etcd suites (tag "etcd"). Starts a 3-member cluster
# (scripts/etcd-cluster.sh) in a directory of its own, names each test's
# store etcd://.../kvfs-bats/<unique> (tests/test_helper/common.bash, under
# KVFS_TEST_BACKEND=etcd), runs the suites on that cluster (a suite that
# needs limits of its own starts its own), and stops it again, whatever
# happened. Ends with the "N passed, N failed" line of scripts/run-tests.sh.
#
# Environment: KVFS_ETCD_PORT (default: the first base port from 24790 on,
# in steps of 20, whose six ports are free), KVFS_ETCD_DIR (default a new
# temporary directory), KVFS_TAGS (default "backends;etcd"), and those of
# scripts/run-tests.sh.
set -u
cd "$(dirname "$0")/.."

# True when something listens on 127.0.0.1:$1.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

if [ -z "${KVFS_ETCD_PORT:-}" ]; then
	for ((base = 24790; base < 30000; base += 20)); do
		free=1
		for ((p = base; p < base + 6; p++)); do
			port_busy "$p" && free=0 && break
		done
		[ "$free" = 1 ] && KVFS_ETCD_PORT=$base && break
	done
fi
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
url=$(scripts/etcd-cluster.sh start) || {
	echo "not ok - test-etcd: the cluster did not start (ports from $KVFS_ETCD_PORT)"
	echo "0 passed, 1 failed"
	exit 1
}
export KVFS_ETCD_URL=$url KVFS_TEST_BACKEND=etcd
# The CLI suites, the mount suites (34-mount-ext4's fsx/SQLite included),
# backups, tables, TTL; then the etcd suites themselves. The trust (5x) and
# crash (6x) suites corrupt or kill LMDB files: nothing of theirs applies.
export KVFS_TAGS=${KVFS_TAGS:-backends;etcd}
# One file at a time: every store here shares the cluster, whose revision
# is each store's generation, so a second file's writes would show in the
# commits and keys tests 38 and 45 count (seen: 5 of 239 failed with two).
export KVFS_JOBS=${KVFS_JOBS:-1}
bash scripts/run-tests.sh none
