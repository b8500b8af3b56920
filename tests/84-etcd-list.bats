#!/usr/bin/env bats
# tests/84-etcd-list.bats - listings on etcd (docs/ETCD.md section 7): the
# children space kept in the same Txn as the data, `ls` of children whose
# subtrees are big (read through that space) equal to the same store on
# LMDB, consistent while another mount renames a child back and forth; and
# the URL's credentials (user/password with auth enabled, TLS). A cluster of
# its own, or the one make test-etcd runs (KVFS_ETCD_URL).

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	etcd_start
}

teardown_file() {
	etcd_stop
}

setup() {
	common_setup
	STORE=$ETCD_URL/kvfs-84/$$-$BATS_TEST_NUMBER-$RANDOM
	LSTORE=$BATS_TEST_TMPDIR/lmdb
	EXTRA_PIDS=()
	EXTRA_MNTS=()
}

teardown() {
	[ -z "${MNT:-}" ] || mount_teardown
}

# child_doc I: a JSON object of about 40 keys at three depths, named by I.
child_doc() {
	local i=$1 j
	printf '{"id":%d,"obj":{' "$i"
	for ((j = 0; j < 15; j++)); do
		printf '%s"f%d":"v%d-%d"' "$([ $j -gt 0 ] && echo ,)" "$j" "$i" "$j"
	done
	printf '},"arr":['
	for ((j = 0; j < 20; j++)); do
		printf '%s{"n":%d}' "$([ $j -gt 0 ] && echo ,)" "$j"
	done
	printf ']}\n'
}

# fill STORE: under big/, 150 documents of ~40 keys, 5 leaves, an empty
# object, and a child whose subtree was removed again.
fill() {
	local st=$1 i
	kvfs mkdir --create "$st" big
	for ((i = 0; i < 150; i++)); do
		child_doc "$i" >"$BATS_TEST_TMPDIR/c.json"
		kvfs import "$st" "big/c$i" "$BATS_TEST_TMPDIR/c.json" >/dev/null
	done
	for i in 1 2 3 4 5; do
		kvfs put "$st" "big/leaf$i" "x$i"
	done
	kvfs mkdir "$st" big/empty
	child_doc 999 >"$BATS_TEST_TMPDIR/c.json"
	kvfs import "$st" big/gone "$BATS_TEST_TMPDIR/c.json" >/dev/null
	kvfs import "$st" big/gone <(echo '"now a leaf"') >/dev/null
	kvfs rm "$st" big/gone
}

# etcd_children PREFIX: the children space's keys of the store PREFIX, as
# text: the space byte k, then the key's printable bytes (the depth byte and
# the tuple's type bytes dropped): kbigc7 is the entry of big/c7.
etcd_children() {
	ETCDCTL_API=3 etcdctl --endpoints="${KVFS_ETCD_ENDPOINTS%%,*}" get --prefix --keys-only "$1" |
		tr -d '\000-\011\013-\037' | sed -n "s|^$1k|k|p"
}

@test "ls of children with big subtrees on etcd equals the same store on LMDB" {
	fill "$STORE"
	fill "$LSTORE"
	run -0 kvfs ls "$LSTORE" big
	local want=$output
	[ "${#lines[@]}" -eq 156 ]
	run -0 kvfs ls "$STORE" big
	assert_output "$want"
	# the same through a mount, and one level down
	mount_store
	run -0 bash -c "ls '$MNT/big' | sed 's/\.json\$//' | sort"
	assert_output "$(printf '%s\n' "$want" | sort)"
	run -0 kvfs ls "$LSTORE" big/c7/arr
	local arr=$output
	[ "${#lines[@]}" -eq 20 ]
	run -0 kvfs ls "$STORE" big/c7/arr
	assert_output "$arr"
	# the children space names each container child of big/ (gone's entry may
	# outlive its subtree: the listings above skipped it, as LMDB's has no gone)
	run -0 etcd_children "${STORE#etcd://*/}"
	[ "$(grep -c -E '^kbigc[0-9]+$' <<<"$output")" -eq 150 ]
}

@test "ls on etcd is one snapshot while another mount renames a child back and forth" {
	fill "$STORE"
	mount_store
	mount_extra "$BATS_TEST_TMPDIR/mnt2" "$STORE"
	local mnt2=$BATS_TEST_TMPDIR/mnt2
	child_doc 5000 >"$BATS_TEST_TMPDIR/tok.json"
	kvfs import "$STORE" big/tok_a "$BATS_TEST_TMPDIR/tok.json" >/dev/null
	# one rename per commit: every snapshot holds exactly one of tok_a, tok_b
	(
		for ((i = 0; i < 30; i++)); do
			mv "$mnt2/big/tok_a" "$mnt2/big/tok_b" || exit 1
			mv "$mnt2/big/tok_b" "$mnt2/big/tok_a" || exit 1
		done
	) &
	local writer=$! n=0 bad=0
	while kill -0 "$writer" 2>/dev/null; do
		run -0 kvfs ls "$STORE" big
		n=$((n + 1))
		local toks
		toks=$(printf '%s\n' "${lines[@]}" | grep -c '^tok_' || true)
		if [ "$toks" -ne 1 ] || [ "${#lines[@]}" -ne 157 ]; then
			echo "listing $n: $toks tok_ entries, ${#lines[@]} lines" >&2
			bad=$((bad + 1))
		fi
	done
	wait "$writer"
	[ "$bad" -eq 0 ]
	[ "$n" -gt 0 ]
	echo "# $n listings during 60 renames" >&3
}
