#!/usr/bin/env bats
# tests/80-etcd-client.bats - the etcd backend's groundwork against a live
# 3-member cluster (scripts/etcd-cluster.sh, under $BATS_FILE_TMPDIR): the
# client's own tests (build/etcd/test_etcd_client, `make etcd-client-test`),
# a guarded Txn conflict, a watch seeing another client's put, losing one
# member while writes go on, a value over etcd's default request limit, and
# a Txn of compares alone refused by a member without a quorum.

# bats file_tags=etcd,asan

load 'test_helper/common'

REPO=$BATS_TEST_DIRNAME/..

# True when something listens on 127.0.0.1:$1.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A base port whose six ports (3 members x client+peer) are all free.
pick_port() {
	local base p busy
	for ((base = 21000 + ($$ % 50) * 20; base < 40000; base += 1000)); do
		busy=0
		for ((p = base; p < base + 6; p++)); do
			port_busy "$p" && busy=1 && break
		done
		[ "$busy" -eq 0 ] && echo "$base" && return 0
	done
	return 1
}

setup_file() {
	export KVFS_ETCD_TEST=${KVFS_ETCD_TEST:-$REPO/build/etcd/test_etcd_client}
	make -C "$REPO" --no-print-directory etcd-client-test >&2
	export KVFS_ETCD_DIR=$BATS_FILE_TMPDIR/etcd
	KVFS_ETCD_PORT=$(pick_port)
	export KVFS_ETCD_PORT
	ETCD_URL=$("$REPO/scripts/etcd-cluster.sh" start)
	export ETCD_URL
	# etcd://H:P,H:P,H:P -> H:P,H:P,H:P (the client's endpoint list)
	export KVFS_ETCD_ENDPOINTS=${ETCD_URL#etcd://}
}

teardown_file() {
	"$REPO/scripts/etcd-cluster.sh" stop
}

etcdc() {
	"$KVFS_ETCD_TEST" "$@"
}

scripts_endpoints() {
	"$REPO/scripts/etcd-cluster.sh" endpoints
}

@test "etcd-cluster.sh start prints the etcd:// URL of three healthy members" {
	[[ "$ETCD_URL" =~ ^etcd://127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+,127\.0\.0\.1:[0-9]+$ ]]
	run -0 "$REPO/scripts/etcd-cluster.sh" status
	assert_equal "$(grep -c ' running$' <<<"$output")" 3
	assert_line "$ETCD_URL"
	# a second start finds them running and prints the same URL
	run -0 "$REPO/scripts/etcd-cluster.sh" start
	assert_output "$ETCD_URL"
}

@test "every client call passes its own tests against the live cluster" {
	run etcdc
	# the program's own lines say which call failed
	[ "$status" -eq 0 ] || { printf '%s\n' "$output" | tail -20; false; }
	refute_output --partial 'not ok'
	local n
	n=$(grep -c '^ok ' <<<"$output")
	assert_line "1..$n"
	[ "$n" -ge 14 ]	# client calls, watch, fail-over, limits, the write buffer
}

@test "guarded Txn conflict: B commits, A's commit fails, A's retry sees B's value" {
	run -0 etcdc conflict "c/$BATS_TEST_NUMBER/$$"
	assert_line 'b=committed'
	assert_line 'a=conflict'
	assert_line 'a-retry=committed saw=1'
	run -0 etcdc get "c/$BATS_TEST_NUMBER/$$"
	assert_output 2
}

@test "two writers retrying on conflict lose no increment" {
	local k="inc/$$"
	etcdc incr "$k" 25 >"$BATS_TEST_TMPDIR/a.out" &
	local a=$!
	etcdc incr "$k" 25 >"$BATS_TEST_TMPDIR/b.out" &
	local b=$!
	wait "$a"
	wait "$b"
	run -0 etcdc get "$k"
	assert_output 50
	echo "# retries: $(cat "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out" | tr '\n' ' ')" >&3
}

@test "a watch sees another client's put" {
	local out=$BATS_TEST_TMPDIR/watch.out i
	etcdc watch-one "feed/$$/" >"$out" 2>&1 &
	local w=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^ready$' "$out" && break
		sleep 0.1
	done
	assert_equal "$(head -1 "$out")" ready
	etcdc put "feed/$$/x" hello
	for ((i = 0; i < 100; i++)); do
		kill -0 "$w" 2>/dev/null || break
		sleep 0.1
	done
	run -0 wait "$w"
	run -0 cat "$out"
	assert_line --regexp "^put feed/$$/x after [0-9]+ ms$"
	echo "# $(tail -1 "$out")" >&3
}

@test "a value bigger than etcd's default 1.5 MiB request limit is accepted (raised limit)" {
	run -0 etcdc bigput "big/$$" 4194304
	assert_output '4194304 same'
}

@test "stop-one: with one member down writes go on, and the member catches up when back" {
	run -0 "$REPO/scripts/etcd-cluster.sh" stop-one 0
	local gone=$output i
	run -0 "$REPO/scripts/etcd-cluster.sh" status
	assert_line "m0 http://$gone stopped"
	assert_equal "$(grep -c ' running$' <<<"$output")" 2
	# the dead member is first in the list: the client moves on to the others
	# (bounded retry: if it led the cluster, the other two elect a new leader)
	for ((i = 0; i < 100; i++)); do
		etcdc put "loss/$$/0" v0 2>/dev/null && break
		sleep 0.1
	done
	for i in 1 2 3 4 5; do
		run -0 etcdc put "loss/$$/$i" "v$i"
	done
	run -0 etcdc get "loss/$$/5"
	assert_output v5
	# back again: it catches up on what it missed
	run -0 "$REPO/scripts/etcd-cluster.sh" start
	for ((i = 0; i < 100; i++)); do
		KVFS_ETCD_ENDPOINTS=$gone etcdc get "loss/$$/5" >/dev/null 2>&1 && break
		sleep 0.1
	done
	KVFS_ETCD_ENDPOINTS=$gone run -0 etcdc get "loss/$$/5"
	assert_output v5
}

@test "a Txn of compares alone is judged at the newest revision: a member without a quorum does not answer it" {
	local k=absent/$$ m0=${KVFS_ETCD_ENDPOINTS%%,*}
	KVFS_ETCD_ENDPOINTS=$m0 run -0 etcdc absent "$k"
	assert_output absent
	run -0 etcdc put "$k" v
	KVFS_ETCD_ENDPOINTS=$m0 run -1 etcdc absent "$k"
	assert_output present
	# member 0 alone: what it holds may be old (a create's check would
	# pass on a name the others made meanwhile); it must not judge alone
	run -0 "$REPO/scripts/etcd-cluster.sh" stop-one 1
	run -0 "$REPO/scripts/etcd-cluster.sh" stop-one 2
	KVFS_ETCD_ENDPOINTS=$m0 run -2 etcdc absent "$k/other"
	refute_line absent
	run -0 "$REPO/scripts/etcd-cluster.sh" start
	KVFS_ETCD_ENDPOINTS=$m0 run -0 etcdc absent "$k/other"
	assert_output absent
}

@test "a client moves to the leader when its list names the cluster's members, and keeps a list that names another address" {
	local leader
	leader=$(ETCDCTL_API=3 etcdctl --endpoints="$(scripts_endpoints)" endpoint status |
		awk -F', ' '$5 == "true" { print $1 }')
	[ -n "$leader" ]
	run -0 etcdc leader
	assert_output "0 $leader"
	# a relay or proxy in the list (here an address nobody serves) is not a member
	# (-ENOENT: it stays where the status call found an answer)
	KVFS_ETCD_ENDPOINTS=127.0.0.1:1,$KVFS_ETCD_ENDPOINTS run -1 etcdc leader
	assert_output --regexp "^-2 http://"
}

@test "start refuses ports another cluster already serves, and names them" {
	KVFS_ETCD_DIR=$BATS_TEST_TMPDIR/other run -1 "$REPO/scripts/etcd-cluster.sh" start
	assert_output --partial "port $KVFS_ETCD_PORT is in use"
	# the running cluster is untouched
	run -0 "$REPO/scripts/etcd-cluster.sh" status
	assert_equal "$(grep -c ' running$' <<<"$output")" 3
}
