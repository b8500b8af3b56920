#!/usr/bin/env bats
# Issue 32, section 1: a table's rules (type, max length, unique, reference,
# key fields) are judged on what a new field holds when its write completes
# (a file at its close), on every way a leaf is born: create + write +
# close (echo, printf, cp, tee), `: >` then `>>`, mv into a row, truncate,
# mknod, kvfs put. Text written to a column is read as the column's type.
# A refusal stores nothing, fails close, and says why in user.kvfs.error.

# bats file_tags=mount,tables,backends

load 'test_helper/common'
load 'test_helper/tables'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

# The tables of towns, made once for the file in a store of its own and
# kept as a dump: eleven tests use them, and the eight kvfs starts that
# make them cost 0.3 s each under ASan, where one load does it.
setup_file() {
	local s=$BATS_FILE_TMPDIR/towns
	kvfs mkdir --create "$s" /cities
	kvfs mkdir "$s" /people
	kvfs table create "$s" /cities --key-depth 1
	kvfs import "$s" /cities/Paris - <<<'{"country":"fr"}'
	kvfs table create "$s" /people --key-depth 1 --key-fields id
	kvfs table column "$s" /people id string
	kvfs table column "$s" /people age integer
	kvfs table column "$s" /people city string --references /cities
	kvfs table column "$s" /people name string --max-length 5
	kvfs table column "$s" /people email string
	kvfs index create "$s" /people by_email email --unique
	kvfs dump "$s" >"$BATS_FILE_TMPDIR/towns.dump"
}

# cities: the table /cities with the row Paris; people: /people keyed by
# id, with an integer age, a city referencing /cities, a name of at most 5
# characters, a unique email. Both empty of other rows. Loaded into the
# mounted store by another process, as kvfs table create would be.
towns() {
	kvfs load "$STORE" "$BATS_FILE_TMPDIR/towns.dump"
	caught_up	# an etcd mount sees another process's commit once its watch did
	mkdir "$MNT/people/p1" "$MNT/people/p2"
}

# write_close PATH TEXT [FLAGS]: opens PATH (O_CREAT|O_WRONLY, plus FLAGS:
# trunc, append, excl), writes TEXT, closes (after 0.4 s with the flag
# linger: a slow writer); prints "closed" or "close failed ERRNO" (an open
# or write refusal fails the command).
write_close() {
	python3 - "$@" <<'PY'
import errno, os, sys, time
path, text = sys.argv[1], sys.argv[2].encode()
flags = os.O_CREAT | os.O_WRONLY
linger = "linger" in sys.argv[3:]
for f in sys.argv[3:]:
    flags |= {"trunc": os.O_TRUNC, "append": os.O_APPEND, "excl": os.O_EXCL, "linger": 0}[f]
fd = os.open(path, flags, 0o644)
os.write(fd, text)
if linger:
    time.sleep(0.4)
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print("close failed", errno.errorcode[e.errno])
PY
}

# reads FILE TEXT: cat FILE prints TEXT.
reads() {
	[ "$(cat "$1")" = "$2" ]
}

# p1_is JSON: the row p1 as kvfs export --compact prints it.
p1_is() {
	run -0 kvfs export --compact "$STORE" /people/p1
	assert_output "$1"
}

@test "issue 32 repro: echo into a new integer field and a new reference field of a row" {
	towns
	echo Ann >"$MNT/people/p1/name"
	echo 41 >"$MNT/people/p1/age"
	echo Paris >"$MNT/people/p1/city"
	p1_is '{"age":41,"city":"Paris","name":"Ann"}'
	run -0 cat "$MNT/people/p1/age"
	assert_output 41
	run -0 getfattr --absolute-names --only-values -n user.kvfs.type "$MNT/people/p1/age"
	assert_output integer
	run -0 kvfs check "$STORE"
}

@test "create + write + close: each rule refuses a new field at close, nothing stored, the reason on the row" {
	towns
	echo 7 >"$MNT/people/p2/age"
	echo b@x >"$MNT/people/p2/email"
	run -0 write_close "$MNT/people/p1/age" $'abc\n' trunc
	assert_output 'close failed EINVAL'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'field age must be integer, not string'
	run -0 write_close "$MNT/people/p1/city" $'Lyon\n' trunc
	assert_output 'close failed EINVAL'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'field city references /cities/Lyon, which does not exist'
	run -0 write_close "$MNT/people/p1/name" $'Annabel\n' trunc
	assert_output 'close failed EINVAL'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'field name is longer than 5'
	run -0 write_close "$MNT/people/p1/email" $'b@x\n' trunc
	assert_output 'close failed EEXIST'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'unique index by_email'
	run -0 write_close "$MNT/people/p1/id" $'p9\n' trunc
	assert_output 'close failed EINVAL'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'key field id does not equal'
	p1_is '{}'
	[ ! -e "$MNT/people/p1/age" ]
	[ ! -e "$MNT/people/p1/city" ]
	run -0 ls -A "$MNT/people/p1"
	assert_output ''
	# the same fields with values the rules accept
	for f in age:41 city:Paris name:Ann email:a@x id:p1; do
		run -0 write_close "$MNT/people/p1/${f%%:*}" "${f#*:}"$'\n' trunc
		assert_output closed
	done
	p1_is '{"age":41,"city":"Paris","email":"a@x","id":"p1","name":"Ann"}'
	run -0 ls -f "$MNT/people/@by_email/a@x"
	assert_line p1
	run -0 kvfs check "$STORE"
}

