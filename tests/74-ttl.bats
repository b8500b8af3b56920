#!/usr/bin/env bats
# Issue 10, TTL keys: a time to live on a leaf or a subtree (setfattr
# user.kvfs.ttl, kvfs put --ttl, kvfs import --ttl), gone from every read
# once it passes (before the reaper removes it), removed by the mount's
# reaper with indexes kept exact, cleared by an overwrite, carried by
# dump/load and backup, verified and rebuilt by check; format 4.

# bats file_tags=ttl,mount,backends,threads

load 'test_helper/common'
load 'test_helper/tables'

setup() {
	mount_setup
}

teardown() {
	mount_teardown
}

# gone PATH: true once PATH no longer exists (for eventually).
gone() {
	[ ! -e "$1" ] && [ ! -L "$1" ]
}

# ttl_of PATH: the seconds left, as getfattr shows them.
ttl_of() {
	getfattr --absolute-names --only-values -n user.kvfs.ttl "$1"
}

# ttl_left PATH TTL T0: PATH's TTL shows what is left of TTL seconds given
# by a write that began at T0 (date +%s%N): at most TTL, at least TTL less
# the seconds since T0 and one for the rounding. (A fixed 2 or 10 s of
# slack failed under ASan at load 30: the writes and mounts since took
# longer.)
ttl_left() {
	local left since
	left=$(ttl_of "$1") || return 1
	since=$((($(date +%s%N) - $3 + 999999999) / 1000000000))
	if [ "$left" -gt "$2" ] || [ "$left" -lt $(($2 - since - 1)) ]; then
		echo "ttl_left: $1 shows $left of $2 s given $since s ago" >&2
		return 1
	fi
}

# keys_in STORE SPACE: how many records a dump holds in SPACE.
keys_in() {
	kvfs dump "$1" | grep -c "^$2 " || true
}

# users_are KEYS...: kvfs find over /sess's by_user index lists exactly KEYS.
users_are() {
	[ "$(kvfs find "$STORE" /sess by_user --from a)" = "$(printf '%s\n' "$@")" ]
}

# reaped STORE: true once the store holds no TTL records (one dump for
# both spaces: under ASan each kvfs start costs 0.3 s, and eventually
# calls this every 0.1 s).
reaped() {
	local d
	d=$(kvfs dump "$1") && ! grep -q -E '^(expiry|ttl) ' <<<"$d"
}

# ttl_start: after a write that gave a TTL, prints a time (ns) its deadline
# is no later than that many seconds after (the deadline counts from the
# write's own clock, which read before this).
ttl_start() {
	date +%s%N
}

# ttl_wait START SECONDS: waits until SECONDS have passed since START (from
# ttl_start), so that a deadline of SECONDS has passed. A clock that must
# move, waited on without polling: the checks after it run kvfs, an ASan
# start each, which eventually would repeat every 0.1 s until the deadline.
ttl_wait() {
	local left=$(($1 + $2 * 1000000000 - $(date +%s%N)))
	[ "$left" -le 0 ] || sleep "$((left / 1000000000)).$(printf '%09d' $((left % 1000000000)))"
}

@test "a leaf with a 2-second TTL set through setfattr leaves ls, cat, stat, the views and export, then is reaped" {
	mkdir "$MNT/s"
	echo keep >"$MNT/s/other"
	# what shows before the deadline, read before it: where the reads took
	# longer (over 2 s under ASan at load 25), again under another name
	# with a longer TTL
	local ttl t0 name seen left
	for ttl in 2 6 18; do
		name=tmp$ttl
		echo hello >"$MNT/s/$name"
		t0=$(date +%s%N)
		setfattr -n user.kvfs.ttl -v "$ttl" "$MNT/s/$name"
		seen=$(ttl_of "$MNT/s/$name" && echo; cat "$MNT/s/$name"; ls "$MNT/s") || true
		in_time "$t0" "$ttl" && break
		eventually $((ttl + 3)) gone "$MNT/s/$name"	# out of the next ls
	done
	left=${seen%%$'\n'*}
	[ "$left" -ge 1 ]
	[ "$left" -le "$ttl" ]
	assert_equal "${seen#*$'\n'}" "$(printf 'hello\nother\n%s' "$name")"
	eventually $((ttl + 3)) gone "$MNT/s/$name"
	run -0 ls "$MNT/s"
	assert_output 'other'
	run -1 cat "$MNT/s/$name"
	run -1 stat "$MNT/s/$name"
	run -0 cat "$MNT/s.json"
	refute_output --partial 'tmp'
	run -0 kvfs export "$STORE" /s
	refute_output --partial 'hello'
	run -1 kvfs get "$STORE" /s/tmp
	eventually 5 reaped "$STORE"
	run -0 kvfs dump "$STORE"
	refute_output --partial "$(printf 'tmp' | od -An -tx1 | tr -d ' \n')"
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
}

