#!/usr/bin/env bats
# The offline CLI: help and usage errors, put/get of every type, ls, rm,
# mkdir, info, and the mount/umount wrappers' argument handling.

# bats file_tags=cli,backends

load 'test_helper/common'

VERBS="mount umount get put ls rm mkdir import export dump load check backup info"

# ---- help, version, usage errors ----

@test "kvfs --help lists every verb and exits 0" {
	run -0 kvfs --help
	assert_line --index 0 --regexp '^usage: kvfs VERB'
	for v in $VERBS; do
		assert_line --regexp "^  $v +[A-Z]"
	done
}

@test "kvfs --version prints a version" {
	run -0 kvfs --version
	assert_output --regexp '^kvfs [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "every verb has --help that exits 0 and shows its usage" {
	for v in $VERBS; do
		run -0 kvfs "$v" --help
		assert_line --index 0 --regexp "^usage: kvfs $v "
		run -0 kvfs "$v" -h
		assert_line --index 0 --regexp "^usage: kvfs $v "
	done
}

@test "no arguments, an unknown verb or an unknown option exit 2" {
	run -2 kvfs
	assert_output --partial 'usage: kvfs'
	run -2 kvfs frobnicate
	assert_output "kvfs: unknown verb 'frobnicate' (see kvfs --help)"
	run -2 kvfs --frobnicate
	assert_output --partial "kvfs: unknown option '--frobnicate'"
}

@test "missing or extra operands and bad options exit 2 with kvfs: on stderr" {
	run -2 --separate-stderr kvfs get "$STORE"
	assert_output ''
	[[ "${stderr_lines[0]}" == 'kvfs: get: missing PATH' ]]
	[[ "${stderr_lines[1]}" == 'usage: kvfs get [--json [--compact]] STORE PATH' ]]
	run -2 kvfs put "$STORE" /a
	assert_line --index 0 'kvfs: put: missing VALUE'
	run -2 kvfs ls "$STORE" / extra
	assert_line --index 0 "kvfs: ls: unexpected argument 'extra'"
	run -2 kvfs ls -x "$STORE"
	assert_line --index 0 "kvfs: ls: unknown option '-x'"
	run -2 kvfs put --type "$STORE" /a 1
	assert_line --index 0 --partial "kvfs: put: unknown type '$STORE'"
	run -2 kvfs put --type bogus "$STORE" /a 1
	assert_line --index 0 "kvfs: put: unknown type 'bogus' (string, integer, double, boolean, null or bytes)"
	run -2 kvfs export --compact=yes "$STORE"
	assert_line --index 0 "kvfs: export: option '--compact' takes no value"
	run -2 kvfs mount "$STORE"
	assert_line --index 0 'kvfs: mount: missing MNT'
	run -2 kvfs umount
	assert_line --index 0 'kvfs: umount: missing MNT'
	[ ! -e "$STORE" ]
}

@test "reading and changing verbs on a missing store exit 1 naming it" {
	for v in get ls export dump check info; do
		case $v in
		get) run -1 kvfs get "$STORE" /a ;;
		*) run -1 kvfs "$v" "$STORE" ;;
		esac
		assert_output "kvfs: no store at $STORE"
	done
	# A verb that adds data says how to make a store; one that removes does not.
	local make="(make one with kvfs mkdir --create, put --create, import or mount --create)"
	run -1 kvfs put "$STORE" /a 1
	assert_output "kvfs: no store at $STORE $make"
	run -1 kvfs rm "$STORE" /a
	assert_output "kvfs: no store at $STORE"
	run -1 kvfs mkdir "$STORE" /a
	assert_output "kvfs: no store at $STORE $make"
	run -1 kvfs table create "$STORE" /people --key-depth 1
	assert_output "kvfs: no store at $STORE $make"
	run -1 kvfs index create "$STORE" /people by_age age
	assert_output "kvfs: no store at $STORE $make"
	run -1 kvfs table drop "$STORE" /people
	assert_output "kvfs: no store at $STORE"
	run -1 kvfs backup "$STORE" "$BATS_TEST_TMPDIR/copy"
	assert_output "kvfs: no store at $STORE"
	[ ! -e "$STORE" ]
	[ ! -e "$BATS_TEST_TMPDIR/copy" ]
}

