#!/usr/bin/env bats
# tests/55-trust-storedir.bats - the store directory is not a weapon, and a
# damaged store is reported usefully (issue 31, section 2 and the second
# point of section 6): a data.mdb or lock.mdb with a second hard link is
# refused by every verb and the file it is linked to keeps its bytes; a
# directory that other users may write to is refused unless
# KVFS_SAFE_DIRECTORY trusts it; check says what is damaged and what to do.

# bats file_tags=cli,trust,lmdb

load 'test_helper/common'

setup() {
	common_setup
	skip_on_etcd "the LMDB store's directory and files"
	T=$BATS_TEST_TMPDIR
	MOUNT_PID=
}

teardown() {
	mount_teardown
}

# refused_by_every_verb WHAT: every verb that opens $STORE fails, saying
# WHAT, and a mount of it does not appear.
refused_by_every_verb() {
	local what=$1 verb
	echo '{"x":1}' >"$T/doc.json"
	for verb in check export dump info ls; do
		run -1 kvfs "$verb" "$STORE"
		assert_output --partial "$what"
	done
	run -1 kvfs get "$STORE" /a
	assert_output --partial "$what"
	run -1 kvfs put "$STORE" /a 2
	assert_output --partial "$what"
	run -1 kvfs import "$STORE" /d "$T/doc.json"
	assert_output --partial "$what"
	run -1 kvfs rm "$STORE" /a
	assert_output --partial "$what"
	run -1 kvfs check --repair "$STORE"
	assert_output --partial "$what"
	mkdir -p "$T/m"
	run -1 timeout 10 "$KVFS_BIN" mount -f "$STORE" "$T/m"
	assert_output --partial "$what"
	run ! mountpoint -q "$T/m"
}

# ---- hard links ----

@test "a lock.mdb hard-linked to another file is refused by every verb; that file keeps its bytes" {
	kvfs put --create "$STORE" /a 1
	printf 'precious\n' >"$T/victim"
	head -c 20000 /dev/urandom >>"$T/victim"
	cp "$T/victim" "$T/victim.orig"
	rm "$STORE/lock.mdb"
	ln "$T/victim" "$STORE/lock.mdb"
	refused_by_every_verb 'lock.mdb: has more than one hard link; refusing'
	cmp "$T/victim.orig" "$T/victim"
	[ "$(stat -c %h "$T/victim")" = 2 ]
	# an existing lock.mdb that someone links elsewhere is refused the same way
	rm "$STORE/lock.mdb"
	run -0 kvfs get "$STORE" /a
	ln "$STORE/lock.mdb" "$T/elsewhere"
	run -1 kvfs check "$STORE"
	assert_output --partial "$STORE/lock.mdb: has more than one hard link"
	# unlinked again, the store opens as before
	rm "$T/elsewhere"
	run -0 kvfs check "$STORE"
	run -0 kvfs get "$STORE" /a
	assert_output 1
}

@test "a data.mdb hard-linked to another file is refused by every verb, also when creating a store" {
	kvfs put --create "$STORE" /a 1
	ln "$STORE/data.mdb" "$T/other.mdb"
	cp "$STORE/data.mdb" "$T/data.orig"
	refused_by_every_verb 'data.mdb: has more than one hard link; refusing'
	cmp "$T/data.orig" "$T/other.mdb"
	rm "$T/other.mdb"
	run -0 kvfs get "$STORE" /a
	assert_output 1
	# --create on a directory whose (empty) data.mdb is a link to an empty
	# file: LMDB would write its first pages into that file
	mkdir "$T/new"
	: >"$T/empty"
	ln "$T/empty" "$T/new/data.mdb"
	run -1 kvfs put --create "$T/new" /a 1
	assert_output --partial "$T/new/data.mdb: has more than one hard link"
	run -1 kvfs import "$T/new" / "$T/doc.json"
	[ ! -s "$T/empty" ]
	[ ! -e "$T/new/lock.mdb" ]
}

# ---- a directory others may write to ----

@test "a store directory writable by other users is refused by every verb unless KVFS_SAFE_DIRECTORY trusts it" {
	kvfs put --create "$STORE" /a 1
	sha256sum "$STORE/data.mdb" >"$T/sum"
	chmod 0777 "$STORE"
	refused_by_every_verb "$STORE: writable by other users (mode 0777), who could put"
	run -1 kvfs get "$STORE" /a
	assert_output --partial "refusing to open it (chmod o-w it, or set KVFS_SAFE_DIRECTORY=$STORE if you trust them)"
	sha256sum -c "$T/sum"
	# the sticky bit does not make it safe: others still create missing files
	chmod 1777 "$STORE"
	run -1 kvfs get "$STORE" /a
	assert_output --partial 'writable by other users (mode 1777)'
	chmod 0703 "$STORE"
	run -1 kvfs ls "$STORE"
	assert_output --partial 'writable by other users (mode 0703)'
	# trusted by name, by a list, or all
	chmod 0777 "$STORE"
	KVFS_SAFE_DIRECTORY=$STORE run -0 kvfs put "$STORE" /b 2
	KVFS_SAFE_DIRECTORY="/elsewhere:$STORE" run -0 kvfs get "$STORE" /b
	assert_output 2
	KVFS_SAFE_DIRECTORY='*' run -0 kvfs check "$STORE"
	KVFS_SAFE_DIRECTORY=/elsewhere run -1 kvfs get "$STORE" /b
	# group write is left alone, and so is o-w again
	chmod 0770 "$STORE"
	run -0 kvfs get "$STORE" /b
	chmod 0755 "$STORE"
	run -0 kvfs check "$STORE"
}