@test "a TTL on a directory expires the whole subtree; kvfs put --ttl on a leaf too" {
	mkdir -p "$MNT/sess/a"
	echo 1 >"$MNT/sess/a/x"
	echo 2 >"$MNT/sess/y"
	echo stay >"$MNT/stay"
	# each read until its deadline: one that came after it (under ASan at
	# load 35) finds it gone
	local t0
	t0=$(date +%s%N)
	setfattr -n user.kvfs.ttl -v 2 "$MNT/sess"
	run cat "$MNT/sess/a/x"
	[ "$status" -eq 0 ] || past "$t0" 2
	[ "$status" -ne 0 ] || [ "$output" = 1 ]
	t0=$(date +%s%N)
	kvfs put --ttl 2 "$STORE" /stay2 v
	caught_up	# (etcd: the mount's shared answers hold until its watch brings the put)
	run cat "$MNT/stay2"
	[ "$status" -eq 0 ] || past "$t0" 2
	[ "$status" -ne 0 ] || [ "$output" = v ]
	eventually 5 gone "$MNT/stay2"
	eventually 5 gone "$MNT/sess"
	gone "$MNT/sess/a/x"
	gone "$MNT/sess/y"
	run -0 ls "$MNT"
	assert_output 'stay'
	run -0 find "$MNT"
	refute_output --partial 'sess'
	eventually 5 reaped "$STORE"
	run -1 kvfs ls "$STORE" /sess
	run -0 kvfs check "$STORE"
}

@test "getfattr counts down; no TTL is ENODATA; an overwrite clears the TTL unless --ttl gives it again" {
	kvfs put "$STORE" /k v
	caught_up
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/k"
	assert_output --partial 'No such attribute'
	local t0
	t0=$(date +%s%N)
	kvfs put --ttl 100 "$STORE" /k v
	caught_up
	ttl_left "$MNT/k" 100 "$t0"
	# a write through the mount is an overwrite
	echo w >"$MNT/k"
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/k"
	t0=$(date +%s%N)
	setfattr -n user.kvfs.ttl -v 50 "$MNT/k"
	ttl_left "$MNT/k" 50 "$t0"
	kvfs put "$STORE" /k again
	caught_up
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/k"
	t0=$(date +%s%N)
	kvfs put --ttl 30 "$STORE" /k again
	caught_up
	ttl_left "$MNT/k" 30 "$t0"
	# removexattr clears it; a bad value is refused and changes nothing
	setfattr -x user.kvfs.ttl "$MNT/k"
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/k"
	run -1 setfattr -n user.kvfs.ttl -v abc "$MNT/k"
	run -1 setfattr -n user.kvfs.ttl -v 0 "$MNT/k"
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/k"
	run -2 kvfs put --ttl 0 "$STORE" /k v
	run -2 kvfs put --ttl x "$STORE" /k v
	# a view write replaces the document: its TTLs are cleared
	mkdir "$MNT/d"
	echo 1 >"$MNT/d/a"
	setfattr -n user.kvfs.ttl -v 60 "$MNT/d/a"
	printf '{"a": 2}' >"$MNT/d.json"
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/d/a"
	run -0 kvfs check "$STORE"
}

