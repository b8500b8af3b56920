#!/usr/bin/env bats
# tests/60-crash.bats - crash consistency: the daemon and offline imports are
# killed with SIGKILL at random moments while documents are written, subtrees
# moved and leaves rewritten (scripts/stress-crash.sh; `make stress` runs
# many more kills). After each kill every document is whole, old or new.

# bats file_tags=crash,lmdb

load 'test_helper/common'

setup() {
	common_setup
	WORK=$BATS_TEST_TMPDIR/stress
}

# The script unmounts on every exit; this only clears what a killed run left.
teardown() {
	if grep -qs " $WORK/mnt " /proc/mounts; then
		fusermount3 -uz "$WORK/mnt"
	fi
}

# bats test_tags=plain
# 8 kills, every second one during an import: the 4 import kills of the
# 12 this ran before (137 s of the plain pass), in two thirds of the time;
# make stress kills many more
@test "crash: 8 SIGKILLs of the daemon (4 during imports) leave every document whole, old or new" {
	run -0 env STRESS_DIR="$WORK" STRESS_IMPORT_EVERY=2 \
		bash "$BATS_TEST_DIRNAME/../scripts/stress-crash.sh" 8
	assert_line --partial 'kill 8/8: daemon killed'
	assert_line --partial 'import of version'
	assert_line 'stress-crash: 8 kills, every store consistent'
	run ! grep -qs " $WORK/mnt " /proc/mounts
}

# The verifier itself must see a torn document, a lost move and a lost write:
# a store made with the offline verbs, in the states a bad commit would leave.
verify() {
	kvfs export --compact "$STORE" / >"$BATS_TEST_TMPDIR/snap.json"
	bash "$BATS_TEST_DIRNAME/../scripts/stress-crash.sh" --verify \
		"$BATS_TEST_TMPDIR/snap.json" "$STATE"
}

@test "crash: the checker refuses a torn document, a subtree in two places, a lost leaf write" {
	STATE=$BATS_TEST_TMPDIR/state
	mkdir -p "$STATE"
	# version 3 of d0 (items: 5 + 3 % 7 = 8), the writer at version 3
	run -0 kvfs import "$STORE" /d0 - <<<'{"gen":3,"items":[3,3,3,3,3,3,3,3],"nested":{"x":{"y":3},"s":"g3"}}'
	echo 3 >"$STATE/doc-0-5"
	run -0 kvfs import "$STORE" /m0 - <<<'{"a":{"t":{"id":0,"leaves":["moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved"]}},"b":{}}'
	echo 0 >"$STATE/move-0"
	run -0 kvfs import "$STORE" /leaves - <<<'{"k0":"6"}'
	echo 7 >"$STATE/leaf-k0"
	run -0 verify
	refute_output

	# one leaf of another generation
	run -0 kvfs put "$STORE" /d0/items/2 2
	run -1 verify
	assert_output --partial 'd0: torn: generation 3 with other leaves [2]'
	run -0 kvfs put "$STORE" /d0/items/2 3

	# a missing item: 7 of version 3's 8
	run -0 kvfs rm "$STORE" /d0/items/7
	run -1 verify
	assert_output --partial 'd0: torn: generation 3 has 10 leaves, not 11'
	run -0 kvfs put --type integer "$STORE" /d0/items/7 3

	# an older version than the last one acknowledged
	echo 5 >"$STATE/doc-0-5"
	run -1 verify
	assert_output --partial 'd0: version 3, but the writer was at 5'
	echo 3 >"$STATE/doc-0-5"

	# the moved subtree in both places, then in none
	run -0 kvfs import "$STORE" /m0/b/t - <<<'{"id":0,"leaves":[]}'
	run -1 verify
	assert_output --partial 'm0: the subtree t is in 2 places'
	run -0 kvfs rm -r "$STORE" /m0/b/t
	run -0 kvfs rm -r "$STORE" /m0/a/t
	run -1 verify
	assert_output --partial 'm0: the subtree t is in 0 places'
	run -0 kvfs import "$STORE" /m0/a/t - <<<'{"id":0,"leaves":["moved"]}'
	run -1 verify
	assert_output --partial 'm0/a/t: changed'

	# a leaf two writes behind its writer
	run -0 kvfs import "$STORE" /m0/a/t - <<<'{"id":0,"leaves":["moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved","moved"]}'
	run -0 verify
	echo 7 >"$STATE/leaf-k0"	# a clean verify settled it at the value held, 6
	run -0 kvfs put "$STORE" /leaves/k0 5
	run -1 verify
	assert_output --partial "leaves/k0: '5', but its writer was writing 7"
}
