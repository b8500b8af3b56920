#!/usr/bin/env bats
# The offline CLI, whole-store verbs: import/export round trips compared
# byte for byte (jq would round integers above 2^53), refusals that leave
# the data alone, dump/load, check on good and corrupted stores, backup,
# and stores written by a newer kvfs.

# bats file_tags=cli,backends

load 'test_helper/common'

# The document export --compact prints for it: keys in key order, numbers
# in canonical form. Exercises 2^53+1, the int64 limits, extreme doubles,
# -0.0, unicode, escapes, "\u0000", and {} / [] at several depths.
canonical() {
	printf '%s\n' '{"arr":[1,"two",3.5,true,false,null,{"k":[]}],"big":9007199254740993,"d":1e+308,"ea":[],"eo":{},"max":9223372036854775807,"min":-9223372036854775808,"neg0":-0.0,"nul":"a\u0000b","pi":3.141592653589793,"small":5e-324,"u":"h\u00e9llo \u2713 \ud83d\ude00 \"q\" \\ \n\t"}'
}
# The same document as export writes strings: UTF-8 verbatim.
canonical_out() {
	printf '%s\n' '{"arr":[1,"two",3.5,true,false,null,{"k":[]}],"big":9007199254740993,"d":1e+308,"ea":[],"eo":{},"max":9223372036854775807,"min":-9223372036854775808,"neg0":-0.0,"nul":"a\u0000b","pi":3.141592653589793,"small":5e-324,"u":"héllo ✓ 😀 \"q\" \\ \n\t"}'
}
CANONICAL_KEYS=18

setup() {
	common_setup
	T=$BATS_TEST_TMPDIR
	canonical >"$T/canonical.json"
	canonical_out >"$T/expected.json"
}

# inject STORE SPACE KEY VALUE: writes one raw LMDB record (mdb_load -T
# escapes: \XX is a hex byte), as a bug or a newer kvfs might have.
inject() {
	printf '%s\n%s\n' "$3" "$4" | mdb_load -s "$2" -T "$1"
}

# seal KEY BODY: BODY (same escapes) followed by its format-2 checksum, the
# CRC-32C of key and body, so that a test reaches the checks behind it.
seal() {
	python3 - "$1" "$2" <<'PY'
import re, sys
def unesc(t):
    return re.sub(rb'\\([0-9a-fA-F]{2})', lambda m: bytes([int(m.group(1), 16)]), t.encode())
crc = 0xffffffff
for b in unesc(sys.argv[1]) + unesc(sys.argv[2]):
    crc ^= b
    for _ in range(8):
        crc = (crc >> 1) ^ 0x82f63b78 if crc & 1 else crc >> 1
print(sys.argv[2] + ''.join('\\%02x' % x for x in (crc ^ 0xffffffff).to_bytes(4, 'big')))
PY
}

# ---- import and export ----

@test "export --compact prints a canonical document back byte for byte" {
	run -0 kvfs import "$STORE" / "$T/canonical.json"
	assert_output ''
	kvfs export --compact "$STORE" >"$T/out.json"
	cmp "$T/expected.json" "$T/out.json"
	run -0 kvfs get "$STORE" /big
	assert_output '9007199254740993'
	run -0 kvfs get "$STORE" /min
	assert_output '-9223372036854775808'
	run -0 kvfs get "$STORE" /d
	assert_output '1e+308'
	kvfs get "$STORE" /nul >"$T/nul"
	assert_file_bytes "$T/nul" 'a\0b\n'
	run -0 kvfs ls -l "$STORE" /
	assert_line --regexp '^-rw-r--r-- -  +string +4  nul$'
}

@test "export | import | export is the identity, pretty and compact" {
	kvfs import "$STORE" / "$T/canonical.json"
	kvfs export "$STORE" >"$T/e1.json"
	kvfs import "$T/s2" / "$T/e1.json"
	kvfs export "$T/s2" >"$T/e2.json"
	cmp "$T/e1.json" "$T/e2.json"
	kvfs export --compact "$T/s2" >"$T/c2.json"
	cmp "$T/expected.json" "$T/c2.json"
	# pretty output really is pretty: two-space indent, one member a line
	run -0 sed -n 2,3p "$T/e1.json"
	assert_output "$(printf '  "arr": [\n    1,')"
}

@test "import at a path replaces only that subtree; export PATH shows it" {
	echo '{"keep":1,"sub":{"old":true}}' | kvfs import "$STORE" / -
	kvfs import "$STORE" /sub "$T/canonical.json"
	kvfs export --compact "$STORE" /sub >"$T/out.json"
	cmp "$T/expected.json" "$T/out.json"
	run -0 kvfs get "$STORE" /keep
	assert_output '1'
	run -1 kvfs get "$STORE" /sub/old
}