# ---- put and get, one type at a time, compared byte for byte ----

@test "put --create makes the store; a string reads back with one newline" {
	run -0 kvfs put --create "$STORE" /name 'Bob Smith'
	assert_output ''
	is_etcd || [ -d "$STORE" ]
	kvfs get "$STORE" /name >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'Bob Smith\n'
}

@test "put and get integers, including the int64 limits and negatives" {
	kvfs put --create --type integer "$STORE" /n 42
	kvfs put --type integer "$STORE" /neg -5
	kvfs put --type integer "$STORE" /min -9223372036854775808
	kvfs put -t integer "$STORE" /max 9223372036854775807
	kvfs get "$STORE" /n >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '42\n'
	kvfs get "$STORE" /neg >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '%s\n' -5
	kvfs get "$STORE" /min >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '%s\n' -9223372036854775808
	kvfs get "$STORE" /max >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '9223372036854775807\n'
	run -0 kvfs ls -l "$STORE"
	assert_line --regexp ' integer +3  n$'
	assert_line --regexp ' integer +21  min$'
}

@test "put and get doubles in their canonical text form" {
	kvfs put --create --type double "$STORE" /a 1.5
	kvfs put --type double "$STORE" /b 1.0
	kvfs put --type double "$STORE" /c 1e+308
	kvfs put --type double "$STORE" /d -0.25
	run -0 kvfs get "$STORE" /a
	assert_output '1.5'
	run -0 kvfs get "$STORE" /b
	assert_output '1.0'
	run -0 kvfs get "$STORE" /c
	assert_output '1e+308'
	kvfs get "$STORE" /d >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '%s\n' -0.25
	# with an explicit numeric type any JSON number spelling is accepted
	# and stored in canonical form; other text is refused
	kvfs put --type double "$STORE" /e 1
	kvfs put --type double "$STORE" /f 1e308
	run -0 kvfs get "$STORE" /e
	assert_output '1.0'
	run -0 kvfs get "$STORE" /f
	assert_output '1e+308'
	run -1 kvfs put --type double "$STORE" /g nan
	assert_output --regexp '^kvfs: .*/g'
	run -1 kvfs put --type double "$STORE" /g 1.5x
	run -1 kvfs put --type integer "$STORE" /g 1.5
	run -1 kvfs get "$STORE" /g
}

@test "put and get booleans and null" {
	kvfs put --create --type boolean "$STORE" /t true
	kvfs put --type boolean "$STORE" /f false
	kvfs put --type null "$STORE" /z null
	kvfs get "$STORE" /t >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'true\n'
	kvfs get "$STORE" /f >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'false\n'
	kvfs get "$STORE" /z >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'null\n'
	run -0 kvfs export --compact "$STORE"
	assert_output '{"f":false,"t":true,"z":null}'
}

@test "put - reads the value from stdin exactly; bytes come back exactly" {
	printf 'a\0b\377' | kvfs put --create --type bytes "$STORE" /blob -
	kvfs get "$STORE" /blob >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'a\0b\377'
	printf 'two\nlines' | kvfs put "$STORE" /text -
	kvfs get "$STORE" /text >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" 'two\nlines\n'
	run -0 kvfs ls -l "$STORE"
	assert_line --regexp ' bytes +4  blob$'
	assert_line --regexp ' string +10  text$'
}

