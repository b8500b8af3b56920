#!/usr/bin/env bats
# Backups with the tools people trust: cp -a, tar, rsync -a out of the mount
# and back into another mount restore the same tree, types included.

# bats file_tags=mount,backends

load 'test_helper/common'

setup() {
	mount_setup
	cat >"$BATS_TEST_TMPDIR/doc.json" <<'JSON'
{"users": {"42": {"name": "Bob", "age": 42, "ratio": 1.5, "ok": true, "tags": ["a", "b"],
  "empty": {}, "none": []}, "7": {"name": "Ann", "age": 7}}, "blob": "x"}
JSON
	cp "$BATS_TEST_TMPDIR/doc.json" "$MNT/.json"
	head -c 5000 /dev/urandom >"$MNT/bin"
	touch -d '2020-05-06 07:08:09' "$MNT/users/42/name"
}

teardown() {
	exec 5>&-	# a test's descriptor held open on a file in the mount
	mount_teardown
}

# A second, empty mount at $MNT2 (unmounted and checked by mount_teardown).
mount_second() {
	MNT2=$BATS_TEST_TMPDIR/mnt2
	mount_extra "$MNT2" "$BATS_TEST_TMPDIR/store2"
}

# The tree and types of a mount, as text (directories show the store's
# creation time, so only file mtimes are compared).
tree_of() {
	(cd "$1" && find . -type d -printf '%y %p\n' | sort &&
		find . -type f -printf '%y %p %s %T@\n' | sort &&
		find . -mindepth 1 -exec getfattr --absolute-names --only-values -n user.kvfs.type {} \; -printf ' %p\n')
}

@test "cp -a out and back restores the same tree, types and mtimes" {
	cp -a "$MNT" "$BATS_TEST_TMPDIR/copy"
	cmp "$MNT/bin" "$BATS_TEST_TMPDIR/copy/bin"
	run -0 stat -c %y "$BATS_TEST_TMPDIR/copy/users/42/name"
	assert_output --partial '2020-05-06 07:08:09'
	mount_second
	cp -a "$BATS_TEST_TMPDIR/copy/." "$MNT2/"
	run -0 diff <(tree_of "$MNT") <(tree_of "$MNT2")
	run -0 diff <(jq -S . "$MNT/users.json") <(jq -S . "$MNT2/users.json")
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT2/users/42/age"
	assert_output integer
}

@test "tar -c out of the mount and -x into another restores the tree" {
	tar -C "$MNT" -cf "$BATS_TEST_TMPDIR/t.tar" .
	run -0 tar -tf "$BATS_TEST_TMPDIR/t.tar"
	refute_output --partial '.json'
	mount_second
	tar -C "$MNT2" -xf "$BATS_TEST_TMPDIR/t.tar"
	cmp "$MNT/bin" "$MNT2/bin"
	# tar keeps whole seconds
	run -0 diff <(cd "$MNT" && find . -type f -printf '%p %s %T@\n' | sed 's/\.[0-9]*$//' | sort) \
		<(cd "$MNT2" && find . -type f -printf '%p %s %T@\n' | sed 's/\.[0-9]*$//' | sort)
	run -0 diff <(cd "$MNT" && find . | sort) <(cd "$MNT2" && find . | sort)
}

# -X carries the types (user.kvfs.type).
@test "rsync -a round trip; a second run transfers nothing; one change transfers one file" {
	mount_second
	rsync -aX --inplace "$MNT/" "$MNT2/"
	run -0 diff <(tree_of "$MNT") <(tree_of "$MNT2")
	# Nothing to send. Directories in a mount show their store's creation
	# time and ignore utimens, so between two mounts created in different
	# seconds rsync re-lists each directory's time (".d..t"); no file moves.
	run -0 rsync -aX --inplace --itemize-changes "$MNT/" "$MNT2/"
	run -0 awk 'NF && !/^\.d\.\.t\.\.\.\.\.\. /' <<<"$output"
	assert_output ''
	# same size, new value (a second later: rsync compares whole seconds)
	sleep 1
	echo 43 >"$MNT/users/42/age"
	run -0 rsync -aX --inplace --itemize-changes "$MNT/" "$MNT2/"
	run -0 awk 'NF && !/^\.d\.\.t\.\.\.\.\.\. /' <<<"$output"
	assert_output --regexp '^>f[^ ]* users/42/age$'
	assert_equal "${#lines[@]}" 1
	run -0 cat "$MNT2/users/42/age"
	assert_output 43
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT2/users/42/age"
	assert_output integer
}

