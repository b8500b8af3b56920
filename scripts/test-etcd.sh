#!/usr/bin/env bash
# make test-etcd: runs the CLI and mount suites with every test's store on
# etcd instead of LMDB. Starts a 3-member cluster (scripts/etcd-cluster.sh)
# in a directory of its own, names each test's store
# etcd://.../kvfs-bats/<unique> (tests/test_helper/common.bash, under
# KVFS_TEST_BACKEND=etcd), runs the suites and the etcd suites (8x) on that
# cluster, and stops it again, whatever happened. Ends with the "N passed,
# N failed" line of scripts/run-tests.sh.
#
# make test: `scripts/test-etcd.sh --after BUILD` runs the whole suite
# (scripts/run-tests.sh BUILD) first, then, when etcd and etcdctl are
# installed, the etcd pass above without the 8x suites (the first pass ran
# them, each on a cluster of its own), and ends with one "N passed, N failed"
# line summing both passes.
#
# Environment: KVFS_ETCD_PORT (default: the first base port from 24790 on,
# in steps of 20, whose six ports are free), KVFS_ETCD_DIR (default a new
# temporary directory), KVFS_SUITES (default: the list below).
set -u
cd "$(dirname "$0")/.."

# The "N passed, N failed" line of a log, as "N N" (a run without one: 0 1).
summary_of() {
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$1" | tail -1)
	if [ -z "$line" ]; then
		echo "0 1"
	else
		awk '{ print $1, $3 }' <<<"$line"
	fi
}

if [ "${1:-}" = --after ]; then
	log=$(mktemp "${TMPDIR:-/tmp}/kvfs-test.XXXXXX")
	trap 'rm -f "$log" "$log.etcd"' EXIT
	bash scripts/run-tests.sh "${2:-build}" 2>&1 | tee "$log"
	read -r passed failed < <(summary_of "$log")
	if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then
		echo "# ---- the etcd pass: the CLI and mount suites on a 3-member cluster ----"
		KVFS_SUITES="$(echo tests/2[0-5]-*.bats tests/3[0-9]-*.bats tests/40-*.bats tests/7[0-9]-*.bats)" \
			bash scripts/test-etcd.sh 2>&1 | tee "$log.etcd"
		read -r p f < <(summary_of "$log.etcd")
		echo "# etcd pass: $p passed, $f failed; the LMDB pass: $passed passed, $failed failed"
		passed=$((passed + p)) failed=$((failed + f))
	else
		echo "# etcd is not installed (scripts/deps.sh installs it): the etcd pass is not run"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
fi

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
default_suites="$(echo tests/2[0-5]-*.bats tests/3[0-9]-*.bats tests/40-*.bats tests/7[0-9]-*.bats tests/8[1-9]-*.bats)"
export KVFS_SUITES=${KVFS_SUITES:-$default_suites}
bash scripts/run-tests.sh none
