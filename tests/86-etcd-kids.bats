#!/usr/bin/env bats
# tests/86-etcd-kids.bats - listings on etcd through the children space with
# hints (docs/ETCD.md section 7): directories mixing leaves, empty
# containers, objects and arrays with big and small subtrees list as the
# same tree on LMDB does (`ls -l`, `find`), after writes, deletes, rm -r,
# mv, from a second mount, and in a store whose entries carry no hints
# (written before them). A cluster of its own, or KVFS_ETCD_URL's.

# bats file_tags=etcd

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	etcd_start
}

teardown_file() {
	etcd_stop
}

setup() {
	etcd_test_store 86
	LSTORE=$BATS_TEST_TMPDIR/lmdb
	LMNT=$BATS_TEST_TMPDIR/lmnt
}

teardown() {
	mount_teardown	# (the extra mounts too, where a test failed before its own)
}

# big_doc N: an object of N members, one of them an array of N/2 objects.
# One awk (a loop of printf and $(...) per key was about 1,000 subshells a
# build).
big_doc() {
	awk -v n="$1" 'BEGIN {
		printf "{"
		for (j = 0; j < n; j++)
			printf "\"m%03d\":\"v%d\",", j, j
		printf "\"arr\":["
		for (j = 0; j < int(n / 2); j++)
			printf "%s{\"n\":%d,\"s\":\"x\"}", (j > 0 ? "," : ""), j
		printf "]}\n"
	}'
}

# build ROOT: under ROOT/d, leaves, empty directories, objects and arrays,
# small and big, and a directory of directories.
build() {
	local r=$1/d i
	mkdir "$r"
	for i in 0 1 2 3 4 5 6 7 8 9; do
		echo "leaf $i" >"$r/l$i"
	done
	mkdir "$r/empty1" "$r/m-empty" "$r/zz-empty"
	big_doc 400 >"$r/big.json"
	big_doc 4 >"$r/a-small.json"
	echo '[1,2,3,[4,5],{"k":[]}]' >"$r/arr.json"
	echo '{}' >"$r/emptyobj.json"
	echo '[]' >"$r/emptyarr.json"
	mkdir "$r/sub" "$r/sub/deep" "$r/sub/deep/er" "$r/h"
	for i in a b c; do
		echo "$i" >"$r/h/$i"
		echo "$i" >"$r/sub/deep/er/$i"
	done
	big_doc 200 >"$r/sub/deep/doc.json"
	for i in 1 2 3 4 5 6; do
		big_doc $((i * 20)) >"$r/mid$i.json"
		echo "between $i" >"$r/mid${i}x"
	done
}

# change ROOT: writes, deletes (of a container's first key too), rm -r, mv.
change() {
	local r=$1/d
	echo "new" >"$r/l3"
	echo "brand new" >"$r/l99"
	rm "$r/l0" "$r/mid2.json"
	rm "$r/h/a"	# h's first key: h stays, from its next key
	rm -r "$r/sub/deep/er"
	mv "$r/big" "$r/aaa-big"	# a document is listed as a directory too
	mv "$r/mid3" "$r/zzz"
	mv "$r/mid4x" "$r/h/moved"
	big_doc 50 >"$r/a-small.json"
	echo '[9]' >"$r/big2.json"
	mkdir "$r/new-empty"
	rm -r "$r/mid5"
}

# view ROOT: what a listing shows, recursively and one level at a time.
view() {
	(cd "$1" && find . -printf '%y %s %P\n' | sort &&
		ls -lAn --time-style=+X d d/h d/sub d/sub/deep d/big d/aaa-big 2>/dev/null |
		sed 's/^total .*/total/')
}

@test "listings on etcd equal LMDB's: leaves, empty containers, objects, arrays, big and small" {
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	build "$MNT"
	build "$LMNT"
	run -0 view "$LMNT"
	local want=$output
	[ "$(grep -c . <<<"$want")" -gt 60 ]
	run -0 view "$MNT"
	assert_output "$want"
	change "$MNT"
	change "$LMNT"
	run -0 view "$LMNT"
	want=$output
	grep -q ' d/h$' <<<"$want"	# h still holds b and c
	run -0 view "$MNT"
	assert_output "$want"
	# another mount of the same store (a cold cache) and the CLI list the same
	mount_extra "$BATS_TEST_TMPDIR/mnt2" "$STORE"
	run -0 view "$BATS_TEST_TMPDIR/mnt2"
	assert_output "$want"
	run -0 kvfs ls "$LSTORE" d
	want=$output
	run -0 kvfs ls "$STORE" d
	assert_output "$want"
}

