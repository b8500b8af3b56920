#!/usr/bin/env bats
# What the kernel answers itself, and that it stays right: the request
# counters (user.kvfs.stats on the mount root) and the text of small leaves
# pushed into the page cache when their directory is listed, which must
# match the store after changes through the mount and by other processes.

# bats file_tags=mount,backends,threads

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	exec 6>&- 2>/dev/null || true
	mount_teardown
}

# count OPCODE: that counter of the daemon (reading it is one getxattr)
count() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$MNT" |
		awk -v k="$1" '$1 == k { print $2; found = 1 } END { exit !found }'
}

# pushed_at_least N: the daemon has pushed N leaves' text so far (the worker
# pushes a listed directory's leaves after the first open of one of them
# that missed the page cache)
pushed_at_least() {
	[ "$(count notify_store)" -ge "$1" ]
}

# invalidated_at_least N: the invalidation worker has sent N notifications
invalidated_at_least() {
	[ "$(count notify_inval)" -ge "$1" ]
}

# reads_as FILE TEXT: FILE reads as TEXT (and a newline) now
reads_as() {
	[ "$(cat "$1")" = "$2" ]
}

# dirs_pushed_at_least N: the worker went through N directories' leaves
dirs_pushed_at_least() {
	[ "$(count notify_store_dirs)" -ge "$1" ]
}

# a directory d of N leaves "value I" (not listed yet by this mount)
make_dir() {
	python3 -c 'import json, sys; n = int(sys.argv[1]); print(json.dumps({"k%d" % i: "value %d" % i for i in range(n)}))' \
		"$1" >"$BATS_TEST_TMPDIR/d.json"
	kvfs import "$STORE" /d "$BATS_TEST_TMPDIR/d.json" >/dev/null
}

@test "user.kvfs.stats counts the requests by opcode, on the mount root only" {
	echo hello >"$MNT/f"
	run -0 count open
	local before=$output
	local try
	for try in 1 2 3; do
		run -0 cat "$MNT/f"
		assert_output hello
	done
	run -0 count open
	[ "$output" -eq $((before + 3)) ]
	run -0 count getxattr
	local g=$output
	run -0 count getxattr
	[ "$output" -gt "$g" ]	# reading the counters is counted too
	run -0 count lookup
	[ "$output" -ge 1 ]
	run ! getfattr --absolute-names -n user.kvfs.stats "$MNT/f"
	# not listed: cp -a and rsync -X never copy it
	run -0 getfattr --absolute-names -d -m - "$MNT"
	refute_output --partial kvfs.stats
}

@test "the first read in a listed directory pushes its other small leaves: their cat sends no read" {
	unmount_store
	make_dir 20
	mount_store
	run -0 ls -l "$MNT/d"
	run -0 find "$MNT" -type f
	run -0 count notify_store
	assert_output 0	# listing alone pushes nothing
	run -0 cat "$MNT/d/k0"
	assert_output 'value 0'
	eventually 10 pushed_at_least 19
	local bytes
	bytes=$(stat -c %s "$MNT"/d/k1* "$MNT"/d/k[2-9] | awk '{ n += $1 } END { print n }')
	run -0 count notify_store_bytes
	[ "$output" -eq "$bytes" ]	# the exact text of each other leaf, nothing more
	run -0 count read
	local reads=$output leaf
	for leaf in $(seq 1 19); do
		run -0 cat "$MNT/d/k$leaf"
		assert_output "value $leaf"
	done
	run -0 count read
	[ "$output" -eq "$reads" ]
	# listed and read again: in the page cache already, nothing pushed twice
	run -0 ls -l "$MNT/d"
	run -0 cat "$MNT/d/k0" "$MNT/d/k5"
	run -0 count notify_store
	[ "$output" -eq 19 ]
}

@test "leaves their writers created commit without waking the invalidation worker; a leaf read before has its pages dropped" {
	local leaf
	for leaf in $(seq 1 20); do echo "v$leaf" >"$MNT/n$leaf"; done
	for leaf in $(seq 1 20); do
		run -0 cat "$MNT/n$leaf"
		assert_output "v$leaf"
	done
	# their pages hold what was written: nothing to drop, no wake-up per file
	run -0 count notify_inval
	assert_output 0
	# read (its pages recorded), then rewritten with a text of the same size
	echo w1 >"$MNT/n1"
	eventually 10 invalidated_at_least 1
	run -0 cat "$MNT/n1"
	assert_output w1
}