@test "printf, tee, cp and coreutils echo add fields; a refused one makes the tool fail" {
	towns
	printf '%s' 40 >"$MNT/people/p1/age"
	p1_is '{"age":40}'
	run -0 tee "$MNT/people/p1/name" <<<'Ann'
	printf 'Paris\n' >"$BATS_TEST_TMPDIR/city"
	cp "$BATS_TEST_TMPDIR/city" "$MNT/people/p1/city"
	p1_is '{"age":40,"city":"Paris","name":"Ann"}'
	printf 'x@y\n' >"$BATS_TEST_TMPDIR/email"
	run -0 cp "$BATS_TEST_TMPDIR/email" "$MNT/people/p2/email"
	run -1 cp "$BATS_TEST_TMPDIR/email" "$MNT/people/p1/email"
	run -1 bash -c "/bin/echo Annabel >'$MNT/people/p2/name'"
	run -1 bash -c "echo Rome | tee '$MNT/people/p2/city'"
	run -0 kvfs export --compact "$STORE" /people
	assert_output '{"p1":{"age":40,"city":"Paris","name":"Ann"},"p2":{"email":"x@y"}}'
	run -0 kvfs check "$STORE"
}

@test ": > then >>: an empty value is judged as such, held a moment for the append that creates the field" {
	towns
	# an empty string is a name; an empty integer is no integer
	: >"$MNT/people/p1/name"
	# (committed at its release, which the kernel sends after close returns)
	eventually 5 kvfs get "$STORE" /people/p1/name
	p1_is '{"name":""}'
	run -0 write_close "$MNT/people/p1/age" '' trunc
	assert_output 'close failed EINVAL'
	p1_is '{"name":""}'
	run -0 err "$MNT/people/p1"
	assert_output --partial 'field age must be integer, not string'
	# the name waits a moment for an append, then goes
	eventually 5 test ! -e "$MNT/people/p1/age"
	p1_is '{"name":""}'
	: >"$MNT/people/p1/age"
	echo 41 >>"$MNT/people/p1/age"
	p1_is '{"age":41,"name":""}'
	echo Ann >>"$MNT/people/p1/name"
	p1_is '{"age":41,"name":"Ann"}'
	# an existing field too: the refused truncation is held for the append,
	# whether the append opens before the release of `: >` or after it
	# (the value was 42 or 4142 by that race), and alone it changes nothing
	for i in 42 43 44 45 46; do
		: >"$MNT/people/p1/age"
		echo "$i" >>"$MNT/people/p1/age"
		p1_is "{\"age\":$i,\"name\":\"Ann\"}"
	done
	: >"$MNT/people/p1/age"
	p1_is '{"age":46,"name":"Ann"}'
	eventually 5 reads "$MNT/people/p1/age" 46
	run -0 kvfs check "$STORE"
}

@test "a refused write of a field holds nothing for the next: echo > after it is judged and stored" {
	towns
	# The shell's > closes a copy of the descriptor before writing, and the
	# empty value the reference refuses held the writer for a >> to come.
	# A refused close then left its text held, and the next echo > within
	# the hold joined a leaf never created: exit 0, nothing stored (found
	# by tests/76's seeds 1, 6 and 9).
	run -1 bash -c "/bin/echo Lyon >'$MNT/people/p1/city'"
	run -1 bash -c "/bin/echo Rome >'$MNT/people/p1/city'"
	p1_is '{}'
	run -1 bash -c "/bin/echo Lyon >'$MNT/people/p1/city'"
	run -0 bash -c "/bin/echo Paris >'$MNT/people/p1/city'"
	p1_is '{"city":"Paris"}'
	# the same after : > then a refused >>
	: >"$MNT/people/p2/city"
	run -1 bash -c "/bin/echo Lyon >>'$MNT/people/p2/city'"
	run -0 bash -c "/bin/echo Paris >'$MNT/people/p2/city'"
	run -0 kvfs export --compact "$STORE" /people/p2
	assert_output '{"city":"Paris"}'
	run -0 kvfs check "$STORE"
}