# Without --inplace rsync writes ".0.XXXXXX" beside the target and renames it
# onto "0": in an array that name lives only in the daemon until the rename.
@test "rsync -aX (temporary files) restores arrays; export equal; a second run transfers nothing" {
	cat >"$BATS_TEST_TMPDIR/arr.json" <<'JSON'
{"doc": {"tags": ["a", "b"], "nums": [1, 2.5, true, null], "none": [],
 "rows": [{"id": 1, "tags": ["x"]}, {"id": 2, "tags": [], "m": [[1, 2], [3]]}]}}
JSON
	cp "$BATS_TEST_TMPDIR/arr.json" "$MNT/arr.json"
	rsync -aX "$MNT/" "$BATS_TEST_TMPDIR/src/"
	mount_second
	run -0 rsync -aX "$BATS_TEST_TMPDIR/src/" "$MNT2/"
	run -0 diff <(kvfs export "$STORE" /) <(kvfs export "$BATS_TEST_TMPDIR/store2" /)
	run -0 diff <(tree_of "$MNT") <(tree_of "$MNT2")
	run -0 rsync -aX --stats "$BATS_TEST_TMPDIR/src/" "$MNT2/"
	assert_output --partial 'Number of regular files transferred: 0'
	run -0 ls -A "$MNT2/arr/doc/tags"
	assert_output $'0\n1'
}

@test "sed -i on an array element keeps its type; pending files are never listed" {
	echo '{"tags": ["abc", "a"], "n": [41]}' >"$MNT/doc.json"
	run -0 sed -i 's/a/b/' "$MNT/doc/tags/0"
	run -0 cat "$MNT/doc/tags/0"
	assert_output bbc
	run -0 sed -i 's/41/42/' "$MNT/doc/n/0"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/doc/n/0"
	assert_output integer
	run -0 ls -A "$MNT/doc/tags"
	assert_output $'0\n1'
	# a pending file: visible by name, typed, unlisted, gone when unlinked
	printf 7 >"$MNT/doc/n/.tmp"
	run -0 stat -c %s "$MNT/doc/n/.tmp"
	assert_output 1
	setfattr -n user.kvfs.type -v integer "$MNT/doc/n/.tmp"
	touch -d '2021-01-02 03:04:05' "$MNT/doc/n/.tmp"
	run -0 ls -A "$MNT/doc/n"
	assert_output 0
	mv "$MNT/doc/n/.tmp" "$MNT/doc/n/1"
	run -0 jq -c . "$MNT/doc.json"
	assert_output '{"n":[42,7],"tags":["bbc","a"]}'
	run -0 stat -c %y "$MNT/doc/n/1"
	assert_output --partial '2021-01-02 03:04:05'
	echo x >"$MNT/doc/n/.gone"
	rm "$MNT/doc/n/.gone"
	run ! stat "$MNT/doc/n/.gone"
	run -0 kvfs export "$STORE" /doc/n
	refute_output --partial x
	# an empty array marker takes one too
	mkdir "$MNT/e"
	setfattr -n user.kvfs.type -v array "$MNT/e"
	echo first >"$MNT/e/.new"
	mv "$MNT/e/.new" "$MNT/e/0"
	run -0 jq -c . "$MNT/e.json"
	assert_output '["first"]'
}