@test "kvfs import --ttl expires the imported document; a TTL moves with mv" {
	printf '{"a": {"b": 1}, "c": [1, 2]}' >"$BATS_TEST_TMPDIR/doc.json"
	local t0
	t0=$(date +%s%N)
	kvfs import --ttl 100 "$STORE" /doc "$BATS_TEST_TMPDIR/doc.json"
	caught_up
	ttl_left "$MNT/doc" 100 "$t0"
	mv "$MNT/doc" "$MNT/moved"
	ttl_left "$MNT/moved" 100 "$t0"
	run -0 kvfs check "$STORE"
	run -2 kvfs import --ttl 5 --lines "$STORE" /rows "$BATS_TEST_TMPDIR/doc.json"
	t0=$(date +%s%N)
	kvfs import --ttl 2 "$STORE" /short "$BATS_TEST_TMPDIR/doc.json"
	caught_up
	# read until the deadline; a read after it (ASan at load 30) finds it gone
	run cat "$MNT/short/a/b"
	[ "$status" -eq 0 ] || past "$t0" 2
	[ "$status" -ne 0 ] || [ "$output" = 1 ]
	eventually 5 gone "$MNT/short"
	run -0 kvfs check "$STORE"
}

@test "an expired entry is hidden from every read before it is removed; a writing verb reaps it" {
	unmount_store	# no reaper: only the reads hide it
	local s=$BATS_TEST_TMPDIR/offline
	kvfs mkdir --create "$s" /t
	local t0 before
	before=$(date +%s%N)
	kvfs put --ttl 2 "$s" /t/gone v
	t0=$(ttl_start)
	kvfs put "$s" /t/kept w
	# a write reaps what expired: this one did if it ended past the deadline
	local kept_late=0
	in_time "$before" 2 || kept_late=1
	# it reads until its deadline: a read that came after it (three ASan
	# starts took over 2 s at load 30) may find it gone
	run kvfs get "$s" /t/gone
	[ "$status" -eq 0 ] || past "$before" 2
	[ "$status" -ne 0 ] || [ "$output" = v ]
	# bounded: the read hides it within a few seconds (3 after the deadline)
	ttl_wait "$t0" 2
	eventually 3 bash -c "! '$KVFS_BIN' get '$s' /t/gone"
	run -0 kvfs ls "$s" /t
	assert_output 'kept'
	run -0 kvfs export "$s" /t
	refute_output --partial 'gone'
	# still in the store: read-only verbs never write
	[ "$(keys_in "$s" expiry)" -eq 1 ] || [ "$kept_late" = 1 ]
	run -0 kvfs check "$s"
	# a directory whose only child expired reads as empty, as its removal
	# leaves it (mkdir and put write: they reap /t/gone first)
	kvfs mkdir "$s" /d
	kvfs put --ttl 2 "$s" /d/only v
	t0=$(ttl_start)
	[ "$(keys_in "$s" expiry)" -eq 1 ]
	ttl_wait "$t0" 2
	eventually 3 bash -c "[ -z \"\$('$KVFS_BIN' ls '$s' /d)\" ]"
	run -0 kvfs ls "$s" /
	assert_output "$(printf 'd\nt')"
	run -0 kvfs export --compact "$s" /d
	assert_output '{}'
	run -0 kvfs export --compact "$s"
	assert_output '{"d":{},"t":{"kept":"w"}}'
	[ "$(keys_in "$s" expiry)" -eq 1 ]
	kvfs put "$s" /other 1
	[ "$(keys_in "$s" expiry)" -eq 0 ]
	[ "$(keys_in "$s" ttl)" -eq 0 ]
	run -0 kvfs ls "$s" /t
	assert_output 'kept'
	run -0 kvfs export --compact "$s" /d
	assert_output '{}'
	run -0 kvfs check "$s"
}

@test "an expired row leaves index browsing and find at once; after reaping the indexes are exact" {
	people
	row people/cy '{"email":"cy@x","age":30}'
	run -0 kvfs find "$STORE" /people by_age 30
	assert_output "$(printf 'ann\ncy')"
	setfattr -n user.kvfs.ttl -v 1 "$MNT/people/cy"
	eventually 5 gone "$MNT/people/cy"
	run -0 kvfs find "$STORE" /people by_age 30
	assert_output 'ann'
	run -0 ls -f "$MNT/people/@by_email"
	refute_output --partial 'cy@x'
	gone "$MNT/people/@by_age/30/cy"
	[ -L "$MNT/people/@by_age/30/ann" ]
	eventually 5 reaped "$STORE"
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	# the email is free again
	row people/dan '{"email":"cy@x","age":1}'
	run -0 kvfs find "$STORE" /people by_email cy@x
	assert_output 'dan'
}

