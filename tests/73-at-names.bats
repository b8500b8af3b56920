#!/usr/bin/env bats
# Names beginning with '@' are special only directly inside a declared
# table (its views); anywhere else they are ordinary keys, shown verbatim
# and writable (node_modules/@types, a JSON-LD "@context", "@timestamp").

# bats file_tags=tables,mount,backends,covered

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

@test "outside tables, @ directories and files are made, listed and exported verbatim" {
	mkdir -p "$MNT/node_modules/@types/node"
	mkdir "$MNT/doc"
	echo v >"$MNT/doc/@timestamp"
	run -0 ls "$MNT/node_modules"
	assert_output '@types'
	run -0 ls "$MNT/doc"
	assert_output '@timestamp'
	run -0 cat "$MNT/doc/@timestamp"
	assert_output 'v'
	[ -d "$MNT/node_modules/@types/node" ]
	run -0 kvfs export "$STORE" /
	assert_output --partial '"@types": {'
	assert_output --partial '"@timestamp": "v"'
	refute_output --partial '%@'
	# a document with @ keys, through its .json view
	printf '%s' '{"@context":"https://schema.org","@id":7}' >"$MNT/ld.json"
	run -0 ls "$MNT/ld"
	assert_line '@context'
	assert_line '@id'
	run -0 cat "$MNT/ld/@id"
	assert_output '7'
	rm "$MNT/doc/@timestamp"
	[ ! -e "$MNT/doc/@timestamp" ]
}

@test "rsync -a of a plain tree holding @scope directories into a mount succeeds and diff -r is clean" {
	src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src/@scope/pkg" "$src/@other"
	echo 'module.exports = 1' >"$src/@scope/pkg/file"
	echo '{"name":"x"}' >"$src/@scope/pkg/package"
	echo hi >"$src/@other/@readme"
	run -0 rsync -a "$src/" "$MNT/tree/"
	run -0 diff -r "$src" "$MNT/tree"
	run -0 kvfs export "$STORE" /tree
	assert_output --partial '"@scope": {'
}

@test "inside a table, @ names stay its own: writes are EROFS and an @ row is refused, nothing changed" {
	mkdir "$MNT/t"
	kvfs table create "$STORE" /t --key-depth 1
	printf '%s' '{"n":1}' >"$MNT/t/r1.json"
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/before"
	run -1 bash -c "echo >'$MNT/t/@x'"
	assert_output --partial 'Read-only file system'
	run -1 mkdir "$MNT/t/@x"
	assert_output --partial 'Read-only file system'
	printf '%s' '{"r1":{"n":1},"@bad":{"n":2}}' >"$BATS_TEST_TMPDIR/t.json"
	run -1 cp "$BATS_TEST_TMPDIR/t.json" "$MNT/t.json"
	run -1 kvfs import "$STORE" /t "$BATS_TEST_TMPDIR/t.json"
	assert_output --partial '/t/@bad: a row key cannot begin with @ inside a table'
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/after"
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	# a row's own fields may begin with @: only the table's directory is reserved
	printf '%s' '{"n":3,"@meta":"m"}' >"$MNT/t/r3.json"
	run -0 cat "$MNT/t/r3/@meta"
	assert_output 'm'
}

@test "kvfs table create over data holding a row beginning with @ is refused, nothing changed" {
	printf '%s' '{"ok":{"n":1},"@bad":{"n":2}}' >"$BATS_TEST_TMPDIR/d.json"
	kvfs import "$STORE" /d "$BATS_TEST_TMPDIR/d.json"
	run -1 kvfs table create "$STORE" /d --key-depth 1
	assert_output --partial '/d/@bad: a row key cannot begin with @ inside a table'
	run -1 kvfs table show "$STORE" /d
	run -0 kvfs export "$STORE" /d
	assert_output --partial '"@bad"'
}