# dirs300 FILE: 300 children of three kinds, as files written through a
# mount would make them: documents {"i":I,"a":[I,I]} (oI), empty objects
# (dI, as mkdir makes), strings (fI, as echo I >fI makes).
dirs300() {
	awk 'BEGIN {
		printf "{"
		for (i = 0; i < 300; i++) {
			printf "%s", (i ? "," : "")
			if (i % 3 == 0) printf "\"o%d\":{\"i\":%d,\"a\":[%d,%d]}", i, i, i, i
			else if (i % 3 == 1) printf "\"d%d\":{}", i
			else printf "\"f%d\":\"%d\"", i, i
		}
		printf "}\n"
	}' >"$1"
}

@test "a directory of 300 directories lists on etcd as on LMDB, across readdir calls" {
	# the 300 children go in by one import per store (300 writes through each
	# mount were most of the test; test 1 writes through the mount), their
	# removals through the mounts
	dirs300 "$BATS_TEST_TMPDIR/w.json"
	kvfs import --create "$STORE" w "$BATS_TEST_TMPDIR/w.json" >/dev/null
	kvfs import --create "$LSTORE" w "$BATS_TEST_TMPDIR/w.json" >/dev/null
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	local i m
	run -0 bash -c "cd '$LMNT/w' && ls -lAn --time-style=+X"
	local want=$output
	[ "${#lines[@]}" -eq 301 ]
	[ "$(grep -c '^d' <<<"$want")" -eq 200 ]
	run -0 bash -c "cd '$MNT/w' && ls -lAn --time-style=+X"
	assert_output "$want"
	# rm -r of every third: the listing skips their entries' leftovers
	for m in "$MNT" "$LMNT"; do
		for ((i = 0; i < 300; i += 9)); do
			rm -r "$m/w/o$i.json"
		done
	done
	run -0 bash -c "cd '$LMNT/w' && ls -lAn --time-style=+X"
	want=$output
	[ "${#lines[@]}" -eq 267 ]
	run -0 bash -c "cd '$MNT/w' && ls -lAn --time-style=+X"
	assert_output "$want"
}

# strip_hints PREFIX: sets every entry of the children space of store
# PREFIX to the empty value, as a store written before hints has them.
strip_hints() {
	python3 - "${KVFS_ETCD_ENDPOINTS%%,*}" "$1" <<'EOF'
import base64, json, sys, urllib.request
ep, prefix = sys.argv[1], sys.argv[2].encode()
b64 = lambda b: base64.b64encode(b).decode()
def call(path, body):
    req = urllib.request.Request("http://%s/v3/kv/%s" % (ep, path), json.dumps(body).encode())
    return json.load(urllib.request.urlopen(req))
lo, hi = prefix + b"\0k\0", prefix + b"\0l"
kvs = call("range", {"key": b64(lo), "range_end": b64(hi), "keys_only": True}).get("kvs", [])
for kv in kvs:
    call("put", {"key": kv["key"], "value": ""})
print(len(kvs))
EOF
}

@test "a store whose children space has no hints (written before them) still lists" {
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	build "$MNT"
	build "$LMNT"
	unmount_store
	run -0 strip_hints "${STORE#etcd://*/}"
	[ "$output" -gt 5 ]
	mount_store
	run -0 view "$LMNT"
	local want=$output
	run -0 view "$MNT"
	assert_output "$want"
	# writes into it add hints again; listings stay right
	change "$MNT"
	change "$LMNT"
	run -0 view "$LMNT"
	want=$output
	run -0 view "$MNT"
	assert_output "$want"
}

# getattrs: the etcd mount's getattr requests so far
getattrs() {
	getfattr --absolute-names --only-values -n user.kvfs.stats "$MNT" |
		awk '$1 == "getattr" { print $2; found = 1 } END { exit !found }'
}

