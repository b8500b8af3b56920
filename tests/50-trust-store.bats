#!/usr/bin/env bats
# Trusting the store (issue 8, parts 1-4): killed readers do not bloat or
# jam it, the store directory is not an attack surface, foreign databases
# and failed commands are left alone, damaged stores never crash kvfs, and a
# full disk says ENOSPC. Mounts are made per test, as each test needs.

# bats file_tags=trust,lmdb

load 'test_helper/common'

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	T=$BATS_TEST_TMPDIR
	MOUNT_PID=
	TMPFS=
	PUBLIC=
}

teardown() {
	local status=0
	mount_teardown || status=1
	if [ -n "$TMPFS" ] && mountpoint -q "$TMPFS"; then
		umount "$TMPFS" || umount -l "$TMPFS"
	fi
	[ -z "$PUBLIC" ] || rm -rf "$PUBLIC"
	return "$status"
}

# big_doc FILE: a document of about 300 KB, so that an export of it blocks on
# a pipe nobody reads (its transaction stays open).
big_doc() {
	python3 -c 'import json; print(json.dumps({"k%04d" % i: "v" * 200 for i in range(1500)}))' >"$1"
}

# The pids in the store's reader table (mdb_stat lists, it does not clear).
reader_pids() {
	mdb_stat -r "$STORE" | awk '$1 ~ /^[0-9]+$/ { print $1 }'
}

no_readers() {
	[ -z "$(reader_pids)" ]
}

has_reader() {
	reader_pids | grep -qx "$1"
}

# A reader blocked in the middle of its transaction: export into a pipe that
# nobody reads. Sets READER to its pid. Arguments are a command prefix (an
# `env --default-signal=INT`: bash starts background jobs with SIGINT ignored).
start_stuck_reader() {
	"$@" "$KVFS_BIN" export "$STORE" > >(sleep 60) 2>/dev/null &
	READER=$!
	eventually 10 has_reader "$READER"
}

# signal_stuck_reader SIG STATUS HOLDER [PREFIX...]: a stuck reader (started
# through PREFIX) sent SIG exits with STATUS, leaving only HOLDER's slot.
signal_stuck_reader() {
	local sig=$1 want=$2 holder=$3 status=0
	shift 3
	start_stuck_reader "$@"
	kill -"$sig" "$READER"
	wait "$READER" || status=$?
	[ "$status" -eq "$want" ]
	run -0 reader_pids
	assert_output "$holder"
}

# ---- 1. killed readers ----

@test "readers cut off by SIGPIPE or killed mid-read leave no slot; 400 writes keep the store small" {
	big_doc "$T/big.json"
	kvfs import "$STORE" / "$T/big.json"
	mount_store
	local i status
	for ((i = 0; i < 60; i++)); do
		"$KVFS_BIN" export "$STORE" | head -c 10 >/dev/null
		status=${PIPESTATUS[0]}
		# ended by SIGPIPE, as a pipe reader is (141 = 128 + 13)
		[ "$status" -eq 141 ] || { echo "export exited $status" >&2; return 1; }
	done
	run -141 bash -c '"$0" dump "$1" | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}' "$KVFS_BIN" "$STORE"
	no_readers
	# real stale slots: readers killed with SIGKILL mid-transaction (the
	# daemon keeps the table alive); the daemon clears them every few seconds
	for ((i = 0; i < 5; i++)); do
		start_stuck_reader
		kill -9 "$READER"
		wait "$READER" || true
	done
	eventually 15 no_readers
	for ((i = 0; i < 400; i++)); do
		echo "$i" >"$MNT/x"
	done
	run -0 cat "$MNT/x"
	assert_output 399
	run -0 cat "$MNT/k0042"
	assert_output "$(printf 'v%.0s' {1..200})"
	size=$(stat -c %s "$STORE/data.mdb")
	echo "data.mdb: $size bytes" >&3
	[ "$size" -lt 1048576 ]
	run -0 kvfs info "$STORE"
	assert_line 'readers:    0'
	run -0 kvfs check "$STORE"
}