@test "pushed pages follow later writes through the mount, same size or not" {
	unmount_store
	make_dir 4
	mount_store
	run -0 ls "$MNT/d"
	run -0 cat "$MNT/d/k3"	# pushes the others
	eventually 10 pushed_at_least 3
	printf 'VALUE 0' >"$MNT/d/k0"	# the same size
	echo 'a longer value' >"$MNT/d/k1"
	run -0 cat "$MNT/d/k0"
	assert_output 'VALUE 0'
	run -0 cat "$MNT/d/k1"
	assert_output 'a longer value'
	run -0 kvfs get "$STORE" /d/k0
	assert_output 'VALUE 0'
	# a reader opened before a write sees it
	exec 6<"$MNT/d/k2"
	echo two >>"$MNT/d/k2"
	run -0 cat <&6
	exec 6<&-
	assert_output $'value 2\ntwo'
}

@test "pushed pages are dropped when another process changes the leaf" {
	unmount_store
	make_dir 4
	mount_store
	run -0 ls "$MNT/d"
	run -0 cat "$MNT/d/k3"	# pushes the others
	eventually 10 pushed_at_least 3
	run -0 cat "$MNT/d/k0"
	assert_output 'value 0'
	kvfs put "$STORE" /d/k0 'VALUE 0'	# the same size, another process
	kvfs put "$STORE" /d/k1 'changed, and longer'
	kvfs rm "$STORE" /d/k2
	eventually 5 reads_as "$MNT/d/k0" 'VALUE 0'
	eventually 5 reads_as "$MNT/d/k1" 'changed, and longer'
	eventually 5 test ! -e "$MNT/d/k2"
	# listed again after the change: pushed again, from the new text
	run -0 ls "$MNT/d"
	run -0 cat "$MNT/d/k0" "$MNT/d/k1"
	assert_output $'VALUE 0\nchanged, and longer'
}

@test "a leaf open for writing, a big leaf and a view are never pushed" {
	unmount_store
	make_dir 3
	head -c 5000 /dev/zero | tr '\0' x | kvfs put "$STORE" /d/big - >/dev/null
	mount_store
	exec 6>>"$MNT/d/k1"	# a writer is open on k1
	run -0 ls "$MNT/d"
	run -0 cat "$MNT/d/k0"	# pushes the others
	eventually 10 pushed_at_least 1
	eventually 10 dirs_pushed_at_least 1	# the worker went through all of d
	run -0 count notify_store
	[ "$output" -eq 1 ]	# k2 only
	echo appended >&6
	run -0 cat "$MNT/d/k1"
	assert_output $'value 1\nappended'
	exec 6>&-
	run -0 kvfs get "$STORE" /d/k1
	assert_output $'value 1\nappended'
	run -0 cmp "$MNT/d/big" <(kvfs get "$STORE" /d/big)
	run -0 cat "$MNT/d.json"
	assert_output --partial '"k0": "value 0"'
}

@test "a directory listed while a name is renamed over keeps each leaf's own text" {
	unmount_store
	make_dir 5
	mount_store
	run -0 ls "$MNT/d"
	mv "$MNT/d/k3" "$MNT/d/k0"
	run -0 cat "$MNT/d/k4"	# pushes the others
	eventually 10 pushed_at_least 3
	run -0 cat "$MNT/d/k0" "$MNT/d/k1" "$MNT/d/k2"
	assert_output $'value 3\nvalue 1\nvalue 2'
	run ! test -e "$MNT/d/k3"
}

# nlinks DIR: "NAME NLINK" of each directory in DIR, one stat each (a
# lookup and its attributes, no listing), sorted by name
nlinks() {
	local d
	for d in "$1"/*/; do
		d=${d%/}
		printf '%s %s\n' "${d##*/}" "$(stat -c %h "$d")"
	done
}

