#!/usr/bin/env bats
# Issue 31, section 1: writing a view (NAME.json) is a set of creates,
# writes and unlinks, and each passes the checks its single operation
# would (write permission on a changed leaf, the directory's write
# permission and sticky rule, ownership), or the whole write is refused and
# nothing changes; user.kvfs.error shows a user only the refusals of their
# own writes and of paths they may read. Reading a view is reading every
# node below it: read permission on each, search permission on each
# directory with children, or EACCES at open and nothing rendered.
# Mounted with allow_other; the other user is 65534 (as_nobody).

# bats file_tags=mount,trust,backends

load 'test_helper/common'

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	open_tmpdir_to_others
	mount_store -o allow_other
	# documents the other user copies in (cp reports a refused close)
	DOCS=$BATS_TEST_TMPDIR/docs
	mkdir -p "$DOCS"
	chmod 755 "$DOCS"
}

teardown() {
	mount_teardown
}

# doc NAME JSON: a file $DOCS/NAME.json holding JSON, readable by anyone.
doc() {
	printf '%s' "$2" >"$DOCS/$1.json"
	chmod 644 "$DOCS/$1.json"
}

# A sticky 0777 directory holding root's 0600 file, as in the issue.
make_shared() {
	mkdir "$MNT/shared"
	chmod 1777 "$MNT/shared"
	echo d >"$MNT/shared/f"
	chmod 600 "$MNT/shared/f"
}

@test "a view write cannot delete root's file from a sticky directory, as rm cannot" {
	make_shared
	run ! as_nobody rm -f "$MNT/shared/f"
	assert_output --partial 'Operation not permitted'
	doc empty '{}'
	run ! as_nobody cp "$DOCS/empty.json" "$MNT/shared.json"
	assert_output --partial 'Operation not permitted'
	run -0 cat "$MNT/shared/f"
	assert_output d
	run -0 stat -c '%u %a' "$MNT/shared/f"
	assert_output '0 600'
	# a leaf becoming a directory is a removal too
	doc over '{"f": {"x": 1}}'
	run ! as_nobody cp "$DOCS/over.json" "$MNT/shared.json"
	run -0 cat "$MNT/shared/f"
	assert_output d
	# and the store agrees, after a remount
	remount -o allow_other
	run -0 ls "$MNT/shared"
	assert_output f
}

@test "a view write that removes a directory needs what rm -r needs, all the way down" {
	mkdir -p "$MNT/tree/sub/s"
	chmod 777 "$MNT/tree" "$MNT/tree/sub"
	chmod 1777 "$MNT/tree/sub/s"
	echo r >"$MNT/tree/sub/s/f"
	run ! as_nobody rm -r "$MNT/tree/sub"
	doc empty '{}'
	run ! as_nobody cp "$DOCS/empty.json" "$MNT/tree.json"
	assert_output --partial 'Operation not permitted'
	run -0 cat "$MNT/tree/sub/s/f"
	assert_output r
	# below a directory the user may not write, the same
	chmod 777 "$MNT/tree/sub/s"
	mkdir "$MNT/tree/sub/s/ro"
	echo r >"$MNT/tree/sub/s/ro/g"
	run ! as_nobody cp "$DOCS/empty.json" "$MNT/tree.json"
	assert_output --partial 'Permission denied'
	run -0 cat "$MNT/tree/sub/s/ro/g"
	assert_output r
	# where rm -r may, so may the view
	chmod 777 "$MNT/tree/sub/s/ro"
	run -0 as_nobody cp "$DOCS/empty.json" "$MNT/tree.json"
	run -0 ls -A "$MNT/tree"
	assert_output ''
}