@test "a pending file goes with its array when the array is removed elsewhere" {
	echo '[1,2]' | kvfs import "$STORE" /arr -
	caught_up	# etcd: a read within 1 s of the mount's last may not see it yet
	echo x >"$MNT/arr/.tmp"
	run -0 stat -c %s "$MNT/arr/.tmp"
	kvfs rm -r "$STORE" /arr
	# another process's commit: the mount has it once its watcher (etcd:
	# its watch) does, LMDB's within a tick (0.6 s was assumed)
	eventually 10 test ! -e "$MNT/arr/.tmp"
	# the removal wholly taken in before /arr is made again: the lookup above
	# may answer ENOENT while the worker has yet to revalidate /arr, which
	# then reads the new array and keeps the pending file (seen on etcd under
	# load, 2026-11-30). Once the mount reached the removal (its watcher
	# queued the revalidation), a view's close returns after the worker ran
	# what was queued before it (fs/file.c).
	caught_up
	echo '{}' >"$MNT/barrier.json"
	echo '[3]' | kvfs import "$STORE" /arr -
	eventually 10 test -e "$MNT/arr/0"
	run ! stat "$MNT/arr/.tmp"
	run -0 ls -A "$MNT/arr"
	assert_output 0
}

# docs/FILES.md, "Temporary files inside arrays": the array a pending file
# was made in, removed and made again by another process before the
# mount's worker saw the removal, is a new array: the pending file went
# with the old one. Before, it stayed and its rename committed it into the
# new array, at the index it was renamed onto. An array another process
# wrote a document over is the same array, changed: it keeps its own.
@test "a pending file goes with its array when another process removes it and makes it again" {
	echo '{"arr": [1, 2], "over": [1, 2], "e": [], "kept": [1]}' | kvfs import "$STORE" / -
	caught_up
	for a in arr over e kept; do
		printf 'new %s' "$a" >"$MNT/$a/.tmp"
	done
	# no wait between: the worker may see both commits at once
	kvfs rm -r "$STORE" /arr
	echo '[3]' | kvfs import "$STORE" /arr -
	echo '[4]' | kvfs import "$STORE" /over -
	kvfs rm -r "$STORE" /e
	echo '[]' | kvfs import "$STORE" /e -
	kvfs put "$STORE" /kept/1 5
	run ! mv "$MNT/arr/.tmp" "$MNT/arr/1"
	run ! mv "$MNT/e/.tmp" "$MNT/e/0"
	mv "$MNT/over/.tmp" "$MNT/over/1"
	mv "$MNT/kept/.tmp" "$MNT/kept/2"
	export_is / '{"arr":[3],"e":[],"kept":[1,"5","new kept"],"over":[4,"new over"]}'
	caught_up
	for a in arr e; do
		run ! stat "$MNT/$a/.tmp"
	done
}

# A removal only counts against the pending files that were under it: a
# pending file in d/arr, whose mount moves d into e after another process
# removed e and made it again, was never in the removed e, and its rename
# onto an index commits it where d went. And the other way: one in p/arr,
# whose p another process removed and made again (with an array), goes
# with the old p though its mount then moves the new p into e. Fails on
# revarray2 at 1149174 (the first .tmp is gone: mv cannot stat it, the
# removal of e read against its path at the rename).
@test "a pending file moved with its directory into one another process made again is kept; one whose directory was made again is not" {
	echo '{"d": {"arr": [1, 2]}, "p": {"arr": [1]}, "e": {"x": 1}}' | kvfs import "$STORE" / -
	caught_up
	printf 'new d' >"$MNT/d/arr/.tmp"
	printf 'new p' >"$MNT/p/arr/.tmp"
	kvfs rm -r "$STORE" /e
	kvfs mkdir "$STORE" /e
	kvfs rm -r "$STORE" /p
	echo '{"arr": [7]}' | kvfs import "$STORE" /p -
	caught_up
	mv "$MNT/d" "$MNT/e/d"
	mv "$MNT/p" "$MNT/e/p"
	mv "$MNT/e/d/arr/.tmp" "$MNT/e/d/arr/2"
	run ! mv "$MNT/e/p/arr/.tmp" "$MNT/e/p/arr/1"
	export_is /e '{"d":{"arr":[1,2,"new d"]},"p":{"arr":[7]}}'
}