@test "ls -l on etcd takes each directory's nlink from the listing: LMDB's numbers, no getattr each" {
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	shapes "$MNT"
	shapes "$LMNT"
	run -0 ls -ln --time-style=+X "$LMNT/n"
	local want=$output
	grep -q '^d[^ ]* 4 .* marks$' <<<"$want"
	grep -q '^d[^ ]* 2 .* gone$' <<<"$want"
	grep -q '^d[^ ]* 3 .* emptied$' <<<"$want"
	grep -q '^d[^ ]* 2 .* turned$' <<<"$want"
	grep -q '^d[^ ]* 3 .* hg$' <<<"$want"
	unmount_store
	mount_store	# nothing cached by the kernel
	local before after
	before=$(getattrs)
	run -0 ls -ln --time-style=+X "$MNT/n"
	after=$(getattrs)
	assert_output "$want"
	# 49 directories, each nlink from the listing: no getattr for them
	# (one for n itself at most)
	[ $((after - before)) -le 1 ]
	# their cached nlink follows a change through the mount
	mkdir "$MNT/n/flat3/new"
	[ "$(stat -c %h "$MNT/n/flat3")" = 3 ]
	rmdir "$MNT/n/flat3/new"
	[ "$(stat -c %h "$MNT/n/flat3")" = 2 ]
}

# wide_shapes FILE: an object of 700 documents of four shapes: three
# containers, leaves only, an empty object, an array of objects.
wide_shapes() {
	local i
	{
		printf '{'
		for ((i = 0; i < 700; i++)); do
			((i > 0)) && printf ','
			case $((i % 4)) in
			0) printf '"d%03d":{"o":{"x":1},"a":[1,2],"e":{},"v":%d}' "$i" "$i" ;;
			1) printf '"d%03d":{"v":%d,"w":"x"}' "$i" "$i" ;;
			2) printf '"d%03d":{"e":{},"v":%d}' "$i" "$i" ;;
			3) printf '"d%03d":{"a":[{"k":1},{"k":2}],"v":%d}' "$i" "$i" ;;
			esac
		done
		printf '}\n'
	} >"$1"
}

@test "a fresh mount lists 700 directories past every window as LMDB does: ls, then ls -l" {
	wide_shapes "$BATS_TEST_TMPDIR/w.json"
	kvfs import --create "$STORE" w "$BATS_TEST_TMPDIR/w.json" >/dev/null
	kvfs import --create "$LSTORE" w "$BATS_TEST_TMPDIR/w.json" >/dev/null
	mount_extra "$LMNT" "$LSTORE"
	run -0 ls -lAn --time-style=+X "$LMNT/w"
	local want=$output
	[ "${#lines[@]}" -eq 701 ]
	grep -q '^d[^ ]* 5 .* d000$' <<<"$want"
	grep -q '^d[^ ]* 2 .* d001$' <<<"$want"
	grep -q '^d[^ ]* 3 .* d698$' <<<"$want"
	grep -q '^d[^ ]* 3 .* d699$' <<<"$want"
	# the kernel keeps what the first readdir (with attributes) said
	mount_store
	run -0 ls "$MNT/w"
	[ "${#lines[@]}" -eq 700 ]
	run -0 ls -lAn --time-style=+X "$MNT/w"
	assert_output "$want"
	unmount_store
	mount_store
	run -0 ls -lAn --time-style=+X "$MNT/w"
	assert_output "$want"
}

# forget_records PREFIX: makes store PREFIX one from before container
# records' entries: every entry gone, the marker "1".
forget_records() {
	python3 - "${KVFS_ETCD_ENDPOINTS%%,*}" "$1" <<'PY'
import base64, json, sys, urllib.request
ep, prefix = sys.argv[1], sys.argv[2].encode()
b64 = lambda b: base64.b64encode(b).decode()
def call(path, body):
    req = urllib.request.Request("http://%s/v3/kv/%s" % (ep, path), json.dumps(body).encode())
    return json.load(urllib.request.urlopen(req))
print(call("deleterange", {"key": b64(prefix + b"\0k\0"), "range_end": b64(prefix + b"\0l")}).get("deleted", 0))
call("put", {"key": b64(prefix + b"\0k"), "value": b64(b"1")})
PY
}

@test "kvfs check --repair on etcd puts back missing children-space entries and upgrades a store from before records' entries" {
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	shapes "$MNT"
	shapes "$LMNT"
	run -0 ls -ln --time-style=+X "$LMNT/n"
	local want=$output before after
	unmount_store
	run -0 forget_records "$PREFIX"
	[ "$output" -gt 50 ]
	run -1 kvfs check "$STORE"
	assert_output --partial 'no entry in the etcd children space'
	run -0 kvfs check --repair "$STORE"
	assert_line --regexp '^check: [0-9]+ keys, 0 problems$'
	run -0 kvfs check "$STORE"
	mount_store
	before=$(getattrs)
	run -0 ls -ln --time-style=+X "$MNT/n"
	after=$(getattrs)
	assert_output "$want"
	[ $((after - before)) -le 1 ]	# records' entries too: the nlinks come with the listing
}