@test "SIGPIPE, SIGTERM and SIGINT end a reader's transaction and kill it by that signal; info lists live readers" {
	big_doc "$T/big.json"
	kvfs import "$STORE" / "$T/big.json"
	# a live reader keeps the reader table, so a slot left behind would show
	start_stuck_reader
	holder=$READER
	run -0 kvfs info "$STORE"
	assert_line "readers:    1 (pids $holder)"
	signal_stuck_reader TERM 143 "$holder"
	signal_stuck_reader INT 130 "$holder" env --default-signal=INT
	for verb in export dump "get --json"; do
		"$KVFS_BIN" $verb "$STORE" $([ "$verb" = dump ] || echo /) | head -c 10 >/dev/null
		[ "${PIPESTATUS[0]}" -eq 141 ]
		run -0 reader_pids
		assert_output "$holder"
	done
	kill -TERM "$holder"
	wait "$holder" || true
	run -0 kvfs info "$STORE"
	assert_line 'readers:    0'
	assert_line 'stale readers cleared: 0'
}

@test "check warns about stale readers and clears them; info shows free pages and the high-water mark" {
	big_doc "$T/big.json"
	kvfs import "$STORE" / "$T/big.json"
	# a live reader keeps the reader table (the first opener resets it)
	start_stuck_reader
	live=$READER
	start_stuck_reader
	kill -9 "$READER"
	wait "$READER" || true
	has_reader "$READER"
	run -0 kvfs check "$STORE"
	assert_line --partial 'check: warning: cleared 1 reader slots left by processes that died'
	run -0 reader_pids
	assert_output "$live"
	kill -TERM "$live"
	wait "$live" || true
	no_readers
	echo "{}" | kvfs import "$STORE" / -
	run -0 kvfs info "$STORE"
	assert_line --regexp '^used: +[0-9]+ bytes'
	assert_line --regexp '^high water: +[0-9]+ bytes'
	used=$(kvfs info "$STORE" | awk '$1 == "used:" { print $2 }')
	free=$(kvfs info "$STORE" | awk '$1 == "free:" { print $2 }')
	high=$(kvfs info "$STORE" | awk '$1 == "high" { print $3 }')
	# everything was removed: most of the file is free, and used + free = high water
	[ "$free" -gt 200000 ]
	[ "$used" -lt 65536 ]
	[ $((used + free)) -eq "$high" ]
}

# ---- 2. the store directory ----

@test "planted symlinks for lock.mdb or data.mdb are refused, never followed" {
	kvfs put --create "$STORE" /a 1
	printf 'precious\n' >"$T/victim"
	rm "$STORE/lock.mdb"
	ln -s "$T/victim" "$STORE/lock.mdb"
	for verb in check export info ls; do
		run -1 kvfs "$verb" "$STORE"
		assert_output --partial 'lock.mdb: is a symbolic link; refusing to follow it'
	done
	run -1 kvfs put "$STORE" /a 2
	assert_file_bytes "$T/victim" 'precious\n'
	# data.mdb as a link to a real store's file
	rm "$STORE/lock.mdb"
	mkdir "$T/s2"
	mv "$STORE/data.mdb" "$T/real.mdb"
	ln -s "$T/real.mdb" "$STORE/data.mdb"
	run -1 kvfs export "$STORE"
	assert_output --partial 'data.mdb: is a symbolic link'
	# creating a store does not chmod or write through a planted link
	mkdir "$T/new"
	ln -s "$T/victim" "$T/new/lock.mdb"
	chmod 0644 "$T/victim"
	run -1 kvfs put --create "$T/new" /a 1
	assert_output --partial 'is a symbolic link'
	[ "$(stat -c %a "$T/victim")" = 644 ]
	[ ! -e "$T/new/data.mdb" ]
	assert_file_bytes "$T/victim" 'precious\n'
	# a fifo is no store file either
	mkdir "$T/fifo"
	mkfifo "$T/fifo/data.mdb"
	run -1 kvfs check "$T/fifo"
	assert_output --partial 'not a regular file'
}

