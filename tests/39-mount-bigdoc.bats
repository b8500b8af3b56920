#!/usr/bin/env bats
# Big documents and leaves through the mount: their write buffers spill to
# an unlinked file in the store's directory (no 1 GiB cap, no whole copy in
# the daemon's memory), round-trip exactly, a refused big document is parsed
# once and leaves the old state with the daemon serving, and a spilled
# buffer keeps truncate/extend semantics. Memory is checked loosely.

# bats file_tags=mount,backends

load 'test_helper/common'

setup() {
	mount_setup
	T=$BATS_TEST_TMPDIR
}

teardown() {
	mount_teardown
	if [ -n "${TMPFS:-}" ] && mountpoint -q "$TMPFS"; then
		umount "$TMPFS" || umount -l "$TMPFS"
	fi
}

# make_doc N FILE: an object of N records under shuffled keys (fixed seed).
# make_doc N FILE [PAD]: N shuffled records of seven leaves each, the
# name padded by PAD bytes (fewer keys for the same size).
make_doc() {
	python3 - "$1" "$2" "${3:-0}" <<'EOF'
import json, random, sys
n, path, pad = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
rnd = random.Random(39)
ids = list(range(n))
rnd.shuffle(ids)
with open(path, "w") as f:
    f.write('{')
    for i, u in enumerate(ids):
        f.write(('' if i == 0 else ',\n') + '"k%07d":' % u)
        f.write('{"name":"user %d \\u00e9","big":%d,"d":%s,"t":["a\\u0000b",{}],"b":{"$base64":"/w=="}}'
                % (u, 10**19 + u, repr(u / 4)) if not pad else
                '{"name":"user %d %s","big":%d,"d":%s,"t":["a\\u0000b",{}],"b":{"$base64":"/w=="}}'
                % (u, "x" * pad, 10**19 + u, repr(u / 4)))
    f.write('}\n')
EOF
}

# big_doc MB FILE: a document of a few big strings (quick to store).
big_doc() {
	python3 - "$1" "$2" <<'EOF'
import sys
mb, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    f.write('{')
    for i in range(mb):
        f.write(('' if i == 0 else ',') + '"s%04d":"' % i + chr(97 + i % 26) * (1 << 20) + '\\n"')
    f.write(',"n":[1,-0.0,18446744073709551616]}\n')
EOF
}

hwm_kib() { awk '/^VmHWM/ { print $2 }' "/proc/$MOUNT_PID/status"; }

# spill_files: the daemon's open spill files (deleted, in the store's directory).
spill_files() {
	find "/proc/$MOUNT_PID/fd" -lname "$STORE/*(deleted)" 2>/dev/null | wc -l
}

# no_spill_files: none is left, once the last release came (the kernel sends
# it after close returns; the spill file goes with the writer).
no_spill_files() {
	spills_gone() { [ "$(spill_files)" -eq 0 ]; }
	eventually 5 spills_gone
}

# same_doc A B: the two JSON files hold the same document.
same_doc() {
	python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$1" "$2"
}

# bats test_tags=plain
@test "a document bigger than the spill threshold round-trips exactly through cp" {
	skip_on_etcd "80,000 records (about 640,000 keys) take over 10 minutes through an etcd mount (the view reads node by node); the 20 MB document below and tests/83-etcd-big.bats write documents over one request"
	make_doc 80000 "$T/doc.json"
	[ "$(stat -c %s "$T/doc.json")" -gt $((8 * 1024 * 1024)) ]
	cp "$T/doc.json" "$MNT/d.json"
	cat "$MNT/d.json" >"$T/back.json"
	same_doc "$T/doc.json" "$T/back.json"
	run -0 cat "$MNT/d/k0000007/big" "$MNT/d/k0000007/d"
	assert_output $'10000000000000000007\n1.75'
	# the view written back is the same text again
	cp "$T/back.json" "$MNT/e.json"
	cmp <(cat "$MNT/d.json") <(cat "$MNT/e.json")
	no_spill_files
	run -0 kvfs check "$STORE"
}