@test "import normalizes spelling: exponents, whitespace, escapes" {
	printf '{ "b" : 1E2 ,\n "a":[ ], "c": "\\u0041\\/" , "d": -0, "e": 0.5e1 }' |
		kvfs import "$STORE" / -
	run -0 kvfs export --compact "$STORE"
	assert_output '{"a":[],"b":100.0,"c":"A/","d":-0.0,"e":5.0}'
}

@test "import from a file and from stdin give the same store" {
	kvfs import "$STORE" / "$T/canonical.json"
	kvfs import "$T/s2" / - <"$T/canonical.json"
	cat "$T/canonical.json" | kvfs import "$T/s3" / -
	kvfs export "$STORE" >"$T/e1"
	kvfs export "$T/s2" >"$T/e2"
	kvfs export "$T/s3" >"$T/e3"
	cmp "$T/e1" "$T/e2"
	cmp "$T/e1" "$T/e3"
}

@test "invalid JSON is refused with line and column, and nothing changes" {
	kvfs import "$STORE" / "$T/canonical.json"
	kvfs export "$STORE" >"$T/before"
	printf '{\n  "a": 1,\n  "b": }\n' >"$T/bad.json"
	run -1 kvfs import "$STORE" / "$T/bad.json"
	assert_output --regexp '^kvfs: .*line 3, column [0-9]+'
	run -1 kvfs import "$STORE" /arr "$T/bad.json"
	assert_output --regexp 'line 3, column'
	printf '{"a":1} x' >"$T/trailing.json"
	run -1 kvfs import "$STORE" / - <"$T/trailing.json"
	assert_output --regexp 'line 1, column 9'
	: >"$T/empty.json"
	run -1 kvfs import "$STORE" / "$T/empty.json"
	assert_output --regexp '^kvfs: '
	kvfs export "$STORE" >"$T/after"
	cmp "$T/before" "$T/after"
}

@test "import refuses a missing file and a directory" {
	run -1 kvfs import "$STORE" / "$T/nope.json"
	assert_output "kvfs: $T/nope.json: No such file or directory"
	run -1 kvfs import "$STORE" / "$T"
	assert_output "kvfs: $T: is a directory"
}

@test "a path longer than LMDB's key limit is refused, never truncated" {
	long=$(printf 'x%.0s' {1..200})
	path=/$long/$long/$long
	kvfs put --create "$STORE" /a 1
	kvfs export "$STORE" >"$T/before"
	run -1 kvfs put "$STORE" "$path" v
	assert_output --regexp "^kvfs: .*too long.*/$long"
	printf '{"%s":{"%s":{"%s":1}},"z":2}' "$long" "$long" "$long" >"$T/deep.json"
	run -1 kvfs import "$STORE" / "$T/deep.json"
	assert_output --regexp '^kvfs: .*too long'
	run -1 kvfs mkdir "$STORE" "$path"
	assert_output --regexp '^kvfs: .*too long'
	kvfs export "$STORE" >"$T/after"
	cmp "$T/before" "$T/after"
}

@test "a large import shows no progress bar when stderr is not a terminal" {
	{ printf '{"big":"'; head -c 1600000 /dev/zero | tr '\0' x; printf '"}'; } >"$T/big.json"
	kvfs import "$STORE" / "$T/big.json" 2>"$T/err"
	[ ! -s "$T/err" ]
	run -0 kvfs ls -l "$STORE"
	assert_output "$(printf '%s %-11s %-7s %12s  %s' -rw-r--r-- - string 1600001 big)"
}

@test "a large import on a terminal draws a progress bar on stderr" {
	{ printf '{"big":['; for i in $(seq 1 20); do printf '"%s",' "$(head -c 100000 /dev/zero | tr '\0' y)"; done; printf '0]}'; } >"$T/big.json"
	run -0 script -qec "$KVFS_BIN import $STORE / $T/big.json" /dev/null
	assert_output --regexp 'import: 100% \(1\.9 MiB of 1\.9 MiB\)'
	run -0 kvfs get "$STORE" /big/20
	assert_output '0'
}

# bats test_tags=plain
@test "import refuses clearly when it cannot get the memory for its input" {
	[ -z "${KVFS_ASAN:-}" ] || skip "ASan reserves more address space than the limit"
	truncate -s 300M "$T/huge.json"
	run -1 bash -c "ulimit -v 100000; head -c 300000000 /dev/zero | \"\$KVFS_BIN\" import \"\$STORE\" / -"
	# a pipe goes to a temporary file first, then is mapped like a file
	assert_output "kvfs: standard input: cannot map 286.1 MiB into memory: Cannot allocate memory"
	run -1 bash -c "ulimit -v 100000; \"\$KVFS_BIN\" import \"\$STORE\" / \"$T/huge.json\""
	assert_output "kvfs: $T/huge.json: cannot map 300.0 MiB into memory: Cannot allocate memory"
	[ ! -e "$STORE" ]
}