@test "a store directory owned by another user is refused unless KVFS_SAFE_DIRECTORY trusts it" {
	kvfs put --create "$STORE" /a 1
	chown -R nobody "$STORE"
	run -1 kvfs get "$STORE" /a
	assert_output --partial "owned by uid $(id -u nobody), not by you (uid 0); refusing"
	assert_output --partial "KVFS_SAFE_DIRECTORY=$STORE"
	run -1 timeout 10 "$KVFS_BIN" mount -f "$STORE" "$T"
	assert_output --partial 'refusing'
	KVFS_SAFE_DIRECTORY=$STORE run -0 kvfs get "$STORE" /a
	assert_output 1
	KVFS_SAFE_DIRECTORY="/elsewhere:*" run -0 kvfs get "$STORE" /a
	KVFS_SAFE_DIRECTORY=/elsewhere run -1 kvfs get "$STORE" /a
}

# Every verb, on a directory holding someone else's LMDB database.
assert_foreign_untouched() {
	local dir=$1 sum verb
	echo '{"x":1}' >"$T/doc.json"
	sum=$(sha256sum <"$dir/data.mdb")
	run -1 kvfs put "$dir" /a 1
	assert_output --partial 'not a kvfs store'
	run -1 kvfs put --create "$dir" /a 1
	run -1 kvfs import "$dir" / "$T/doc.json"
	run -1 kvfs mkdir --create "$dir" /d
	run -1 kvfs load "$dir" /dev/null
	for verb in check export dump info ls; do
		run -1 kvfs "$verb" "$dir"
		assert_output --partial 'not a kvfs store'
	done
	mkdir -p "$T/m"
	run -1 timeout 10 "$KVFS_BIN" mount -f --create "$dir" "$T/m"
	run ! mountpoint -q "$T/m"
	[ "$(sha256sum <"$dir/data.mdb")" = "$sum" ]
	[ -e "$dir/data.mdb" ]
}

@test "another program's LMDB database (a plain key, a named database) is refused and untouched" {
	mkdir "$T/plain" "$T/named"
	printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n hello\n world\nDATA=END\n' |
		mdb_load "$T/plain"
	printf 'VERSION=3\nformat=print\ntype=btree\nHEADER=END\n k\n v\nDATA=END\n' |
		mdb_load -s things "$T/named"
	assert_foreign_untouched "$T/plain"
	assert_foreign_untouched "$T/named"
	run -0 mdb_dump -p -s things "$T/named"
	assert_line ' v'
}

@test "failed commands leave nothing behind" {
	printf '{"a": [1, 2' >"$T/bad.json"
	run -1 kvfs import "$T/nostore" / "$T/bad.json"
	[ ! -e "$T/nostore" ]
	mkdir "$T/emptydir"
	run -1 kvfs import "$T/emptydir" / "$T/bad.json"
	run -0 ls -A "$T/emptydir"
	assert_output ''
	# mount --create that cannot mount (the mountpoint is a file) creates no store
	: >"$T/notadir"
	run -1 kvfs mount -f --create "$T/nostore" "$T/notadir"
	[ ! -e "$T/nostore" ]
	mkdir "$T/mnt2"
	run -1 kvfs mount -f --create -o no_such_fuse_option "$T/nostore" "$T/mnt2"
	[ ! -e "$T/nostore" ]
	# a failed open leaves no lock.mdb where there was no store
	mkdir "$T/junk"
	printf 'not a database at all, but long enough to read two pages?' >"$T/junk/data.mdb"
	head -c 16384 /dev/urandom >>"$T/junk/data.mdb"
	for verb in check export info; do
		run -1 kvfs "$verb" "$T/junk"
		[ ! -e "$T/junk/lock.mdb" ]
	done
	run -1 kvfs put "$T/junk" /a 1
	[ ! -e "$T/junk/lock.mdb" ]
	# --create refuses a directory with other files in it
	mkdir "$T/full"
	echo hi >"$T/full/notes.txt"
	run -1 kvfs put --create "$T/full" /a 1
	assert_output --partial 'not empty and not a kvfs store'
	run -0 ls -A "$T/full"
	assert_output 'notes.txt'
	# a good import still creates the store
	echo '{"a":1}' >"$T/good.json"
	run -0 kvfs import "$T/nostore" / "$T/good.json"
	run -0 kvfs get "$T/nostore" /a
	assert_output 1
}

