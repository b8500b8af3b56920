#!/usr/bin/env bats
# Backups with standard file tools (issue 5): cp -a, tar and rsync out of a
# mount give plain trees; restoring them into an empty mount gives the same
# store where the tool carries xattrs (user.kvfs.type), and a documented,
# exactly predictable store where it does not. Incremental rsync, tar
# --listed-incremental and find -newer see exactly the changed leaves.
# 33-mount-tools.bats has the first round trips; this file is the contract.

# bats file_tags=mount,backends

load 'test_helper/common'

setup() {
	mount_setup
	T=$BATS_TEST_TMPDIR
}

teardown() {
	mount_teardown
}

# fixture: every kind of leaf and container, and names that need escaping,
# written into $MNT with real tools. Strings with and without a trailing
# newline are written with printf; bin is not UTF-8, so it is a bytes leaf.
fixture() {
	cat >"$T/doc.json" <<'JSON'
{"s": "hello", "i": 42, "big": 9007199254740993, "neg": -17, "d": 1.5, "sci": -2.5e-07,
 "t": true, "f": false, "n": null, "eo": {}, "ea": [], "tags": ["admin", "ops"],
 "objs": [{"k": 1}, {"k": "v"}], "nest": [[1, 2], []],
 "a/b": "slash", "": "empty", "x.json": "view", "%p": "pct", "héllo ✓": "uni",
 "日本": {"z": 0.25, "w": "ß"}}
JSON
	cp "$T/doc.json" "$MNT/.json"
	printf 'no newline' >"$MNT/nonl"
	printf 'two\nlines\n' >"$MNT/nl"
	printf '\000\377\376bin\200\n' >"$MNT/bin"
	# an old mtime, so that losing it (or its nanoseconds) shows
	touch -d '2020-05-06 07:08:09.123456789' "$MNT/s"
	kvfs export --compact "$STORE" >"$T/orig.export"
	run -0 cat "$T/orig.export"
	assert_output --partial '"big":9007199254740993,"bin":{"$base64":"AP/+YmlugAo="}'
}

# What `kvfs export --compact` shows after a restore by a tool that does not
# carry xattrs: every file is a string (bytes when it is not UTF-8), every
# directory an object, so arrays turn into objects keyed "0", "1"...
NO_XATTR_EXPORT='{"":"empty","%p":"pct","a/b":"slash","big":"9007199254740993","bin":{"$base64":"AP/+YmlugAo="},"d":"1.5","ea":{},"eo":{},"f":"false","héllo ✓":"uni","i":"42","n":"null","neg":"-17","nest":{"0":{"0":"1","1":"2"},"1":{}},"nl":"two\nlines","nonl":"no newline","objs":{"0":{"k":"1"},"1":{"k":"v"}},"s":"hello","sci":"-2.5e-07","t":"true","tags":{"0":"admin","1":"ops"},"x.json":"view","日本":{"w":"ß","z":"0.25"}}'

# types_of DIR: "TYPE PATH" for every entry under DIR (user.kvfs.type).
types_of() {
	(cd "$1" && find . -mindepth 1 -print0 | sort -z |
		while IFS= read -r -d '' p; do
			printf '%s %s\n' "$(getfattr --only-values -n user.kvfs.type -- "$p")" "$p"
		done)
}

# mtimes_of DIR: "PATH MTIME" for every file (directories: dir_mtimes_of).
mtimes_of() {
	(cd "$1" && find . -type f -printf '%p %T@\n' | sort)
}

# assert_restored_exactly DIR STORE: the mount at DIR of STORE is the
# fixture: same bytes, same types and kinds, same export, same leaf mtimes.
assert_restored_exactly() {
	diff -r "$MNT" "$1"
	diff <(types_of "$MNT") <(types_of "$1")
	diff "$T/orig.export" <(kvfs export --compact "$2")
	diff <(mtimes_of "$MNT") <(mtimes_of "$1")
}

