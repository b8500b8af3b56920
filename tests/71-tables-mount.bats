#!/usr/bin/env bats
# Issue 10 (mount side): a table's reserved @ names through a real mount:
# PATH/@schema.json (read and written), PATH/@NAME/ (an index's values in
# index order, then the rows' keys as symlinks), PATH/@NAME/@range/FROM/TO/,
# all read-only and never cached past a change.

# bats file_tags=tables,mount,backends

load 'test_helper/common'
load 'test_helper/tables'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

@test "cat @schema.json shows the schema as kvfs table show does; @ names are not listed" {
	people
	run -0 cat "$MNT/people/@schema.json"
	assert_output "$(kvfs table show "$STORE" /people)"
	assert_output --partial '"by_age"'
	run -0 ls -a "$MNT/people"
	refute_output --partial '@'
	[ -f "$MNT/people/@schema.json" ]
	[ -d "$MNT/people/@by_age" ]
	[ ! -e "$MNT/people/@nosuch" ]
	[ ! -e "$MNT/people/ann/@schema.json" ]
}

@test "writing @schema.json declares a table and alters it; a refused change keeps the schema and says why" {
	mkdir "$MNT/orders"
	row orders/o1 '{"who":"ann","total":12}'
	row orders/o2 '{"who":"ann","total":7}'
	printf '%s' '{"key_depth":1,"columns":{"total":{"type":"integer","required":true}},"indexes":{"by_who":{"fields":["who"],"unique":false}}}' >"$MNT/orders/@schema.json"
	run -0 kvfs index list "$STORE" /orders
	assert_output 'by_who who'
	run -0 kvfs table show "$STORE" /orders
	assert_output --partial '"required": true'
	run -0 ls -f "$MNT/orders/@by_who/ann"
	assert_line o1
	assert_line o2
	# a unique index over two equal values: refused with EEXIST
	cp "$MNT/orders/@schema.json" "$BATS_TEST_TMPDIR/before.json"
	sed 's/"unique": false/"unique": true/' "$BATS_TEST_TMPDIR/before.json" >"$BATS_TEST_TMPDIR/unique.json"
	run -1 cp "$BATS_TEST_TMPDIR/unique.json" "$MNT/orders/@schema.json"
	assert_output --partial 'File exists'
	run -0 err "$MNT/orders"
	assert_output --partial 'by_who'
	run -0 cat "$MNT/orders/@schema.json"
	assert_output "$(cat "$BATS_TEST_TMPDIR/before.json")"
	# a column type the rows break, and a changed key depth: EINVAL
	printf '%s' '{"key_depth":1,"columns":{"total":{"type":"string"}},"indexes":{}}' >"$BATS_TEST_TMPDIR/bad.json"
	run -1 cp "$BATS_TEST_TMPDIR/bad.json" "$MNT/orders/@schema.json"
	assert_output --partial 'Invalid argument'
	printf '%s' '{"key_depth":2}' >"$BATS_TEST_TMPDIR/depth.json"
	run -1 cp "$BATS_TEST_TMPDIR/depth.json" "$MNT/orders/@schema.json"
	run -0 err "$MNT/orders"
	assert_output --partial 'key_depth'
	run -0 cat "$MNT/orders/@schema.json"
	assert_output "$(cat "$BATS_TEST_TMPDIR/before.json")"
	# dropping the index through the view
	printf '%s' '{"key_depth":1,"columns":{"total":{"type":"integer","required":true}},"indexes":{}}' >"$MNT/orders/@schema.json"
	run -0 kvfs index list "$STORE" /orders
	assert_output ''
	[ ! -e "$MNT/orders/@by_who" ]
	run -0 kvfs check "$STORE"
}

@test "a list of field names in @schema.json too long to keep is refused, never cut short" {
	local long
	long=$(printf 'k%.0s' {1..2100})
	mkdir "$MNT/t"
	printf '{"key_depth":1,"key_fields":["%s"]}' "$long" >"$BATS_TEST_TMPDIR/keys.json"
	run -1 cp "$BATS_TEST_TMPDIR/keys.json" "$MNT/t/@schema.json"
	assert_output --partial 'Invalid argument'
	run -0 err "$MNT/t"
	assert_output --partial 'too long a list of field names'
	run -1 kvfs table show "$STORE" /t
}