@test "permission denied is reported as such, not as a missing store" {
	PUBLIC=$(mktemp -d /tmp/kvfs-perm.XXXXXX)
	chmod 0755 "$PUBLIC"
	kvfs put --create "$PUBLIC/s" /a 1
	[ "$(stat -c %a "$PUBLIC/s")" = 700 ]
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env KVFS_SAFE_DIRECTORY='*' "$KVFS_BIN" get "$PUBLIC/s" /a
	assert_output --partial 'Permission denied'
	refute_output --partial 'no store'
	run -1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$KVFS_BIN" get "$PUBLIC/s" /a
	assert_output --partial 'not by you'
}

# ---- 3. damaged stores ----

@test "a truncated store is refused cleanly by every verb, at several sizes" {
	kvfs import "$STORE" / "$BATS_TEST_DIRNAME/../scripts/demo.json"
	cp "$STORE/data.mdb" "$T/pristine"
	local size verb
	mkdir "$T/m"
	for size in 0 100 4096 8192 12288 $(($(stat -c %s "$T/pristine") - 4096)); do
		cp "$T/pristine" "$STORE/data.mdb"
		truncate -s "$size" "$STORE/data.mdb"
		for verb in check export dump info; do
			run -1 kvfs "$verb" "$STORE"
			assert_output --regexp 'damaged|empty'
		done
		run -1 kvfs get "$STORE" /name
		run -1 kvfs put "$STORE" /q 1
		run -1 timeout 10 "$KVFS_BIN" mount -f "$STORE" "$T/m"
		assert_output --regexp 'damaged|empty'
		run ! mountpoint -q "$T/m"
	done
}

# flip_sweep N SPREAD: N single-bit flips, each in a copy of the demo store
# of its own (one python3 makes them all), then check, export and get
# --json of each: none may die from a signal (ASan's and UBSan's reports
# exit 1, so under the sanitizers a memory error fails too). SPREAD
# "pages": flip i lands at a random place of page i % pages, so that every
# page (the two meta pages, branch and leaf pages of each database) takes
# its share; "anywhere": at a random offset of the file. The seed is
# printed (KVFS_FLIP_SEED repeats a run).
flip_sweep() {
	local n=$1 spread=$2 i off bit verb flagged=0 seed=${KVFS_FLIP_SEED:-$RANDOM}
	kvfs import "$STORE" / "$BATS_TEST_DIRNAME/../scripts/demo.json"
	mkdir "$T/flips"
	python3 - "$STORE/data.mdb" "$T/flips" "$n" "$spread" "$seed" >"$T/flips/list" <<'EOF'
import os, random, sys
path, out, n, spread, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
pristine = open(path, "rb").read()
rng, pages = random.Random(seed), len(pristine) // 4096
for i in range(n):
    if spread == "pages":
        off = (i % pages) * 4096 + rng.randrange(4096)
    else:
        off = rng.randrange(len(pristine))
    bit = rng.randrange(8)
    data = bytearray(pristine)
    data[off] ^= 1 << bit
    os.mkdir("%s/%d" % (out, i))
    open("%s/%d/data.mdb" % (out, i), "wb").write(data)
    print(i, off, bit)
EOF
	[ "$(wc -l <"$T/flips/list")" -eq "$n" ]
	while read -r i off bit; do
		for verb in check export "get --json"; do
			run kvfs $verb "$T/flips/$i" $([ "$verb" = check ] || echo /)
			if [ "$status" -ge 128 ]; then
				echo "kvfs $verb died with status $status after a flip of bit $bit at $off (seed $seed)" >&2
				return 1
			fi
			[ "$verb" != check ] || [ "$status" -eq 0 ] || flagged=$((flagged + 1))
		done
	done <"$T/flips/list"
	echo "check flagged $flagged of $n flips (seed $seed)" >&3
}

# Under ASan each kvfs start costs about 0.3 s: 24 flips spread over every
# page (72 runs, about 22 s; 50 anywhere and a second check each took 75 s);
# the optimized build takes 50 anywhere.
@test "single-bit flips never make check, export or get die from a signal" {
	flip_sweep 24 pages
}

# bats test_tags=plain
@test "single-bit flips anywhere, 50 of them: check, export and get never die from a signal" {
	flip_sweep 50 anywhere
}

