#!/usr/bin/env bats
# Backups with file tools bring everything back (issue 32, section 6):
# a sparse array, and tables (schemas: columns, key fields, references,
# unique indexes, a default TTL) with their indexes and absolute
# deadlines, out of a mount and back into an empty one with cp -a,
# tar --xattrs and rsync -aX. 40-backup.bats has the documents.

# bats file_tags=mount,backends

load 'test_helper/common'
load 'test_helper/tables'

setup() {
	mount_setup
	T=$BATS_TEST_TMPDIR
}

teardown() {
	mount_teardown
}

# ---- a sparse array ----

# sparse: /a holds the indices 0 3 4 5 (rm a/1 a/2), beside an object.
sparse() {
	printf '{"a": [10, "x", 12, [1], {"k": 1}, 15], "o": {"0": 1, "2": 2}}' >"$T/in.json"
	cp "$T/in.json" "$MNT/.json"
	rm -r "$MNT/a/1" "$MNT/a/2"
	run -0 ls "$MNT/a"
	assert_output $'0\n3\n4\n5'
	kvfs export --compact "$STORE" >"$T/orig.export"
}

# assert_sparse_back DIR STORE: the same indices, kinds and export.
assert_sparse_back() {
	run -0 ls "$1/a"
	assert_output $'0\n3\n4\n5'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$1/a"
	assert_output array
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$1/o"
	assert_output object
	diff "$T/orig.export" <(kvfs export --compact "$2")
	run -0 kvfs check "$2"
	assert_output --partial ', 0 problems'
}

@test "a sparse array comes back a sparse array through cp -a (the kind set after the children)" {
	sparse
	cp -a "$MNT/." "$T/dir/"
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr cp -a "$T/dir/." "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_sparse_back "$T/r" "$T/r.store"
}

@test "a sparse array comes back a sparse array through tar --xattrs, with no warning" {
	sparse
	tar --xattrs -cf "$T/b.tar" -C "$MNT" .
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr tar --xattrs -xf "$T/b.tar" -C "$T/r"
	assert_equal "$stderr" ''
	assert_success
	assert_sparse_back "$T/r" "$T/r.store"
}

@test "a sparse array comes back a sparse array through rsync -aX (the kind set before the children)" {
	sparse
	rsync -aX "$MNT/" "$T/dir/"
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr rsync -aX "$T/dir/" "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_sparse_back "$T/r" "$T/r.store"
}

@test "setting the kind array on a directory of index names keeps their gaps; other names are refused" {
	mkdir "$MNT/d" "$MNT/e"
	echo a >"$MNT/d/0"
	echo b >"$MNT/d/7"
	setfattr -n user.kvfs.type -v array "$MNT/d"
	run -0 kvfs export --compact "$STORE" /d
	assert_output '["a","b"]'
	run -0 ls "$MNT/d"
	assert_output $'0\n7'
	echo c >"$MNT/e/0"
	echo d >"$MNT/e/07"
	run ! setfattr -n user.kvfs.type -v array "$MNT/e"
	assert_output --partial 'Invalid argument'
}

# ---- tables ----

# The tables of tables() are made once for the file, through a mount of
# its own, and kept as a dump with the state they show: three tests back
# them up, and the 13 kvfs starts that declare them and the 11 of state
# cost 0.3 s each under ASan, where each test's load is one.
setup_file() {
	T=$BATS_FILE_TMPDIR
	MNT=$T/m
	STORE=$T/tables.store
	! is_etcd || STORE=$KVFS_ETCD_URL/kvfs-bats/$$-file-$RANDOM$RANDOM
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	mount_extra "$MNT" "$STORE"
	tables_make
	unmount_extras
	kvfs dump "$STORE" >"$T/tables.dump"
}

# A mount setup_file left behind when it failed half-way.
teardown_file() {
	if mountpoint -q "$BATS_FILE_TMPDIR/m"; then
		fusermount3 -u "$BATS_FILE_TMPDIR/m" || fusermount3 -uz "$BATS_FILE_TMPDIR/m"
	fi
}