@test "a view write cannot rewrite root's 0644 file in a 0777 directory: content and owner stay" {
	# top is 0777 too: the kernel lets the other user rename onto top/open.json
	mkdir "$MNT/top" "$MNT/top/open"
	chmod 777 "$MNT/top" "$MNT/top/open"
	echo orig >"$MNT/top/open/f"
	doc pwn '{"f": "pwned", "new": "x"}'
	run ! as_nobody cp "$DOCS/pwn.json" "$MNT/top/open.json"
	assert_output --partial 'Permission denied'
	run -0 cat "$MNT/top/open/f"
	assert_output orig
	run -0 stat -c '%u %a' "$MNT/top/open/f"
	assert_output '0 644'
	# refused whole: the new member the directory would allow is not there either
	run -0 ls "$MNT/top/open"
	assert_output f
	# the shell's > is refused the same way (its close error is not reported)
	as_nobody sh -c "echo '{\"f\": \"pwned\"}' >'$MNT/top/open.json'" || true
	run -0 cat "$MNT/top/open/f"
	assert_output orig
	# saving a file over the view (an editor's rename) is the same write
	as_nobody sh -c "printf '{\"f\": \"pwned\"}' >'$MNT/top/tmp'"
	run ! as_nobody mv "$MNT/top/tmp" "$MNT/top/open.json"
	assert_output --partial 'Permission denied'
	run -0 cat "$MNT/top/open/f"
	assert_output orig
	run -0 stat -c '%u %a' "$MNT/top/open/f"
	assert_output '0 644'
	# the refusal names the node, not its value
	run -0 getfattr --only-values -n user.kvfs.error "$MNT/top"
	assert_output --partial '/top/open/f'
	refute_output --partial 'pwned'
	# a writable leaf in a directory the user may not search is out of reach too
	mkdir "$MNT/top/open/locked"
	echo orig >"$MNT/top/open/locked/g"
	chmod 666 "$MNT/top/open/locked/g"
	chmod 700 "$MNT/top/open/locked"
	run ! as_nobody cat "$MNT/top/open/locked/g"
	doc reach '{"f": "orig", "locked": {"g": "pwned"}}'
	run ! as_nobody cp "$DOCS/reach.json" "$MNT/top/open.json"
	assert_output --partial 'Permission denied'
	run -0 cat "$MNT/top/open/locked/g"
	assert_output orig
}

@test "a view write by the owner still works: changes, removals, new nodes are theirs" {
	mkdir "$MNT/home"
	chown 65534:65534 "$MNT/home"
	doc one '{"a": 1, "b": {"c": "x"}, "gone": [1, 2]}'
	run -0 as_nobody cp "$DOCS/one.json" "$MNT/home.json"
	run -0 stat -c '%u:%g' "$MNT/home/a" "$MNT/home/b" "$MNT/home/b/c" "$MNT/home/gone/1"
	assert_output $'65534:65534\n65534:65534\n65534:65534\n65534:65534'
	doc two '{"a": 2, "b": {"d": true}, "e": "new"}'
	run -0 as_nobody cp "$DOCS/two.json" "$MNT/home.json"
	run -0 kvfs export "$STORE" /home --compact
	assert_output '{"a":2,"b":{"d":true},"e":"new"}'
	# appends to an array it owns, and one it makes
	run -0 as_nobody sh -c "echo 1 >>'$MNT/home/log.json' && echo 2 >>'$MNT/home/log.json'"
	run -0 cat "$MNT/home/log/1"
	assert_output 2
	run -0 stat -c %u "$MNT/home/log" "$MNT/home/log/0"
	assert_output $'65534\n65534'
	# in the sticky directory: new members, and root's file left as it is
	make_shared
	doc add '{"f": "d", "mine": 1}'
	run -0 as_nobody cp "$DOCS/add.json" "$MNT/shared.json"
	run -0 ls "$MNT/shared"
	assert_output $'f\nmine'
	run -0 stat -c %u "$MNT/shared/mine"
	assert_output 65534
	# root may anything
	doc rootw '{"f": "root"}'
	run -0 cp "$DOCS/rootw.json" "$MNT/shared.json"
	run -0 cat "$MNT/shared/f"
	assert_output root
	run -0 ls "$MNT/shared"
	assert_output f
}

@test "user.kvfs.error: another user sees their own refusals and readable paths' only" {
	mkdir "$MNT/secret"
	chmod 700 "$MNT/secret"
	doc bad '{"k": "topsecret", '
	run ! cp "$DOCS/bad.json" "$MNT/secret/x.json"
	# root sees it; the other user may not read /secret
	run -0 getfattr --only-values -n user.kvfs.error "$MNT"
	assert_output --partial '/secret/x.json'
	run ! as_nobody getfattr --only-values -n user.kvfs.error "$MNT"
	refute_output --partial '/secret/x.json'
	assert_output --partial 'No such attribute'
	# a refusal of their own, newer, is theirs to see
	mkdir "$MNT/open"
	chmod 777 "$MNT/open"
	echo orig >"$MNT/open/f"
	doc pwn '{"f": "pwned"}'
	run ! as_nobody cp "$DOCS/pwn.json" "$MNT/open.json"
	run -0 as_nobody getfattr --only-values -n user.kvfs.error "$MNT"
	assert_output --partial '/open/f'
	# root's refusal of a path anyone may read is shown to anyone
	doc bad2 '{"public": '
	run ! cp "$DOCS/bad2.json" "$MNT/pub.json"
	run -0 as_nobody getfattr --only-values -n user.kvfs.error "$MNT"
	assert_output --partial '/pub.json'
	# the other user's refusal in their own 0700 directory: theirs, not a third user's
	mkdir "$MNT/home"
	chown 65534:65534 "$MNT/home"
	chmod 700 "$MNT/home"
	doc bad3 '{"pin": 1234, '
	run ! as_nobody cp "$DOCS/bad3.json" "$MNT/home/x.json"
	run -0 as_nobody getfattr --only-values -n user.kvfs.error "$MNT/home"
	assert_output --partial '/home/x.json'
	run ! setpriv --reuid=65533 --regid=65533 --clear-groups -- \
		getfattr --only-values -n user.kvfs.error "$MNT/home"
	refute_output --partial '/home/x.json'
	run -0 setpriv --reuid=65533 --regid=65533 --clear-groups -- \
		getfattr --only-values -n user.kvfs.error "$MNT"
	refute_output --partial '/home/x.json'
	refute_output --partial '/secret/x.json'
	assert_output --partial '/pub.json'
}