@test "--create refuses an empty directory writable by others and leaves it empty; a new one under it is made 0700" {
	mkdir -m 0777 "$T/pub"
	chmod 0777 "$T/pub"
	run -1 kvfs put --create "$T/pub" /a 1
	assert_output --partial 'writable by other users (mode 0777)'
	mkdir -p "$T/m"
	run -1 timeout 10 "$KVFS_BIN" mount -f --create "$T/pub" "$T/m"
	assert_output --partial 'writable by other users'
	run -0 ls -A "$T/pub"
	assert_output ''
	run -0 kvfs put --create "$T/pub/s" /a 1
	[ "$(stat -c %a "$T/pub/s")" = 700 ]
	run -0 kvfs get "$T/pub/s" /a
	assert_output 1
}

@test "a trusted directory writable by others still refuses a hard-linked lock.mdb" {
	kvfs put --create "$STORE" /a 1
	chmod 0777 "$STORE"
	printf 'precious\n' >"$T/victim"
	rm "$STORE/lock.mdb"
	ln "$T/victim" "$STORE/lock.mdb"
	KVFS_SAFE_DIRECTORY=$STORE run -1 kvfs check "$STORE"
	assert_output --partial 'lock.mdb: has more than one hard link'
	assert_file_bytes "$T/victim" 'precious\n'
}

# ---- check on a damaged store ----

# A store of 300 leaves under /d, over several LMDB leaf pages.
make_store_of_300() {
	python3 -c 'import json; print(json.dumps({"d": {"k%04d" % i: "v" * 40 for i in range(300)}}))' \
		>"$T/300.json"
	kvfs import --create "$STORE" / "$T/300.json"
}

# lmdb_poke KEY WHAT: damages data.mdb at the leaf node whose key is KEY (a
# printf format): WHAT is "size" (its value claims 2 GB), "offset" (the
# page's pointer to it points far past the page, past the end of the file)
# or "rename" (the last byte of every such key changes: a named database
# loses its name). Page layout: LMDB 0.9's page and node headers.
lmdb_poke() {
	printf "$1" >"$T/poke.key"
	python3 - "$STORE/data.mdb" "$T/poke.key" "$2" <<'PY'
import struct, sys
path, target, what = sys.argv[1], open(sys.argv[2], 'rb').read(), sys.argv[3]
data = bytearray(open(path, 'rb').read())
PAGE, P_LEAF, found = 4096, 0x02, 0
for base in range(2 * PAGE, len(data), PAGE):
    flags, lower = struct.unpack_from('<HH', data, base + 10)
    if not flags & P_LEAF:
        continue
    for i in range((lower - 16) // 2):
        ptr = base + 16 + 2 * i
        node = base + struct.unpack_from('<H', data, ptr)[0]
        ksize = struct.unpack_from('<H', data, node + 6)[0]
        if bytes(data[node + 8:node + 8 + ksize]) != target:
            continue
        found += 1
        if what == 'size':
            struct.pack_into('<H', data, node + 2, 0x7fff)
        elif what == 'offset':
            struct.pack_into('<H', data, ptr, 0xfff0)
        elif what == 'rename':
            data[node + 8 + ksize - 1] ^= 1
if not found:
    sys.exit('no leaf node with that key')
open(path, 'r+b').write(data)
PY
}

# check's report on a damaged store: what to do, and never "run kvfs check".
assert_check_advice() {
	assert_output --partial "kvfs: check: what to do: restore $STORE from a backup"
	assert_output --partial "kvfs dump $STORE > FILE"
	refute_output --partial 'run kvfs check'
	refute_output --partial 'check: Input/output error'
}

@test "check on a store whose walk stops at a record that does not read says where, and what to do" {
	make_store_of_300
	lmdb_poke '\002d\000\002k0150\000' size
	run -1 kvfs check "$STORE"
	assert_line 'kvfs: check: the store is damaged: the data space does not read past /d/k0149 (Input/output error); the rest was not checked'
	assert_check_advice
	# the advice holds: what comes before reads
	run -0 kvfs get "$STORE" /d/k0100
}

@test "check on a store that makes LMDB fault reports the damage and what to do" {
	make_store_of_300
	lmdb_poke '\002d\000\002k0150\000' offset
	run -1 kvfs check "$STORE"
	assert_line 'kvfs: check: the store is damaged: a page lies past the end of its file; the rest was not checked'
	assert_check_advice
	# the other verbs still send the user to check
	run -1 kvfs export "$STORE" /d
	assert_output --partial 'the store is damaged'
	assert_output --partial 'run kvfs check'
}

@test "a store whose data space lost its name is damaged: check says so, a write does not put an empty one in its place" {
	make_store_of_300
	lmdb_poke 'data' rename
	sha256sum "$STORE/data.mdb" >"$T/sum"
	run -1 kvfs check "$STORE"
	assert_output --partial "$STORE: store is damaged: its data space is missing"
	refute_output --partial 'no store at'
	assert_check_advice
	run -1 kvfs put "$STORE" /x 1
	assert_output --partial 'store is damaged: its data space is missing'
	run -1 kvfs ls "$STORE" /
	sha256sum -c "$T/sum"
}

@test "check on a truncated store says what to do" {
	make_store_of_300
	truncate -s $(($(stat -c %s "$STORE/data.mdb") / 2)) "$STORE/data.mdb"
	run -1 kvfs check "$STORE"
	assert_output --partial 'store is damaged: data.mdb is truncated'
	assert_check_advice
}

@test "a store on a read-only file system without lock.mdb still opens for reading" {
	kvfs put --create "$STORE" /a 1
	rm "$STORE/lock.mdb"
	mkdir "$T/ro"
	mount --bind "$STORE" "$T/ro"
	mount -o remount,ro,bind "$T/ro"
	run kvfs get "$T/ro" /a
	umount "$T/ro"
	[ "$status" -eq 0 ]
	[ "$output" = 1 ]
}