# The kernel sends release after close has returned, and a loaded daemon
# took a refused echo's release after the next echo had opened the name
# and joined its writer: that release ended the writer's work, and the
# next value was refused (EINVAL: a leaf made by create taken as stored)
# or its close said 0 and stored nothing (an etcd pass in CI). The test
# hook holds every release 15 ms before it begins, about the time the
# next echo takes to start; the two shell patterns of the test above run
# on six rows each.
@test "a release that comes after the next open of the name leaves that open's writer whole" {
	unmount_store
	KVFS_TEST_RELEASE_LATE_MS=15 mount_store
	towns
	local r
	for r in 1 2 3 4 5 6; do
		mkdir "$MNT/people/a$r" "$MNT/people/b$r"
		run -1 bash -c "/bin/echo Lyon >'$MNT/people/a$r/city'"
		run -1 bash -c "/bin/echo Lyon >'$MNT/people/a$r/city'"
		run -0 bash -c "/bin/echo Paris >'$MNT/people/a$r/city'"
		: >"$MNT/people/b$r/city"	# refused at close, held for the >> (a shell ignores it)
		run -1 bash -c "/bin/echo Lyon >>'$MNT/people/b$r/city'"
		run -0 bash -c "/bin/echo Paris >'$MNT/people/b$r/city'"
	done
	for r in a1 a2 a3 a4 a5 a6 b1 b2 b3 b4 b5 b6; do
		run -0 kvfs export --compact "$STORE" "/people/$r"
		assert_output '{"city":"Paris"}'
	done
	run -0 kvfs check "$STORE"
}

@test "mv into a row: a moved text file takes the column's type; a refused one stays where it was" {
	towns
	mkdir "$MNT/tmp"
	echo 41 >"$MNT/tmp/age"
	mv "$MNT/tmp/age" "$MNT/people/p1/age"
	p1_is '{"age":41}'
	[ ! -e "$MNT/tmp/age" ]
	echo 42 >"$BATS_TEST_TMPDIR/age"
	mv "$BATS_TEST_TMPDIR/age" "$MNT/people/p2/age"
	run -0 kvfs export --compact "$STORE" /people/p2
	assert_output '{"age":42}'
	echo Lyon >"$MNT/tmp/city"
	run -1 mv "$MNT/tmp/city" "$MNT/people/p1/city"
	echo abc >"$MNT/tmp/age"
	run -1 mv "$MNT/tmp/age" "$MNT/people/p1/age"
	run -0 err "$MNT/people/p1"
	assert_output --partial 'field age must be integer'
	run -0 cat "$MNT/tmp/age"
	assert_output abc
	p1_is '{"age":41}'
	# an editor's temporary file renamed over the field
	sed -i 's/41/43/' "$MNT/people/p1/age"
	p1_is '{"age":43}'
	run -0 kvfs check "$STORE"
}

@test "truncate: a new field is judged empty, an existing one keeps its value when refused" {
	towns
	run -1 truncate -s 0 "$MNT/people/p1/age"
	# (the kernel may keep the name it was given at the create until the
	# invalidation worker tells it otherwise: a moment)
	eventually 5 test ! -e "$MNT/people/p1/age"
	run -0 truncate -s 0 "$MNT/people/p1/name"
	p1_is '{"name":""}'
	echo 41 >"$MNT/people/p1/age"
	run -1 truncate -s 0 "$MNT/people/p1/age"
	p1_is '{"age":41,"name":""}'
	run -0 truncate -s 1 "$MNT/people/p1/age"
	p1_is '{"age":4,"name":""}'
	run -0 kvfs check "$STORE"
}