# ---- dump and load ----

@test "dump | load | dump is byte-identical, modification times included" {
	kvfs import "$STORE" / "$T/canonical.json"
	printf 'a\0b' | kvfs put --type bytes "$STORE" /blob -
	kvfs mkdir "$STORE" /empty
	kvfs dump "$STORE" >"$T/d1"
	[ -s "$T/d1" ]
	sleep 0.1
	run -0 kvfs load "$T/s2" "$T/d1"
	kvfs dump "$T/s2" >"$T/d2"
	cmp "$T/d1" "$T/d2"
	kvfs dump "$T/s2" | kvfs load "$T/s3"
	kvfs dump "$T/s3" | cmp "$T/d1" -
	kvfs export "$STORE" >"$T/e1"
	kvfs export "$T/s3" >"$T/e3"
	cmp "$T/e1" "$T/e3"
	kvfs get "$T/s3" /blob >"$T/blob"
	assert_file_bytes "$T/blob" 'a\0b'
}

@test "load refuses a store that holds data, and leaves it alone" {
	kvfs import "$STORE" / "$T/canonical.json"
	kvfs dump "$STORE" >"$T/d1"
	echo '{"other":1}' | kvfs import "$T/s2" / -
	run -1 kvfs load "$T/s2" "$T/d1"
	assert_output --regexp '^kvfs: '
	run -0 kvfs export --compact "$T/s2"
	assert_output '{"other":1}'
	run -1 kvfs load "$T/s3" "$T/no-such-dump"
	assert_output "kvfs: $T/no-such-dump: No such file or directory"
}

@test "load refuses garbage and leaves the store empty" {
	printf 'this is not a dump\n' >"$T/junk"
	run -1 kvfs load "$T/s2" "$T/junk"
	assert_output --regexp '^kvfs: '
	# a failed load creates no store; an existing empty one stays empty
	[ ! -e "$T/s2" ]
	kvfs mkdir --create "$T/s2" /d
	kvfs rm "$T/s2" /d
	run -1 kvfs load "$T/s2" "$T/junk"
	run -0 kvfs export --compact "$T/s2"
	assert_output '{}'
}

# ---- check ----

@test "check passes on a good store and counts its keys" {
	kvfs import "$STORE" / "$T/canonical.json"
	run -0 kvfs check "$STORE"
	assert_output "check: $CANONICAL_KEYS keys, 0 problems"
}

@test "check reports injected bad records and exits 1" {
	skip_on_etcd "bad records are injected with mdb_load into data.mdb"
	echo '{"a":1,"b":"x"}' | kvfs import "$STORE" / -
	run -0 kvfs check "$STORE"
	assert_output 'check: 2 keys, 0 problems'
	inject "$STORE" data '\02bad\00' "$(seal '\02bad\00' '\99\00')"             # unknown tag
	inject "$STORE" data '\02short\00' "$(seal '\02short\00' '\01\01')"         # header cut short
	inject "$STORE" data '\02s\00' "$(seal '\02s\00' '\01\00\00\00\00\00\00\00\00\00\ff\fe')"   # not UTF-8
	run -1 kvfs check "$STORE"
	assert_line 'check: 5 keys, 3 problems'
	assert_line 'check: 0262616400: record does not decode'   # ("bad")
	assert_line 'check: 0273686f727400: record does not decode'   # ("short")
	assert_line 'check: 027300: string is not valid UTF-8'
	# good data is still readable
	run -0 kvfs get "$STORE" /a
	assert_output '1'
}

@test "check reports a key that is not a valid tuple" {
	skip_on_etcd "the bad key is injected with mdb_load into data.mdb"
	echo '{"a":1}' | kvfs import "$STORE" / -
	inject "$STORE" data '\02unterminated' '\06\00\00\00\00\00\00\00\00\00'
	run -1 kvfs check "$STORE"
	assert_line 'check: 02756e7465726d696e61746564: key is not a tuple of names and indices'
	# the injected record carries no checksum either (format 2)
	assert_line 'check: 02756e7465726d696e61746564: checksum mismatch'
	assert_line 'check: 2 keys, 2 problems'
}

# ---- backup ----

