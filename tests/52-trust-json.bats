#!/usr/bin/env bats
# Trust in JSON views (issue 8, sections 6 and 7): writing a view back
# changes only what changed (bytes stay bytes, flags and mtimes of untouched
# leaves stay, so an incremental backup copies only the changed leaves);
# empty files are refused; a BOM is accepted; integers of any length are
# kept digit for digit; numbers that cannot be kept exactly are refused;
# nesting is limited by the key length, not by a fixed depth.

# bats file_tags=trust,lmdb

load 'test_helper/common'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

# Names, types and mtimes (ns) of every file under $1, sorted.
leaf_times() {
	(cd "$1" && find . -type f -printf '%p %TY-%Tm-%Td %TT\n' | LC_ALL=C sort)
}

# edit_changes_only LEAF CMD...: runs CMD, an edit of d.json that changes
# only d/LEAF: every other leaf keeps its mtime, LEAF gets a new one, and
# the bytes leaf icon stays bytes.
edit_changes_only() {
	local leaf=$1 before
	shift
	before=$(leaf_times "$MNT/d" | grep -v "^\./$leaf ")
	"$@"
	assert_equal "$(leaf_times "$MNT/d" | grep -v "^\./$leaf ")" "$before"
	run -0 leaf_times "$MNT/d"
	assert_line --regexp "^\./$leaf 20"
	refute_output --partial "./$leaf 2020-"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/icon"
	assert_output bytes
}

# A document with a bytes leaf, a string without a newline, and leaves whose
# mtimes lie in the past (so a write that resets them cannot go unnoticed).
make_doc() {
	mkdir "$MNT/d"
	printf '\x00\xff\x01icon' >"$MNT/d/icon"
	printf abc >"$MNT/d/s"
	echo 42 >"$MNT/d/n"
	echo 'two words' >"$MNT/d/t"
	mkdir "$MNT/d/list"
	echo x >"$MNT/d/list/0"
	echo y >"$MNT/d/list/1"
	setfattr -n user.kvfs.type -v integer "$MNT/d/n"
	find "$MNT/d" -type f -exec touch -m -d '2020-01-02 03:04:05.123456789' {} +
}

@test "cat d.json > t; cp t d.json changes nothing: bytes, flags, mtimes stay" {
	make_doc
	run -0 cat "$MNT/d.json"
	assert_output --partial '"icon": {
    "$base64": "AP8BaWNvbg=="
  }'
	assert_output --partial '"s": "abc"'
	before=$(leaf_times "$MNT/d")
	cat "$MNT/d.json" >"$BATS_TEST_TMPDIR/t"
	cp "$BATS_TEST_TMPDIR/t" "$MNT/d.json"
	run -0 leaf_times "$MNT/d"
	assert_output "$before"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/icon"
	assert_output bytes
	assert_file_bytes "$MNT/d/icon" '\000\377\001icon'
	assert_file_bytes "$MNT/d/s" 'abc'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/d/n"
	assert_output integer
	run -0 kvfs check "$STORE"
}

@test "a second rsync after a view write copies exactly the changed leaves" {
	make_doc
	backup=$BATS_TEST_TMPDIR/backup
	rsync -a "$MNT/d/" "$backup/"
	# one value changed, one added, one removed
	cat "$MNT/d.json" | jq -c '.t = "three words here" | .new = 7 | del(.list."1")' \
		>"$BATS_TEST_TMPDIR/t"
	cp "$BATS_TEST_TMPDIR/t" "$MNT/d.json"
	run -0 ls "$MNT/d/list"
	assert_output 0
	run -0 rsync -a --delete --out-format='%i %n' "$MNT/d/" "$backup/"
	run -0 awk 'NF && !/^\.d/' <<<"$output"
	assert_line --regexp '^>f.* new$'
	assert_line --regexp '^>f.* t$'
	assert_line --regexp '^\*deleting +list/1$'
	assert_equal "${#lines[@]}" 3
	assert_file_bytes "$backup/t" 'three words here\n'
	assert_file_bytes "$backup/s" 'abc'
}