# as_other CMD...: runs CMD as a third user, 65533 (no groups).
as_other() {
	setpriv --reuid=65533 --regid=65533 --clear-groups -- "$@"
}

# open_as AS PATH FLAGS: as the user AS runs commands as (as_nobody,
# as_other), opens PATH with os.O_FLAGS and prints what reading it gives,
# or the errno name the open fails with (exit 1).
open_as() {
	"$1" python3 -c 'import errno, os, sys
try:
    fd = os.open(sys.argv[1], getattr(os, sys.argv[2]))
except OSError as e:
    print(errno.errorcode[e.errno])
    sys.exit(1)
sys.stdout.write(os.read(fd, 1 << 20).decode())' "$2" "$3"
}

@test "a view read needs read permission on every node below it, as cat does: EACCES" {
	mkdir "$MNT/secret"
	echo topsecret >"$MNT/secret/k"
	chmod 700 "$MNT/secret"
	run ! as_nobody cat "$MNT/secret/k"
	assert_output --partial 'Permission denied'
	# the root's view is readable (0644) but holds the secret: refused at open
	run ! open_as as_nobody "$MNT/.json" O_RDONLY
	assert_output EACCES
	run ! as_nobody cat "$MNT/.json"
	refute_output --partial 'topsecret'
	# its size is the length of what they may read of it: nothing
	run -0 as_nobody stat -c %s "$MNT/.json"
	assert_output 0
	# the refusal names the node, never its value; it is theirs to see
	run -0 as_nobody getfattr --only-values -n user.kvfs.error "$MNT"
	assert_output --partial 'permission denied to read /secret'
	refute_output --partial 'topsecret'
	# a readable directory holding a leaf they may not read: its view too
	chmod 755 "$MNT/secret"
	chmod 600 "$MNT/secret/k"
	run ! as_nobody cat "$MNT/secret/k"
	run ! open_as as_nobody "$MNT/secret.json" O_RDONLY
	assert_output EACCES
	run ! open_as as_nobody "$MNT/.json" O_RDONLY
	assert_output EACCES
	run -0 as_nobody getfattr --only-values -n user.kvfs.error "$MNT"
	assert_output --partial '/secret/k'
	refute_output --partial 'topsecret'
	# a directory they may list but not search: its view (0644) is refused
	chmod 644 "$MNT/secret/k"
	chmod 744 "$MNT/secret"
	run -0 as_nobody ls "$MNT/secret"
	run ! as_nobody cat "$MNT/secret/k"
	run ! open_as as_nobody "$MNT/secret.json" O_RDONLY
	assert_output EACCES
	run ! open_as as_nobody "$MNT/.json" O_RDONLY
	assert_output EACCES
	# one they may search but not list: a name they know reads, the view does not
	chmod 711 "$MNT/secret"
	run -0 as_nobody cat "$MNT/secret/k"
	run ! as_nobody ls "$MNT/secret"
	run ! open_as as_nobody "$MNT/.json" O_RDONLY
	assert_output EACCES
	# root reads everything, at its full size
	run -0 cat "$MNT/.json"
	assert_output --partial 'topsecret'
	run -0 stat -c %s "$MNT/.json"
	[ "$output" -gt 0 ]
	run -0 cat "$MNT/secret.json"
	assert_output --partial 'topsecret'
	# the store keeps everything
	run -0 kvfs export "$STORE" / --compact
	assert_output '{"secret":{"k":"topsecret"}}'
}

