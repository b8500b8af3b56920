#!/usr/bin/env bats
# tests/51-trust-checksum.bats - format 2: every data record carries a
# CRC-32C of its key and bytes (docs/FORMAT.md, "data: leaf records").
# A bit flipped in data.mdb gives EIO through the mount, a failing get,
# export and dump naming the path, and a report from check; a version-1
# store (tests/fixtures/v1-store.*, made by scripts/make-v1-fixture.sh
# with a kvfs of format 1) reads as it is and is upgraded when opened
# writable.

# bats file_tags=trust,lmdb

load 'test_helper/common'

FIXTURES=$BATS_TEST_DIRNAME/fixtures

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	T=$BATS_TEST_TMPDIR
}

teardown() {
	mount_teardown
}

# The meta format of store $1 as 8 hex digits (read with LMDB's own tool).
meta_format() {
	mdb_dump -s meta "$1" | awk '$1 == "666f726d6174" { getline; print $1 }'
}

# flip_bits FILE STRING DELTA BIT: flips bit BIT of the byte DELTA bytes
# after each place STRING occurs in FILE (stale copies in free pages too, so
# the live record is surely hit). Prints how many places it changed.
flip_bits() {
	python3 - "$@" <<'EOF'
import sys
path, needle, delta, bit = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4])
data = bytearray(open(path, 'rb').read())
n, at = 0, data.find(needle)
while at >= 0:
    if 0 <= at + delta < len(data):
        data[at + delta] ^= 1 << bit
        n += 1
    at = data.find(needle, at + 1)
open(path, 'r+b').write(data)
print(n)
EOF
}

# A store with a known value among others.
make_store() {
	kvfs put --create "$STORE" /before 'first value'
	kvfs put "$STORE" /victim 'VICTIM-VALUE-0123456789'
	kvfs mkdir "$STORE" /dir
	kvfs put "$STORE" /dir/victimkey 42
	kvfs put "$STORE" /dir/other 'other value'
	kvfs put "$STORE" /after 'last value'
}

# ---- a flipped value bit ----

@test "a flipped bit in a value: cat through the mount gives EIO and the daemon logs the path" {
	make_store
	# "0123" -> "0133" inside the live record (and any stale copy)
	run -0 flip_bits "$STORE/data.mdb" 'VICTIM-VALUE-0123' 15 4
	[ "$output" -ge 1 ]
	mount_store
	run -1 cat "$MNT/victim"
	assert_output --partial 'Input/output error'
	refute_output --partial 'VICTIM'
	grep -q '/victim: corrupt record in the store' "$MOUNT_LOG"
	# the rest of the store still reads
	run -0 cat "$MNT/before"
	assert_output 'first value'
	run -0 cat "$MNT/dir/other"
	assert_output 'other value'
	# a view of the root would render it: refused too
	run -1 cat "$MNT/.json"
	assert_output --partial 'Input/output error'
	# a listing stats every child: the directory holding it fails, others list
	run ! ls "$MNT"
	assert_output --partial 'Input/output error'
	run -0 ls "$MNT/dir"
	assert_output $'other\nvictimkey'
}

@test "a flipped bit in a value: get, export and dump fail naming the path, check reports it" {
	make_store
	run -0 flip_bits "$STORE/data.mdb" 'VICTIM-VALUE-0123' 15 4
	[ "$output" -ge 1 ]
	run -1 kvfs get "$STORE" /victim
	assert_output --regexp '^kvfs: /victim: corrupt record in the store'
	refute_output --partial 'VICTIM'
	run -0 kvfs get "$STORE" /after
	assert_output 'last value'
	run ! kvfs export "$STORE"
	refute_output --partial 'VICTIM-VALUE'
	assert_output --partial 'kvfs: /: corrupt record in the store at /victim'
	run -0 kvfs export "$STORE" /dir	# the rest still exports
	assert_output --partial '"victimkey": "42"'
	run -1 kvfs get "$STORE" /.json
	assert_output --partial 'corrupt record in the store at /victim'
	run ! kvfs dump "$STORE"
	assert_output --partial 'dump: /victim: corrupt record'
	run -1 kvfs check "$STORE"
	assert_line 'check: 0276696374696d00: checksum mismatch (/victim)'
	assert_line --regexp '^check: 5 keys, 1 problems$'
	# the repair: rm -r removes the record that does not verify, and only it
	run -1 kvfs rm "$STORE" /victim
	run -0 kvfs rm -r "$STORE" /victim
	run -0 kvfs check "$STORE"
	assert_output 'check: 4 keys, 0 problems'
	run -0 kvfs dump "$STORE"
}