@test "a TTL on a level of a composite key takes the rows under it out of find at once" {
	mkdir -p "$MNT/names/Mary" "$MNT/names/Ann"
	kvfs table create "$STORE" /names --key-depth 2
	kvfs index create "$STORE" /names by_age age
	row names/Mary/Jane '{"age":30,"nick":"j"}'
	row names/Mary/Kate '{"age":31}'
	row names/Ann/Lee '{"age":30}'
	unmount_store	# no reaper: what find shows comes from hiding alone
	local t0 before
	before=$(date +%s%N)
	kvfs put --ttl 2 "$STORE" /names/Mary/Jane/age 30
	t0=$(ttl_start)
	# found until the deadline; a find that came after it (over 2 s under
	# ASan at load 30) finds the rest
	run -0 kvfs find "$STORE" /names by_age 30
	[ "$output" = "$(printf 'Ann/Lee\nMary/Jane')" ] || past "$before" 2
	[ "$output" = "$(printf 'Ann/Lee\nMary/Jane')" ] || [ "$output" = Ann/Lee ]
	# the expiring field is the indexed one: only that index loses the row
	ttl_wait "$t0" 2
	eventually 3 bash -c "[ \"\$('$KVFS_BIN' find '$STORE' /names by_age 30)\" = Ann/Lee ]"
	run -0 kvfs export --compact "$STORE" /names/Mary/Jane
	assert_output '{"nick":"j"}'
	# a level: every row below it
	kvfs rm -r "$STORE" /names/Mary/Jane
	mount_store
	# (4 s: the unmount and a find must come before it on a loaded machine)
	before=$(date +%s%N)
	setfattr -n user.kvfs.ttl -v 4 "$MNT/names/Mary"
	t0=$(ttl_start)
	unmount_store
	run -0 kvfs find "$STORE" /names by_age --from 0
	[ "$output" = "$(printf 'Ann/Lee\nMary/Kate')" ] || past "$before" 4
	[ "$output" = "$(printf 'Ann/Lee\nMary/Kate')" ] || [ "$output" = Ann/Lee ]
	ttl_wait "$t0" 4
	eventually 4 bash -c "[ \"\$('$KVFS_BIN' find '$STORE' /names by_age --from 0)\" = Ann/Lee ]"
	run -0 kvfs check "$STORE"
	kvfs put "$STORE" /x 1	# a write reaps
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	run -1 kvfs ls "$STORE" /names/Mary
}

@test "TTLs survive dump/load and backup as absolute deadlines" {
	kvfs put --ttl 100 "$STORE" /a v
	mkdir "$MNT/d"
	echo 1 >"$MNT/d/x"
	local t0
	t0=$(date +%s%N)
	setfattr -n user.kvfs.ttl -v 200 "$MNT/d"
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/dump"
	[ "$(grep -c '^expiry ' "$BATS_TEST_TMPDIR/dump")" -eq 2 ]
	[ "$(grep -c '^ttl ' "$BATS_TEST_TMPDIR/dump")" -eq 2 ]
	kvfs load "$BATS_TEST_TMPDIR/s2" <"$BATS_TEST_TMPDIR/dump"
	kvfs dump "$BATS_TEST_TMPDIR/s2" | cmp - "$BATS_TEST_TMPDIR/dump"
	if ! is_etcd; then	# no hot copy of an etcd store: the dump above is its copy
		kvfs backup "$STORE" "$BATS_TEST_TMPDIR/b"
		run -0 kvfs check "$BATS_TEST_TMPDIR/b"
		kvfs dump "$BATS_TEST_TMPDIR/b" | grep -c '^ttl ' | grep -qx 2
	fi
	mount_extra "$BATS_TEST_TMPDIR/m2" "$BATS_TEST_TMPDIR/s2"
	ttl_left "$BATS_TEST_TMPDIR/m2/d" 200 "$t0"
	# an expired deadline in a dump stays expired after load
	kvfs put --ttl 1 "$STORE" /soon v
	kvfs dump "$STORE" >"$BATS_TEST_TMPDIR/dump2"
	eventually 5 gone "$MNT/soon"
	kvfs load "$BATS_TEST_TMPDIR/s3" <"$BATS_TEST_TMPDIR/dump2"
	run -1 kvfs get "$BATS_TEST_TMPDIR/s3" /soon
	# a bad deadline is refused by load
	sed 's/^ttl \([0-9a-f]*\) .*/ttl \1 00/' "$BATS_TEST_TMPDIR/dump" >"$BATS_TEST_TMPDIR/bad"
	run -1 kvfs load "$BATS_TEST_TMPDIR/s4" <"$BATS_TEST_TMPDIR/bad"
	assert_output --partial 'bad ttl entry'
}