# bats test_tags=plain
@test "a 100 MB document through cp: exact, and the daemon's peak at most 1.5x" {
	skip_on_etcd "100 MB staged and applied, with 10 minutes of history, weighs on etcd's 2 GiB quota; the 20 MB variant below runs on etcd"
	! is_sanitized || skip "100 MB through a sanitizer takes minutes and its shadow memory makes the peak meaningless; the 20 MB variant below runs everywhere"
	# 100 MB: the daemon's baseline (about 20 MB) is small beside it, so a
	# second whole copy (2x and more) could not pass the 1.5x bound
	big_doc 100 "$T/big.json"
	cp "$T/big.json" "$MNT/big.json"
	peak=$(hwm_kib)
	echo "daemon VmHWM $peak KiB for a 100 MB document" >&3
	# the buffer is on disk and given back as parsed: about one copy, in the store's page
	[ "$peak" -lt $((100 * 1024 * 15 / 10)) ]
	cmp <(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True))' "$T/big.json") \
	    <(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True))' "$MNT/big.json")
	[ "$(stat -c %s "$MNT/big/s0099")" -eq $(((1 << 20) + 2)) ]
}

@test "a 20 MB document of big strings through cp, exactly" {
	big_doc 20 "$T/big.json"
	cp "$T/big.json" "$MNT/big.json"
	same_doc "$T/big.json" <(cat "$MNT/big.json")
	[ "$(stat -c %s "$MNT/big/s0019")" -eq $(((1 << 20) + 2)) ]
	run -0 cat "$MNT/big/n.json"
	assert_output $'[\n  1,\n  -0.0,\n  18446744073709551616\n]'
}

# anon_peak_kib CMD...: runs CMD, prints the largest anonymous memory (RssAnon,
# KiB) the daemon had while it ran (sampled; the store's map is not in it).
anon_peak_kib() {
	local max=0 a pid
	"$@" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		a=$(awk '/^RssAnon/ { print $2 }' "/proc/$MOUNT_PID/status")
		[ "$a" -le "$max" ] || max=$a
		sleep 0.01
	done
	wait "$pid" || return 1
	echo "$max"
}

# bats test_tags=plain
@test "reading a 40 MB view holds no copy of it in the daemon" {
	skip_on_etcd "an etcd read transaction keeps every answer it read until it ends (docs/ETCD.md section 4), so a view's reads are held there"
	! is_sanitized || skip "a sanitizer's shadow memory and quarantine make the peak meaningless"
	big_doc 40 "$T/big.json"
	kvfs import "$STORE" /big "$T/big.json"
	size=$(stat -c %s "$MNT/big.json")
	[ "$size" -gt $((40 << 20)) ]
	base=$(awk '/^RssAnon/ { print $2 }' "/proc/$MOUNT_PID/status")
	peak=$(anon_peak_kib cp "$MNT/big.json" "$T/back.json")
	echo "daemon RssAnon $base KiB, at most $peak KiB while a $size-byte view was read" >&3
	cmp "$T/back.json" <(kvfs export "$STORE" /big)
	# the rendering went to a spill file as it was made: 8 MiB of heap at
	# most before it moved there, and one leaf (1 MiB) at a time
	[ "$peak" -lt $((base + 20 * 1024)) ]
	no_spill_files
}

@test "a view too big for the disk left is read from memory instead, whole" {
	skip_on_etcd "the spill file of an etcd mount is in TMPDIR, not beside the store"
	unmount_store
	TMPFS=$BATS_TEST_TMPDIR/tmpfs
	mkdir "$TMPFS"
	mount -t tmpfs -o size=40m tmpfs "$TMPFS"
	STORE=$TMPFS/store
	mount_store
	big_doc 12 "$T/big.json"
	kvfs import "$STORE" /big "$T/big.json"
	# leave about 2 MB: past 8 MiB the rendering goes to a spill file there
	local free
	free=$(df --output=avail -B1 "$TMPFS" | tail -1)
	head -c "$((free - 2000000))" /dev/zero >"$TMPFS/filler"
	cmp <(cat "$MNT/big.json") <(kvfs export "$STORE" /big)
	no_spill_files
	run -0 grep 'no room on the store.s disk for a spill file' "$MOUNT_LOG"
	rm "$TMPFS/filler"
	cmp <(cat "$MNT/big.json") <(kvfs export "$STORE" /big)
}

