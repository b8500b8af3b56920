#!/usr/bin/env bats
# POSIX behaviour the conformance suite pjdfstest checks (docs/FILES.md, "POSIX
# conformance"), as our own tests: set-user-ID clearing, who may chown,
# chmod, unlink and rename (sticky directories), utimensat's atime and
# UTIME_OMIT, new directories' times, inode numbers across rename, and the
# data model's refusals failing cleanly. Many switch to user 65534.

# bats file_tags=mount

load 'test_helper/common'

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
}

teardown() {
	mount_teardown
}

# attr_record_len PATH-KEY-HEX: the hex length of the attr record dumped for key
attr_record_len() {
	"$KVFS_BIN" dump "$STORE" | awk -v k="$1" '$1 == "attr" && $2 == k { print length($3) }'
}

@test "a write, truncate or chown by a non-owner clears set-user-ID and set-group-ID; root's write keeps them" {
	open_tmpdir_to_others
	mount_store -o allow_other
	local m
	for m in 4777 2777 6777; do
		echo x >"$MNT/f$m"
		chmod "$m" "$MNT/f$m"
		run -0 as_nobody sh -c "echo y >>'$MNT/f$m'"
		run -0 stat -c %a "$MNT/f$m"
		assert_output 777
	done
	# set-group-ID without group execute is kept by a writer in the group only
	echo x >"$MNT/g"
	chmod 2766 "$MNT/g"
	chown 0:65534 "$MNT/g"
	chmod 2766 "$MNT/g"
	run -0 setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c "echo y >>'$MNT/g'"
	run -0 stat -c %a "$MNT/g"
	assert_output 2766
	# truncate by a non-owner
	echo x >"$MNT/t"
	chmod 4777 "$MNT/t"
	run -0 as_nobody truncate -s 1 "$MNT/t"
	run -0 stat -c '%a %s' "$MNT/t"
	assert_output '777 1'
	# root writes with CAP_FSETID: the bits stay
	echo x >"$MNT/r"
	chmod 6755 "$MNT/r"
	echo y >>"$MNT/r"
	run -0 stat -c %a "$MNT/r"
	assert_output 6755
	# chown of a regular file clears both (group-executable: set-group-ID too), even by root
	chown 65534 "$MNT/r"
	run -0 stat -c '%a %u' "$MNT/r"
	assert_output '755 65534'
	# and the cleared modes are what the store keeps
	remount -o allow_other
	run -0 stat -c %a "$MNT/f4777" "$MNT/t" "$MNT/r"
	assert_output $'777\n777\n755'
}

@test "an O_TRUNC open that writes nothing, an ftruncate and a chgrp by a non-root owner clear set-ID bits as a write does" {
	open_tmpdir_to_others
	mount_store -o allow_other
	# O_TRUNC alone: the kernel left it to a setattr it never sent (atomic O_TRUNC)
	echo x >"$MNT/t"
	chmod 6777 "$MNT/t"
	run -0 as_nobody sh -c ": >'$MNT/t'"
	run -0 stat -c '%a %s' "$MNT/t"
	assert_output '777 0'
	# ftruncate of an open descriptor
	echo xy >"$MNT/f"
	chmod 4777 "$MNT/f"
	run -0 as_nobody python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.ftruncate(fd, 1)' "$MNT/f"
	run -0 stat -c '%a %s' "$MNT/f"
	assert_output '777 1'
	# chgrp by its owner: set-user-ID goes, set-group-ID where the group may execute
	mkdir -m 777 "$MNT/pub"
	run -0 as_nobody sh -c "echo a >'$MNT/pub/x' && chmod 6755 '$MNT/pub/x' && chgrp 65534 '$MNT/pub/x'"
	run -0 as_nobody sh -c "echo a >'$MNT/pub/y' && chmod 2745 '$MNT/pub/y' && chgrp 65534 '$MNT/pub/y'"
	run -0 stat -c %a "$MNT/pub/x" "$MNT/pub/y"
	assert_output $'755\n2745'
	remount -o allow_other
	run -0 stat -c %a "$MNT/t" "$MNT/f" "$MNT/pub/x"
	assert_output $'777\n777\n755'
}