# Issue 32 section 5: the "references" member of a schema's text, each
# {"fields": [...], "table": PATH}: a reference over several fields.
@test "writing @schema.json declares a reference over several fields, checked against the rows; left out, it is forgotten" {
	local T=$BATS_TEST_TMPDIR
	mkdir "$MNT/poi" "$MNT/names"
	printf '%s' '{"key_depth":2,"key_fields":["poi_id","language"]}' >"$MNT/poi/@schema.json"
	mkdir "$MNT/poi/G1" "$MNT/names/G1"
	row poi/G1/en '{"poiName":"Louvre"}'
	row names/G1/en '{"name":"The Louvre"}'
	row names/G1/de '{"name":"Der Louvre"}'
	printf '%s' '{"key_depth":2,"key_fields":["poi_id","language"],"references":[{"fields":["poi_id","language"],"table":"/poi"}]}' >"$T/names.json"
	run -1 cp "$T/names.json" "$MNT/names/@schema.json"
	assert_output --partial 'Invalid argument'
	run -0 err "$MNT/names"
	assert_output --partial '/names/G1/de: fields poi_id,language reference /poi/G1/de, which does not exist'
	run -1 kvfs table show "$STORE" /names
	rm -r "$MNT/names/G1/de"
	cp "$T/names.json" "$MNT/names/@schema.json"
	run -0 cat "$MNT/names/@schema.json"
	assert_output "$(kvfs table show "$STORE" /names)"
	assert_output --partial '"table": "/poi"'
	run -0 kvfs index list "$STORE" /names
	assert_output '@poi_id,language poi_id,language'
	run -1 rm "$MNT/poi/G1/en.json"
	assert_output --partial 'Device or resource busy'
	# a reference without its table is no schema: refused, nothing changed
	cp "$MNT/names/@schema.json" "$T/before.json"
	printf '%s' '{"key_depth":2,"key_fields":["poi_id","language"],"references":[{"fields":["poi_id"]}]}' >"$T/bad.json"
	run -1 cp "$T/bad.json" "$MNT/names/@schema.json"
	run -0 err "$MNT/names"
	assert_output --partial 'a reference has fields and a table'
	run -0 cat "$MNT/names/@schema.json"
	assert_output "$(cat "$T/before.json")"
	# the text without it: the reference and its index go
	printf '%s' '{"key_depth":2,"key_fields":["poi_id","language"]}' >"$MNT/names/@schema.json"
	run -0 kvfs index list "$STORE" /names
	assert_output ''
	rm "$MNT/poi/G1/en.json"
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

@test "ls -f of an index lists its values in numeric order: negative, fractional, huge" {
	people
	row people/cy '{"email":"cy@x","age":30.5}'
	row people/dan '{"email":"dan@x","age":100}'
	row people/eve '{"email":"eve@x","age":9007199254740993}'
	row people/fay '{"email":"fay@x","age":9007199254740992}'
	row people/gus '{"email":"gus@x","age":-1e20}'
	row people/hal '{"email":"hal@x","age":30}'
	row people/ivy '{"email":"ivy@x"}'
	run -0 bash -c "ls -f '$MNT/people/@by_age/' | grep -v '^\\.'"
	assert_output "$(printf '%s\n' -100000000000000000000 -4.5 30 30.5 100 9007199254740992 9007199254740993)"
	run -0 ls "$MNT/people/@by_age/30"
	assert_output "$(printf 'ann\nhal')"
	run -0 ls "$MNT/people/@by_age/-1e20"
	assert_output gus
	run -0 ls "$MNT/people/@by_age/9007199254740993"
	assert_output eve
	run -0 ls -f "$MNT/people/@by_email/"
	assert_line 'ivy@x'
	refute_line --partial '"'
}

@test "a value directory holds symlinks to the rows; cat through them reads the row" {
	people
	run -0 readlink "$MNT/people/@by_age/30/ann"
	assert_output '../../ann'
	[ -L "$MNT/people/@by_age/30/ann" ]
	run -0 cat "$MNT/people/@by_age/30/ann/email"
	assert_output 'ann@x'
	run -0 cat "$MNT/people/@by_email/bob@x/bob/age"
	assert_output '-4.5'
	[ ! -e "$MNT/people/@by_age/31" ]
	[ ! -e "$MNT/people/@by_age/30/bob" ]
}

@test "a composite primary key browsed through a composite index nests one directory per level, in ranges too" {
	mkdir "$MNT/names"
	kvfs table create "$STORE" /names --key-depth 2 --key-fields first,last
	kvfs index create "$STORE" /names by_city_age city,age
	mkdir "$MNT/names/Mary"
	row names/Mary/Jane '{"city":"Paris","age":30}'
	row names/Mary/Ann '{"city":"Paris","age":30}'
	mkdir "$MNT/names/Bob"
	row names/Bob/Ray '{"city":"Paris","age":41}'
	run -0 ls "$MNT/names/@by_city_age/"
	assert_output Paris
	run -0 ls -f "$MNT/names/@by_city_age/Paris"
	assert_line 30
	assert_line 41
	run -0 ls "$MNT/names/@by_city_age/Paris/30"
	assert_output Mary
	run -0 ls "$MNT/names/@by_city_age/Paris/30/Mary"
	assert_output "$(printf 'Ann\nJane')"
	run -0 readlink "$MNT/names/@by_city_age/Paris/30/Mary/Jane"
	assert_output '../../../../Mary/Jane'
	run -0 cat "$MNT/names/@by_city_age/Paris/41/Bob/Ray/city"
	assert_output Paris
	# a range over the first field: the key levels nest, each name once
	row names/Mary/Zoe '{"city":"Paris","age":50}'
	row names/Bob/Sam '{"city":"Rome","age":20}'
	run -0 bash -c "ls -f '$MNT/names/@by_city_age/@range/Paris/Paris/' | grep -v '^\\.'"
	assert_output "$(printf 'Mary\nBob')"
	run -0 bash -c "ls -f '$MNT/names/@by_city_age/@range/Paris/Paris/Mary/' | grep -v '^\\.'"
	assert_output "$(printf 'Ann\nJane\nZoe')"
	run -0 readlink "$MNT/names/@by_city_age/@range/Paris/Paris/Mary/Zoe"
	assert_output '../../../../../Mary/Zoe'
	run -0 cat "$MNT/names/@by_city_age/@range/Paris/Paris/Mary/Zoe/age"
	assert_output 50
	[ ! -e "$MNT/names/@by_city_age/@range/Paris/Paris/Bob/Sam" ]
	run -0 ls "$MNT/names/@by_city_age/@range/Paris/Rome/Bob"
	assert_output "$(printf 'Ray\nSam')"
}

@test "a range through the mount lists the rows in index order, bounds inclusive, not listed itself" {
	people
	row people/cy '{"email":"cy@x","age":30.5}'
	row people/dan '{"email":"dan@x","age":100}'
	row people/eve '{"email":"eve@x","age":101}'
	run -0 bash -c "ls -f '$MNT/people/@by_age/@range/-4.5/100/' | grep -v '^\\.'"
	assert_output "$(printf 'bob\nann\ncy\ndan')"
	run -0 ls "$MNT/people/@by_age/@range/30.1/1000/"
	assert_output "$(printf 'cy\ndan\neve')"
	run -0 cat "$MNT/people/@by_age/@range/30.1/1000/dan/email"
	assert_output 'dan@x'
	run -0 readlink "$MNT/people/@by_age/@range/0/100/ann"
	assert_output '../../../../ann'
	[ ! -e "$MNT/people/@by_age/@range/0/100/eve" ]
	run -0 ls "$MNT/people/@by_age/"
	refute_output --partial '@range'
	run -0 ls "$MNT/people/@by_age/@range/200/300/"
	assert_output ''
}

@test "writes into @ names are refused with EROFS and change nothing; a row key beginning with @ is refused" {
	people
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/before"
	run -1 touch "$MNT/people/@by_age/30/new"
	assert_output --partial 'Read-only file system'
	run -1 mkdir "$MNT/people/@by_age/77"
	assert_output --partial 'Read-only file system'
	run -1 rm "$MNT/people/@by_age/30/ann"
	run -1 rm -r "$MNT/people/@by_age"
	run -1 bash -c "echo x >'$MNT/people/@by_age/30/ann2'"
	run -1 mv "$MNT/people/ann" "$MNT/people/@by_age/30/zed"
	run -1 mkdir "$MNT/people/@new"
	assert_output --partial 'Read-only file system'
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/after"
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	# a row key beginning with @ could not be browsed: refused, nothing lost
	printf '%s' '{"email":"zed@x","age":5}' >"$BATS_TEST_TMPDIR/zed.json"
	run -1 cp "$BATS_TEST_TMPDIR/zed.json" "$MNT/people/%@zed.json"
	printf '%s' '{"ann":{"email":"ann@x","age":30},"bob":{"email":"bob@x","age":-4.5},"@zed":{"email":"zed@x","age":5}}' >"$BATS_TEST_TMPDIR/people.json"
	run -1 cp "$BATS_TEST_TMPDIR/people.json" "$MNT/people.json"
	run -1 kvfs import "$STORE" /people "$BATS_TEST_TMPDIR/people.json"
	assert_output --partial '/people/@zed: a row key cannot begin with @ inside a table (the table'"'"'s own names)'
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/after"
	cmp "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
}

@test "rsync -a of the mount copies the rows once and no index tree" {
	people
	rsync -a "$MNT/" "$BATS_TEST_TMPDIR/copy/"
	run -0 find "$BATS_TEST_TMPDIR/copy" -name '@*'
	assert_output ''
	run -0 find "$BATS_TEST_TMPDIR/copy" -type l
	assert_output ''
	run -0 cat "$BATS_TEST_TMPDIR/copy/people/ann/email"
	assert_output 'ann@x'
	[ "$(find "$BATS_TEST_TMPDIR/copy" -type f | wc -l)" -eq 4 ]
}

@test "with the kernel caches on, an index shows a changed field at once" {
	people
	run -0 ls "$MNT/people/@by_age/"
	assert_output "$(printf -- '-4.5\n30')"
	run -0 ls "$MNT/people/@by_age/30"
	assert_output ann
	echo 31 >"$MNT/people/ann/age"
	run -0 ls "$MNT/people/@by_age/"
	assert_output "$(printf -- '-4.5\n31')"
	[ ! -e "$MNT/people/@by_age/30" ]
	run -0 ls "$MNT/people/@by_age/31"
	assert_output ann
	# a whole row replaced through its view, then removed
	row people/ann '{"email":"ann@y","age":-4.5}'
	run -0 ls "$MNT/people/@by_age/-4.5"
	assert_output "$(printf 'ann\nbob')"
	run -0 ls "$MNT/people/@by_email/"
	assert_output "$(printf 'ann@y\nbob@x')"
	rm -r "$MNT/people/bob"
	run -0 ls "$MNT/people/@by_age/-4.5"
	assert_output ann
	# a change by another process (the CLI on the mounted store)
	kvfs put "$STORE" /people/ann/age 77
	eventually 5 test -d "$MNT/people/@by_age/77"
	run -0 ls "$MNT/people/@by_age/"
	assert_output 77
	run -0 cat "$MNT/people/@by_age/77/ann/age"
	assert_output 77
}

@test "an index of many values lists every one once across several readdir calls" {
	mkdir "$MNT/big"
	kvfs table create "$STORE" /big --key-depth 1
	kvfs index create "$STORE" /big by_n n
	# 300 distinct values, in an order unlike the keys'
	{
		printf '{'
		for i in $(seq 1 300); do
			printf '%s"r%d":{"n":%d}' "$([ "$i" -gt 1 ] && echo ,)" "$i" $((i * 7 % 307 - 150))
		done
		printf '}'
	} >"$BATS_TEST_TMPDIR/rows.json"
	kvfs import "$STORE" /big "$BATS_TEST_TMPDIR/rows.json"
	eventually 5 test -d "$MNT/big/r300"
	run -0 bash -c "ls -f '$MNT/big/@by_n/' | grep -v '^\\.'"
	[ "${#lines[@]}" -eq 300 ]
	[ "$output" = "$(printf '%s\n' "${lines[@]}" | sort -n)" ]
	[ "$output" = "$(printf '%s\n' "${lines[@]}" | sort -un)" ]
	run -0 bash -c "ls -f '$MNT/big/@by_n/@range/-100/100/' | grep -v '^\\.' | wc -l"
	[ "$output" -gt 150 ]
	run -0 bash -c "ls -f '$MNT/big/@by_n/@range/-100/100/' | grep -v '^\\.'"
	assert_output "$(kvfs find "$STORE" /big by_n --from -100 --to 100)"
}

# lsf DIR: ls -f of DIR through the mount without . and ..
lsf() {
	ls -f "$1" | grep -v '^\.\.\?$'
}

# lists_all_300: $MNT/big lists 300 names
lists_all_300() {
	[ "$(lsf "$MNT/big" | wc -l)" -eq 300 ]
}

# json_keys: the member names of the JSON object on stdin, in its order.
json_keys() {
	python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)))'
}