# assert_restored_untyped DIR STORE: the rule for tools without xattrs:
# the same bytes and names, files are strings (bytes when not UTF-8),
# directories are objects.
assert_restored_untyped() {
	diff -r "$MNT" "$1"
	diff <(types_of "$MNT" | sed -E 's/^(integer|double|boolean|null) /string /; s/^array /object /') \
		<(types_of "$1")
	run -0 kvfs export --compact "$2"
	assert_output "$NO_XATTR_EXPORT"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$1/bin"
	assert_output bytes
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$1/tags"
	assert_output object
}

# itemized OUTPUT: the itemize (-i) lines of an rsync run, without its stats.
itemized() {
	grep -E '^[<>ch.*][fdLDS][^ ]* ' <<<"$1" || true
}

# ---- out of the mount: plain trees ----

@test "cp -a, tar -c and rsync -a out of the mount give plain trees that diff -r clean" {
	fixture
	cp -a "$MNT/" "$T/cp"
	mkdir "$T/tar"
	tar -cf "$T/b.tar" -C "$MNT" .
	tar -xf "$T/b.tar" -C "$T/tar"
	rsync -a "$MNT/" "$T/rsync/"
	for d in cp tar rsync; do
		diff -r "$MNT" "$T/$d"
		# plain files and directories, views not copied, escaped names kept
		run -0 find "$T/$d" -name '*.json'
		assert_output ''
		run -0 find "$T/$d" -mindepth 1 ! -type f ! -type d
		assert_output ''
		[ -f "$T/$d/tags/1" ]
		[ -d "$T/$d/nest/1" ]
		[ -d "$T/$d/ea" ]
		[ -f "$T/$d/%" ]
		[ -f "$T/$d/%a%2Fb" ]
		[ -f "$T/$d/%x%2Ejson" ]
		[ -f "$T/$d/%%25p" ]
		[ -f "$T/$d/héllo ✓" ]
		[ -f "$T/$d/日本/w" ]
		assert_file_bytes "$T/$d/i" '42\n'
		assert_file_bytes "$T/$d/big" '9007199254740993\n'
		assert_file_bytes "$T/$d/nonl" 'no newline'
		assert_file_bytes "$T/$d/bin" '\000\377\376bin\200\n'
		assert_file_bytes "$T/$d/%a%2Fb" 'slash\n'
	done
	# leaf mtimes: cp -a and rsync -a to the nanosecond, tar (gnu format) to the second
	diff <(mtimes_of "$MNT") <(mtimes_of "$T/cp")
	diff <(mtimes_of "$MNT") <(mtimes_of "$T/rsync")
	diff <(mtimes_of "$MNT" | sed 's/\.[0-9]*$//') <(mtimes_of "$T/tar" | sed 's/\.[0-9]*$//')
	# cp -a carried the types as xattrs; rsync -a without -X did not
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$T/cp/i"
	assert_output integer
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$T/cp/tags"
	assert_output array
	run -1 getfattr --absolute-names --only-values -n user.kvfs.type "$T/rsync/i"
}

# ---- back into an empty mount, with xattrs: exact ----

@test "cp -a into an empty mount restores types, kinds, export and mtimes exactly" {
	fixture
	cp -a "$MNT/" "$T/dir"
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr cp -a "$T/dir/." "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_restored_exactly "$T/r" "$T/r.store"
}

# Needs temporary files inside array directories: rsync writes ".0.XXXXXX"
# next to "0" and renames it; -X makes "tags" an array before its files come.
@test "rsync -aX into an empty mount restores types, kinds, export and mtimes exactly" {
	fixture
	rsync -aX "$MNT/" "$T/dir/"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$T/dir/tags"
	assert_output array
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr rsync -aX "$T/dir/" "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_restored_exactly "$T/r" "$T/r.store"
}

# tar --xattrs extracts a file as mknod, setxattr, open, write: the type is
# set while the leaf is still empty, before its text arrives.
@test "tar --xattrs into an empty mount restores types, kinds, export and mtimes exactly" {
	fixture
	run --separate-stderr tar --xattrs -cf "$T/b.tar" -C "$MNT" .
	assert_equal "$stderr" ''
	assert_success
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr tar --xattrs -xf "$T/b.tar" -C "$T/r"
	assert_equal "$stderr" ''
	assert_success
	assert_restored_exactly "$T/r" "$T/r.store"
}