@test "chmod and chown by a non-owner fail with EPERM and change nothing; the owner may chmod and chgrp only to its groups" {
	open_tmpdir_to_others
	mount_store -o allow_other
	echo x >"$MNT/rootfile"
	chmod 666 "$MNT/rootfile"
	run -1 as_nobody chmod 600 "$MNT/rootfile"
	assert_output --partial 'Operation not permitted'
	run -1 as_nobody chown 65534 "$MNT/rootfile"
	assert_output --partial 'Operation not permitted'
	run -0 stat -c '%a %u %g' "$MNT/rootfile"
	assert_output '666 0 0'
	mkdir -m 777 "$MNT/pub"
	run -0 as_nobody sh -c "echo z >'$MNT/pub/mine'"
	run -0 as_nobody chmod 640 "$MNT/pub/mine"
	run -0 as_nobody chgrp 65534 "$MNT/pub/mine"
	run -1 as_nobody chgrp 0 "$MNT/pub/mine"
	assert_output --partial 'Operation not permitted'
	run -1 as_nobody chown 0 "$MNT/pub/mine"
	run -0 stat -c '%a %u %g' "$MNT/pub/mine"
	assert_output '640 65534 65534'
}

@test "a sticky directory lets only the entry's owner, the directory's owner or root remove or rename an entry" {
	open_tmpdir_to_others
	mount_store -o allow_other
	mkdir "$MNT/tmp"
	chmod 1777 "$MNT/tmp"
	echo a >"$MNT/tmp/roots"
	mkdir "$MNT/tmp/rootdir"
	run -0 as_nobody sh -c "echo b >'$MNT/tmp/nobodys'"
	run -1 as_nobody rm -f "$MNT/tmp/roots"
	assert_output --partial 'Operation not permitted'
	run -1 as_nobody mv "$MNT/tmp/roots" "$MNT/tmp/moved"
	assert_output --partial 'Operation not permitted'
	run -1 as_nobody rmdir "$MNT/tmp/rootdir"
	assert_output --partial 'Operation not permitted'
	# renaming onto another user's entry is refused too
	run -1 as_nobody mv "$MNT/tmp/nobodys" "$MNT/tmp/roots"
	assert_output --partial 'Operation not permitted'
	run -0 cat "$MNT/tmp/roots" "$MNT/tmp/nobodys"
	assert_output $'a\nb'
	# its own entries: yes
	run -0 as_nobody mv "$MNT/tmp/nobodys" "$MNT/tmp/n2"
	run -0 as_nobody rm "$MNT/tmp/n2"
	# without the sticky bit, write permission on the directory is enough
	chmod 0777 "$MNT/tmp"
	run -0 as_nobody rm -f "$MNT/tmp/roots"
	run -0 as_nobody rmdir "$MNT/tmp/rootdir"
	# the owner of a sticky directory may remove anything in it
	mkdir "$MNT/own"
	chown 65534 "$MNT/own"
	chmod 1777 "$MNT/own"
	echo c >"$MNT/own/rootfile"
	run -0 as_nobody rm -f "$MNT/own/rootfile"
	run -0 ls -A "$MNT/own"
	assert_output ''
}