@test "a view whose nodes are all readable reads as before; an owner reads their 0700 directory" {
	mkdir -p "$MNT/pub/sub"
	echo hello >"$MNT/pub/sub/x"
	# modes that differ from the defaults but let others read
	chmod 775 "$MNT/pub" "$MNT/pub/sub"
	chmod 664 "$MNT/pub/sub/x"
	run -0 as_nobody cat "$MNT/pub.json"
	assert_output $'{\n  "sub": {\n    "x": "hello"\n  }\n}'
	run -0 as_nobody stat -c %s "$MNT/pub.json"
	[ "$output" -eq "$(cat "$MNT/pub.json" | wc -c)" ]
	run -0 open_as as_nobody "$MNT/pub/sub/x.json" O_RDONLY
	assert_output '"hello"'
	# the other user's own 0700 directory, with a 0600 leaf of theirs
	mkdir "$MNT/home"
	echo mine >"$MNT/home/k"
	chown -R 65534:65534 "$MNT/home"
	chmod 600 "$MNT/home/k"
	chmod 700 "$MNT/home"
	run -0 as_nobody cat "$MNT/home.json"
	assert_output $'{\n  "k": "mine"\n}'
	# and so the whole mount, which they may read all of
	run -0 as_nobody cat "$MNT/.json"
	assert_output --partial '"mine"'
	assert_output --partial '"hello"'
	# which a third user may not
	run ! as_other cat "$MNT/home/k"
	run ! open_as as_other "$MNT/.json" O_RDONLY
	assert_output EACCES
	run -0 as_other cat "$MNT/pub.json"
	assert_output --partial '"hello"'
	# a group's 0750 directory: its members read it (a supplementary group)
	mkdir "$MNT/team"
	echo plan >"$MNT/team/f"
	chgrp 4242 "$MNT/team"
	chmod 750 "$MNT/team"
	run -0 setpriv --reuid=65533 --regid=65533 --groups=4242 -- cat "$MNT/team.json"
	assert_output $'{\n  "f": "plan"\n}'
	# the whole mount, to the owner of home when in the group too
	run -0 setpriv --reuid=65534 --regid=65534 --groups=4242 -- cat "$MNT/.json"
	assert_output --partial '"plan"'
	run ! open_as as_nobody "$MNT/.json" O_RDONLY
	assert_output EACCES
	# a member refused a view for a node in a group's directory: their
	# refusal names it; others who may not list that directory never see
	# it, though they may read the view's own directory
	mkdir "$MNT/pub/grp"
	echo x >"$MNT/pub/grp/private"
	chmod 600 "$MNT/pub/grp/private"
	chgrp 4242 "$MNT/pub/grp"
	chmod 750 "$MNT/pub/grp"
	run ! setpriv --reuid=65533 --regid=65533 --groups=4242 -- cat "$MNT/pub.json"
	run -0 setpriv --reuid=65533 --regid=65533 --groups=4242 -- \
		getfattr --only-values -n user.kvfs.error "$MNT/pub"
	assert_output --partial '/pub/grp/private'
	run ! as_nobody getfattr --only-values -n user.kvfs.error "$MNT/pub"
	refute_output --partial '/pub/grp/private'
	# root reads everything
	run -0 cat "$MNT/.json"
	assert_output --partial '"mine"'
	run -0 cat "$MNT/home.json"
	assert_output $'{\n  "k": "mine"\n}'
}

@test "a view opened to be changed in place, or truncated, is read for its opener too" {
	mkdir -p "$MNT/open/locked"
	chmod 777 "$MNT/open"
	echo topsecret >"$MNT/open/locked/k"
	chmod 700 "$MNT/open/locked"
	# open.json is 0666: the kernel lets the other user open it to read and write
	run ! open_as as_nobody "$MNT/open.json" O_RDWR
	assert_output EACCES
	run ! open_as as_nobody "$MNT/open.json" O_WRONLY
	assert_output EACCES
	# truncate(1) opens it; truncate(2) by its path reads it in the daemon
	run ! as_nobody truncate -s 3 "$MNT/open.json"
	assert_output --partial 'Permission denied'
	run ! as_nobody python3 -c 'import os, sys; os.truncate(sys.argv[1], 3)' "$MNT/open.json"
	assert_output --partial 'Permission denied'
	run -0 cat "$MNT/open/locked/k"
	assert_output topsecret
	# once they may read it all, a truncate writes as them: a leaf's view they may write
	chmod 755 "$MNT/open/locked"
	echo 12345 >"$MNT/open/n"
	setfattr -n user.kvfs.type -v integer "$MNT/open/n"
	chmod 666 "$MNT/open/n"
	run -0 as_nobody python3 -c 'import os, sys; os.truncate(sys.argv[1], 3)' "$MNT/open/n.json"
	run -0 cat "$MNT/open/n"
	assert_output 123
	run -0 kvfs export "$STORE" /open --compact
	assert_output '{"locked":{"k":"topsecret"},"n":123}'
	# not a leaf they may not write (the kernel's check on the view's 0644)
	chmod 644 "$MNT/open/n"
	run ! as_nobody python3 -c 'import os, sys; os.truncate(sys.argv[1], 2)' "$MNT/open/n.json"
	run -0 cat "$MNT/open/n"
	assert_output 123
	# root truncates any view
	truncate -s 1 "$MNT/open/n.json"
	run -0 cat "$MNT/open/n"
	assert_output 1
}