@test "ls -l takes each directory's nlink from the listing: what stat counts, no getattr each" {
	shapes "$MNT"
	# past what a listing counts (1,024 children): left to its stat
	python3 -c 'import json; print(json.dumps({**{"m%d" % i: i for i in range(1100)}, "o": {"p": 1}}))' \
		>"$MNT/n/wide.json"
	remount	# the kernel knows nothing: each stat counts its directory
	run -0 nlinks "$MNT/n"
	local want=$output
	grep -qx 'marks 4' <<<"$want"
	grep -qx 'wide 3' <<<"$want"
	grep -qx 'emptied 3' <<<"$want"
	remount
	local before after
	before=$(count getattr)
	run -0 ls -ln --time-style=+X "$MNT/n"
	after=$(count getattr)
	run -0 awk '$1 ~ /^d/ { print $NF, $2 }' <<<"$output"
	assert_output "$want"
	# 50 directories: n itself and wide (too big to count) at most; with
	# no attribute cache (make test-nocache) every stat asks again. On
	# etcd, when the mount's window of the root is gone from the shared
	# answers (over a second old, as under load), the lookup of n reads a
	# page of its first 256 keys and the listing starts in it: those
	# children are counted too (etcd_kids_subdirs.c, in_start_page)
	[[ ${KVFS_MOUNT_OPTS:-} == *attr_timeout=0* ]] || [ $((after - before)) -le 2 ]
	# the nlink a listing gave follows a change through the mount
	mkdir "$MNT/n/flat3/new"
	[ "$(stat -c %h "$MNT/n/flat3")" = 3 ]
	rmdir "$MNT/n/flat3/new"
	[ "$(stat -c %h "$MNT/n/flat3")" = 2 ]
}

@test "a writer that keeps its descriptor is asked about file capabilities once, not at each write" {
	local before after
	before=$(count getxattr)
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(20):
    os.write(fd, b"%d\n" % i)
os.close(fd)' "$MNT/log"
	after=$(count getxattr)
	run -0 wc -l "$MNT/log"
	assert_output "20 $MNT/log"
	# security.capability is asked before a write until the kernel may mark
	# the inode as having none (FUSE_HANDLE_KILLPRIV_V2): twice here, and
	# the count's own read; without the flag, 20 and 1
	[ $((after - before)) -le 4 ]
}

# nlink_is DIR N: DIR's st_nlink is N now
nlink_is() {
	[ "$(stat -c %h "$1")" = "$2" ]
}

@test "a directory's nlink stays right while leaves are written into it, between mkdirs, views and other processes' commits" {
	mkdir "$MNT/d"
	local n
	for n in 1 2 3; do
		echo "$n" >"$MNT/d/k$n"
		nlink_is "$MNT/d" 2
	done
	mkdir "$MNT/d/sub"
	nlink_is "$MNT/d" 3
	echo 4 >"$MNT/d/k4"
	nlink_is "$MNT/d" 3
	echo '{"a": 1}' >"$MNT/d/x.json"	# a view makes a directory x
	nlink_is "$MNT/d" 4
	echo 5 >"$MNT/d/k5"
	nlink_is "$MNT/d" 4
	rmdir "$MNT/d/sub"
	echo 6 >"$MNT/d/k6"
	nlink_is "$MNT/d" 3
	# another process makes a directory; the next leaf written through the
	# mount must not keep the count from before it
	echo '{"b": 2}' >"$BATS_TEST_TMPDIR/y.json"
	kvfs import "$STORE" /d/y "$BATS_TEST_TMPDIR/y.json" >/dev/null
	echo 7 >"$MNT/d/k7"
	eventually 5 nlink_is "$MNT/d" 4
	echo 8 >"$MNT/d/k8"
	nlink_is "$MNT/d" 4
	run -0 kvfs get "$STORE" /d/k8
	assert_output 8
}

@test "a directory's nlink is exact after writers and mkdirs ran in it at once" {
	mkdir "$MNT/p"
	local j pids=()
	for j in 1 2; do
		(for i in $(seq 60); do echo "$i" >"$MNT/p/w$j-$i"; done) &
		pids+=($!)
		(for i in $(seq 15); do mkdir "$MNT/p/d$j-$i"; echo x >"$MNT/p/v$j-$i"; done) &
		pids+=($!)
	done
	wait "${pids[@]}"	# not the daemon, a child of this shell too
	nlink_is "$MNT/p" 32
	remount
	nlink_is "$MNT/p" 32
	run -0 find "$MNT/p" -maxdepth 1 -type f
	[ "${#lines[@]}" -eq 150 ]
}