@test "mknod then write (tar -x), also under -o commit=MS" {
	towns
	cat >"$BATS_TEST_TMPDIR/mknod.py" <<'PY'
import errno, os, stat, sys
path, text = sys.argv[1], sys.argv[2].encode()
os.mknod(path, stat.S_IFREG | 0o644)
fd = os.open(path, os.O_WRONLY)
os.write(fd, text)
try:
    os.close(fd)
    print("closed")
except OSError as e:
    print("close failed", errno.errorcode[e.errno])
PY
	run -0 python3 "$BATS_TEST_TMPDIR/mknod.py" "$MNT/people/p1/age" $'41\n'
	assert_output closed
	run -0 python3 "$BATS_TEST_TMPDIR/mknod.py" "$MNT/people/p1/city" $'Lyon\n'
	assert_output 'close failed EINVAL'
	p1_is '{"age":41}'
	is_etcd && return 0	# -o commit=MS is LMDB's (store/lmdb/lmdb_queue.c)
	remount -o commit=50
	run -0 python3 "$BATS_TEST_TMPDIR/mknod.py" "$MNT/people/p2/age" $'42\n'
	assert_output closed
	run -0 python3 "$BATS_TEST_TMPDIR/mknod.py" "$MNT/people/p2/city" $'Lyon\n'
	assert_output 'close failed EINVAL'
	# under -o commit another process sees the batch at its commit, at most
	# 50 ms after the close (docs/COMMITS.md), not at once: an export begun
	# sooner read {} (asan pass, 2026-11-30)
	eventually 5 bash -c '[ "$("$1" export --compact "$2" /people/p2)" = "{\"age\":42}" ]' _ "$KVFS_BIN" "$STORE"
	run -0 kvfs export --compact "$STORE" /people/p2
	assert_output '{"age":42}'
	run -0 kvfs check "$STORE"
}

@test "tar -x of rows into the table" {
	towns
	echo 41 >"$MNT/people/p1/age"
	echo Paris >"$MNT/people/p1/city"
	tar -C "$MNT" -cf "$BATS_TEST_TMPDIR/rows.tar" people/p1
	rm "$MNT/people/p1/age" "$MNT/people/p1/city"
	rmdir "$MNT/people/p1"
	tar -C "$MNT" -xf "$BATS_TEST_TMPDIR/rows.tar"
	p1_is '{"age":41,"city":"Paris"}'
	run -0 kvfs check "$STORE"
}

@test "kvfs put: a new field's value is read as its column's type, and refused when it breaks a rule" {
	towns
	run -0 kvfs put "$STORE" /people/p1/age 41
	run -0 kvfs put "$STORE" /people/p1/city Paris
	run -1 kvfs put "$STORE" /people/p2/age abc
	assert_output --partial 'field age must be integer'
	run -1 kvfs put "$STORE" /people/p2/city Lyon
	run -1 kvfs put "$STORE" /people/p2/name Annabel
	run -0 kvfs export --compact "$STORE" /people
	assert_output '{"p1":{"age":41,"city":"Paris"},"p2":{}}'
	run -0 cat "$MNT/people/p1/age"
	assert_output 41
}

@test "text written to number, double and boolean columns is read as their types; other fields stay text" {
	towns
	kvfs table column "$STORE" /people score number
	kvfs table column "$STORE" /people height double
	kvfs table column "$STORE" /people admin boolean
	echo 4.5 >"$MNT/people/p1/score"
	echo 7 >"$MNT/people/p2/score"
	echo 1.75 >"$MNT/people/p1/height"
	echo true >"$MNT/people/p1/admin"
	echo 12 >"$MNT/people/p1/note"
	run -0 kvfs export --compact "$STORE" /people
	assert_output '{"p1":{"admin":true,"height":1.75,"note":"12","score":4.5},"p2":{"score":7}}'
	run -0 write_close "$MNT/people/p2/admin" $'yes\n' trunc
	assert_output 'close failed EINVAL'
	run -0 cat "$MNT/people/p1/height"
	assert_output 1.75
	run -0 kvfs check "$STORE"
}