@test "a flipped bit in a value: mv of its directory fails and changes nothing" {
	make_store
	run -0 flip_bits "$STORE/data.mdb" 'other value' 2 0
	[ "$output" -ge 1 ]
	mount_store
	run ! mv "$MNT/dir" "$MNT/moved"
	assert_output --partial 'Input/output error'
	unmount_store
	run -0 kvfs get "$STORE" /dir/victimkey
	assert_output '42'
	run -1 kvfs get "$STORE" /moved/victimkey
}

@test "a flipped bit in a key is caught by check" {
	make_store
	# "victimkey" -> "victimkex": the record now sits under another path
	run -0 flip_bits "$STORE/data.mdb" 'victimkey' 8 0
	[ "$output" -ge 1 ]
	run -1 kvfs check "$STORE"
	assert_output --partial 'checksum mismatch (/dir/victimkex)'
	run -1 kvfs get "$STORE" /dir/victimkex
	assert_output --partial 'corrupt record'
}

# value_flips all|kinds: one bit flipped per place of a value's record (the
# 10 header bytes before the text, the text, the 4 checksum bytes after it;
# bit (delta + 16) % 8), each in a copy of the store of its own, and check
# must never stay clean. "all": every byte of each of the three values'
# records (86 flips); "kinds": every header and checksum byte of one value,
# and the first, a middle and the last byte of each value's text (23 flips:
# each byte of the record's frame, the text of each value). One python3
# makes the copies (one a flip, and a check each under ASan, took 48 s for
# all 86; the optimized build runs them).
value_flips() {
	local mode=$1 i value delta bit n tried=0 want=0
	make_store
	run -0 kvfs check "$STORE"
	mkdir "$T/flips"
	python3 - "$STORE/data.mdb" "$T/flips" "$mode" 'first value' 'VICTIM-VALUE-0123456789' 'last value' \
		>"$T/flips/list" <<'EOF'
import os, sys
path, out, mode, values = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pristine = open(path, 'rb').read()
i = 0
for value in values:
    needle = value.encode()
    text = [0, len(needle) // 2, len(needle) - 1]
    if mode == 'all':
        deltas = range(-10, len(needle) + 4)
    elif value == 'VICTIM-VALUE-0123456789':
        deltas = list(range(-10, 0)) + text + list(range(len(needle), len(needle) + 4))
    else:
        deltas = text
    for delta in deltas:
        bit = (delta + 16) % 8
        # the byte delta after each place the value occurs (stale copies in
        # free pages too, so the live record is surely hit), as flip_bits
        data = bytearray(pristine)
        n, at = 0, data.find(needle)
        while at >= 0:
            if 0 <= at + delta < len(data):
                data[at + delta] ^= 1 << bit
                n += 1
            at = data.find(needle, at + 1)
        os.mkdir('%s/%d' % (out, i))
        open('%s/%d/data.mdb' % (out, i), 'wb').write(data)
        print(i, delta, bit, n, value)
        i += 1
EOF
	while read -r i delta bit n value; do
		want=$((want + 1))
		[ "$n" -ge 1 ]
		run kvfs check "$T/flips/$i"
		if [ "$status" -eq 0 ]; then
			echo "check stayed clean after flipping bit $bit at $delta of '$value'" >&2
			return 1
		fi
		tried=$((tried + 1))
	done <"$T/flips/list"
	[ "$tried" -eq "$want" ]
	if [ "$mode" = all ]; then
		[ "$tried" -eq 86 ]
	else
		[ "$tried" -eq 23 ]
	fi
}

@test "bit flips anywhere in the values: check never stays clean" {
	value_flips kinds
}

# bats test_tags=plain
@test "bit flips in every byte of three values' records: check never stays clean" {
	value_flips all
}

# ---- the version-1 store ----

load_v1() {
	mkdir -p "$STORE"
	mdb_load -f "$FIXTURES/v1-store.mdbdump" "$STORE" 2>/dev/null
	[ "$(meta_format "$STORE")" = 00000001 ]
}

@test "a version-1 store reads as it is when opened read-only, and is not changed" {
	load_v1
	cp "$STORE/data.mdb" "$T/before.mdb"
	kvfs export "$STORE" >"$T/export.json"
	cmp "$FIXTURES/v1-store.json" "$T/export.json"
	run -0 kvfs check "$STORE"
	assert_output --regexp '^check: 25 keys, 0 problems$'
	run -0 kvfs get "$STORE" /raw
	assert_output 'abc'
	run -0 kvfs ls "$STORE" /esc
	run -0 kvfs dump "$STORE"
	assert_line 'meta 666f726d6174 00000001'
	assert_line 'data 027400 050116690b4d177c8315'	# /t = true, a bare body
	[ "$(meta_format "$STORE")" = 00000001 ]
	cmp "$T/before.mdb" "$STORE/data.mdb"
}

@test "a version-1 store mounted: same leaves, sizes and mtimes; upgraded to 3 once" {
	load_v1
	mount_store
	(cd "$MNT" && find . -type f -printf '%P %s %T@\n' | LC_ALL=C sort) >"$T/leaves"
	diff "$FIXTURES/v1-store.leaves" "$T/leaves"
	run -0 cat "$MNT/raw"
	assert_output 'abc'
	cmp "$FIXTURES/v1-store.json" "$MNT/.json"
	unmount_store
	[ "$(meta_format "$STORE")" = 00000004 ]
	run -0 kvfs check "$STORE"
	assert_output --regexp '^check: 25 keys, 0 problems$'
	kvfs export "$STORE" >"$T/export.json"
	cmp "$FIXTURES/v1-store.json" "$T/export.json"
	run -0 kvfs dump "$STORE"
	assert_line 'meta 666f726d6174 00000004'
	# /t's body, now followed by its checksum
	assert_line --regexp '^data 027400 050116690b4d177c8315[0-9a-f]{8}$'
	# a second writable open finds format 4 and commits nothing
	gen=$(kvfs info "$STORE" | sed -n 's/^generation: *//p')
	cp "$STORE/data.mdb" "$T/after-upgrade.mdb"
	mount_store
	unmount_store
	run -1 kvfs rm "$STORE" /no-such-leaf
	[ "$(kvfs info "$STORE" | sed -n 's/^generation: *//p')" = "$gen" ]
	cmp "$T/after-upgrade.mdb" "$STORE/data.mdb"
}

@test "a version-1 store is upgraded by the first verb that writes" {
	load_v1
	run -0 kvfs put "$STORE" /new 'v'
	[ "$(meta_format "$STORE")" = 00000004 ]
	run -0 kvfs check "$STORE"
	assert_output --regexp '^check: 26 keys, 0 problems$'
	run -0 kvfs get "$STORE" /nested/0/1/1
	assert_output 'x'
	run -0 kvfs rm "$STORE" /new
	kvfs export "$STORE" >"$T/export.json"
	cmp "$FIXTURES/v1-store.json" "$T/export.json"
}

# ---- dumps of both versions ----

@test "a version-1 dump loads upgraded; a current (version-4) dump loads byte for byte" {
	load_v1
	kvfs dump "$STORE" >"$T/v1.dump"		# read-only: a version-1 dump
	grep -qx 'meta 666f726d6174 00000001' "$T/v1.dump"
	run -0 kvfs load "$T/s2" <"$T/v1.dump"
	[ "$(meta_format "$T/s2")" = 00000004 ]
	run -0 kvfs check "$T/s2"
	kvfs export "$T/s2" >"$T/export.json"
	cmp "$FIXTURES/v1-store.json" "$T/export.json"
	kvfs dump "$T/s2" >"$T/v2.dump"
	grep -qx 'meta 666f726d6174 00000004' "$T/v2.dump"
	run -0 kvfs load "$T/s3" <"$T/v2.dump"
	kvfs dump "$T/s3" >"$T/v2-again.dump"
	cmp "$T/v2.dump" "$T/v2-again.dump"
}

@test "a version-2 dump with a changed record is refused and loads nothing" {
	kvfs put --create "$STORE" /a 'hello'
	kvfs dump "$STORE" >"$T/d"
	# "hello" is 68656c6c6f in the record: make it "hellp"
	sed -i 's/68656c6c6f/68656c6c70/' "$T/d"
	run -1 kvfs load "$T/s2" <"$T/d"
	assert_output --regexp 'load: line [0-9]+: checksum mismatch'
	# the store the failed load created is removed again: nothing is left
	[ ! -e "$T/s2/data.mdb" ]
	[ ! -e "$T/s2/lock.mdb" ]
	run -1 kvfs export "$T/s2"
}