@test "vim editing d.json keeps bytes leaves, flags and untouched mtimes" {
	make_doc
	edit_changes_only t run -0 timeout 30 vim -u NONE -i NONE -n -es \
		-c '%s/two words/changed/' -c 'wq' "$MNT/d.json"
	run -0 cat "$MNT/d/t"
	assert_output changed
	assert_file_bytes "$MNT/d/s" 'abc'
	run -0 stat -c %Y "$MNT/d/t"
	[ "$output" -gt 1600000000 ]
	[ "$output" != "$(date -d '2020-01-02 03:04:05' +%s)" ]
}

@test "sed -i on d.json (a temporary file renamed onto the view) keeps untouched leaves" {
	make_doc
	edit_changes_only n sed -i 's/"n": 42/"n": 43/' "$MNT/d.json"
	run -0 cat "$MNT/d/n"
	assert_output 43
}

@test "kvfs import of the same document again keeps every record" {
	make_doc
	run -0 kvfs export "$STORE" /d
	printf '%s' "$output" >"$BATS_TEST_TMPDIR/d.json"
	before=$(kvfs dump "$STORE")
	run -0 kvfs import "$STORE" /d "$BATS_TEST_TMPDIR/d.json"
	run -0 kvfs dump "$STORE"
	assert_output "$before"
}

@test "a changed string keeps having no newline; a new member gets one" {
	make_doc
	cat "$MNT/d.json" | jq -c '.s = "abd" | .z = "new"' >"$BATS_TEST_TMPDIR/t"
	cp "$BATS_TEST_TMPDIR/t" "$MNT/d.json"
	assert_file_bytes "$MNT/d/s" 'abd'
	assert_file_bytes "$MNT/d/z" 'new\n'
}

@test "a real object {\"\$base64\": ...} round-trips through the \$\$base64 escape" {
	printf '%s' '{"real": {"$$base64": "AAE="}, "b": {"$base64": "AAE="}, "deep": {"$$$base64": 1}}' \
		>"$MNT/x.json"
	run -0 ls "$MNT/x/real"
	assert_output '$base64'
	run -0 ls "$MNT/x/deep"
	assert_output '$$base64'
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/x/b"
	assert_output bytes
	assert_file_bytes "$MNT/x/b" '\000\001'
	run -0 kvfs export --compact "$STORE" /x
	assert_output '{"b":{"$base64":"AAE="},"deep":{"$$$base64":1},"real":{"$$base64":"AAE="}}'
	# two members, or a value that is not base64: an ordinary object
	printf '%s' '{"a": {"$base64": "AAE=", "k": 1}, "c": {"$base64": "A"}}' >"$MNT/y.json"
	run -0 ls "$MNT/y/a"
	assert_output $'$base64\nk'
	run -0 ls "$MNT/y/c"
	assert_output '$base64'
}

@test "an empty file written onto a view is refused and changes nothing" {
	echo '{"a": 1}' >"$MNT/x.json"
	before=$(kvfs dump "$STORE")
	size=$(stat -c %s "$MNT/x.json")
	run ! cp /dev/null "$MNT/x.json"
	assert_output --partial 'Invalid argument'
	run ! python3 -c "open('$MNT/x.json', 'w').close()"
	assert_output --partial 'Invalid argument'
	: >"$MNT/x.json" || true
	run -0 kvfs dump "$STORE"
	assert_output "$before"
	run -0 cat "$MNT/x/a"
	assert_output 1
	run -0 stat -c %s "$MNT/x.json"
	assert_output "$size"
	run -0 grep -c 'invalid JSON' "$MOUNT_LOG"
}

@test "a UTF-8 byte order mark is accepted: import, view write, append" {
	printf '\xef\xbb\xbf{"a": 1}' >"$BATS_TEST_TMPDIR/bom.json"
	run -0 kvfs import "$STORE" /i "$BATS_TEST_TMPDIR/bom.json"
	cp "$BATS_TEST_TMPDIR/bom.json" "$MNT/v.json"
	printf '\xef\xbb\xbf{"b": 2}\n' >>"$MNT/log.json"
	run -0 cat "$MNT/i/a" "$MNT/v/a" "$MNT/log/0/b"
	assert_output $'1\n1\n2'
}

