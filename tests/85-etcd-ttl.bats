#!/usr/bin/env bats
# tests/85-etcd-ttl.bats - TTLs on etcd are etcd leases (docs/ETCD.md
# section 9): a subtree given a TTL through a mount is deleted by etcd
# itself at its deadline with no kvfs running, index entries of an expiring
# table row included; a TTL removed leaves no lease on the keys, a changed
# one moves them to another; another mount sees the expiry through the
# watch. A cluster of its own, or the one make test-etcd runs.

# bats file_tags=etcd

load 'test_helper/common'
load 'test_helper/etcd'
load 'test_helper/tables'

setup_file() {
	etcd_start
	big_doc "$BATS_FILE_TMPDIR/big.json" 2000	# the last two tests' document, made once
}

teardown_file() {
	etcd_stop
}

setup() {
	etcd_test_store 85
	mount_store
}

teardown() {
	mount_teardown
}

# (a generous timeout: a big store's keys take etcdctl seconds on a busy machine)
ctl() {
	ETCDCTL_API=3 etcdctl --endpoints="${KVFS_ETCD_ENDPOINTS%%,*}" --command-timeout=60s "$@"
}

# ekeys: one line per key of the store in etcd: SPACE PATH LEASE, where
# PATH spells the tuple key's string elements as /name and any other byte
# as .hh (an expiry key's 8-byte deadline is left out), LEASE 0 for none.
ekeys() {
	ctl get --prefix "$PREFIX" -w json | python3 -c '
import base64, json, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
pre = sys.argv[1].encode() + b"\0"
for kv in json.load(sys.stdin).get("kvs", []):
    k = base64.b64decode(kv["key"])
    if not k.startswith(pre):
        continue
    space, rest = chr(k[len(pre)]), k[len(pre) + 1:]
    if space == "e":
        rest = rest[8:]
    out, i = "", 0
    while i < len(rest):
        j = rest.find(b"\0", i + 1)
        if rest[i] == 2 and j > 0:
            # printable bytes as they are, others as .hh: one line, no blank, per key
            # (an array index can hold a 2 and look like a string here)
            out += "/" + "".join(chr(b) if 0x20 < b < 0x7f else ".%02x" % b for b in rest[i + 1:j])
            i = j + 1
        else:
            out += ".%02x" % rest[i]
            i += 1
    print(space, out or "/", kv.get("lease", 0))
' "$PREFIX"
}

# leases_of REGEX: the distinct leases of the node-space keys (d a t e i)
# whose line matches REGEX, one a line.
leases_of() {
	ekeys | grep -E '^[datei] ' | grep -E -- "$1" | awk '{print $3}' | sort -u
}

# none_left REGEX: no key of the store matches REGEX.
none_left() {
	! ekeys | grep -E "^[datei] " | grep -E -q -- "$1"
}

# landed PATH...: each leaf is in etcd (a file's commit may trail its close
# by the kernel's release), so that a TTL set next finds the whole subtree.
landed() {
	local p
	for p in "$@"; do
		eventually 5 kvfs get "$STORE" "$p" >/dev/null
	done
}

# lease_alive ID (decimal): etcd still has the lease (etcdctl prints 16 hex digits).
lease_alive() {
	ctl lease list | grep -q -i "^$(printf '%016x' "$1")$"
}

# lease_gone ID (decimal): etcd no longer has the lease.
lease_gone() {
	! lease_alive "$1"
}