@test "backup writes a store that exports and dumps identically" {
	skip_on_etcd "backup is a hot copy of the LMDB file (kvfs dump is the etcd store's copy)"
	kvfs import "$STORE" / "$T/canonical.json"
	run -0 kvfs backup "$STORE" "$T/copy"
	assert_line --index 0 "backup: copied $STORE to $T/copy ($CANONICAL_KEYS keys, $(kvfs info "$T/copy" | sed -n 's/^used: .*(\(.*\))$/\1/p'))"
	assert_output --partial "kvfs mount $T/copy MNT"
	kvfs export "$STORE" >"$T/e1"
	kvfs export "$T/copy" >"$T/e2"
	cmp "$T/e1" "$T/e2"
	kvfs dump "$STORE" >"$T/d1"
	kvfs dump "$T/copy" >"$T/d2"
	cmp "$T/d1" "$T/d2"
	run -0 kvfs check "$T/copy"
	# the original is still writable, and the copy is independent of it
	kvfs put "$STORE" /big 1
	run -0 kvfs get "$T/copy" /big
	assert_output '9007199254740993'
}

@test "backup goes into an empty directory, never a non-empty one" {
	skip_on_etcd "backup is a hot copy of the LMDB file"
	kvfs put --create "$STORE" /a 1
	mkdir "$T/empty"
	run -0 kvfs backup "$STORE" "$T/empty"
	run -0 kvfs get "$T/empty" /a
	assert_output '1'
	run -1 kvfs backup "$STORE" "$T/empty"
	assert_output "kvfs: $T/empty: not empty; a backup needs a new or empty directory"
	touch "$T/file"
	run -1 kvfs backup "$STORE" "$T/file"
	assert_output "kvfs: $T/file: exists and is not a directory"
}

@test "backup makes the missing parents of DIR, and a failed one removes them again" {
	kvfs put --create "$STORE" /a 1
	run kvfs backup "$STORE" "$T/backups/2026/copy"
	if is_etcd; then
		# No hot copy on etcd: the failure leaves no directory it made.
		assert_failure 1
		assert_output --partial 'has no hot copy'
		[ ! -e "$T/backups" ]
	else
		assert_success
		run -0 kvfs get "$T/backups/2026/copy" /a
		assert_output '1'
	fi
	mkdir "$T/kept"
	run kvfs backup "$STORE" "$T/kept/new/copy"
	is_etcd && [ -d "$T/kept" ] && [ ! -e "$T/kept/new" ]
	is_etcd || [ -f "$T/kept/new/copy/data.mdb" ]
}

@test "backup is a consistent copy while another process keeps writing" {
	skip_on_etcd "backup is a hot copy of the LMDB file"
	kvfs import "$STORE" / "$T/canonical.json"
	kvfs put --type integer "$STORE" /n 0
	# the writer goes on until the backup is over (150 puts at most: they
	# took 80 s under ASan when all of them ran whatever the backup did)
	( for i in $(seq 1 150); do
		[ -e "$T/stop" ] && break
		kvfs put --type integer "$STORE" /n "$i" || exit 1
		echo "$i" >"$T/last"
	done ) &
	writer=$!
	eventually 30 test -s "$T/last"	# writing when the backup starts
	run -0 kvfs backup "$STORE" "$T/copy"
	touch "$T/stop"
	wait "$writer"
	run -0 kvfs check "$T/copy"
	run -0 kvfs get "$T/copy" /n
	[[ "$output" =~ ^[0-9]+$ ]]
	[ "$output" -le "$(cat "$T/last")" ]
	run -0 kvfs get "$STORE" /n
	assert_output "$(cat "$T/last")"
	kvfs export "$T/copy" /arr >"$T/a1"
	kvfs export "$STORE" /arr >"$T/a2"
	cmp "$T/a1" "$T/a2"
}

# ---- format versions ----

@test "a store written by a newer kvfs is refused and left alone" {
	skip_on_etcd "the newer format is written into data.mdb with mdb tools (tests/82 covers a foreign etcd prefix)"
	kvfs put --create "$STORE" /a 1
	inject "$STORE" meta format '\00\00\00\05'
	for verb in ls export dump check info; do
		run -1 kvfs "$verb" "$STORE"
		assert_output --regexp '^kvfs: .*newer'
	done
	run -1 kvfs put "$STORE" /a 2
	assert_output --regexp '^kvfs: .*newer'
	run -1 kvfs backup "$STORE" "$T/copy"
	assert_output --regexp '^kvfs: .*newer'
	run -0 mdb_dump -s meta -p "$STORE"
	assert_line ' \00\00\00\05'
}

@test "an LMDB store that kvfs did not write is refused" {
	skip_on_etcd "an LMDB file of another program (tests/82: a foreign etcd prefix is refused)"
	mkdir "$STORE"
	inject "$STORE" data 'hello' 'world'
	run -1 kvfs ls "$STORE"
	assert_output --regexp "^kvfs: .*$STORE"
	run -1 kvfs put "$STORE" /a 1
	assert_output --regexp '^kvfs: '
}