@test "put keeps an existing leaf's type when the value parses as it" {
	kvfs put --create --type integer "$STORE" /n 1
	kvfs put "$STORE" /n 2
	kvfs put "$STORE" /s 42
	run -0 kvfs ls -l "$STORE"
	assert_line --regexp ' integer +2  n$'
	assert_line --regexp ' string +3  s$'
	kvfs put "$STORE" /n abc
	run -0 kvfs ls -l "$STORE"
	assert_line --regexp ' string +4  n$'
}

@test "put --type with a value that does not parse is refused, old value kept" {
	kvfs put --create --type integer "$STORE" /n 7
	run -1 kvfs put --type integer "$STORE" /n 12abc
	assert_output --regexp '^kvfs: .*/n'
	run -1 kvfs put --type boolean "$STORE" /n yes
	assert_output --regexp '^kvfs: .*/n'
	run -0 kvfs get "$STORE" /n
	assert_output '7'
}

@test "get on a container asks for --json; --json and --compact render it" {
	kvfs mkdir --create "$STORE" /u
	kvfs put "$STORE" /u/name Bob
	kvfs put --type integer "$STORE" /u/age 42
	run -1 kvfs get "$STORE" /u
	assert_output 'kvfs: /u: is a directory, use --json'
	run -1 kvfs get "$STORE" /
	assert_output 'kvfs: /: is a directory, use --json'
	run -0 kvfs get "$STORE" /u.json
	assert_output "$(kvfs get --json "$STORE" /u)"
	kvfs get --json "$STORE" /u >"$BATS_TEST_TMPDIR/out"
	assert_file_bytes "$BATS_TEST_TMPDIR/out" '{\n  "age": 42,\n  "name": "Bob"\n}\n'
	run -0 kvfs get "$STORE" /u --compact
	assert_output '{"age":42,"name":"Bob"}'
	run -0 kvfs get --json "$STORE" /u/age
	assert_output '42'
}

@test "get of a missing path exits 1 and names the path" {
	kvfs put --create "$STORE" /a 1
	run -1 kvfs put "$STORE" /no/parent v
	assert_output --regexp '^kvfs: .*/no/parent'
	run -1 kvfs get "$STORE" /nope/deeper
	assert_output --regexp '^kvfs: .*/nope'
	run -1 kvfs get "$STORE" /a/b
	assert_output --regexp '^kvfs: .*/a'
}

# ---- ls ----

@test "ls lists array elements in numeric order: 2 before 10" {
	echo '{"arr":[0,1,2,3,4,5,6,7,8,9,10,11]}' | kvfs import "$STORE" / -
	run -0 kvfs ls "$STORE" /arr
	assert_output "$(seq 0 11)"
	run -0 kvfs get "$STORE" /arr/10
	assert_output '10'
}

@test "ls shows escaped names, and get accepts them" {
	printf '%s' '{"a/b":1,"":2,".":3,"x.json":4,"%d":5,"plain":6,"..":7}' |
		kvfs import "$STORE" / -
	run -0 kvfs ls "$STORE"
	# key order: "" "%d" "." ".." "a/b" "plain" "x.json"
	assert_output "$(printf '%s\n' '%' '%%25d' '%%2E' '%%2E%2E' '%a%2Fb' plain '%x%2Ejson')"
	run -0 kvfs get "$STORE" '/%a%2Fb'
	assert_output '1'
	run -0 kvfs get "$STORE" '/%'
	assert_output '2'
	run -0 kvfs get "$STORE" '/%x%2Ejson'
	assert_output '4'
}

@test "ls -l shows kind or type and size; ls of a leaf shows the leaf" {
	echo '{"o":{"k":1},"a":[1],"s":"hello","e":{}}' | kvfs import "$STORE" / -
	run -0 kvfs ls -l "$STORE"
	assert_output "$(printf '%s %-11s %-7s %12s  %s\n' drwxr-xr-x - array - a drwxr-xr-x - object - e \
		drwxr-xr-x - object - o -rw-r--r-- - string 6 s)"
	run -0 kvfs ls "$STORE" /s
	assert_output 's'
	run -0 kvfs ls "$STORE" /e
	assert_output ''
	run -1 kvfs ls "$STORE" /missing
	assert_output --regexp '^kvfs: .*/missing'
}