@test "check finds a ttl entry removed and an expiry entry added on purpose; check --repair rebuilds" {
	skip_on_etcd "the entries are changed with mdb_load in data.mdb"
	unmount_store	# no reaper: the store stays as the test leaves it
	kvfs put --ttl 1000 "$STORE" /a v
	kvfs put "$STORE" /b w
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	# a copy of the store whose ttl space lost its one record (through LMDB's tools)
	mdb_dump -a "$STORE" | awk '
		/^database=/ { db = $0 }
		/^HEADER=END/ { print; data = 1; next }
		/^DATA=END/ { data = 0 }
		!(data && db == "database=ttl") { print }' >"$BATS_TEST_TMPDIR/all"
	local s=$BATS_TEST_TMPDIR/s2
	mkdir "$s"
	mdb_load -f "$BATS_TEST_TMPDIR/all" "$s"
	run -1 kvfs check "$s"
	assert_output --partial 'expiry entry without its ttl entry'
	# and an expiry entry for a node that does not exist (/zz, long due)
	printf '%s\n%s\n' '\00\00\00\00\00\00\00\01\02zz\00' '' | mdb_load -s expiry -T "$s"
	run -1 kvfs check "$s"
	assert_output --partial '0000000000000001027a7a00: expiry entry without its ttl entry'
	run -0 kvfs check --repair "$s"
	assert_output --partial 'check: ttl space rebuilt'
	assert_output --partial ', 0 problems'
	run -0 kvfs dump "$s"
	refute_output --partial '027a7a00'
	[ "$(keys_in "$s" ttl)" -eq 1 ]
	# the restored deadline is the one the expiry entry kept
	[ "$(kvfs dump "$s" | grep '^ttl ')" = "$(kvfs dump "$STORE" | grep '^ttl ')" ]
	# a corrupt deadline value is reported too
	printf '%s\n%s\n' '\02b\00' '\00' | mdb_load -s ttl -T "$s"
	run -1 kvfs check "$s"
	assert_output --partial '026200: ttl entry: bad deadline'
	run -0 kvfs check --repair "$s"
	run -0 kvfs get "$s" /b
	assert_output 'w'
}

@test "a committed format-3 store reads as it is read-only and is upgraded to 4 by a write" {
	unmount_store
	local old=$BATS_TEST_TMPDIR/v3
	mkdir -p "$old"
	mdb_load -f "$BATS_TEST_DIRNAME/fixtures/v3-store.mdbdump" "$old" 2>/dev/null
	run -0 mdb_dump -s meta -p "$old"
	assert_line ' \00\00\00\03'
	cp "$old/data.mdb" "$BATS_TEST_TMPDIR/before.mdb"
	run -0 kvfs check "$old"
	run -0 kvfs find "$old" /people by_email --from a
	assert_output "$(printf 'ann\nbob')"
	run -0 kvfs get "$old" /nested/0/1/1
	assert_output 'x'
	cmp "$old/data.mdb" "$BATS_TEST_TMPDIR/before.mdb"
	# the first write upgrades: the two spaces appear, nothing else changes
	kvfs put --ttl 100 "$old" /people/ann/age 31
	run -0 mdb_dump -s meta -p "$old"
	assert_line ' \00\00\00\04'
	run -0 mdb_stat -a "$old"
	assert_output --partial 'Status of expiry'
	assert_output --partial 'Status of ttl'
	run -0 kvfs check "$old"
	assert_output --partial ', 0 problems'
	run -0 kvfs find "$old" /people by_email ann@x
	assert_output 'ann'
	STORE=$old mount_store
	run -0 ttl_of "$MNT/people/ann/age"
	[ "$output" -ge 60 ]
	[ "$output" -le 100 ]	# (a check, a find and a mount since: seconds on a loaded machine)
	run -0 cat "$MNT/people/ann/age"
	assert_output '31'
}

