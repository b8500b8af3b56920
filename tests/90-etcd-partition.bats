#!/usr/bin/env bats
# tests/90-etcd-partition.bats - etcd across hosts that cannot see each
# other: three members and two kvfs hosts, each a network namespace
# (scripts/netns-cluster.sh), with a writer on each kvfs host's mount
# (scripts/partition-check.py: leaf writes, document copies, appends to a
# shared log document, renames) while the network is cut or slowed. After
# the heal the history of every operation is checked against the store and
# both mounts must show it (docs/ETCD.md section 12 states the bounds).
# Always a network of its own; `make test-partition` runs this file alone.

# bats file_tags=etcd,partition

load 'test_helper/common'
load 'test_helper/etcd'

NET_SH=$BATS_TEST_DIRNAME/../scripts/netns-cluster.sh
CHECK=$BATS_TEST_DIRNAME/../scripts/partition-check.py
# The longest any operation may take, cut off or not; a refusal on the
# cut-off side (a FUSE request fails once the cluster answered nothing for
# 10 s, fs/fs_int.h FS_OP_MS; the rest is a loaded machine's delays); and
# the read of its reason on the mount root, which answers without the
# store (docs/ETCD.md section 12).
OP_BOUND=20
REFUSED_BOUND=15
WHY_BOUND=3
# The longest from the heal to k0's mount taking in every commit k1's had
# taken in at the heal (their positions in user.kvfs.stats): the issue's
# 1 s. Measured 0.00-0.17 s where k0 kept a member; where it was cut off,
# 0.01-0.75 s in 27 runs at load 2.5-5 on 2026-11-30, once the watch's
# questions ran beside its stream and it moved to a member that answered
# (docs/ETCD.md section 12, "Catching up after a heal": before, up to
# 2.85 s that day, 6.8 s while the TTL reaper could hold the feed's
# thread, 12 s before pre-vote); twice that for a loaded CI machine (an
# ASan pass beside).
# And from the writers' end to both mounts taking in every commit (`kvfs
# info`'s generation) and showing the store's tree.
HEAL_BOUND=2
CONVERGE_BOUND=5
# The longest from a cut to the cut-off host's mount saying its reads may
# be stale (user.kvfs.stale: its watch's member confirms it is current every
# 2 s, and 5 s without is stale, docs/ETCD.md section 12; the rest is a
# loaded machine's delays), and from the heal to its saying so no more.
STALE_BOUND=10
# Once a request waited its whole deadline with no answer, each request
# after it waits 2 s for one (docs/ETCD.md section 12, "Known silence"): a
# write, a lookup and a create at most, refused within this (10 s a request
# before, 20 s for a write whose revalidated name was looked up again).
SILENT_BOUND=7

net() {
	"$NET_SH" "$@"
}

setup_file() {
	export KVFS_NET=kvfsnet-$$ KVFS_NET_DIR=$BATS_FILE_TMPDIR/net
	NET_URL=$(net start)
	export NET_URL
}

teardown_file() {
	net stop
}

setup() {
	common_setup
	EXTRA_PIDS=()
	EXTRA_MNTS=()
	WRITERS=()
	STORE=$NET_URL/kvfs-90/$BATS_TEST_NUMBER-$RANDOM
	H=$BATS_TEST_TMPDIR/hist
	mkdir -p "$H"
	M0=$BATS_TEST_TMPDIR/k0 M1=$BATS_TEST_TMPDIR/k1
	net_mount k0 "$M0"
	net_mount k1 "$M1"
	local w
	for w in k0 k1; do
		mkdir -p "$M0/$w/r"
		echo "$w-r" >"$M0/$w/r/a"
	done
	echo '"start"' >>"$M0/log.json"
	eventually 10 test -e "$M1/k0/r/a"
}

teardown() {
	mark teardown
	touch "$H/stop"
	[ -z "${FROZEN:-}" ] || members_signal -CONT
	net heal
	local pid
	for pid in "${WRITERS[@]}"; do
		wait_gone "$pid" 300 || kill -KILL "$pid" 2>/dev/null || true
	done
	mount_teardown
	mark unmounted
}

# net_mount HOST DIR: the store mounted at DIR by a daemon in HOST's
# network (the mount itself in ours); unmounted by mount_teardown.
net_mount() {
	mkdir -p "$2"
	net exec "$1" "$KVFS_BIN" mount -f --create "$STORE" "$2" >>"$2.log" 2>&1 3>&- &
	EXTRA_PIDS+=("$!")
	EXTRA_MNTS+=("$2")
	eventually 10 mountpoint -q "$2"
}