@test "rows under an integer key column list in numeric order through the mount: ls -f, .json, @range, composite keys, many rows" {
	mkdir "$MNT/n" "$MNT/c"
	kvfs table create "$STORE" /n --key-depth 1 --key-fields id
	kvfs table column "$STORE" /n id integer
	kvfs index create "$STORE" /n by_x x
	kvfs index create "$STORE" /n by_xy x,y
	for i in 1 2 10 9 -3; do row "n/$i" '{"x":"A","y":"B"}'; done
	row n/4 '{"x":"A","y":"C"}'
	order=$(printf '%s\n' -3 1 2 4 9 10)
	run -0 lsf "$MNT/n"
	assert_output "$order"
	run -0 json_keys <"$MNT/n.json"
	assert_output "$order"
	# rows sharing the index's values come in their key's numeric order
	run -0 lsf "$MNT/n/@by_x/@range/A/A"
	assert_output "$(printf '%s\n' -3 1 2 4 9 10)"
	run -0 lsf "$MNT/n/@by_x/A"
	assert_output "$order"
	run -0 lsf "$MNT/n/@by_xy/A/B"
	assert_output "$(printf '%s\n' -3 1 2 9 10)"
	run -0 readlink "$MNT/n/@by_xy/A/B/10"
	assert_output '../../../10'
	# a composite key whose second level is an integer column
	kvfs table create "$STORE" /c --key-depth 2 --key-fields g,k
	kvfs table column "$STORE" /c k integer
	mkdir "$MNT/c/b" "$MNT/c/a"
	for i in 10 2 1; do row "c/a/$i" '{"v":1}'; done
	mkdir "$MNT/c/a/7"
	run -0 lsf "$MNT/c/a"
	assert_output "$(printf '%s\n' 1 2 7 10)"
	run -0 lsf "$MNT/c"
	assert_output "$(printf '%s\n' a b)"
	run -0 json_keys <"$MNT/c/a.json"
	assert_output "$(printf '%s\n' 1 2 7 10)"
	# many rows: readdir resumes in index order across its calls
	mkdir "$MNT/big"
	kvfs table create "$STORE" /big --key-depth 1 --key-fields id
	kvfs table column "$STORE" /big id integer
	seq 300 -1 1 | sed 's/.*/{"id":&}/' | kvfs import --lines "$STORE" /big -
	# another process's commit: an etcd mount sees it once its watch has
	# it (docs/ETCD.md 8a), LMDB's at once
	eventually 5 lists_all_300
	run -0 lsf "$MNT/big"
	assert_output "$(seq 1 300)"
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}