@test "integers of any length are kept digit for digit everywhere" {
	big=123456789012345678901234567890
	neg=-99999999999999999999999
	printf '{"big": %s, "neg": %s, "max": 9223372036854775807, "over": 9223372036854775808}' \
		"$big" "$neg" >"$BATS_TEST_TMPDIR/b.json"
	run -0 kvfs import "$STORE" /b "$BATS_TEST_TMPDIR/b.json"
	run -0 cat "$MNT/b/big" "$MNT/b/neg" "$MNT/b/over"
	assert_output "$big"$'\n'"$neg"$'\n'9223372036854775808
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/b/big"
	assert_output integer
	run -0 kvfs export --compact "$STORE" /b
	assert_output "{\"big\":$big,\"max\":9223372036854775807,\"neg\":$neg,\"over\":9223372036854775808}"
	run -0 jq -c . "$MNT/b.json"
	cp "$MNT/b.json" "$BATS_TEST_TMPDIR/back.json"
	cp "$BATS_TEST_TMPDIR/back.json" "$MNT/c.json"
	run -0 cat "$MNT/c/big"
	assert_output "$big"
	# echo into an integer leaf keeps it an integer; type conversion accepts it
	echo 1 >"$MNT/b/max"
	echo 99999999999999999999999999999999999999 >"$MNT/b/max"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/b/max"
	assert_output integer
	echo 77777777777777777777777 >"$MNT/b/str"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/b/str"
	assert_output string
	setfattr -n user.kvfs.type -v integer "$MNT/b/str"
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/b/str"
	assert_output integer
	run -0 kvfs put --type integer "$STORE" /b/p 10000000000000000000000000
	run -0 kvfs get "$STORE" /b/p
	assert_output 10000000000000000000000000
	run -0 kvfs check "$STORE"
}

@test "a number that cannot be kept exactly is refused, nothing changed" {
	echo '{"a": 1.5}' >"$MNT/x.json"
	before=$(kvfs dump "$STORE")
	for n in 0.1000000000000000000001 1e400 2e-400 -1e-400 9007199254740993.0; do
		printf '{"a": %s}' "$n" >"$BATS_TEST_TMPDIR/n.json"
		run ! kvfs import "$STORE" /x "$BATS_TEST_TMPDIR/n.json"
		assert_output --partial "number cannot be kept exactly: $n"
		run ! cp "$BATS_TEST_TMPDIR/n.json" "$MNT/x.json"
	done
	run -0 kvfs dump "$STORE"
	assert_output "$before"
	# exact ones are fine, in any spelling
	printf '{"a": 1.10, "b": 1e2, "c": 0.1, "d": -0, "e": 5e-324}' >"$MNT/y.json"
	run -0 cat "$MNT/y/a" "$MNT/y/b" "$MNT/y/c" "$MNT/y/d" "$MNT/y/e"
	assert_output $'1.1\n100.0\n0.1\n-0.0\n5e-324'
}

@test "a 300-deep array imports, exports, renders and writes back through the mount" {
	doc=$(printf '%.0s[' {1..300})1$(printf '%.0s]' {1..300})
	printf '%s' "$doc" >"$BATS_TEST_TMPDIR/deep.json"
	run -0 kvfs import "$STORE" /deep "$BATS_TEST_TMPDIR/deep.json"
	run -0 kvfs export --compact "$STORE" /deep
	assert_output "$doc"
	# (jq stops at depth 256; python's parser does not)
	run -0 python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])), separators=(",", ":")))' "$MNT/deep.json"
	assert_output "$doc"
	printf '%s' "$doc" >"$MNT/copy.json"
	run -0 kvfs export --compact "$STORE" /copy
	assert_output "$doc"
	# deeper than a key can hold: refused by the key limit, with its message
	printf '%.0s[' {1..600} >"$BATS_TEST_TMPDIR/too.json"
	printf '%.0s]' {1..600} >>"$BATS_TEST_TMPDIR/too.json"
	run ! kvfs import "$STORE" /too "$BATS_TEST_TMPDIR/too.json"
	assert_output --partial 'too long for a key'
}
