#!/usr/bin/env bats
# tests/87-etcd-values.bats - single values larger than one etcd request
# (docs/ETCD.md section 3: chunks in the space 'v' beside a stub) and
# transactions that read more keys than one Txn can guard one by one
# (section 4: coalesced guards). A cluster of its own, or the one make
# test-etcd runs (KVFS_ETCD_URL).

# bats file_tags=etcd

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	etcd_start
	# doc.json: a 10.5 MiB string leaf s (over the cluster's 10 MiB request
	# limit; 12 MiB before, 20 MiB before that) and a 1.5 MiB bytes leaf b
	# ({"$base64": ...}; 3 MiB before: over one chunk of 1 MiB is what makes
	# it chunked), 12 MiB of document, over the 6 MiB one Txn is budgeted: a
	# staged commit; s.txt, b.bin: what cat of those leaves prints; new.json:
	# another 10.5 MiB;
	# wide.json, wide2.json: 8,400 leaves each (2,100 rows of 4), more than
	# the cluster's 8,192 operations of one Txn: each write of them through
	# the mount is a staged commit (3 chunks, measured), as with 12,000
	# before. Random bytes mapped onto the
	# alphabet (a python call per character took 20 s on a busy machine).
	python3 - "$BATS_FILE_TMPDIR" <<'EOF'
import base64, json, random, sys
d = sys.argv[1]
rnd = random.Random(87)
abc = b"abcdefghij klmnopqrstuvwxyz"
s = rnd.randbytes(21 << 19).translate(bytes(abc[i % len(abc)] for i in range(256))).decode()
b = rnd.randbytes(3 << 19)
json.dump({"s": s, "b": {"$base64": base64.b64encode(b).decode()}, "n": 1}, open(d + "/doc.json", "w"))
open(d + "/s.txt", "w").write(s + "\n")
open(d + "/b.bin", "wb").write(b)
t = s[::-1]
json.dump({"s": t, "n": 2}, open(d + "/new.json", "w"))
open(d + "/t.txt", "w").write(t + "\n")
for name, tag in (("wide", "a"), ("wide2", "b")):
    json.dump({"rows": [{"k%d" % j: "%s%d-%d" % (tag, i, j) for j in range(4)} for i in range(2100)]},
              open("%s/%s.json" % (d, name), "w"))
EOF
}

teardown_file() {
	etcd_stop
}

setup() {
	etcd_test_store 87
	D=$BATS_FILE_TMPDIR
}

teardown() {
	mount_teardown
}

# wait_cmp FILE WANT: polls (bounded: 60 s) until FILE reads back as WANT.
wait_cmp() {
	local i
	for ((i = 0; i < 600; i++)); do
		cmp -s "$1" "$2" && return 0
		sleep 0.1
	done
	cmp "$1" "$2"
}

@test "a string leaf over one request and a bytes leaf go in through cp and read back byte for byte, on a second mount too" {
	mount_store
	mount_extra "$BATS_TEST_TMPDIR/mnt2" "$STORE"
	local mnt2=$BATS_TEST_TMPDIR/mnt2
	run -0 cp "$D/doc.json" "$MNT/doc.json"
	cmp "$MNT/doc/s" "$D/s.txt"
	cmp "$MNT/doc/b" "$D/b.bin"
	run -0 wait_cmp "$mnt2/doc/s" "$D/s.txt"
	cmp "$mnt2/doc/b" "$D/b.bin"
	# records of 10.5 MiB + 14 and 1.5 MiB + 14 bytes: 11 chunks of 1 MiB and 2; no staging left
	[ "$(etcd_count v)" -eq 13 ]
	[ "$(etcd_count b c q)" -eq 0 ]
	# offline: export renders it whole, check and dump see no chunk keys as data
	"$KVFS_BIN" export "$STORE" doc >"$BATS_TEST_TMPDIR/out.json"
	python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); sys.exit(a != b)' \
		"$BATS_TEST_TMPDIR/out.json" "$D/doc.json"
	run -0 "$KVFS_BIN" check "$STORE"
	"$KVFS_BIN" dump "$STORE" >"$BATS_TEST_TMPDIR/dump"
	run -0 "$KVFS_BIN" load "$BATS_TEST_TMPDIR/lmdb" <"$BATS_TEST_TMPDIR/dump"
	"$KVFS_BIN" export "$BATS_TEST_TMPDIR/lmdb" doc >"$BATS_TEST_TMPDIR/out2.json"
	cmp "$BATS_TEST_TMPDIR/out.json" "$BATS_TEST_TMPDIR/out2.json"
}