# ---- back into an empty mount, without xattrs: the documented rule ----

@test "tar -xf without --xattrs: files come back as strings (bytes if not UTF-8), directories as objects" {
	fixture
	tar -cf "$T/b.tar" -C "$MNT" .
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr tar -xf "$T/b.tar" -C "$T/r"
	assert_equal "$stderr" ''
	assert_success
	assert_restored_untyped "$T/r" "$T/r.store"
	# the gnu format keeps whole seconds only
	diff <(mtimes_of "$MNT" | sed 's/\.[0-9]*$//') <(mtimes_of "$T/r" | sed 's/\.[0-9]*$//')
	run -0 stat -c %y "$T/r/s"
	assert_output '2020-05-06 07:08:09.000000000 +0000'
	# the text is all there: a user can put a type back by hand
	setfattr -n user.kvfs.type -v integer "$T/r/big"
	setfattr -n user.kvfs.type -v array "$T/r/tags"
	run -0 kvfs export --compact "$T/r.store" /big
	assert_output '9007199254740993'
	run -0 kvfs export --compact "$T/r.store" /tags
	assert_output '["admin","ops"]'
}

@test "rsync -a without -X: files come back as strings (bytes if not UTF-8), directories as objects" {
	fixture
	rsync -a "$MNT/" "$T/dir/"
	mount_extra "$T/r" "$T/r.store"
	run --separate-stderr rsync -a "$T/dir/" "$T/r/"
	assert_equal "$stderr" ''
	assert_success
	assert_restored_untyped "$T/r" "$T/r.store"
	diff <(mtimes_of "$MNT") <(mtimes_of "$T/r")
}

# ---- incremental ----

@test "a second rsync -a transfers nothing; a same-size change or a new document exactly its files" {
	fixture
	run -0 rsync -a --stats "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 25'
	run -0 rsync -a --stats -i "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 0'
	assert_equal "$(itemized "$output")" ''
	# same size, new value, a later second (rsync's quick check)
	sleep 1
	echo 43 >"$MNT/i"
	run -0 rsync -a --stats -i "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 1'
	assert_equal "$(itemized "$output")" '>f..t...... i'
	assert_file_bytes "$T/dir/i" '43\n'
	# a string leaf, same size, through a temporary file and rename (sed -i):
	# the rename changed the directory's mtime, which rsync -a carries over
	sleep 1
	sed -i 's/hello/jello/' "$MNT/s"
	run -0 rsync -a --stats -i "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 1'
	assert_equal "$(itemized "$output")" "$(printf '%s\n' '.d..t...... ./' '>f..t...... s')"
	# a new document: its directories and files, and its directory's new mtime
	# (a later second: rsync compares whole seconds)
	sleep 1
	printf '{"name": "Zed", "age": 5, "tags": ["x", "y"]}\n' >"$T/new.json"
	cp "$T/new.json" "$MNT/new.json"
	run -0 rsync -a --stats -i "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 4'
	assert_equal "$(itemized "$output")" "$(printf '%s\n' '.d..t...... ./' 'cd+++++++++ new/' '>f+++++++++ new/age' \
		'>f+++++++++ new/name' 'cd+++++++++ new/tags/' '>f+++++++++ new/tags/0' '>f+++++++++ new/tags/1')"
	run -0 rsync -a --stats -i "$MNT/" "$T/dir/"
	assert_line 'Number of regular files transferred: 0'
	assert_equal "$(itemized "$output")" ''
	diff -r "$MNT" "$T/dir"
}

# large_doc N: a JSON object of N/100 objects of 100 string leaves each.
large_doc() {
	awk -v n="$1" 'BEGIN {
		printf "{"
		for (i = 0; i < n / 100; i++) {
			printf "%s\"d%03d\": {", (i ? ", " : ""), i
			for (j = 0; j < 100; j++)
				printf "%s\"k%03d\": \"value %d of %d\"", (j ? ", " : ""), j, j, i
			printf "}"
		}
		printf "}\n"
	}'
}