@test "a subtree with a TTL is deleted by etcd itself at its deadline, with no kvfs running" {
	mkdir -p "$MNT/s/tmp/deep"
	echo a >"$MNT/s/tmp/a"
	echo b >"$MNT/s/tmp/deep/b"
	echo keep >"$MNT/s/keep"
	landed /s/tmp/a /s/tmp/deep/b /s/keep
	# every key of the subtree (data, attributes, deadline, expiry entry) on
	# one lease, read under a deadline no slow read reaches (at load 24 a
	# read 3 s after the TTL found the keys gone); a short TTL then moves
	# them all to a new lease, which must take every one with it
	setfattr -n user.kvfs.ttl -v 600 "$MNT/s/tmp"
	local keys
	keys=$(ekeys)
	run -0 awk '$1 ~ /^[datei]$/ && $2 ~ "^/s/tmp" { print $3 }' <<<"$keys"
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	local lease=${lines[0]}
	grep -q "^e /s/tmp $lease$" <<<"$keys"
	grep -q "^t /s/tmp $lease$" <<<"$keys"
	grep -q "^d /s/tmp/deep/b $lease$" <<<"$keys"
	run -0 bash -c 'awk '"'"'$1 ~ /^[datei]$/ && $2 ~ "^/s/keep" { print $3 }'"'"' | sort -u' <<<"$keys"
	assert_output 0
	setfattr -n user.kvfs.ttl -v 3 "$MNT/s/tmp"
	unmount_store
	# no kvfs process runs now: only etcd can remove them (a key left on
	# the first lease would outlive this wait)
	eventually 15 none_left '/s/tmp'
	local left
	left=$(ekeys)
	grep -q '^d /s/keep 0$' <<<"$left"
	run -1 grep -E '^k .*/s/tmp' <<<"$left"	# children-space entries went with them
	run -0 grep -E '^k .*/s 0$' <<<"$left"	# the parent's stays: /s/keep is in it
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	run -0 kvfs ls "$STORE" /s
	assert_output keep
}

@test "a big value's chunks share its lease, and etcd deletes them with it" {
	mkdir -p "$MNT/b"
	# 1.2 MB: over one chunk of 1 MiB (ETCD_VAL_CHUNK), so two (3.3 MB and
	# four chunks before: the same path with twice the bytes)
	head -c 900000 /dev/urandom | base64 -w0 >"$BATS_TEST_TMPDIR/big"
	cp "$BATS_TEST_TMPDIR/big" "$MNT/b/v"
	landed /b/v
	[ "$(ekeys | grep -c '^v ')" -ge 2 ]	# stored in chunks (docs/ETCD.md section 3)
	# one snapshot read under a far deadline (a read after a 3 s one found
	# them deleted on a loaded machine: CI of 2026-11-29), then a short
	# TTL moves them to the lease that etcd ends
	setfattr -n user.kvfs.ttl -v 600 "$MNT/b"
	local keys
	keys=$(ekeys)
	run -0 awk '$1 == "d" && $2 == "/b/v" { print $3 }' <<<"$keys"
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	local lease=${lines[0]}
	run -0 awk '$1 == "v" { print $3 }' <<<"$keys"
	[ "${#lines[@]}" -ge 2 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u)" = "$lease" ]
	setfattr -n user.kvfs.ttl -v 3 "$MNT/b"
	unmount_store
	eventually 15 none_left '/b/v'
	[ "$(ekeys | awk '$1 == "v"' | wc -l)" -eq 0 ]	# one lease: gone in the same revision
}

@test "an expiring table row takes its index entries along in etcd; an expiring indexed field its entry" {
	people
	row people/cy '{"email":"cy@x","age":30,"nick":"c"}'
	landed /people/cy/nick
	# the leases read under far deadlines (reads after 2 s ones found the
	# keys gone at load 24), then short TTLs for etcd to end
	setfattr -n user.kvfs.ttl -v 600 "$MNT/people/cy"
	run -0 leases_of '^i .*/cy '
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	run -0 leases_of '/people/cy'
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	# a field: the by_age entry goes with it, the row and its by_email entry stay
	kvfs put --ttl 600 "$STORE" /people/ann/age 31
	run -0 leases_of '^i .*/ann '
	[ "${#lines[@]}" -eq 2 ]	# by_email: none; by_age: the field's lease
	setfattr -n user.kvfs.ttl -v 2 "$MNT/people/cy"
	kvfs put --ttl 2 "$STORE" /people/ann/age 31
	unmount_store
	eventually 15 none_left '/cy( |/)'
	eventually 15 none_left '/ann/age'
	[ "$(ekeys | grep -c '^i .*/ann ')" -eq 1 ]
	ekeys | grep -q '^i .*/bob '
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	run -0 kvfs find "$STORE" /people by_email cy@x
	assert_output ''
	run -0 kvfs find "$STORE" /people by_age --from -100
	assert_output bob
	run -0 kvfs export --compact "$STORE" /people/ann
	assert_output '{"email":"ann@x"}'
}