@test "utimensat: UTIME_OMIT keeps the other time; an atime set apart is kept across a remount, stored only while it differs" {
	mount_store
	echo x >"$MNT/f"
	touch -d @1000000000 "$MNT/f"
	run -0 stat -c '%X %Y' "$MNT/f"
	assert_output '1000000000 1000000000'
	touch -a -d @1100000000 "$MNT/f"
	run -0 stat -c '%X %Y' "$MNT/f"
	assert_output '1100000000 1000000000'
	touch -m -d @1200000000 "$MNT/f"
	run -0 stat -c '%X %Y' "$MNT/f"
	assert_output '1100000000 1200000000'
	# nanoseconds, both at once, through the kernel's utimensat
	python3 -c 'import os,sys; os.utime(sys.argv[1], ns=(1300000000123456789, 1250000000987654321))' "$MNT/f"
	run -0 stat -c '%.9X %.9Y' "$MNT/f"
	assert_output '1300000000.123456789 1250000000.987654321'
	# UTIME_OMIT on the atime while the atime followed the mtime: it stays
	echo y >"$MNT/g"
	touch -d @1000000000 "$MNT/g"
	touch -m -d @1400000000 "$MNT/g"
	run -0 stat -c '%X %Y' "$MNT/g"
	assert_output '1000000000 1400000000'
	remount
	run -0 stat -c '%X %Y' "$MNT/f" "$MNT/g"
	assert_output $'1300000000 1250000000\n1000000000 1400000000'
	# the record holds an atime (44 bytes) only while it differs from the mtime
	local key
	key=$("$KVFS_BIN" dump "$STORE" | awk '$1 == "attr" && $2 ~ /^0266/ { print $2 }')
	[ -n "$key" ]
	run -0 attr_record_len "$key"
	assert_output 88
	touch -d @1500000000 "$MNT/f"
	run -0 stat -c '%X %Y' "$MNT/f"
	assert_output '1500000000 1500000000'
	run -0 attr_record_len "$key"
	assert_output 72
	# reads never change it (noatime)
	cat "$MNT/f" >/dev/null
	run -0 stat -c '%X' "$MNT/f"
	assert_output 1500000000
	# directories too
	mkdir "$MNT/d"
	touch -a -d @1600000000 "$MNT/d"
	touch -m -d @1700000000 "$MNT/d"
	remount
	run -0 stat -c '%X %Y' "$MNT/d"
	assert_output '1600000000 1700000000'
	run -0 kvfs check "$STORE"
}

@test "utimens on an open descriptor: times set before close are the ones kept; touch -a keeps the mtime" {
	mount_store
	python3 - "$MNT/new" <<-'EOF'
	import os, sys
	fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644)
	os.write(fd, b"data\n")
	os.utime(fd, (111, 222))
	st = os.fstat(fd)
	assert (st.st_atime, st.st_mtime) == (111, 222), (st.st_atime, st.st_mtime)
	os.close(fd)
	EOF
	run -0 stat -c '%X %Y %s' "$MNT/new"
	assert_output '111 222 5'
	# touch -a opens the file for writing, then sets only the atime
	echo x >"$MNT/old"
	touch -d @1000000000 "$MNT/old"
	touch -a -d @1100000000 "$MNT/old"
	run -0 stat -c '%X %Y' "$MNT/old"
	assert_output '1100000000 1000000000'
	remount
	run -0 stat -c '%X %Y' "$MNT/new" "$MNT/old"
	assert_output $'111 222\n1100000000 1000000000'
}

@test "ctime: utimensat and rename move it; mkdir gives the new directory the current times and moves its parent's" {
	mount_store
	sleep 1	# the store's creation time (what a directory without times shows) is past
	echo x >"$MNT/f"
	local before
	before=$(date +%s)	# before the touch: a second may turn between the two
	touch -d @1000000000 "$MNT/f"
	# ctime is now even though the mtime went back in time
	[ "$(stat -c %Z "$MNT/f")" -ge "$before" ]
	touch -d @1000000000 "$MNT/dirstamp"
	mkdir "$MNT/old"
	touch -d @1000000000 "$MNT/old"
	mkdir "$MNT/old/new"
	run -0 stat -c '%X %Y %Z' "$MNT/old/new"
	local a m c
	read -r a m c <<<"$output"
	[ "$a" -ge "$before" ]
	[ "$m" -ge "$before" ]
	[ "$c" -ge "$before" ]
	run -0 stat -c '%Y %Z' "$MNT/old"
	read -r m c <<<"$output"
	[ "$m" -ge "$before" ]
	[ "$c" -ge "$before" ]
	# after a remount the new directory keeps its time (it is stored)
	remount
	[ "$(stat -c %Y "$MNT/old/new")" -ge "$before" ]
	touch -d @1000000000 "$MNT/f"
	mv "$MNT/f" "$MNT/g"
	[ "$(stat -c %Z "$MNT/g")" -ge "$before" ]
	[ "$(stat -c %Y "$MNT/g")" -eq 1000000000 ]
}