# Issue 32 section 2: a key field the row leaves out takes its value from
# the key, and every rule of its column applies to that value (they were
# skipped: a row naming a geo that does not exist, a key "abc" under an
# integer key column and one past --max-length were all accepted).
@test "a key field the row leaves out obeys its column: reference, type and max length, through cp and kvfs import" {
	mkdir "$MNT/geo" "$MNT/poi" "$MNT/n"
	kvfs table create "$STORE" /geo --key-depth 1
	row geo/G1 '{"lat":48}'
	kvfs table create "$STORE" /poi --key-depth 1 --key-fields poi_id
	kvfs table column "$STORE" /poi poi_id string --references /geo --max-length 8
	kvfs table create "$STORE" /n --key-depth 1 --key-fields id
	kvfs table column "$STORE" /n id integer
	echo '{"poiName":"Nowhere"}' >"$BATS_TEST_TMPDIR/d.json"
	run -1 cp "$BATS_TEST_TMPDIR/d.json" "$MNT/poi/GHOST.json"
	run -0 err "$MNT/poi"
	assert_output --partial 'field poi_id references /geo/GHOST, which does not exist'
	run -1 kvfs import "$STORE" /poi/GHOST "$BATS_TEST_TMPDIR/d.json"
	assert_output --partial 'references /geo/GHOST'
	run -1 kvfs import "$STORE" /poi/G1TOOLONG "$BATS_TEST_TMPDIR/d.json"
	assert_output --partial 'key field poi_id is longer than 8'
	run -1 kvfs import "$STORE" /n/abc "$BATS_TEST_TMPDIR/d.json"
	assert_output --partial 'key field id must be integer, not "abc"'
	run -1 mkdir "$MNT/n/xyz"
	# the rows the rules allow
	cp "$BATS_TEST_TMPDIR/d.json" "$MNT/poi/G1.json"
	kvfs import "$STORE" /n/42 "$BATS_TEST_TMPDIR/d.json"
	run -0 kvfs export --compact "$STORE" /poi
	assert_output '{"G1":{"poiName":"Nowhere"}}'
	run -0 kvfs export --compact "$STORE" /n
	assert_output '{"42":{"poiName":"Nowhere"}}'
	# the referenced row cannot go while the key names it
	run -1 kvfs rm -r "$STORE" /geo/G1
	assert_output --partial 'still referenced by /poi/G1 (field poi_id)'
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

# Issue 32 section 3: rm -r unlinks a row's names one by one, then removes
# the row. The mount holds the unlinks a table would refuse alone (a
# required field) and every unlink in a row another row references, and
# removes the row whole at its rmdir (fs/rmhold.c).

# geo_poi: the tables of the issue's example. geo (key depth 1) with a
# required name and an index by_lat; poi keyed by poi_id + language, its
# poi_id referencing geo, poiName required with a unique index, an index
# by_lat. Rows geo/A (with a nested object), geo/B; poi/A/fr (with an
# array), poi/A/en, poi/B/fr.
geo_poi() {
	mkdir "$MNT/geo" "$MNT/poi"
	kvfs table create "$STORE" /geo --key-depth 1
	kvfs table column "$STORE" /geo name string --required
	kvfs index create "$STORE" /geo by_lat lat
	kvfs table create "$STORE" /poi --key-depth 2 --key-fields poi_id,language
	kvfs table column "$STORE" /poi poi_id string --references /geo
	kvfs table column "$STORE" /poi poiName string --required
	kvfs index create "$STORE" /poi by_poiName poiName --unique
	kvfs index create "$STORE" /poi by_lat lat
	row geo/A '{"name":"Paris","lat":48.85,"tags":{"city":true}}'
	row geo/B '{"name":"Lyon","lat":45.76}'
	mkdir "$MNT/poi/A" "$MNT/poi/B"
	row poi/A/fr '{"poiName":"Tour Eiffel","lat":48.858,"tags":["iron","view"]}'
	row poi/A/en '{"poiName":"Eiffel Tower","lat":48.858}'
	row poi/B/fr '{"poiName":"Fourviere","lat":45.762}'
}

@test "issue 32 repro: rm -r of a row whose required field has a unique index removes the row whole" {
	geo_poi
	run -0 rm -r "$MNT/poi/A/fr"
	assert_output ''
	[ ! -e "$MNT/poi/A/fr" ]
	run -0 ls "$MNT/poi/A"
	assert_output en
	run -0 ls "$MNT/poi/@by_poiName"
	assert_output $'Eiffel Tower\nFourviere'
	run -0 kvfs find "$STORE" /poi by_poiName 'Tour Eiffel'
	assert_output ''
	run -0 kvfs find "$STORE" /poi by_lat 48.858
	assert_output A/en
	# the unique name is free again
	row poi/B/en '{"poiName":"Tour Eiffel"}'
	# a key level, with its rows
	run -0 rm -r "$MNT/poi/A"
	run -0 kvfs export --compact "$STORE" /poi
	assert_output '{"B":{"en":{"poiName":"Tour Eiffel"},"fr":{"lat":45.762,"poiName":"Fourviere"}}}'
	run -0 kvfs find "$STORE" /poi by_lat --from 0
	assert_output B/fr
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

@test "rm -r of a row another row references is refused and leaves the row whole, the reason in user.kvfs.error" {
	geo_poi
	run -0 kvfs export --compact "$STORE" /geo
	local before=$output
	run -1 rm -r "$MNT/geo/A"
	assert_output --partial "cannot remove '$MNT/geo/A': Device or resource busy"
	run -0 kvfs export --compact "$STORE" /geo
	assert_output "$before"
	run -0 ls "$MNT/geo/A"
	assert_output $'lat\nname\ntags'
	run -0 ls "$MNT/geo/A/tags"
	assert_output city
	run -0 cat "$MNT/geo/A/name"
	assert_output Paris
	run -0 ls "$MNT/geo/@by_lat/48.85"
	assert_output A
	run -0 err "$MNT/geo/A"
	assert_output --partial '/geo/A: still referenced by /poi/A/'
	# once the rows naming it are gone, it goes
	rm -r "$MNT/poi/A"
	run -0 rm -r "$MNT/geo/A"
	run -0 kvfs export --compact "$STORE" /geo
	assert_output '{"B":{"lat":45.76,"name":"Lyon"}}'
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

@test "rm of a required field alone ends refused: the field comes back, the reason in user.kvfs.error" {
	geo_poi
	run -0 rm "$MNT/poi/B/fr/poiName"
	eventually 10 test -e "$MNT/poi/B/fr/poiName"
	run -0 cat "$MNT/poi/B/fr/poiName"
	assert_output Fourviere
	run -0 ls "$MNT/poi/B/fr"
	assert_output $'lat\npoiName'
	run -0 err "$MNT/poi/B/fr"
	assert_output --partial '/poi/B/fr: field poiName is required'
	run -0 ls "$MNT/poi/@by_poiName"
	assert_line Fourviere
	# removed, then written again at once: the new value is the field
	rm "$MNT/poi/B/fr/poiName"
	echo Basilique >"$MNT/poi/B/fr/poiName"
	# a field of a referenced row that is not required: removed for real
	run -0 rm "$MNT/geo/B/lat"
	sync "$MNT"	# fsyncdir: what is held is tried now
	[ ! -e "$MNT/geo/B/lat" ]
	run -0 kvfs export --compact "$STORE" /poi/B/fr
	assert_output '{"lat":45.762,"poiName":"Basilique"}'
	run -0 kvfs export --compact "$STORE" /geo/B
	assert_output '{"name":"Lyon"}'
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

# The rmdir that ends rm -r removes a row whose stored names are all held
# in the transaction that finds no other name there: a name another
# process writes into the row between the unlinks and that removal (the
# hook KVFS_TEST_ROW_GATE stops the rmdir there) is neither removed
# unchecked nor lost; the rmdir fails as on a disk (it was removed with
# the row when the check was a listing of its own before the removal).
@test "a name another process writes into a row that rm -r is removing stays: the rmdir fails ENOTEMPTY" {
	local gate=$BATS_TEST_TMPDIR/gate
	mkfifo "$gate"
	unmount_store
	KVFS_TEST_ROW_GATE=$gate mount_store
	geo_poi
	run -0 python3 - "$MNT/poi/B/fr" "$gate" "$KVFS_BIN" "$STORE" <<'PY'
import errno, os, signal, subprocess, sys, threading
row, gate, kvfs, store = sys.argv[1:]
signal.alarm(30)
os.unlink(row + "/lat")          # removed
os.unlink(row + "/poiName")      # held: the field is required
out = []
def rmdir():
    try:
        os.rmdir(row)
        out.append("removed")
    except OSError as e:
        out.append(errno.errorcode[e.errno])
t = threading.Thread(target=rmdir)
t.start()
fd = os.open(gate, os.O_WRONLY)  # opens once the daemon waits there
subprocess.run([kvfs, "put", store, "/poi/B/fr/note", "kept"], check=True)
os.close(fd)
t.join()
print(out[0])
PY
	assert_output ENOTEMPTY
	run -0 kvfs export --compact "$STORE" /poi/B/fr
	assert_output '{"note":"kept","poiName":"Fourviere"}'
	# the held unlink, tried alone now, is refused: the row is as it was
	sync "$MNT/poi"
	run -0 ls "$MNT/poi/B/fr"
	assert_output $'note\npoiName'
}

# A create or rename onto a held name ends its hold only once it is
# stored: refused by a rule, the removal stands and the name stays hidden
# (it was shown again, the old value back, when the hold ended first).
# One process, so that no second passes idle and the hold is tried alone.
@test "a create or mv onto a held name that a rule refuses leaves it removed; one accepted ends the hold" {
	geo_poi
	run -0 python3 - "$MNT/poi/B/fr" <<'PY'
import errno, os, sys
row = sys.argv[1]
def put(text):
    fd = os.open(row + "/poiName", os.O_CREAT | os.O_WRONLY | os.O_TRUNC)
    os.write(fd, text)
    try:
        os.close(fd)
        return "stored"
    except OSError as e:
        return errno.errorcode[e.errno]
def mv():
    try:
        os.rename(row + "/lat", row + "/poiName")  # a double: refused
        return "moved"
    except OSError as e:
        return errno.errorcode[e.errno]
os.unlink(row + "/poiName")      # held: the field is required
print(put(b"Tour Eiffel"), sorted(os.listdir(row)))   # poi/A/fr has it
print(mv(), sorted(os.listdir(row)))
print(put(b"Basilique"), sorted(os.listdir(row)))
PY
	assert_output "EEXIST ['lat']
EINVAL ['lat']
stored ['lat', 'poiName']"
	run -0 kvfs export --compact "$STORE" /poi/B/fr
	assert_output '{"lat":45.762,"poiName":"Basilique"}'
}

@test "rm -r of whole tables removes their rows, index entries and declarations" {
	geo_poi
	run -0 rm -r "$MNT/poi" "$MNT/geo"
	assert_output ''
	run -0 ls -A "$MNT"
	assert_output ''
	run -1 kvfs table show "$STORE" /poi
	run -1 kvfs table show "$STORE" /geo
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

# A table's declaration is kept under its directory's key: a write that
# re-keys the directory or puts something else in its place would leave
# the declaration naming nothing, and the rows plain. cp -a, tar --xattrs
# and rsync -aX set user.kvfs.type while restoring; a .json file beside
# its directory replaces it (docs/FILES.md).
@test "a change of kind, a document or a saved view over a directory holding a table is refused (EBUSY) and keeps it whole; rm -r still removes it" {
	local T=$BATS_TEST_TMPDIR people_schema a
	people
	mkdir -p "$MNT/a/0/t"
	kvfs table create "$STORE" /a/0/t --key-depth 1
	caught_up
	row a/0/t/r1 '{"n":1}'
	people_schema=$(kvfs table show "$STORE" /people)
	a=$(kvfs export --compact "$STORE" /a)
	# the kind of a directory above a table, and of a table itself
	run ! setfattr -n user.kvfs.type -v array "$MNT/a"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/a"
	assert_output --partial '/a: holds the table /a/0/t'
	run ! setfattr -n user.kvfs.type -v array "$MNT/people"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/people"
	assert_output --partial '/people: is a table'
	# a document over the directory holding it: cp, an editor's rename, import
	printf '{"x":1}' >"$T/a.json"
	run ! cp "$T/a.json" "$MNT/a.json"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/a"
	assert_output --partial 'would replace the table /a/0/t'
	cp "$T/a.json" "$MNT/a.txt"
	run ! mv "$MNT/a.txt" "$MNT/a.json"
	assert_output --partial 'Device or resource busy'
	rm "$MNT/a.txt"
	run ! kvfs import "$STORE" /a "$T/a.json"
	assert_output --partial 'would replace the table /a/0/t'
	# the table's own document as an array or a value (as an object it is its rows)
	for doc in '[{"age":1}]' 7; do
		printf '%s' "$doc" >"$T/people.json"
		run ! cp "$T/people.json" "$MNT/people.json"
		assert_output --partial 'Device or resource busy'
	done
	# nothing changed: declarations, rows, index entries
	run -0 kvfs table show "$STORE" /people
	assert_output "$people_schema"
	run -0 kvfs table show "$STORE" /a/0/t
	run -0 kvfs export --compact "$STORE" /a
	assert_output "$a"
	run -0 kvfs find "$STORE" /people by_age --from 0 --to 100
	assert_output 'ann'
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
	# removed on purpose, a table goes with its declaration
	run -0 rm -r "$MNT/a"
	run -1 kvfs table show "$STORE" /a/0/t
}

# Issue 32 section 5: a reference over several fields (tables/poi_names)
# holds on the mount's write paths as a one-field reference does.
@test "a reference over several fields through the mount: cp of a row and echo into a field naming no row are refused; a referenced row is neither removed nor moved" {
	local T=$BATS_TEST_TMPDIR
	poi_names
	# a row leaving out one of the fields references nothing
	echo '{"poi":"NOWHERE","stars":2}' >"$T/r.json"
	cp "$T/r.json" "$MNT/reviews/r2.json"
	kvfs export --compact "$STORE" >"$T/before"
	echo '{"name":"Le Louvre"}' >"$T/n.json"
	run -1 cp "$T/n.json" "$MNT/names/G1/de.json"
	assert_output --partial 'Invalid argument'
	run -0 err "$MNT/names/G1"
	assert_output --partial '/names/G1/de: fields poi_id,language reference /poi/G1/de, which does not exist'
	[ ! -e "$MNT/names/G1/de" ]
	run -0 write_close "$MNT/reviews/r1/lang" de trunc
	assert_output 'close failed EINVAL'
	run -0 err "$MNT/reviews/r1"
	assert_output --partial '/reviews/r1: fields poi,lang reference /poi/G1/de, which does not exist'
	run -0 write_close "$MNT/reviews/r2/lang" en
	assert_output 'close failed EINVAL'
	reads "$MNT/reviews/r1/lang" fr
	[ ! -e "$MNT/reviews/r2/lang" ]
	# removing the referenced row in one transaction, or renaming it: EBUSY, the row whole
	run -1 rm "$MNT/poi/G1/en.json"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/poi/G1"
	assert_output --partial '/poi/G1/en: still referenced by /names/G1/en (fields poi_id,language)'
	run -1 mv "$MNT/poi/G1/fr" "$MNT/poi/G1/it"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/poi/G1"
	assert_output --partial '/poi/G1/fr: still referenced by /reviews/r1 (fields poi,lang)'
	reads "$MNT/poi/G1/fr/poiName" 'Le Louvre'
	# rm -r of it, a field at a time and then the row: refused whole, the
	# fields kept (found by the model test, seed 76: they were unlinked)
	run -1 rm -r "$MNT/poi/G1/en"
	assert_output --partial 'Device or resource busy'
	run -0 err "$MNT/poi/G1"
	assert_output --partial '/poi/G1/en: still referenced by /names/G1/en (fields poi_id,language)'
	reads "$MNT/poi/G1/en/poiName" 'Louvre'
	diff "$T/before" <(kvfs export --compact "$STORE")
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

# A table referenced over several fields only by rows holding null in one
# of them (or leaving it out) is referenced by none: it can be dropped.
@test "rm -r of a table referenced over several fields only by rows holding null there removes it" {
	poi_names
	rm -r "$MNT/names" "$MNT/reviews/r1"
	row reviews/r2 '{"poi":"G1","lang":null,"stars":3}'
	row reviews/r3 '{"poi":"G1","stars":4}'
	run -0 rm -r "$MNT/poi"
	[ ! -e "$MNT/poi" ]
	run -1 kvfs table show "$STORE" /poi
	run -0 kvfs export --compact "$STORE" /reviews
	assert_output '{"r2":{"lang":null,"poi":"G1","stars":3},"r3":{"poi":"G1","stars":4}}'
	# a row naming one still blocks the drop
	mkdir "$MNT/poi"
	kvfs table create "$STORE" /poi --key-depth 2
	mkdir "$MNT/poi/G1"
	row poi/G1/fr '{"poiName":"Le Louvre"}'
	row reviews/r4 '{"poi":"G1","lang":"fr"}'
	run -1 kvfs rm -r "$STORE" /poi
	assert_output --partial 'table still referenced by rows of /reviews (fields poi,lang)'
	run -0 kvfs check "$STORE"
	assert_output --partial ' 0 problems'
}

# An fsync elsewhere in the mount while rm -r is between a row's unlinks
# and its rmdir (an editor saving a file) leaves the row's holds alone.
@test "an fsync of a file in another row does not settle a row's held unlinks: the refused rmdir leaves the row whole" {
	geo_poi
	run -0 kvfs export --compact "$STORE" /geo
	local before=$output
	run -0 python3 - "$MNT" <<'PY'
import errno, os, sys
m = sys.argv[1]
os.unlink(m + "/geo/A/lat")          # held: poi/A references geo/A
fd = os.open(m + "/geo/B/name", os.O_WRONLY | os.O_TRUNC)
os.write(fd, b"Lyon\n")
os.fsync(fd)
os.close(fd)
for n in ("name", "tags/city"):
    os.unlink(m + "/geo/A/" + n)
os.rmdir(m + "/geo/A/tags")
try:
    os.rmdir(m + "/geo/A")
    print("removed")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
	assert_output EBUSY
	run -0 kvfs export --compact "$STORE" /geo
	assert_output "$before"
	run -0 ls "$MNT/geo/A"
	assert_output $'lat\nname\ntags'
	# fsync of the row's parent settles what is held in its rows
	rm "$MNT/geo/A/lat"
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$MNT/geo"
	run -0 kvfs export --compact "$STORE" /geo/A
	assert_output '{"name":"Paris","tags":{"city":true}}'
}

# rm -r of a row that holds a big subtree: the unlink of its required field
# is held first, and the unlinks below take longer than FS_RMHOLD_MS (1 s)
# before the rmdir. The mount is not idle meanwhile: the hold waits.
@test "a held unlink waits while the mount keeps removing: a slow rm -r of a row with a required field removes it whole" {
	geo_poi
	row poi/B/fr '{"poiName":"Fourviere","sub":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8}}'
	run -0 python3 - "$MNT/poi/B/fr" <<'PY'
import os, sys, time
r = sys.argv[1]
os.unlink(r + "/poiName")          # held: the field is required
for n in "abcdefgh":               # an rm -r slowed down (a big subtree, a loaded store)
    time.sleep(0.25)
    os.unlink(r + "/sub/" + n)
os.rmdir(r + "/sub")
os.rmdir(r)
PY
	[ ! -e "$MNT/poi/B/fr" ]
	run -0 kvfs export --compact "$STORE" /poi/B
	assert_output '{}'
	run -0 kvfs find "$STORE" /poi by_poiName Fourviere
	assert_output ''
}