# ---- rm, mkdir ----

@test "rm removes a leaf; a non-empty directory needs -r" {
	echo '{"d":{"x":1,"y":{"z":2}},"leaf":"v"}' | kvfs import "$STORE" / -
	run -0 kvfs rm "$STORE" /leaf
	run -1 kvfs get "$STORE" /leaf
	run -1 kvfs rm "$STORE" /d
	assert_output 'kvfs: /d: is a directory and not empty, use -r'
	run -0 kvfs get "$STORE" /d/y/z
	assert_output '2'
	run -1 kvfs rm "$STORE" /d.json
	assert_output 'kvfs: /d.json: is the JSON view of a subtree; use rm -r to remove the whole subtree'
	run -0 kvfs get "$STORE" /d/x
	run -0 kvfs rm -r "$STORE" /d
	run -0 kvfs export --compact "$STORE"
	assert_output '{}'
	run -1 kvfs rm "$STORE" /d
	assert_output --regexp '^kvfs: .*/d'
}

@test "mkdir makes an empty object or array; rm removes an empty one" {
	kvfs mkdir --create "$STORE" /o
	kvfs mkdir --array "$STORE" /a
	run -0 kvfs export --compact "$STORE"
	assert_output '{"a":[],"o":{}}'
	run -1 kvfs mkdir "$STORE" /o
	assert_output --regexp '^kvfs: .*/o'
	run -0 kvfs rm "$STORE" /o
	run -0 kvfs export --compact "$STORE"
	assert_output '{"a":[]}'
}

@test "info reports the key count" {
	echo '{"a":1,"b":[1,2,3],"c":{}}' | kvfs import "$STORE" / -
	run -0 kvfs info "$STORE"
	assert_line "store:      $STORE"
	assert_line 'keys:       5'
	if is_etcd; then
		assert_line --partial 'backend:    etcd'
	else
		assert_line --regexp '^used: +[0-9]+ bytes'
	fi
}

# ---- mount, umount, mount.kvfs ----

@test "umount of something that is not mounted exits 1" {
	mkdir "$BATS_TEST_TMPDIR/mnt"
	run -1 kvfs umount "$BATS_TEST_TMPDIR/mnt"
	assert_line "kvfs: $BATS_TEST_TMPDIR/mnt: not a kvfs mount (nothing is mounted there)"
}

@test "mount.kvfs turns mount(8)'s arguments into kvfs mount, dropping mount-only options" {
	fake=$BATS_TEST_TMPDIR/fake-kvfs
	printf '#!/bin/sh\nprintf "[%%s]" "$@"; echo\n' >"$fake"
	chmod +x "$fake"
	helper=$BATS_TEST_DIRNAME/../scripts/mount.kvfs
	run -0 env KVFS_BIN="$fake" sh "$helper" /srv/st /mnt/x -o rw,noauto,ro,allow_other,user,_netdev,defaults,nofail,x-systemd.automount
	assert_output '[mount][-o][ro,allow_other][/srv/st][/mnt/x]'
	run -0 env KVFS_BIN="$fake" sh "$helper" /srv/st /mnt/x -n -t fuse.kvfs -o defaults
	assert_output '[mount][/srv/st][/mnt/x]'
	run -0 env KVFS_BIN="$fake" sh "$helper" -o debug,create /srv/st /mnt/x
	assert_output '[mount][-o][debug,create][/srv/st][/mnt/x]'
	run -0 env KVFS_BIN="$fake" sh "$helper" /srv/st /mnt/x -f -o ro
	assert_output ''
	run -2 env KVFS_BIN="$fake" sh "$helper" /srv/st
	assert_output --partial 'usage: mount.kvfs STORE MNT'
}
