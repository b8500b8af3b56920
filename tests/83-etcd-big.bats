#!/usr/bin/env bats
# tests/83-etcd-big.bats - write transactions larger than one etcd request
# (docs/ETCD.md section 6, store/etcd/etcd_big.c): a document over one Txn
# written through cp is seen whole by another mount reading it in a loop;
# a writer killed with SIGKILL at each step of its commit leaves the old
# document or the new one, whole, and the next writer carries on; two big
# writers on one document: one wins whole. A cluster of its own, or the
# one make test-etcd runs (KVFS_ETCD_URL).

# bats file_tags=etcd

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	etcd_start
	# 2,000 to 2,350 records of 3 leaves: a commit of one puts the leaves,
	# each record's node and children-space entry, over the 8,192 operations
	# of one Txn: staged in 3 chunks (measured for 2,000; 5 for 4,000) of at
	# most 7,992 (the kill tests wait for the staging marker: a commit in one
	# request fails them). 4,000 to 4,700 before, 12,000 to 14,000 before
	# that: the same path, 2x and 6x the reads through the mounts.
	python3 - "$BATS_FILE_TMPDIR" <<'EOF'
import json, sys
d = sys.argv[1]
for name, n, tag in (("a", 2000, "old"), ("b", 2350, "new"), ("c", 2150, "third")):
    doc = {"tag": tag, "items": [{"id": i, "name": "%s %d" % (tag, i), "v": i * 7} for i in range(n)]}
    with open("%s/%s.json" % (d, name), "w") as f:
        json.dump(doc, f)
EOF
}

teardown_file() {
	etcd_stop
}

setup() {
	etcd_test_store 83
	D=$BATS_FILE_TMPDIR
}

teardown() {
	mount_teardown
}

# json_sum FILE: the checksum of FILE's JSON value, whatever its layout.
json_sum() {
	python3 -c 'import json,sys,hashlib; print(hashlib.sha256(json.dumps(json.load(open(sys.argv[1])), sort_keys=True).encode()).hexdigest())' "$1"
}

# wait_sum FILE SUM: polls until FILE's JSON has checksum SUM, for 60 s by
# the clock (600 polls of a python3 start and a read each took over 10
# minutes at load 30).
wait_sum() {
	local end=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$end" ]; do
		[ "$(json_sum "$1" 2>/dev/null)" = "$2" ] && return 0
		sleep 0.1
	done
	[ "$(json_sum "$1" 2>/dev/null)" = "$2" ] && return 0
	echo "never: $1 has $(json_sum "$1" 2>&1), not $2" >&2
	return 1
}

private_keys() {
	etcd_count b c q
}

etcd_has() {
	[ "$(etcd_count "$1")" -gt 0 ]
}

@test "a document over one request goes in whole through cp while another mount reads it in a loop" {
	KVFS_ETCD_TEST_STEP_MS=500 mount_store	# a slow commit: a wide window for a torn read
	mount_extra "$BATS_TEST_TMPDIR/mnt2" "$STORE"
	local mnt2=$BATS_TEST_TMPDIR/mnt2 sa sb
	sa=$(json_sum "$D/a.json")
	sb=$(json_sum "$D/b.json")
	run -0 cp "$D/a.json" "$MNT/big.json"
	run -0 wait_sum "$mnt2/big.json" "$sa"
	(
		while [ ! -e "$BATS_TEST_TMPDIR/stop" ]; do
			cat "$mnt2/big.json" >"$BATS_TEST_TMPDIR/read.json" 2>/dev/null &&
				json_sum "$BATS_TEST_TMPDIR/read.json" >>"$BATS_TEST_TMPDIR/sums"
		done
	) &
	local reader=$!
	run -0 cp "$D/b.json" "$MNT/big.json"
	[ "$(json_sum "$MNT/big.json")" = "$sb" ]
	run -0 wait_sum "$mnt2/big.json" "$sb"
	touch "$BATS_TEST_TMPDIR/stop"
	wait "$reader"
	# every read was one of the two, whole (a torn read has another checksum)
	run -0 sort -u "$BATS_TEST_TMPDIR/sums"
	echo "$output"
	for line in "${lines[@]}"; do
		[ "$line" = "$sa" ] || [ "$line" = "$sb" ]
	done
	wc -l "$BATS_TEST_TMPDIR/sums" >&3
	[ "$(wc -l <"$BATS_TEST_TMPDIR/sums")" -ge 2 ]
	[ "$(private_keys)" -eq 0 ]
	run -0 "$KVFS_BIN" check "$STORE"
}