# generation: the store's now, asked from k1
generation() {
	net exec k1 "$KVFS_BIN" info "$STORE" | awk '$1 == "generation:" { print $2 }'
}

# secs_since T0: seconds from T0 (date +%s.%N) to now
secs_since() {
	echo "$(date +%s.%N) - $1" | bc
}

# mark WHAT: a time-stamped line in the TAP output (where the time goes).
mark() {
	echo "# $(date +%T.%N | cut -c1-12) $1" >&3
}

# phase NAME: the writers record it with each operation; an operation
# counts for a phase when it started and ended in it. "cutting" and
# "healing" cover the changes themselves.
phase() {
	mark "$1"
	echo "$1" >"$H/phase"
}

start_writers() {
	phase before
	python3 "$CHECK" write "$M0" k0 "$H" &
	WRITERS+=("$!")
	python3 "$CHECK" write "$M1" k1 "$H" &
	WRITERS+=("$!")
}

# at_least N WRITER PHASE ok|fail: the writer has N such operations (its
# history's lines are "op, path, val, p0, ok, ..., p1" in that order)
at_least() {
	local ok=true n
	[ "$4" = ok ] || ok=false
	n=$(grep -c "\"p0\": \"$3\", \"ok\": $ok, .*\"p1\": \"$3\"}" "$H/$2.hist" 2>/dev/null) || true
	[ "${n:-0}" -ge "$1" ]	# (no history yet: none)
}

# ops N WRITER PHASE ok|fail: waits (bounded) until at_least holds
ops() {
	eventually 60 at_least "$@"
}

# finish [FAILING...]: stops the writers (a hung one fails the test), then
# measures the time until both mounts show the store's tree and checks the
# histories against the store.
finish() {
	touch "$H/stop"
	local pid t0 secs gen
	for pid in "${WRITERS[@]}"; do
		wait_gone "$pid" $((OP_BOUND * 10)) || { echo "a writer hung past $OP_BOUND s" >&2; return 1; }
	done
	WRITERS=()
	mark stopped
	t0=$(date +%s.%N)
	gen=$(generation)
	eventually "$CONVERGE_BOUND" mount_reached "$gen" "$M0" "$M1"
	secs=$(secs_since "$t0")
	eventually "$CONVERGE_BOUND" python3 "$CHECK" same - "$M0" "$M1"
	echo "# both mounts took in generation $gen ${secs} s after the writers stopped, showed the same tree $(secs_since "$t0") s after" >&3
	net exec k0 "$KVFS_BIN" export "$STORE" >"$H/export.json"
	python3 "$CHECK" same "$H/export.json" "$M0" "$M1"
	run python3 "$CHECK" check "$H" "$H/export.json" "$OP_BOUND" "$REFUSED_BOUND" "$WHY_BOUND" "$@"
	echo "# $output" | tr '\n' ' ' >&3
	echo >&3
	mark checked
	[ "$status" -eq 0 ]
}

# disturb ok|fail NET-ARGS...: with both writers going, runs `net NET-ARGS`
# (a cut or a delay); k1 must get writes acknowledged during it, k0 too
# (ok) or only refusals (fail: k0 is cut off from a quorum), two of them;
# after the heal both write again, then finish checks it all.
disturb() {
	local k0=$1 t hp hs
	shift
	start_writers
	ops 2 k0 before ok && ops 2 k1 before ok
	phase changing
	net "$@"
	t=$(date +%s.%N)
	phase during
	if [ "$k0" = fail ]; then
		eventually "$STALE_BOUND" mount_stale "$M0"
		echo "# k0 said its reads may be stale $(secs_since "$t") s after the cut:" \
			"$(getfattr --absolute-names --only-values -n user.kvfs.stale "$M0")" >&3
	fi
	ops 2 k0 during "$k0" && ops 4 k1 during ok
	python3 "$CHECK" heal "$H" "$M0" "$M1" "$HEAL_BOUND" >"$H/heal" 2>&1 &
	hp=$!
	phase healing
	net heal
	t=$(date +%s.%N)
	phase healed
	hs=0
	wait "$hp" || hs=$?
	echo "# k0 $(cat "$H/heal")" >&3
	[ "$hs" -eq 0 ]
	if [ "$k0" = fail ]; then
		eventually "$STALE_BOUND" mount_fresh "$M0"
		echo "# k0's reads were fresh again $(secs_since "$t") s after the heal" >&3
	fi
	ops 2 k0 healed ok && ops 2 k1 healed ok
	if [ "$k0" = ok ]; then
		finish
	else
		finish k0
		# the refusals' reason, kept for the mount root
		run -0 err "$M0"
		assert_output --regexp 'timed out|did not answer'
	fi
}

