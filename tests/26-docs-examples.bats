#!/usr/bin/env bats
# The console examples of README.md and docs/kvfs.1 run as shown, so an
# example that stops working fails here. tests/test_helper/examples.py
# finds them (```console and ```sh blocks of the README, .nf blocks of the
# man page holding "$ " lines) and says how a block that cannot run in a
# test is marked (<!-- not run: why -->, .\" not run: why).
#
# Each block runs on its own, as a user would paste it after `make demo`:
#   - in a fresh directory ($BATS_TEST_TMPDIR/ex-N/work) holding a link to
#     the tree's scripts/ (the README is read in the source tree), with
#     HOME its own empty directory (a bare `cd` goes there);
#   - with `kvfs` on PATH running the binary under test ($KVFS_BIN);
#   - with every absolute path under /srv, /mnt or /backup rewritten to
#     $BATS_TEST_TMPDIR/ex-N/root/srv, .../mnt, .../backup, in the commands
#     and in the output shown (root/srv and root/mnt exist, as on a fresh
#     Debian; root/backup does not);
#   - with an etcd cluster, when it starts one, in a directory and on ports
#     of its own (KVFS_ETCD_DIR, KVFS_ETCD_PORT), so it never meets another;
#   - in one `bash -e`: a command that fails ends the block, and the test
#     fails with the transcript. The output a block shows under a command is
#     compared with what the command printed, word by word.
# Teardown unmounts whatever a failed block left mounted, and stops its
# cluster.

# bats file_tags=docs

load 'test_helper/common'
load 'test_helper/etcd'

SRC=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

examples() {
	(cd "$SRC" && python3 tests/test_helper/examples.py "$@")
}

setup() {
	common_setup
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	printf '#!/bin/sh\nexec %q "$@"\n' "$KVFS_BIN" >"$BATS_TEST_TMPDIR/bin/kvfs"
	chmod +x "$BATS_TEST_TMPDIR/bin/kvfs"
}

teardown() {
	local mnt d
	# Mount points below this test's directory, deepest first.
	while read -r mnt; do
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
	done < <(awk -v t="$BATS_TEST_TMPDIR/" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r)
	for d in "$BATS_TEST_TMPDIR"/ex-*/etcd; do
		[ -d "$d" ] && KVFS_ETCD_DIR=$d "$SRC/scripts/etcd-cluster.sh" stop >/dev/null 2>&1
	done
	return 0
}

# run_example FILE:LINE N: runs one block in $BATS_TEST_TMPDIR/ex-N and
# checks its exit status and the output it shows.
run_example() {
	local where=$1 dir=$BATS_TEST_TMPDIR/ex-$2 status=0
	mkdir -p "$dir/work" "$dir/home" "$dir/root/srv" "$dir/root/mnt" "$dir/out"
	ln -s "$SRC/scripts" "$dir/work/scripts"
	examples script "$where" "$dir/root" >"$dir/script.sh"
	(
		cd "$dir/work" &&
			HOME=$dir/home PATH=$BATS_TEST_TMPDIR/bin:$PATH OUT=$dir/out \
			KVFS_ETCD_DIR=$dir/etcd KVFS_ETCD_PORT=$(etcd_pick_port) \
			bash -e "$dir/script.sh"
	) </dev/null >"$dir/stdout" 2>&1 3>&- || status=$?
	if [ "$status" -ne 0 ]; then
		echo "the example at $where failed (status $status); its transcript:" >&2
		cat "$dir/out/log" "$dir/stdout" >&2
		return 1
	fi
	if ! examples check "$where" "$dir/root" "$dir/out" >&2; then
		echo "the example at $where printed something else; its transcript:" >&2
		cat "$dir/out/log" >&2
		return 1
	fi
	# A daemon's messages went to the output of the command that started it.
	cat "$dir"/out/* >"$dir/all-output"
	assert_log_clean "$dir/all-output"
}

# run_examples FILE: every block of FILE that is not marked "not run".
run_examples() {
	local kind where why n=0
	while read -r kind where why; do
		[ "$kind" = run ] || continue
		n=$((n + 1))
		run_example "$where" "$(echo "$where" | tr -c 'A-Za-z0-9\n' _)" || return 1
	done < <(examples list "$1")
	[ "$n" -gt 0 ]
}

@test "the extractor finds the examples, and only marked blocks are left out" {
	run -0 examples list README.md docs/kvfs.1
	# The README's tour, tables, TTL, backups and etcd; the man page's three.
	[ "$(grep -c '^run README.md:' <<<"$output")" -ge 5 ]
	[ "$(grep -c '^run docs/kvfs.1:' <<<"$output")" -ge 3 ]
	# A skipped block says why.
	run -0 grep '^skip ' <<<"$output"
	refute_line --regexp '^skip [^ ]+$'
	# The rewriting reaches the commands and nothing else.
	run -0 examples script "$(examples list README.md | awk '$1 == "run" { print $2; exit }')" /R
	assert_output --partial 'kvfs import /R/srv/people / scripts/demo.json'
	assert_output --partial 'kvfs mount /R/srv/people /R/mnt/people'
	refute_output --partial ' /srv/'
}

@test "every console example of README.md runs as shown" {
	run_examples README.md
}

@test "every console example of docs/kvfs.1 runs as shown" {
	run_examples docs/kvfs.1
}

@test "a changed example fails: a wrong output and a failing command are caught" {
	local bad=$BATS_TEST_TMPDIR/bad.md
	printf '%s\n' '```console' '$ kvfs put --create /srv/s /a 1' '$ kvfs get /srv/s /a' '2' '```' >"$bad"
	run ! run_example "$bad:1" bad1
	assert_output --partial 'printed something else'
	printf '%s\n' '```sh' 'kvfs get /srv/nothing /a' 'echo not reached' '```' >"$bad"
	run ! run_example "$bad:1" bad2
	assert_output --partial 'failed (status 1)'
	assert_output --partial "no store at $BATS_TEST_TMPDIR/ex-bad2/root/srv/nothing"
	refute_output --partial 'not reached'
}