# node_offset_flips all|live: flips in the node offsets (the pointer array
# after each page's 16-byte header) of every page but the two meta pages,
# each followed by an export and a get --json of the damaged store, neither
# of which may die from a signal; the store is restored and must check clean.
# "all": the first 16 offset slots of every page, bits 3, 5 and 7 of each
# (576 runs on the demo store: 130 s under ASan, so the optimized build
# runs it); "live": each of those slots a page uses (below its mp_lower;
# the slots past it are free space no reader looks at), one flip each, its
# bit turning through 3, 5 and 7 (about 70 runs); a page with none (an
# overflow page) has its first slot flipped.
node_offset_flips() {
	# LMDB keeps no checksums: a flipped offset makes a node's sizes garbage,
	# which a reader would follow past the map (SIGSEGV) unless bounded
	kvfs import "$STORE" / "$BATS_TEST_DIRNAME/../scripts/demo.json"
	run -0 python3 - "$KVFS_BIN" "$STORE" "$1" <<'EOF'
import struct, subprocess, sys
kvfs, store, mode = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(store + "/data.mdb", "rb").read()
page, runs, died, pages = 4096, 0, [], 0
for p in range(2, len(data) // page):  # pages 0 and 1 are the meta pages
    lower = struct.unpack_from("<H", data, p * page + 12)[0]
    flips = []
    for i, off in enumerate(range(p * page + 16, p * page + 48, 2)):  # the first node offsets
        if mode == "all":
            flips += [(off, bit) for bit in (3, 5, 7)]
        elif off < p * page + lower:
            flips.append((off, (3, 5, 7)[(p + i) % 3]))
    if not flips:  # no node (an overflow page's count is where lower is): its first slot
        flips = [(p * page + 16, 3)]
    pages += 1
    for off, bit in flips:
        d = bytearray(data)
        d[off] ^= 1 << bit
        open(store + "/data.mdb", "wb").write(d)
        for verb in (["export", store, "/"], ["get", "--json", store, "/"]):
            r = subprocess.run([kvfs] + verb, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            runs += 1
            if r.returncode < 0 or r.returncode >= 128:
                died.append("%s at %d bit %d: %d" % (verb[0], off, bit, r.returncode))
open(store + "/data.mdb", "wb").write(data)
print("%d runs on %d pages, %d died" % (runs, pages, len(died)))
print("\n".join(died[:10]))
sys.exit(1 if died or runs == 0 else 0)
EOF
	assert_output --partial ' 0 died'
	run -0 kvfs check "$STORE"
}

@test "flips in the node offsets of every page: export and get fail cleanly, not by a signal" {
	node_offset_flips live
}

# bats test_tags=plain
@test "flips in the first 16 node offset slots of every page, 3 bits each: export and get never die from a signal" {
	node_offset_flips all
}

# A flip of bit 11 of a leaf node's key size makes its key 2 KiB longer
# than any written: LMDB returns it as it is, and export copied it into a
# buffer of the longest key (SIGSEGV, tests/50's flips anywhere, seed
# 20593). Each leaf page's first and last node get such a size, one at a
# time; export, get --json and check may fail (status 1: check must, for
# some: pages no verb reads, the free list's, say nothing), never by a
# signal.
@test "a leaf key whose size a flip made longer than any key is damage: export, get and check fail cleanly" {
	kvfs import "$STORE" / "$BATS_TEST_DIRNAME/../scripts/demo.json"
	run -0 python3 - "$KVFS_BIN" "$STORE" <<'EOF'
import struct, subprocess, sys
kvfs, store = sys.argv[1], sys.argv[2]
data = open(store + "/data.mdb", "rb").read()
page, runs, bad, flagged = 4096, 0, [], 0
for p in range(2, len(data) // page):
    base = p * page
    flags, lower = struct.unpack_from("<HH", data, base + 10)
    if not flags & 0x02 or flags & 0x04 or lower <= 16:  # leaf pages, not overflow
        continue
    slots = (lower - 16) // 2
    for slot in sorted({0, slots - 1}):
        node = base + struct.unpack_from("<H", data, base + 16 + 2 * slot)[0]
        d = bytearray(data)
        d[node + 7] ^= 0x08  # mn_ksize's high byte: + 2048
        open(store + "/data.mdb", "wb").write(d)
        for verb in (["export", store, "/"], ["get", "--json", store, "/"], ["check", store]):
            r = subprocess.run([kvfs] + verb, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            runs += 1
            flagged += verb[0] == "check" and r.returncode == 1
            if r.returncode not in (0, 1):
                bad.append("%s, page %d slot %d: status %d" % (verb[0], p, slot, r.returncode))
open(store + "/data.mdb", "wb").write(data)
print("%d runs, check flagged %d, %d died" % (runs, flagged, len(bad)))
print("\n".join(bad[:10]))
sys.exit(1 if bad or flagged < 3 else 0)
EOF
	assert_output --partial ', 0 died'
	run -0 kvfs check "$STORE"
}

# ---- 4. a full disk ----

@test "a full disk gives ENOSPC on every path, keeps the data, and recovers" {
	TMPFS=$T/tmpfs
	mkdir "$TMPFS"
	mount -t tmpfs -o size=8m tmpfs "$TMPFS"
	STORE=$TMPFS/store
	head -c 2000000 /dev/zero >"$TMPFS/filler"
	head -c 1200000 /dev/urandom | base64 >"$T/blob"
	mount_store
	echo keep >"$MNT/keep"
	local i full=0
	for ((i = 0; i < 12; i++)); do
		run cp "$T/blob" "$MNT/b$i"
		if [ "$status" -ne 0 ]; then
			assert_output --partial 'No space left on device'
			full=1
			break
		fi
	done
	[ "$full" -eq 1 ]
	kvfs export "$STORE" >"$T/before.json"
	# every path says ENOSPC, and nothing changes
	run -1 kvfs put "$STORE" /big - <"$T/blob"
	assert_output --partial 'No space left on device'
	python3 -c 'import json, sys; print(json.dumps({"v": open(sys.argv[1]).read()}))' \
		"$T/blob" >"$T/bigdoc.json"
	run -1 kvfs import "$STORE" /doc "$T/bigdoc.json"
	assert_output --partial 'No space left on device'
	run ! cp "$T/blob" "$MNT/b$i"
	assert_output --partial 'No space left on device'
	refute_output --partial 'Input/output error'
	kvfs export "$STORE" >"$T/after.json"
	cmp "$T/before.json" "$T/after.json"
	cmp "$T/blob" "$MNT/b0"
	run -0 cat "$MNT/keep"
	assert_output keep
	# space freed: writes work again, through the mount and the CLI
	rm "$TMPFS/filler"
	run -0 cp "$T/blob" "$MNT/again"
	cmp "$T/blob" "$MNT/again"
	run -0 kvfs put "$STORE" /small 1
	run -0 kvfs check "$STORE"
	unmount_store
	run ! grep 'Input/output error' "$MOUNT_LOG"
}

@test "signals the caller ignores stay ignored: a background dump survives SIGINT, SIGPIPE ignored gives EPIPE" {
	big_doc "$T/big.json"
	kvfs import "$STORE" / "$T/big.json"
	mkfifo "$T/fifo"
	# a background job of a script: bash starts it with SIGINT ignored
	"$KVFS_BIN" dump "$STORE" >"$T/fifo" &
	local pid=$!
	status=0
	local rfd
	exec {rfd}<"$T/fifo"
	eventually 10 has_reader "$pid"
	kill -INT "$pid"
	cat <&"$rfd" >"$T/dump"
	exec {rfd}<&-
	wait "$pid" || status=$?
	[ "$status" -eq 0 ]
	run -0 tail -n 1 "$T/dump"
	assert_output --regexp '^end [0-9]+$'
	# SIGPIPE ignored by the caller: the write fails with EPIPE and says so
	run bash -c 'env --ignore-signal=PIPE "$0" dump "$1" | head -c 10 >/dev/null; exit "${PIPESTATUS[0]}"' \
		"$KVFS_BIN" "$STORE"
	[ "$status" -eq 1 ]
	assert_output --partial 'write error on standard output: Broken pipe'
	run -0 reader_pids
	assert_output ''
}