# members_signal SIG: sends SIG to every member's processes (-STOP freezes
# them: their ports still take connections, and nothing answers)
members_signal() {
	local m
	for m in m0 m1 m2; do
		# shellcheck disable=SC2046 # one pid a word
		kill "$1" $(ip netns pids "$KVFS_NET-$m")
	done
}

# a member that does not lead now
follower() {
	printf '%s\n' m0 m1 m2 | grep -v "$(net leader)" | head -1
}

@test "one member cut off: both hosts' writes go on and the histories hold" {
	disturb ok cut "$(follower)"
}

@test "the leader cut off: a new one is elected, both hosts' writes go on" {
	disturb ok cut "$(net leader)"
}

@test "a kvfs host cut off from every member: its writes fail with EIO or ETIMEDOUT and a reason, the other's go on" {
	disturb fail cut k0
}

@test "a minority (the leader and one kvfs host) split from the majority: the minority's writes fail, the majority's go on" {
	disturb fail cut "$(net leader)" k0
}

@test "200 ms delay and 5% loss on both kvfs hosts' links: writes go on, slower, and nothing is lost" {
	disturb ok delay 200 5 k0 k1
}

# timed_write FILE TEXT OUT: writes TEXT to FILE, appends "STATUS SECONDS" to OUT
timed_write() {
	local t0 status=0
	t0=$(date +%s.%N)
	echo "$2" >"$1" 2>/dev/null || status=$?
	echo "$status $(secs_since "$t0")" >>"$3"
}

# The known silence is forgotten ETCD_SILENT_KEEP_MS (30 s) after it was
# noted, so that a cluster that answers slower than a try is still heard:
# a third mount keeps it 3 s (the test hook) and, after its first write's
# deadline and a write within a try, waits past those 3 s: its next write
# waits a whole deadline again (beside the writes on $M0, which keep it).
@test "every member frozen: the first write is refused at its deadline, each one after it within a try, not a deadline again" {
	local t0 secs i m2=$BATS_TEST_TMPDIR/k2 times=$BATS_TEST_TMPDIR/k2.times
	KVFS_ETCD_TEST_SILENT_KEEP_MS=3000 net_mount k0 "$m2"
	mkdir -p "$m2/k2"
	FROZEN=1
	members_signal -STOP
	(
		timed_write "$m2/k2/f0" 0 "$times"
		timed_write "$m2/k2/f1" 1 "$times"
		sleep 3.5	# past the 3 s the mount keeps the silence
		timed_write "$m2/k2/f2" 2 "$times"
	) &
	local kept=$!
	t0=$(date +%s.%N)
	run bash -c 'echo 0 >"$1"' _ "$M0/k0/frozen0"
	secs=$(secs_since "$t0")
	echo "# the first write was refused after $secs s: $output" >&3
	[ "$status" -ne 0 ]
	(($(echo "$secs < $OP_BOUND" | bc)))
	for i in 1 2 3; do
		t0=$(date +%s.%N)
		run bash -c 'echo "$2" >"$1"' _ "$M0/k0/frozen$i" "$i"
		secs=$(secs_since "$t0")
		echo "# write $i was refused after $secs s: $output" >&3
		[ "$status" -ne 0 ]
		(($(echo "$secs < $SILENT_BOUND" | bc)))
	done
	wait "$kept"
	echo "# the mount keeping the silence 3 s: $(paste -sd' ' "$times") (status and seconds per write)" >&3
	[ "$(wc -l <"$times")" -eq 3 ]
	awk '$1 == 0 { exit 1 }' "$times"	# each refused
	# the second within a try; the third, after the mark was forgotten, a deadline again
	(($(echo "$(sed -n 2p "$times" | cut -d' ' -f2) < $SILENT_BOUND" | bc)))
	(($(echo "$(sed -n 3p "$times" | cut -d' ' -f2) >= $SILENT_BOUND" | bc)))
	run -0 err "$M0"
	assert_output --regexp 'timed out|did not answer'
	members_signal -CONT
	FROZEN=
	# the members, passed over for 30 s, are tried at once all the same
	eventually 30 bash -c 'echo after >"$1"' _ "$M0/k0/frozen0"
	eventually 20 grep -qx after "$M1/k0/frozen0"
}