@test "a TTL removed before its deadline leaves no lease on the keys, and the data stays" {
	# the removal must come before the deadline: where a setfattr and a
	# read of etcd took longer (over 2 s at load 24), again on a subtree of
	# its own with a longer TTL
	local ttl t0 lease=
	for ttl in 2 8 30; do
		mkdir -p "$MNT/s/tmp$ttl"
		echo a >"$MNT/s/tmp$ttl/a"
		t0=$(date +%s%N)
		setfattr -n user.kvfs.ttl -v "$ttl" "$MNT/s/tmp$ttl"
		lease=$(leases_of "/s/tmp$ttl( |/)") || true
		setfattr -x user.kvfs.ttl "$MNT/s/tmp$ttl" 2>/dev/null && in_time "$t0" "$ttl" && break
		lease=
	done
	[ -n "$lease" ]
	[ "$lease" != 0 ]
	run -0 leases_of "/s/tmp$ttl( |/)"
	assert_output 0
	unmount_store
	# the lease itself runs out: nothing was on it any more
	eventually $((ttl + 15)) lease_gone "$lease"
	ekeys | grep -q "^d /s/tmp$ttl/a 0$"
	run -0 kvfs get "$STORE" "/s/tmp$ttl/a"
	assert_output a
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

@test "a changed TTL moves the keys to another lease; a rewrite without a TTL detaches a key" {
	# the change must come before the first deadline: where it did not
	# (a setfattr and a read of etcd over 2 s at load 24), again on a
	# subtree of its own with a longer first TTL
	local ttl t0 first=
	for ttl in 2 8 30; do
		mkdir -p "$MNT/s/tmp$ttl"
		echo a >"$MNT/s/tmp$ttl/a"
		echo b >"$MNT/s/tmp$ttl/b"
		landed "/s/tmp$ttl/a" "/s/tmp$ttl/b"
		t0=$(date +%s%N)
		setfattr -n user.kvfs.ttl -v "$ttl" "$MNT/s/tmp$ttl"
		first=$(leases_of "/s/tmp$ttl( |/)") || true
		setfattr -n user.kvfs.ttl -v 100 "$MNT/s/tmp$ttl" 2>/dev/null && in_time "$t0" "$ttl" && break
		first=
	done
	[ -n "$first" ]
	[ "$first" != 0 ]
	run -0 leases_of "/s/tmp$ttl( |/)"
	[ "${#lines[@]}" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	[ "${lines[0]}" != "$first" ]
	local second=${lines[0]}
	# a node of its own: its TTL, then a rewrite that clears it
	echo c >"$MNT/s/c"
	setfattr -n user.kvfs.ttl -v 100 "$MNT/s/c"
	run -0 leases_of '/s/c '
	[ "$output" != 0 ]
	echo c2 >"$MNT/s/c"
	run -0 leases_of '/s/c '
	assert_output 0
	unmount_store
	eventually $((ttl + 15)) lease_gone "$first"
	lease_alive "$second"
	ekeys | grep -q "^d /s/tmp$ttl/b $second$"
	run -0 kvfs get "$STORE" /s/c
	assert_output c2
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

@test "a read-only mount (which never reaps) sees etcd's expiry through the watch" {
	local ro=$BATS_TEST_TMPDIR/ro
	mkdir -p "$MNT/s/tmp"
	echo a >"$MNT/s/tmp/a"
	echo keep >"$MNT/s/keep"
	mkdir -p "$ro"
	"$KVFS_BIN" mount -f -o ro "$STORE" "$ro" >>"$ro.log" 2>&1 3>&- &
	EXTRA_PIDS+=("$!")
	EXTRA_MNTS+=("$ro")
	eventually 10 mountpoint -q "$ro"
	run -0 cat "$ro/s/tmp/a"
	assert_output a
	run -0 ls "$ro/s/tmp"
	assert_output a
	setfattr -n user.kvfs.ttl -v 2 "$MNT/s/tmp"
	unmount_store
	eventually 15 none_left '/s/tmp'
	eventually 10 bash -c "[ ! -e '$ro/s/tmp' ]"
	run -0 ls "$ro/s"
	assert_output keep
	run -1 cat "$ro/s/tmp/a"
}

# big_doc FILE N: a document of N records of 3 leaves (N=2,000: with each
# record's node and children-space entry over the 8,192 operations of one
# Txn, so it is written as a staged commit, docs/ETCD.md section 6, in 3
# chunks of at most 7,992, measured; 4,000 before, in 5, and 12,000 before
# that: the same path at 2x and 6x the requests and, in the last test, the
# test's pauses).
big_doc() {
	python3 -c '
import json, sys
n = int(sys.argv[2])
json.dump({"items": [{"id": i, "name": "n %d" % i, "v": i * 7} for i in range(n)]}, open(sys.argv[1], "w"))
' "$1" "$2"
}

@test "a document over one request imported with a TTL is on its lease, and etcd deletes it whole" {
	unmount_store
	kvfs put "$STORE" /keep k
	# a far deadline, so that the keys are read while they all stand (an
	# import takes several seconds, over 15 s at load 24), then the lease is
	# ended by etcd at once (lease revoke: the same deletion its deadline
	# makes; the first tests wait on real deadlines), not after 15 to 45 s
	local t0=$SECONDS keys lease granted
	run -0 kvfs import --ttl 600 "$STORE" /big "$BATS_FILE_TMPDIR/big.json"
	keys=$(ekeys)
	[ "$(grep -c "^d /big/" <<<"$keys")" -ge 6000 ]
	run -0 awk '$1 ~ /^[datei]$/ && $0 ~ "/big(/| )" { print $3 }' <<<"$keys"
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 1 ]
	[ "${lines[0]}" != 0 ]
	lease=${lines[0]}
	# the children-space entries of its 2,000 objects take their leases too
	[ "$(awk '$1 == "k" && $3 != 0' <<<"$keys" | wc -l)" -ge 2000 ]
	# the lease ends at the deadline asked for: granted for what was left
	# of the 600 s (rounded up to the second) when the import asked for it
	run -0 ctl lease timetolive "$(printf '%016x' "$lease")"
	granted=$(sed -n 's/.*granted with TTL(\([0-9]*\)s).*/\1/p' <<<"$output")
	[ "$granted" -le 601 ]
	[ "$granted" -ge $((600 - (SECONDS - t0) - 1)) ]
	# no kvfs process runs: only etcd can remove them
	run -0 ctl lease revoke "$(printf '%016x' "$lease")"
	eventually 15 none_left '/big(/| )'
	run -0 ekeys
	grep -q '^d /keep 0$' <<<"$output"
	run -0 grep -c '^k ' <<<"$output"
	assert_output 1	# the space's marker alone: no entry outlived its container
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

@test "a lease that runs out while a staged commit is applied: its keys are deleted, not left behind" {
	unmount_store
	kvfs put "$STORE" /keep k
	# each request of the staged commit waits 1.5 s: the 1 s lease ends before
	# the apply (a pause before each of 3 chunks, the commit point and the
	# first apply: 7.5 s)
	KVFS_ETCD_TEST_STEP_MS=1500 run -0 kvfs import --ttl 1 "$STORE" /big "$BATS_FILE_TMPDIR/big.json"
	# applied to the end: no commit record, staging or marker is left standing
	[ "$(ekeys | grep -c '^[bcq] ')" -eq 0 ]
	eventually 10 none_left '/big(/| )'
	ekeys | grep -q '^d /keep 0$'
	kvfs put "$STORE" /after a
	run -0 kvfs ls "$STORE" /
	assert_output $'after\nkeep'
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}
