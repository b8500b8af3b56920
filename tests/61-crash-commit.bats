#!/usr/bin/env bats
# tests/61-crash-commit.bats - the daemon killed with SIGKILL, with and
# without -o commit=MS: what was fsynced is there, and every document closed
# before the kill is whole or absent, never part of one.

# bats file_tags=crash,lmdb

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	crash_teardown
}

# write_docs N: N documents of 20 fields each, all fields of one document
# holding its number, written with cp (no fsync). One python3 makes them
# all (one a document cost 150 starts, seconds on a loaded machine, in the
# third test before its cp even began).
write_docs() {
	local docs=$BATS_TEST_TMPDIR/docs
	mkdir -p "$docs"
	python3 -c 'import json, sys
for n in range(int(sys.argv[2])):
    with open("%s/doc%d.json" % (sys.argv[1], n), "w") as f:
        print(json.dumps({"f%02d" % j: n for j in range(20)}), file=f)' "$docs" "$1"
	cp "$docs"/*.json "$MNT/"
}

# Every document in the store has all 20 fields with its own number, or is absent.
assert_docs_whole() {
	kvfs export --compact "$STORE" / >"$BATS_TEST_TMPDIR/after.json"
	run -0 python3 - "$BATS_TEST_TMPDIR/after.json" <<'PY'
import json, sys
tree = json.load(open(sys.argv[1]))
bad = []
for name, doc in tree.items():
    if not name.startswith("doc"):
        continue
    n = int(name[3:])
    if doc != {"f%02d" % j: n for j in range(20)}:
        bad.append(name)
print("torn:", bad) if bad else print("whole:", sum(1 for k in tree if k.startswith("doc")))
PY
	assert_output --partial 'whole:'
}

fsync_file() {
	python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, sys.argv[2].encode())
os.fsync(fd)
os.close(fd)
PY
}

@test "-o commit: SIGKILL after an fsync finds the fsynced data; unsynced documents are whole or absent" {
	unmount_store
	mount_store -o commit=600000
	write_docs 30
	fsync_file "$MNT/synced" $'kept\n'
	write_docs 30
	kill_daemon
	run -0 kvfs check "$STORE"
	run -0 kvfs get "$STORE" /synced
	assert_output kept
	assert_docs_whole
}

@test "-o commit: SIGKILL right after unsynced closes: each document whole or absent" {
	unmount_store
	mount_store -o commit=600000
	write_docs 40
	kill_daemon
	run -0 kvfs check "$STORE"
	assert_docs_whole
}

@test "-o commit: SIGKILL while queued batches are being committed: the store checks, documents whole or absent" {
	unmount_store
	mount_store -o commit=20
	write_docs 30
	sync "$MNT/doc0.json"
	# more documents, rewritten while the committer commits every 20 ms
	(write_docs 60; write_docs 60) &
	writer=$!
	# the kill lands while they are being written: once the first new one is in
	eventually 30 test -e "$MNT/doc30"
	kill_daemon
	wait "$writer" || true
	run -0 kvfs check "$STORE"
	assert_docs_whole
	# the fsynced ones are all there
	run -0 kvfs get "$STORE" /doc29/f19
	assert_output 29
}

@test "-o commit: SIGKILL after unsynced closes loses the queued batch only, never what an fsync covered" {
	unmount_store
	mount_store -o commit=600000
	fsync_file "$MNT/synced" $'kept\n'
	write_docs 20
	run -0 cat "$MNT/doc19/f00"
	assert_output 19
	kill_daemon
	run -0 kvfs check "$STORE"
	run -0 kvfs get "$STORE" /synced
	assert_output kept
	# acknowledged closes that were queued and never committed: all absent
	assert_docs_whole
	assert_output 'whole: 0'
}

@test "default mode: SIGKILL after closes and an fsync: everything closed is there, whole" {
	write_docs 30
	fsync_file "$MNT/synced" $'kept\n'
	kill_daemon
	run -0 kvfs check "$STORE"
	run -0 kvfs get "$STORE" /synced
	assert_output kept
	assert_docs_whole
	assert_output 'whole: 30'
}
