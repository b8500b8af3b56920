#!/usr/bin/env bats
# bats file_tags=cli,trust,lmdb
# tests/55-trust-storedir.bats - the store directory is not a weapon, and a
# damaged store is reported usefully (issue 31, section 2 and the second
# point of section 6): a data.mdb or lock.mdb with a second hard link is
# refused by every verb and the file it is linked to keeps its bytes; a
# directory that other users may write to is refused unless
# KVFS_SAFE_DIRECTORY trusts it; check says what is damaged and what to do.

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
