#!/usr/bin/env bash
# make bench-etcd: the store-level workloads of the etcd backend beside LMDB,
# in one run (build/etcd/test_etcd_store bench): a point get (one read
# transaction each), the commit of one put, and listing 1,000 children whose
# subtrees hold 3 and 100 keys each. Starts its own cluster (scripts/etcd-cluster.sh,
# KVFS_ETCD_PORT default 24890) and stops it again. Only the ratios mean much.
set -eu
cd "$(dirname "$0")/.."
bin=${KVFS_ETCD_STORE_TEST:-build/etcd/test_etcd_store}
export KVFS_ETCD_PORT=${KVFS_ETCD_PORT:-24890}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvfs-bench-etcd.XXXXXX")
export KVFS_ETCD_DIR=$tmp/etcd
trap 'scripts/etcd-cluster.sh stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
url=$(scripts/etcd-cluster.sh start)
for per in 3 100; do
	"$bin" bench "$tmp/lmdb-$per" "$per"
	"$bin" bench "$url/bench-$per" "$per"
done