# tables: the tables of tables_make, loaded into $STORE (mounted, empty)
# by another process; $T/orig.state what they showed where they were made.
tables() {
	kvfs load "$STORE" "$BATS_FILE_TMPDIR/tables.dump"
	caught_up	# else tar may see the root change as it reads it
	cp "$BATS_FILE_TMPDIR/orig.state" "$T/orig.state"
}

# tables_make: /geo and /poi referencing each other (geo.capital -> poi,
# poi.geo -> geo), /poi with a required column of at most 64 characters,
# a unique index and a default TTL of a day (so its rows have deadlines;
# p2/poiName has one of its own, p3 none), /visit keyed by (poi, day)
# with key fields, /nums keyed by an integer column (its key index,
# rows in numeric order), and an array with a gap in a row.
tables_make() {
	mkdir "$MNT/geo" "$MNT/poi" "$MNT/visit" "$MNT/nums"
	kvfs table create "$STORE" /geo --key-depth 1
	kvfs table column "$STORE" /geo name string --required
	kvfs table create "$STORE" /poi --key-depth 1 --ttl 86400
	kvfs table column "$STORE" /poi poiName string --required --max-length 64
	kvfs table column "$STORE" /poi geo string --references /geo
	kvfs index create "$STORE" /poi by_name poiName --unique
	kvfs table column "$STORE" /geo capital string --references /poi
	kvfs table create "$STORE" /visit --key-depth 2 --key-fields poi,day
	kvfs table column "$STORE" /visit poi string --references /poi
	kvfs table column "$STORE" /visit n integer --required
	kvfs index create "$STORE" /visit by_n n
	kvfs table create "$STORE" /nums --key-depth 1 --key-fields id
	kvfs table column "$STORE" /nums id integer
	printf '{"v": 10}' >"$T/r.json"
	cp "$T/r.json" "$MNT/nums/10.json"
	printf '{"v": 9}' >"$T/r.json"
	cp "$T/r.json" "$MNT/nums/9.json"
	printf '{"name": "Paris"}' >"$T/r.json"
	cp "$T/r.json" "$MNT/geo/fr.json"
	printf '{"name": "Rome"}' >"$T/r.json"
	cp "$T/r.json" "$MNT/geo/it.json"
	printf '{"poiName": "Louvre", "geo": "fr", "tags": ["a", "b", "c"]}' >"$T/r.json"
	cp "$T/r.json" "$MNT/poi/p1.json"
	rm "$MNT/poi/p1/tags/1"
	printf '{"poiName": "Colosseum", "geo": "it"}' >"$T/r.json"
	cp "$T/r.json" "$MNT/poi/p2.json"
	printf '{"poiName": "Pantheon"}' >"$T/r.json"
	cp "$T/r.json" "$MNT/poi/p3.json"
	echo p1 >"$MNT/geo/fr/capital"
	mkdir "$MNT/visit/p1" "$MNT/visit/p2"
	printf '{"n": 3}' >"$T/r.json"
	cp "$T/r.json" "$MNT/visit/p1/20260101.json"
	printf '{"n": 5}' >"$T/r.json"
	cp "$T/r.json" "$MNT/visit/p2/20260102.json"
	setfattr -n user.kvfs.ttl -v 3600 "$MNT/poi/p2/poiName"
	setfattr -x user.kvfs.ttl "$MNT/poi/p3"
	state "$STORE" "$MNT" >"$T/orig.state"
	[ "$(grep -c expires "$T/orig.state")" -eq 3 ]
}

# state STORE DIR: what must come back: the schemas, find's answers, the
# absolute deadlines (not the time left), the export and check's verdict.
state() {
	local t
	for t in /geo /poi /visit /nums; do
		kvfs table show "$1" "$t"
	done
	ls -f "$2/nums" | grep -v '^\.'
	kvfs find "$1" /poi by_name --from A
	kvfs find "$1" /poi by_name Louvre
	kvfs find "$1" /poi @geo --from a
	kvfs find "$1" /visit by_n --from 0
	kvfs find "$1" /geo @capital p1
	(cd "$2" && getfattr -R -m user.kvfs.expires -d . | grep -v '^$')
	ls "$2/poi/p1/tags"
	kvfs export --compact "$1"
	kvfs check "$1" 2>&1
}