@test "st_ino stays across rename (files, directories, what is below them); a new file at the old name gets another" {
	# no kernel caches: every stat asks the daemon
	mount_store -o entry_timeout=0,attr_timeout=0
	mkdir -p "$MNT/d/sub"
	echo x >"$MNT/d/f"
	echo y >"$MNT/d/sub/leaf"
	local f d sub leaf
	f=$(stat -c %i "$MNT/d/f")
	d=$(stat -c %i "$MNT/d")
	sub=$(stat -c %i "$MNT/d/sub")
	leaf=$(stat -c %i "$MNT/d/sub/leaf")
	mv "$MNT/d/f" "$MNT/d/g"
	run -0 stat -c %i "$MNT/d/g"
	assert_output "$f"
	echo z >"$MNT/d/f"
	run -0 stat -c %i "$MNT/d/f"
	[ "$output" != "$f" ]
	local newf=$output
	mv "$MNT/d" "$MNT/e"
	run -0 stat -c %i "$MNT/e" "$MNT/e/sub" "$MNT/e/sub/leaf" "$MNT/e/g" "$MNT/e/f"
	assert_output "$d"$'\n'"$sub"$'\n'"$leaf"$'\n'"$f"$'\n'"$newf"
	# a listing's numbers (d_ino, ls -i) are the ones stat shows
	run -0 bash -c "cd '$MNT/e' && ls -i1 | awk '{ print \$2, \$1 }' | sort"
	local listed=$output
	run -0 bash -c "cd '$MNT/e' && stat -c '%n %i' * | sort"
	assert_equal "$listed" "$output"
	# cp and diff compare inode numbers: they must tell the two files apart
	run -0 cp "$MNT/e/f" "$MNT/e/g"
	run -0 cat "$MNT/e/g"
	assert_output z
	# a file renamed over another (sed -i, an editor's save) shows a new number
	local before
	before=$(stat -c %i "$MNT/e/g")
	sed -i s/z/w/ "$MNT/e/g"
	run -0 stat -c %i "$MNT/e/g"
	[ "$output" != "$before" ]
	# the numbers are unique among everything the mount shows
	run -0 bash -c "find '$MNT' -printf '%i\n' | sort | uniq -d"
	assert_output ''
}

@test "what the data model refuses fails cleanly: EPERM for fifo, device, socket, symlink, hard link, EFBIG past 2 GiB; nothing is left behind" {
	open_tmpdir_to_others
	mount_store -o allow_other
	echo x >"$MNT/f"
	run -1 mkfifo "$MNT/fifo"
	assert_output --partial 'Operation not permitted'
	run -1 mknod "$MNT/dev" c 1 3
	assert_output --partial 'Operation not permitted'
	run -1 ln -s f "$MNT/sym"
	assert_output --partial 'Operation not permitted'
	run -1 ln "$MNT/f" "$MNT/hard"
	assert_output --partial 'Operation not permitted'
	run -1 python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$MNT/sock"
	assert_output --partial 'Operation not permitted'
	# content past what one leaf holds (2 GiB - 1 MiB): the write fails, the file stays as it was
	run -1 python3 -c 'import os,sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.pwrite(fd, b"a", 2**31 + 1)' "$MNT/f"
	assert_output --partial 'File too large'
	run -0 stat -c %s "$MNT/f"
	assert_output 2
	run -0 ls -A "$MNT"
	assert_output f
	run -0 cat "$MNT/f"
	assert_output x
	run -0 kvfs check "$STORE"
}