@test "a refused big document is parsed once, leaves the old state, and the daemon serves on" {
	make_doc 2000 "$T/old.json"
	cp "$T/old.json" "$MNT/d.json"
	cat "$MNT/d.json" >"$T/before.json"
	# past FS_SPILL_MIN (8 MB) in 8,000 records: each new key costs a lookup,
	# a round trip on etcd (80,000 small records took 5 minutes there)
	make_doc 8000 "$T/bad.json" 1000
	[ "$(stat -c %s "$T/bad.json")" -gt $((8 * 1024 * 1024)) ]
	sed -i '$ s/}$/,}/' "$T/bad.json"	# a trailing comma at the very end
	run cp "$T/bad.json" "$MNT/d.json"
	[ "$status" -ne 0 ]
	assert_output --partial 'Invalid argument'
	cmp "$T/before.json" <(cat "$MNT/d.json")
	# refused at close (flush), not parsed again at release
	[ "$(grep -c 'd.json: invalid JSON' "$MOUNT_LOG")" -eq 1 ]
	# the spill file is gone with the last descriptor
	no_spill_files
	mountpoint -q "$MNT"
	echo '{"after": 1}' >"$MNT/x.json"
	run -0 cat "$MNT/x/after"
	assert_output '1'
}

@test "a big string leaf round-trips with its size right" {
	head -c $((24 * 1024 * 1024)) /dev/zero | tr '\0' a >"$T/leaf"
	cp "$T/leaf" "$MNT/big"
	[ "$(stat -c %s "$MNT/big")" -eq $((24 * 1024 * 1024)) ]
	cmp "$T/leaf" "$MNT/big"
	run -0 getfattr --absolute-names -n user.kvfs.type --only-values "$MNT/big"
	assert_output 'string'
	# not UTF-8: bytes, exactly
	{ head -c $((12 * 1024 * 1024)) /dev/urandom; printf '\377'; } >"$T/bin"
	cp "$T/bin" "$MNT/bin"
	cmp "$T/bin" "$MNT/bin"
	run -0 getfattr --absolute-names -n user.kvfs.type --only-values "$MNT/bin"
	assert_output 'bytes'
	run -0 kvfs check "$STORE"
}

# bats test_tags=plain
@test "a 200 MB string leaf written with a pipe peaks at most at 1.5x in the daemon" {
	skip_on_etcd "a big value on etcd is chunked and staged: the daemon peaks at a few times it, not 1.5x (docs/ETCD.md section 3)"
	! is_sanitized || skip "a sanitizer's shadow memory makes the peak meaningless; the 24 MB leaf above runs everywhere"
	head -c $((200 * 1024 * 1024)) /dev/zero | tr '\0' a >"$MNT/big"
	peak=$(hwm_kib)
	echo "daemon VmHWM $peak KiB for a 200 MiB leaf" >&3
	[ "$peak" -lt $((200 * 1024 * 15 / 10)) ]
	[ "$(stat -c %s "$MNT/big")" -eq $((200 * 1024 * 1024)) ]
	# both ends only: a whole read of a leaf this big is the read path's business
	run -0 dd if="$MNT/big" bs=1 count=4 status=none
	assert_output 'aaaa'
	run -0 dd if="$MNT/big" bs=1 skip=$((200 * 1024 * 1024 - 4)) status=none
	assert_output 'aaaa'
	run -0 kvfs check "$STORE"
}

@test "a spilled buffer cut short and extended reads zeros in the gap" {
	python3 - "$MNT/f" "$T/expect" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, b"a" * (20 << 20))       # spilled: beyond the threshold
os.ftruncate(fd, 1 << 20)             # cut short, the file still holds the a's
os.pwrite(fd, b"b", 10 << 20)         # extended: the gap must read as zeros
os.close(fd)
open(sys.argv[2], "wb").write(b"a" * (1 << 20) + b"\0" * ((10 << 20) - (1 << 20)) + b"b")
EOF
	cmp "$T/expect" "$MNT/f"
}