@test "tar -c of an idle mount never warns that a file changed, small and larger trees" {
	fixture
	# on etcd 1,500 leaves, as in the whole-mount round trip below: each
	# of the four walks (its opens and reads round trips to the cluster)
	# still lasts seconds, past the kernel's attribute timeouts, and the
	# node table still grows past its first 1,024 buckets
	local leaves=3000
	! is_etcd || leaves=1500
	large_doc "$leaves" >"$T/large.json"
	cp "$T/large.json" "$MNT/large.json"
	run -0 find "$MNT" -type f
	assert_equal "${#lines[@]}" $((leaves + 25))
	for round in 1 2; do
		run --separate-stderr tar -cf "$T/a$round.tar" -C "$MNT" .
		assert_equal "$stderr" ''
		assert_success
		run --separate-stderr tar --xattrs -cf "$T/x$round.tar" -C "$MNT" .
		assert_equal "$stderr" ''
		assert_success
	done
	# an idle mount gives the same archive twice
	cmp "$T/a1.tar" "$T/a2.tar"
	cmp "$T/x1.tar" "$T/x2.tar"
}

# The non-directory members of an archive (tar -t, names literal).
archive_files() {
	tar --quoting-style=literal -tf "$1" | grep -v '/$' || true
}
archive_dirs() {
	tar --quoting-style=literal -tf "$1" | grep '/$' | sort
}
# Every directory of a mount, as tar names it ("./", "./tags/").
all_dirs() {
	(cd "$1" && find . -type d | sed 's|$|/|' | sort)
}

@test "tar --listed-incremental level 1 and find -newer see exactly the changed leaves" {
	fixture
	tar --listed-incremental="$T/snap" -cf "$T/l0.tar" -C "$MNT" .
	run -0 archive_files "$T/l0.tar"
	assert_equal "${#lines[@]}" 25
	touch "$T/stamp"
	sleep 1
	echo 43 >"$MNT/i"
	echo ops2 >"$MNT/tags/1"
	cp "$T/snap" "$T/snap1"
	run --separate-stderr tar --listed-incremental="$T/snap1" -cf "$T/l1.tar" -C "$MNT" .
	assert_equal "$stderr" ''
	assert_success
	run -0 archive_files "$T/l1.tar"
	assert_output "$(printf '%s\n' ./i ./tags/1)"
	# tar records every directory in an incremental archive (with the list
	# of its entries, to replay deletions); nothing else
	diff <(archive_dirs "$T/l1.tar") <(all_dirs "$MNT")
	run -0 find "$MNT" -newer "$T/stamp" -type f
	assert_output "$(printf '%s\n' "$MNT/i" "$MNT/tags/1")"
	# no entry was added, removed or renamed: no directory is newer
	run -0 find "$MNT" -newer "$T/stamp"
	assert_output "$(printf '%s\n' "$MNT/i" "$MNT/tags/1")"
	run -0 find "$MNT" -newer "$T/stamp" -type d
	assert_output ''
	# the level-1 archive restores on top of level 0
	mkdir "$T/r"
	tar --listed-incremental=/dev/null -xf "$T/l0.tar" -C "$T/r"
	tar --listed-incremental=/dev/null -xf "$T/l1.tar" -C "$T/r"
	diff -r "$MNT" "$T/r"
}