# assert_tables_back DIR STORE: the restored mount gives the same state.
assert_tables_back() {
	diff "$T/orig.state" <(state "$2" "$1")
	# the rules hold again: a second row with the same name is refused
	printf '{"poiName": "Louvre"}' >"$T/r.json"
	run ! cp "$T/r.json" "$1/poi/p9.json"
	run ! kvfs put "$2" /visit/p9/20260103/n 1
}

@test "tables, indexes and deadlines come back through cp -a into an empty mount" {
	tables
	cp -a "$MNT/." "$T/dir/"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.schema "$T/dir/poi"
	assert_output --partial '"references": "/geo"'
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr cp -a "$T/dir/." "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_tables_back "$T/r" "$T/r.store"
}

@test "tables, indexes and deadlines come back through tar --xattrs into an empty mount" {
	tables
	run --separate-stderr tar --xattrs -cf "$T/b.tar" -C "$MNT" .
	assert_equal "$stderr" ''
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr tar --xattrs -xf "$T/b.tar" -C "$T/r"
	assert_equal "$stderr" ''
	assert_success
	assert_tables_back "$T/r" "$T/r.store"
}

# rsync sets a directory's attributes before its files: the schemas wait
# until the rows are in, and are declared once the mount is idle (or at
# once by `sync` of the mount, an fsyncdir).
@test "tables, indexes and deadlines come back through rsync -aX into an empty mount; a second run sends nothing" {
	tables
	rsync -aX "$MNT/" "$T/dir/"
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr rsync -aX "$T/dir/" "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	sync "$T/r"
	assert_tables_back "$T/r" "$T/r.store"
	run -0 rsync -aXi "$T/dir/" "$T/r/"
	assert_output ''
}

# Issue 32 section 4: the restored table's rows come back in numeric order
# (the key index is built again from the column's type).
@test "a table keyed by an integer column keeps its numeric order through cp -a and tar --xattrs" {
	mkdir "$MNT/nums"
	kvfs table create "$STORE" /nums --key-depth 1 --key-fields id
	kvfs table column "$STORE" /nums id integer
	for i in 1 2 10 9 -3; do
		printf '{"v": %s}' "$i" >"$T/r.json"
		cp "$T/r.json" "$MNT/nums/$i.json"
	done
	cp -a "$MNT/." "$T/dir/"
	tar --xattrs -cf "$T/b.tar" -C "$MNT" .
	mount_extra "$T/r" "$T/r.store"
	cp -a "$T/dir/." "$T/r/"
	mount_extra "$T/t" "$T/t.store"
	tar --xattrs -xf "$T/b.tar" -C "$T/t"
	for r in r t; do
		run -0 bash -c "ls -f '$T/$r/nums' | grep -v '^\\.'"
		assert_output "$(printf '%s\n' -3 1 2 9 10)"
		run -0 kvfs export --compact "$T/$r.store" /nums
		assert_output '{"-3":{"v":-3},"1":{"v":1},"2":{"v":2},"9":{"v":9},"10":{"v":10}}'
		run -0 kvfs check "$T/$r.store"
		assert_output --partial ', 0 problems'
	done
}

# poi_state STORE: what must come back of tables/poi_names (references
# over two fields): the schemas, the reference indexes' answers, the rows.
poi_state() {
	local t
	for t in /geo /poi /names /reviews; do
		kvfs table show "$1" "$t"
	done
	kvfs find "$1" /names @poi_id,language G1/en
	kvfs find "$1" /reviews @poi,lang --from A
	kvfs export --compact "$1"
	kvfs check "$1" 2>&1
}

# assert_poi_back DIR STORE: the same state, and the references hold again.
assert_poi_back() {
	diff "$T/poi.state" <(poi_state "$2")
	printf '{"name": "Der Louvre"}' >"$T/n.json"
	run ! cp "$T/n.json" "$1/names/G1/de.json"
	run -0 err "$1/names/G1"
	assert_output --partial 'fields poi_id,language reference /poi/G1/de, which does not exist'
	run ! rm "$1/poi/G1/fr.json"
	run -0 err "$1/poi/G1"
	assert_output --partial 'still referenced by /reviews/r1 (fields poi,lang)'
}