@test "a table's default TTL (table create --ttl, @schema.json) is given to new rows only" {
	mkdir "$MNT/sess"
	row sess/old '{"user":"ann"}'
	kvfs table create "$STORE" /sess --key-depth 1 --ttl 2
	kvfs index create "$STORE" /sess by_user user
	run -0 cat "$MNT/sess/@schema.json"
	assert_output --partial '"ttl": 2'
	# an existing row keeps living; new rows, by cp and by import --lines, expire
	run -1 getfattr --absolute-names -n user.kvfs.ttl "$MNT/sess/old"
	local t0
	t0=$(date +%s%N)
	row sess/new '{"user":"bob"}'
	run ttl_of "$MNT/sess/new"	# gone only when the deadline passed first
	[ "$status" -eq 0 ] || past "$t0" 2
	[ "$status" -ne 0 ] || [ "$output" = 1 ] || [ "$output" = 2 ]
	printf '{"user":"cy"}\n' | kvfs import --lines "$STORE" /sess -
	run -0 kvfs find "$STORE" /sess by_user cy
	eventually 5 gone "$MNT/sess/new"
	eventually 5 users_are old
	eventually 5 reaped "$STORE"
	run -0 kvfs check "$STORE"
	assert_output --partial ', 0 problems'
	# a row written with its own TTL keeps it; changing a field keeps the row's
	# (made by mkdir, it has the default 2 s until the setfattr: where that
	# came later, under ASan at load 30, again under another name)
	local own
	for own in own own2 own3; do
		mkdir "$MNT/sess/$own"
		t0=$(date +%s%N)
		setfattr -n user.kvfs.ttl -v 100 "$MNT/sess/$own" 2>/dev/null && break
	done
	echo dan >"$MNT/sess/$own/user"
	ttl_left "$MNT/sess/$own" 100 "$t0"
	# the default is altered through @schema.json, and removed by leaving it out
	printf '%s' '{"key_depth":1,"ttl":300,"indexes":{"by_user":{"fields":["user"],"unique":false}}}' >"$MNT/sess/@schema.json"
	run -0 kvfs table show "$STORE" /sess
	assert_output --partial '"ttl": 300'
	t0=$(date +%s%N)
	row sess/later '{"user":"eve"}'
	ttl_left "$MNT/sess/later" 300 "$t0"
	printf '%s' '{"key_depth":1,"indexes":{"by_user":{"fields":["user"],"unique":false}}}' >"$MNT/sess/@schema.json"
	run -0 kvfs table show "$STORE" /sess
	refute_output --partial '"ttl"'
	run -2 kvfs table create "$STORE" /other --key-depth 1 --ttl 0
	run -0 kvfs check "$STORE"
}

@test "a directory whose keys are all past their TTL has the same nlink in a listing as in its stat" {
	skip_on_etcd "a lease's end deletes the keys within a second: they do not stay hidden for two mounts"
	unmount_store	# read-only mounts below: no reaper, the reads only hide them
	kvfs import "$STORE" /d - <<<'{"E":{"g":{"x":1}},"F":{"h":{"y":1},"z":2}}'
	kvfs put --ttl 1 "$STORE" /d/E/g/x 1
	kvfs put --ttl 1 "$STORE" /d/F/h/y 1
	ttl_wait "$(ttl_start)" 1
	# both deadlines passed: the store hides them (a bounded wait)
	eventually 4 eval '! kvfs get "$STORE" /d/E/g/x 2>/dev/null && ! kvfs get "$STORE" /d/F/h/y 2>/dev/null'
	mount_store -o ro
	run -0 stat -c '%n %h' "$MNT/d/E" "$MNT/d/F"	# a lookup each, no listing
	local want=$output
	remount -o ro
	run -0 ls -ln "$MNT/d"
	run -0 stat -c '%n %h' "$MNT/d/E" "$MNT/d/F"	# as the listing left them
	assert_output "$want"
}