# kill_at SPACE: cp b.json over a.json through a slow mount, kill -9 its
# daemon as soon as the store has a key in SPACE (q: staging has begun, c:
# committed, being applied); the document must then be a or b, whole. 500
# ms a step (300 for twice the records), so that both windows stay as wide
# as they were: the marker q stands alone through a pause before each
# chunk's staging and one before the commit point, the record c through
# one before each chunk's apply and one before the final Txn: 4 x 500 ms
# each with 3 chunks (6 x 300 with 5 before). Prints "late: ..." when the
# kill came after the commit point (its record is there, or cp finished):
# a poll can see the marker seconds after it appeared on a loaded machine.
kill_at() {
	local sa sb got i
	sa=$(json_sum "$D/a.json")
	sb=$(json_sum "$D/b.json")
	KVFS_ETCD_TEST_LEASE_S=4 KVFS_ETCD_TEST_STEP_MS=500 mount_store
	run -0 cp "$D/a.json" "$MNT/big.json"
	cp "$D/b.json" "$MNT/big.json" 2>/dev/null &
	local cp_pid=$!
	for ((i = 0; i < 600; i++)); do
		etcd_has "$1" && break
		sleep 0.05
	done
	etcd_has "$1"
	kill -9 "$MOUNT_PID"
	if etcd_has c; then
		echo "late: the commit record is there"
	fi
	if wait "$cp_pid"; then
		echo "late: cp finished"
	fi
	fusermount3 -uz "$MNT" 2>/dev/null || true
	MOUNT_PID=
	# offline reads see one of the two, whole
	"$KVFS_BIN" export "$STORE" big >"$BATS_TEST_TMPDIR/after.json"
	got=$(json_sum "$BATS_TEST_TMPDIR/after.json")
	[ "$got" = "$sa" ] || [ "$got" = "$sb" ]
	echo "$got"
}

@test "a writer killed while staging leaves the old document whole; the next writer goes on" {
	# only a kill before the commit point must leave the old document: one
	# that came later (load 30: the marker's poll, a python3 start, was
	# slower than its 2 s window) is tried again on a fresh store
	local try
	for try in 1 2 3; do
		run -0 kill_at q
		[[ "$output" == *"late: "* ]] || break
		etcd_test_store 83
	done
	refute_output --partial 'late: '
	[ "${lines[-1]}" = "$(json_sum "$D/a.json")" ]
	# its marker goes with its lease (etcd's doing); the next big commit sweeps the staging
	local i
	for ((i = 0; i < 300; i++)); do
		etcd_has q || break
		sleep 0.1
	done
	! etcd_has q
	mount_store
	run -0 cp "$D/c.json" "$MNT/big.json"
	[ "$(json_sum "$MNT/big.json")" = "$(json_sum "$D/c.json")" ]
	[ "$(private_keys)" -eq 0 ]
	run -0 "$KVFS_BIN" check "$STORE"
}

@test "a writer killed after its commit point: old or new whole, then the new once a mount finishes it" {
	run -0 kill_at c
	# the writer's lease still runs: readers see the old whole; once it ran out, a
	# mount's first read applies the record (no writer needed)
	mount_store
	run -0 wait_sum "$MNT/big.json" "$(json_sum "$D/b.json")"
	[ "$(private_keys)" -eq 0 ]
	run -0 cp "$D/c.json" "$MNT/big.json"
	[ "$(json_sum "$MNT/big.json")" = "$(json_sum "$D/c.json")" ]
	run -0 "$KVFS_BIN" check "$STORE"
}

@test "two big writers on one document: one wins whole, nothing is left half-applied" {
	mount_store
	mount_extra "$BATS_TEST_TMPDIR/mnt2" "$STORE"
	local mnt2=$BATS_TEST_TMPDIR/mnt2 s1=0 s2=0 got
	run -0 cp "$D/a.json" "$MNT/big.json"
	cp "$D/b.json" "$MNT/big.json" &
	local p1=$!
	cp "$D/c.json" "$mnt2/big.json" &
	local p2=$!
	wait "$p1" && s1=1
	wait "$p2" && s2=1
	# each cp either succeeded (it ran again after a conflict) or failed cleanly; one at least won
	[ $((s1 + s2)) -ge 1 ]
	"$KVFS_BIN" export "$STORE" big >"$BATS_TEST_TMPDIR/after.json"
	got=$(json_sum "$BATS_TEST_TMPDIR/after.json")
	[ "$got" = "$(json_sum "$D/b.json")" ] || [ "$got" = "$(json_sum "$D/c.json")" ]
	# both mounts agree once their watches caught up
	run -0 wait_sum "$MNT/big.json" "$got"
	run -0 wait_sum "$mnt2/big.json" "$got"
	[ "$(private_keys)" -eq 0 ]
	run -0 "$KVFS_BIN" check "$STORE"
}