# Each way a big leaf's chunks go, with one staged write of the document
# and one of a leaf (two more, a document rewritten small and the big one
# again, took a third of the test): the big leaf s rewritten big by a
# document without the big leaf b, then s written small and big again as a
# file, then the document removed.
@test "overwriting and removing a big leaf leave no chunk behind" {
	mount_store
	run -0 cp "$D/doc.json" "$MNT/doc.json"
	run -0 cp "$D/new.json" "$MNT/doc.json"
	cmp "$MNT/doc/s" "$D/t.txt"
	[ "$(etcd_count v)" -eq 11 ]
	echo tiny >"$MNT/doc/s"
	[ "$(cat "$MNT/doc/s")" = tiny ]
	[ "$(etcd_count v)" -eq 0 ]
	run -0 cp "$D/t.txt" "$MNT/doc/s"
	cmp "$MNT/doc/s" "$D/t.txt"
	[ "$(etcd_count v)" -eq 11 ]
	rm -r "$MNT/doc"
	[ "$(etcd_count v)" -eq 0 ]
	run -0 "$KVFS_BIN" check "$STORE"
}

@test "a writer killed while writing a big leaf leaves the old value whole" {
	# the old value by the CLI, not through the mount whose requests pause
	# (a staged commit of 12 MiB at 400 ms a request)
	run -0 "$KVFS_BIN" import --create "$STORE" doc "$D/doc.json"
	KVFS_ETCD_TEST_LEASE_S=4 KVFS_ETCD_TEST_STEP_MS=400 mount_store
	cp "$D/new.json" "$MNT/doc.json" 2>/dev/null &
	local cp_pid=$! i
	for ((i = 0; i < 600; i++)); do
		[ "$(etcd_count b)" -gt 0 ] && break
		sleep 0.05
	done
	[ "$(etcd_count b)" -gt 0 ]
	kill -9 "$MOUNT_PID"
	wait "$cp_pid" || true
	fusermount3 -uz "$MNT" 2>/dev/null || true
	MOUNT_PID=
	mount_store
	cmp "$MNT/doc/s" "$D/s.txt"
	cmp "$MNT/doc/b" "$D/b.bin"
	# once the dead writer's lease ran out (its marker goes), the next big
	# write sweeps its staging and goes on
	for ((i = 0; i < 300; i++)); do
		[ "$(etcd_count q)" -eq 0 ] && break
		sleep 0.1
	done
	[ "$(etcd_count q)" -eq 0 ]
	run -0 cp "$D/new.json" "$MNT/doc.json"
	cmp "$MNT/doc/s" "$D/t.txt"
	[ "$(etcd_count b c q)" -eq 0 ]
	[ "$(etcd_count v)" -eq 11 ]
}

@test "transactions over 8,400 leaves: rewrite, move and remove (kvfs rm -r) a document in one commit each" {
	mount_store
	run -0 cp "$D/wide.json" "$MNT/w.json"
	run -0 cp "$D/wide2.json" "$MNT/w.json"
	[ "$(cat "$MNT/w/rows/2099/k3")" = b2099-3 ]
	run -0 mv "$MNT/w" "$MNT/w2"
	[ "$(cat "$MNT/w2/rows/0/k0")" = b0-0 ]
	[ ! -e "$MNT/w" ]
	# rm -r through a mount is a commit per file: the CLI removes the subtree in one
	run -0 "$KVFS_BIN" rm -r "$STORE" w2
	run -0 "$KVFS_BIN" export "$STORE" /
	refute_output --partial '"w2"'
	run -0 "$KVFS_BIN" check "$STORE"
	[ "$(etcd_count b c q)" -eq 0 ]
}