# Another mount of the same store has another FUSE device number (st_dev),
# while inode numbers are hashes of the keys and stay the same.
@test "across a remount tar --listed-incremental needs --no-check-device" {
	fixture
	tar --listed-incremental="$T/snap" -cf "$T/l0.tar" -C "$MNT" .
	mount_extra "$T/again" "$STORE"
	[ "$(stat -c %d "$MNT")" != "$(stat -c %d "$T/again")" ]
	[ "$(stat -c %i "$MNT/tags")" = "$(stat -c %i "$T/again/tags")" ]
	unmount_store
	sleep 1
	echo 43 >"$T/again/i"
	echo ops2 >"$T/again/tags/1"
	# without it, every directory looks new and every file is dumped again
	cp "$T/snap" "$T/snap1"
	tar --listed-incremental="$T/snap1" -cf "$T/l1.tar" -C "$T/again" .
	run -0 archive_files "$T/l1.tar"
	assert_equal "${#lines[@]}" 25
	cp "$T/snap" "$T/snap2"
	tar --no-check-device --listed-incremental="$T/snap2" -cf "$T/l1n.tar" -C "$T/again" .
	run -0 archive_files "$T/l1n.tar"
	assert_output "$(printf '%s\n' ./i ./tags/1)"
}

# ---- the whole mount, a larger tree, in one go ----

# bats test_tags=plain
@test "the mount root with 3000 leaves backs up and restores in one go with cp -a, tar and rsync -a" {
	# on etcd 1,500 (15 directories of the same 100 leaves): every mount's
	# node table still grows past its first 1,024 buckets (fs/inode.c),
	# and each walk of the etcd mount, its opens and reads round trips, is
	# half as long
	local leaves=3000
	! is_etcd || leaves=1500
	large_doc "$leaves" >"$T/large.json"
	cp "$T/large.json" "$MNT/.json"
	printf '\000\377bin' >"$MNT/d007/bin"
	kvfs export --compact "$STORE" >"$T/orig.export"
	run -0 find "$MNT" -type f
	assert_equal "${#lines[@]}" $((leaves + 1))
	cp -a "$MNT/" "$T/cp"
	tar -cf "$T/b.tar" -C "$MNT" .
	rsync -a "$MNT/" "$T/rs/"
	mount_extra "$T/r1" "$T/r1.store"
	mount_extra "$T/r2" "$T/r2.store"
	mount_extra "$T/r3" "$T/r3.store"
	run --separate-stderr cp -a "$T/cp/." "$T/r1/"
	assert_equal "$stderr" ''
	assert_success
	run --separate-stderr tar -xf "$T/b.tar" -C "$T/r2"
	assert_equal "$stderr" ''
	assert_success
	run --separate-stderr rsync -a "$T/rs/" "$T/r3/"
	assert_equal "$stderr" ''
	assert_success
	# r1 against the mount, r2 and r3 against r1: the same equalities with
	# one walk of the source's files instead of three (a walk of an etcd
	# mount is several seconds: its opens and reads go to the cluster)
	for n in 1 2 3; do
		diff "$T/orig.export" <(kvfs export --compact "$T/r$n.store")
	done
	diff -r "$MNT" "$T/r1"
	diff -r "$T/r1" "$T/r2"
	diff -r "$T/r1" "$T/r3"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$T/r2/d007/bin"
	assert_output bytes
}

# ---- the store itself: kvfs backup, dump and load ----

@test "kvfs backup of a mounted store and dump | load keep everything, mtimes and flags included" {
	skip_on_etcd "kvfs backup is a hot copy of the LMDB file (an etcd store's copy is a dump: tests/22)"
	fixture
	run -0 kvfs backup "$STORE" "$T/hot"
	run -0 kvfs check "$T/hot"
	kvfs dump "$STORE" >"$T/d1"
	kvfs dump "$T/hot" >"$T/d2"
	cmp "$T/d1" "$T/d2"
	kvfs load "$T/loaded" <"$T/d1"
	kvfs dump "$T/loaded" >"$T/d3"
	cmp "$T/d1" "$T/d3"
	mount_extra "$T/r1" "$T/hot"
	mount_extra "$T/r2" "$T/loaded"
	assert_restored_exactly "$T/r1" "$T/hot"
	assert_restored_exactly "$T/r2" "$T/loaded"
	# directories show their times (here the original store's creation time) after backup and load
	[ "$(stat -c %Y.%y "$MNT/tags")" = "$(stat -c %Y.%y "$T/r1/tags")" ]
	[ "$(stat -c %Y.%y "$MNT/tags")" = "$(stat -c %Y.%y "$T/r2/tags")" ]
}