# The test above with a descriptor held open on the pending file (exec 5>,
# nothing written before the removal: the kvfs processes inherit it): a
# tool writing through it after another process removed the array and
# made it again fails at its close with ESTALE, the reason in
# user.kvfs.error; the new array holds what the other process put there.
# Fails on revarray at 0586f91 (cat exits 0).
@test "a pending file whose array another process removed and made again fails its close with ESTALE" {
	echo '{"arr": [1, 2]}' | kvfs import "$STORE" / -
	caught_up
	exec 5>"$MNT/arr/.tmp"
	kvfs rm -r "$STORE" /arr
	echo '[3]' | kvfs import "$STORE" /arr -
	caught_up
	write_held 'new'
	exec 5>&-
	assert_failure 1
	assert_output --partial 'Stale file handle'
	run ! mv "$MNT/arr/.tmp" "$MNT/arr/1"
	export_is /arr '[3]'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.error "$MNT/arr"
	assert_output --partial "/arr/.tmp: not stored: another process removed its directory"
}

# The other way round: another host removed the array and made it again,
# and only then is a pending file made in it, while this mount's watch has
# not brought those commits yet. The pending file belongs to the new array:
# renamed onto an index once the watch has brought the removal, it is
# stored there. Fails on revarray at 0586f91 (its stage generation was the
# watch's position, behind the removal: the rename found it gone, ENOENT).
@test "etcd: a pending file made after another host removed its array and made it again is kept, the watch lagging" {
	is_etcd || skip "a lagging watch is etcd's (LMDB's position is current at the open)"
	echo '{"arr": [1, 2]}' | kvfs import "$STORE" / -
	M2=$BATS_TEST_TMPDIR/m2
	KVFS_ETCD_TEST_WATCH_LAG_MS=500 mount_extra "$M2" "$STORE"
	caught_up "$M2"
	run -0 ls "$M2/arr"
	kvfs rm -r "$STORE" /arr
	echo '[3]' | kvfs import "$STORE" /arr -
	target=$(store_gen)
	printf 'new' >"$M2/arr/.tmp"
	# closed before the watch brought the removal: so was the open
	run -0 mount_position "$M2"
	[ "$output" -lt "$target" ]
	eventually 10 mount_reached "$target" "$M2"
	mv "$M2/arr/.tmp" "$M2/arr/1"
	export_is /arr '[3,"new"]'
}

@test "a leaf renamed over while others read its type answers its type, as ext4's replaced inode does" {
	# sed -i, editors and rsync replace a file by renaming a new one over it;
	# a reader that resolved the path just before (rsync -aX reading types)
	# used to get ENODATA ("No such attribute") from the replaced node
	# (fs/'s race, the same over either store: etcd, where each rename is
	# round trips, runs 60 of LMDB's 150)
	local renames=150
	! is_etcd || renames=60
	echo 0 >"$MNT/x"
	setfattr -n user.kvfs.type -v integer "$MNT/x"
	(
		for ((i = 1; i <= renames; i++)); do
			echo "$i" >"$MNT/t$i"
			setfattr -n user.kvfs.type -v integer "$MNT/t$i"
			mv "$MNT/t$i" "$MNT/x"
		done
	) &
	local writer=$! reads=0 bad=0 gone=0 out
	while kill -0 "$writer" 2>/dev/null; do
		out=$(getfattr --absolute-names -n user.kvfs.type --only-values "$MNT/x" 2>&1) || true
		if [[ "$out" == *'No such file or directory' ]]; then
			gone=$((gone + 1))
		elif [ "$out" != integer ]; then
			bad=$((bad + 1))
			echo "read $reads: $out" >&2
		fi
		reads=$((reads + 1))
	done
	wait "$writer"
	echo "# $reads reads of the type while $renames renames replaced the leaf; $gone found no name" >&3
	[ "$reads" -gt 20 ]
	[ "$bad" -eq 0 ]	# never "No such attribute" for a name that resolved
	# With the kernel's caches on (the default) the name never vanishes
	# either. With them off, each path walk asks the daemon, and a walk
	# that meets the replaced node's getattr gets ENOENT: a defect still
	# open (the stop note of 2026-11-29), counted above, not yet asserted.
	if [[ "${KVFS_MOUNT_OPTS:-}" != *entry_timeout=0* ]]; then
		[ "$gone" -eq 0 ]
	fi
	run -0 cat "$MNT/x"
	assert_output "$renames"
}
