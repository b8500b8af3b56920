# tests/test_helper/etcd.bash - a throw-away etcd cluster for the etcd
# suites (tests/8x-*.bats): `load 'test_helper/etcd'`, then etcd_start in
# setup_file and etcd_stop in teardown_file. When KVFS_ETCD_URL is set
# (make test-etcd runs one cluster for every suite) that cluster is used and
# left running; otherwise one is started under $BATS_FILE_TMPDIR on free
# ports and stopped again.

ETCD_REPO=$BATS_TEST_DIRNAME/..

# True when something listens on 127.0.0.1:$1.
etcd_port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A base port whose six ports (3 members x client+peer) are all free,
# from KVFS_ETCD_PORT_FROM on (default 25000): a run beside another's
# (a CI rehearsal's clusters) keeps to ports of its own.
etcd_pick_port() {
	local base p busy from=${KVFS_ETCD_PORT_FROM:-25000}
	for ((base = from + ($$ % 50) * 20; base < 40000; base += 1000)); do
		busy=0
		for ((p = base; p < base + 6; p++)); do
			etcd_port_busy "$p" && busy=1 && break
		done
		[ "$busy" -eq 0 ] && echo "$base" && return 0
	done
	return 1
}

# Sets and exports ETCD_URL (etcd://H:P,H:P,H:P) and KVFS_ETCD_ENDPOINTS.
# etcd_start own: a cluster of its own even under make test-etcd (a suite
# that sets KVFS_ETCD_MAX_TXN_OPS or KVFS_ETCD_MAX_REQUEST_BYTES for it).
etcd_start() {
	if [ -n "${KVFS_ETCD_URL:-}" ] && [ "${1:-}" != own ]; then
		ETCD_URL=$KVFS_ETCD_URL
		ETCD_OWN=0
	else
		export KVFS_ETCD_DIR=$BATS_FILE_TMPDIR/etcd
		KVFS_ETCD_PORT=$(etcd_pick_port)
		export KVFS_ETCD_PORT
		ETCD_URL=$("$ETCD_REPO/scripts/etcd-cluster.sh" start)
		ETCD_OWN=1
	fi
	export ETCD_URL ETCD_OWN
	export KVFS_ETCD_ENDPOINTS=${ETCD_URL#etcd://}
}

etcd_stop() {
	if [ "${ETCD_OWN:-0}" = 1 ]; then
		"$ETCD_REPO/scripts/etcd-cluster.sh" stop
	fi
}

# etcd_test_store NN: a test's own store on the cluster, as setup() wants
# it: common_setup, then PREFIX (kvfs-NN/<unique>) and STORE (its URL).
etcd_test_store() {
	common_setup
	PREFIX=kvfs-$1/$$-$BATS_TEST_NUMBER-$RANDOM
	STORE=$ETCD_URL/$PREFIX
	EXTRA_PIDS=()
	EXTRA_MNTS=()
}

# etcd_count SPACE...: how many keys the store $PREFIX has in its private
# spaces (v: chunks of big values; b, c, q: a big commit's staging, record,
# markers), read over the gateway.
etcd_count() {
	python3 - "${KVFS_ETCD_ENDPOINTS%%,*}" "$PREFIX" "$@" <<'EOF'
import base64, json, sys, urllib.request
ep, prefix, spaces = sys.argv[1], sys.argv[2], sys.argv[3:]
n = 0
for space in spaces:
    key = prefix.encode() + b"\0" + space.encode()
    end = key[:-1] + bytes([key[-1] + 1])
    req = {"key": base64.b64encode(key).decode(), "range_end": base64.b64encode(end).decode(),
           "count_only": True}
    r = urllib.request.urlopen("http://%s/v3/kv/range" % ep, json.dumps(req).encode(), timeout=5)
    n += int(json.load(r).get("count", 0))
print(n)
EOF
}

# etcd_requests: key-value requests (ranges, Txns, puts, deletes) the
# cluster's members have answered so far, summed from their /metrics.
etcd_requests() {
	local ep n total=0
	for ep in ${KVFS_ETCD_ENDPOINTS//,/ }; do
		n=$(curl -sf "http://$ep/metrics" |
			awk '/^grpc_server_handled_total/ && /grpc_service="etcdserverpb.KV"/ { s += $2 } END { print s + 0 }') || return 1
		total=$((total + n))
	done
	echo "$total"
}

# mount_stale PATH: the mount says its reads may be stale (user.kvfs.stale,
# "since ..."); mount_fresh PATH: it has no such attribute
mount_stale() {
	getfattr --absolute-names --only-values -n user.kvfs.stale "$1" 2>/dev/null | grep -q '^since '
}

mount_fresh() {
	local out
	out=$(getfattr --absolute-names --only-values -n user.kvfs.stale "$1" 2>&1) && return 1
	[[ "$out" == *"No such attribute"* ]]
}
