#!/usr/bin/env bats
# tests/82-etcd-store.bats - the etcd backend's operations (store/etcd/etcd_store.c,
# store/etcd/etcd_scan.c) against a live 3-member cluster: open/create/refuse,
# reads at one revision, paged scans, buffered guarded writes and conflicts
# (tests/unit/test_etcd_store.c, `make etcd-store-test`). The asan pass
# runs it built with ASan (KVFS_ETCD_STORE_TEST), less its volume tests
# (KVFS_ETCD_STORE_SKIP); the etcd pass runs the optimized one whole. On a
# cluster of its own: its counts assume no other writer.

# bats file_tags=etcd,asan

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	make -C "$ETCD_REPO" --no-print-directory etcd-store-test >&2
	etcd_start own
}

teardown_file() {
	etcd_stop
}

@test "the etcd backend's operations pass their own tests against the live cluster" {
	local bin=${KVFS_ETCD_STORE_TEST:-$ETCD_REPO/build/etcd/test_etcd_store}
	run -0 "$bin"
	refute_output --partial 'not ok'
	local n
	n=$(grep -c '^ok ' <<<"$output")
	assert_line "1..$n"
	[ "$n" -ge 5 ]
}