# Issue 32 section 5: /names sorts before the /poi it references, so cp -a
# sets its schema before /poi is a table (it waits); rsync -aX sets each
# schema before the rows are in.
@test "references over several fields come back through cp -a and rsync -aX into empty mounts" {
	poi_names
	poi_state "$STORE" >"$T/poi.state"
	cp -a "$MNT/." "$T/dir/"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.schema "$T/dir/names"
	assert_output --partial '"references": ['
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr cp -a "$T/dir/." "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_poi_back "$T/r" "$T/r.store"
	mount_extra "$T/r2" "$T/r2.store"
	run --separate-stderr rsync -aX "$T/dir/" "$T/r2/"
	assert_equal "$stderr" ''
	assert_success
	sync "$T/r2"
	assert_poi_back "$T/r2" "$T/r2.store"
}

@test "a deadline is an absolute time: the copy does not live longer, and one already past expires at once" {
	mkdir "$MNT/s"
	echo v >"$MNT/s/a"
	echo w >"$MNT/s/b"
	setfattr -n user.kvfs.expires -v 2099-01-02T03:04:05.5+01:00 "$MNT/s/a"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.expires "$MNT/s/a"
	assert_output '2099-01-02T02:04:05.500000000Z'
	# a copy restored later keeps the same instant, whatever is left
	cp -a "$MNT/s" "$T/s"
	mount_extra "$T/r" "$T/r.store"
	cp -a "$T/s" "$T/r/"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.expires "$T/r/s/a"
	assert_output '2099-01-02T02:04:05.500000000Z'
	setfattr -n user.kvfs.expires -v 2001-01-01T00:00:00Z "$T/r/s/b"
	eventually 5 test ! -e "$T/r/s/b"
	run ! setfattr -n user.kvfs.expires -v tomorrow "$MNT/s/a"
	setfattr -x user.kvfs.expires "$MNT/s/a"
	run ! getfattr -n user.kvfs.expires "$MNT/s/a"
}

@test "a schema that is wrong in itself is refused; one its rows break waits, then is declared when they obey it" {
	mkdir -p "$MNT/t/r1"
	echo x >"$MNT/t/r1/name"
	run ! setfattr -n user.kvfs.schema -v '{"key_depth": 1, "columns": {"a": {"type": "nosuch"}}}' "$MNT/t"
	run ! kvfs table show "$STORE" /t
	setfattr -n user.kvfs.schema -v '{"key_depth": 1, "columns": {"n": {"type": "integer", "required": true}}}' "$MNT/t"
	run ! kvfs table show "$STORE" /t
	run -0 getfattr --absolute-names --only-values -n user.kvfs.schema "$MNT/t"
	assert_output --partial '"required": true'
	echo 4 >"$MNT/t/r1/n"
	setfattr -n user.kvfs.type -v integer "$MNT/t/r1/n"
	sync "$MNT"
	run -0 kvfs table show "$STORE" /t
	assert_output --partial '"required": true'
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

# A waiting schema declared alone in a retry must not cost the next one
# its retry: /b waits for a row that breaks it, /a (set later, no rows
# yet) waits too; when /c is set over its rows, /a is declared alone and
# /b must still wait, to be declared once its row obeys.
@test "a schema declared alone in a retry leaves the other waiting schemas waiting" {
	local schema='{"key_depth": 1, "columns": {"n": {"type": "integer", "required": true}}}'
	mkdir -p "$MNT/a" "$MNT/b/r1" "$MNT/c/r1"
	echo x >"$MNT/b/r1/name"
	setfattr -n user.kvfs.schema -v "$schema" "$MNT/b"
	setfattr -n user.kvfs.schema -v "$schema" "$MNT/a"
	printf '{"n": 1}' >"$T/r.json"
	cp "$T/r.json" "$MNT/a/r1.json"
	cp "$T/r.json" "$MNT/c/r1.json"
	setfattr -n user.kvfs.schema -v "$schema" "$MNT/c"
	run -0 kvfs table show "$STORE" /a
	run -0 getfattr --absolute-names --only-values -n user.kvfs.schema "$MNT/b"
	assert_output --partial '"required": true'
	cp "$T/r.json" "$MNT/b/r1.json"
	sync "$MNT"
	run -0 kvfs table show "$STORE" /b
	assert_output --partial '"required": true'
}