# stale_first MNT OUT: what the directories whose first subdirectory lost
# its first key (its entry's hint) show, each listed first through a fresh
# mount when MNT is $MNT, appended to OUT.
stale_first() {
	local d
	for d in . t t/P a; do
		if [ "$1" = "$MNT" ]; then
			unmount_store
			mount_store
		fi
		ls -lAn --time-style=+X "$1/$d" | sed 's/^total .*/total/' >>"$2"
	done
	if [ "$1" = "$MNT" ]; then
		unmount_store
		mount_store
	fi
	(cd "$1" && ls -AR) >>"$2"
}

@test "a directory whose first subdirectory lost its first key lists it through a fresh mount and kvfs ls, as LMDB does" {
	local s
	for s in "$STORE" "$LSTORE"; do
		echo '{"C1":{"a":1,"b":2},"C2":{"c":3}}' | kvfs import --create "$s" a - >/dev/null
		echo '{"P":{"C1":{"a":1,"b":2}},"Q":{"D":{"x":1}}}' | kvfs import "$s" t - >/dev/null
		kvfs rm "$s" a/C1/a	# the root's first child's first key
		kvfs rm "$s" t/P/C1/a	# t's first child's first key
	done
	mount_extra "$LMNT" "$LSTORE"
	stale_first "$LMNT" "$BATS_TEST_TMPDIR/want"
	grep -q ' P$' "$BATS_TEST_TMPDIR/want"
	grep -q '^b$' "$BATS_TEST_TMPDIR/want"
	mount_store
	stale_first "$MNT" "$BATS_TEST_TMPDIR/got"
	run -0 cat "$BATS_TEST_TMPDIR/got"
	assert_output "$(cat "$BATS_TEST_TMPDIR/want")"
	for s in "" t t/P a; do
		run -0 kvfs ls "$LSTORE" $s
		local want=$output
		run -0 kvfs ls "$STORE" $s
		assert_output "$want"
	done
}

# two_big_elements FILE: an array whose element 0 holds 4,100 keys and
# elements 1 and 2 2,100 each: deleting it whole deletes two ranges that
# touch (element 0's, and those of 1 to 255), one range in the commit.
two_big_elements() {
	python3 - "$1" <<'PY'
import json, sys
el = lambda name, n: {name: {"k%d" % i: i for i in range(n)}}
json.dump([el("a", 4100), el("b", 2100), el("c", 2100)], open(sys.argv[1], "w"))
PY
}

@test "an array deleted whole in ranges over several elements and written again lists only its new elements" {
	two_big_elements "$BATS_TEST_TMPDIR/old.json"
	echo '[{"z":{"q":1}}]' >"$BATS_TEST_TMPDIR/new.json"
	local s
	for s in "$STORE" "$LSTORE"; do
		kvfs import --create "$s" doc "$BATS_TEST_TMPDIR/old.json" >/dev/null
		kvfs rm -r "$s" doc
		kvfs import "$s" doc "$BATS_TEST_TMPDIR/new.json" >/dev/null
	done
	run -0 kvfs ls "$STORE" doc
	assert_output "0"
	mount_store
	mount_extra "$LMNT" "$LSTORE"
	run -0 ls -lAn --time-style=+X "$LMNT/doc"
	local want=$output
	[ "${#lines[@]}" -eq 2 ]	# total, 0
	run -0 ls -lAn --time-style=+X "$MNT/doc"
	assert_output "$want"
	run -0 stat -c %h "$MNT/doc"
	assert_output 3
	run ! ls "$MNT/doc/1"
	# the same through a mount that saw the old array: mv deletes it with ranges too
	kvfs import "$STORE" old "$BATS_TEST_TMPDIR/old.json" >/dev/null
	ls "$MNT" >/dev/null
	mv "$MNT/old" "$MNT/gone"
	echo '[{"z":{"q":1}}]' >"$MNT/old.json"
	unmount_store
	mount_store
	run -0 ls "$MNT/old"
	assert_output "0"
	run -0 kvfs ls "$STORE" old
	assert_output "0"
}
