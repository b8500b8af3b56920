#!/usr/bin/env bats
# tests/84-etcd-list.bats - listings on etcd (docs/ETCD.md section 7): the
# children space kept in the same Txn as the data, `ls` of children whose
# subtrees are big (read through that space) equal to the same store on
# LMDB, consistent while another mount renames a child back and forth; and
# the URL's credentials (user/password with auth enabled, TLS). A cluster of
# its own, or the one make test-etcd runs (KVFS_ETCD_URL).

# bats file_tags=etcd

load 'test_helper/common'
load 'test_helper/etcd'

setup_file() {
	etcd_start
	# the store of tests 1 and 2 (filled_store)
	export FILLED_STORE=$ETCD_URL/kvfs-84/$$-$RANDOM-filled
}

teardown_file() {
	etcd_stop
}

setup() {
	etcd_test_store 84
	LSTORE=$BATS_TEST_TMPDIR/lmdb
}

teardown() {
	[ -z "${MNT:-}" ] || mount_teardown
	[ -z "${SOLO_PID:-}" ] || solo_stop
}

# The children of big/ with a subtree each: 60 of 76 data keys, 4,560 in
# all, over ETCD_BIG_KEYS (4,096) as 150 of 36 (5,400) were (counted with
# etcdctl): big/ then has its first page end at its first child's hint.
# Each subtree is over ETCD_PAGE / ETCD_KIDS_WALK (256 / 16) keys, so a
# walk skips fewer than 16 children a page and reads the children space.
# Each child is a kvfs import, a commit of about ten requests: 150 were
# most of the suite's time.
KIDS=60

# docs DIR: the children's documents, written by one python call (a loop of
# printf and $(...) per key cost 170 ms a document): DIR/cI.json for I in
# 0..KIDS-1, 999 and 5000, each a JSON object of 76 keys at three
# depths, named by I.
docs() {
	python3 - "$1" "$KIDS" <<'EOF'
import sys
d = sys.argv[1]
for i in list(range(int(sys.argv[2]))) + [999, 5000]:
    obj = ",".join('"f%d":"v%d-%d"' % (j, i, j) for j in range(55))
    arr = ",".join('{"n":%d}' % j for j in range(20))
    with open("%s/c%d.json" % (d, i), "w") as f:
        f.write('{"id":%d,"obj":{%s},"arr":[%s]}\n' % (i, obj, arr))
EOF
}

# child_doc I: the document of child I (see docs).
child_doc() {
	[ -s "$BATS_FILE_TMPDIR/docs/c$1.json" ] || {
		mkdir -p "$BATS_FILE_TMPDIR/docs"
		docs "$BATS_FILE_TMPDIR/docs"
	}
	cat "$BATS_FILE_TMPDIR/docs/c$1.json"
}

# fill STORE: under big/, KIDS documents of 76 keys (one import, one commit
# each), 5 leaves, an empty object, and a child whose subtree was removed
# again.
fill() {
	local st=$1 i d=$BATS_FILE_TMPDIR/docs
	child_doc 0 >/dev/null
	kvfs mkdir --create "$st" big
	for ((i = 0; i < KIDS; i++)); do
		kvfs import "$st" "big/c$i" "$d/c$i.json" >/dev/null
	done
	for i in 1 2 3 4 5; do
		kvfs put "$st" "big/leaf$i" "x$i"
	done
	kvfs mkdir "$st" big/empty
	kvfs import "$st" big/gone "$d/c999.json" >/dev/null
	kvfs import "$st" big/gone <(echo '"now a leaf"') >/dev/null
	kvfs rm "$st" big/gone
}

# filled_store: sets STORE to the file's etcd store filled by fill, filling
# it the first time (KIDS commits on etcd, each a kvfs process of about ten
# requests: most of the suite's time, paid once). Test 1 only reads it; test
# 2 then adds tok_a and renames it back and forth, after test 1 is done.
filled_store() {
	STORE=$FILLED_STORE
	if [ ! -e "$BATS_FILE_TMPDIR/filled" ]; then
		fill "$STORE"
		touch "$BATS_FILE_TMPDIR/filled"
	fi
}

# etcd_children PREFIX: the children space's keys of the store PREFIX, as
# text: the space byte k, then the key's printable bytes (the depth byte and
# the tuple's type bytes dropped): kbigc7 is the entry of big/c7.
etcd_children() {
	ETCDCTL_API=3 etcdctl --endpoints="${KVFS_ETCD_ENDPOINTS%%,*}" get --prefix --keys-only "$1" |
		tr -d '\000-\011\013-\037' | sed -n "s|^$1k|k|p"
}

@test "ls of children with big subtrees on etcd equals the same store on LMDB" {
	# LMDB's copy is written meanwhile: it waits on the disk, etcd's on round trips
	child_doc 0 >/dev/null
	fill "$LSTORE" &
	local lfill=$!
	filled_store
	wait "$lfill"
	run -0 kvfs ls "$LSTORE" big
	local want=$output
	[ "${#lines[@]}" -eq $((KIDS + 6)) ]
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
	[ "$(grep -c -E '^kbigc[0-9]+$' <<<"$output")" -eq "$KIDS" ]
}

@test "ls on etcd is one snapshot while another mount renames a child back and forth" {
	filled_store
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
		if [ "$toks" -ne 1 ] || [ "${#lines[@]}" -ne $((KIDS + 7)) ]; then
			echo "listing $n: $toks tok_ entries, ${#lines[@]} lines" >&2
			bad=$((bad + 1))
		fi
	done
	wait "$writer"
	[ "$bad" -eq 0 ]
	[ "$n" -gt 0 ]
	echo "# $n listings during 60 renames" >&3
}

# ---- credentials: a one-member cluster of the test's own ----

# solo_start NAME [ETCD OPTIONS...]: one etcd member on free loopback ports,
# its data under $BATS_TEST_TMPDIR/NAME; sets SOLO_PORT and SOLO_PID.
# Options may name https URLs (TLS); the ports are picked before.
solo_start() {
	local name=$1 scheme=http
	shift
	SOLO_PORT=$(etcd_pick_port)
	[[ " $* " == *" --cert-file "* ]] && scheme=https
	etcd --name "$name" --data-dir "$BATS_TEST_TMPDIR/$name.etcd" --logger=zap \
		--listen-client-urls "$scheme://127.0.0.1:$SOLO_PORT" \
		--advertise-client-urls "$scheme://127.0.0.1:$SOLO_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((SOLO_PORT + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$((SOLO_PORT + 1))" \
		--initial-cluster "$name=http://127.0.0.1:$((SOLO_PORT + 1))" \
		"$@" >"$BATS_TEST_TMPDIR/$name.log" 2>&1 3>&- &
	SOLO_PID=$!
}

# solo_ctl ARGS...: etcdctl against the solo member (SOLO_CTL_OPTS: TLS, user).
solo_ctl() {
	ETCDCTL_API=3 etcdctl --endpoints="${SOLO_SCHEME:-http}://127.0.0.1:$SOLO_PORT" \
		--dial-timeout=1s --command-timeout=3s ${SOLO_CTL_OPTS:-} "$@"
}

# solo_wait: bounded poll (10 s) until the member answers.
solo_wait() {
	local i
	for ((i = 0; i < 100; i++)); do
		solo_ctl endpoint health >/dev/null 2>&1 && return 0
		kill -0 "$SOLO_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$BATS_TEST_TMPDIR"/*.log >&2
	return 1
}

solo_stop() {
	kill "$SOLO_PID" 2>/dev/null || true
	wait "$SOLO_PID" 2>/dev/null || true
}

@test "etcd with auth enabled: refused without credentials or with a wrong password, served with them" {
	solo_start auth
	solo_wait
	solo_ctl user add root:rootpw >/dev/null
	solo_ctl user add kv:s3cret >/dev/null
	solo_ctl role add kvrole >/dev/null
	solo_ctl role grant-permission kvrole --prefix=true readwrite team >/dev/null
	solo_ctl user grant-role kv kvrole >/dev/null
	solo_ctl auth enable >/dev/null
	local url="etcd://127.0.0.1:$SOLO_PORT/team/docs"
	run -1 kvfs mkdir --create "$url" a
	assert_output --partial "authentication enabled"
	assert_output --partial "user=NAME"
	run -1 kvfs mkdir --create "$url?user=kv&password=wrong" a
	assert_output --partial "authentication failed"
	run -1 kvfs mkdir --create "$url?user=kv&pasword=s3cret" a
	assert_output --partial 'option "pasword=s3cret"'
	run -0 kvfs mkdir --create "$url?user=kv&password=s3cret" a
	run -0 kvfs put "$url?user=kv:s3cret" a/b 'hello'
	run -0 kvfs get "$url?user=kv&password=s3cret" a/b
	assert_output hello
	# a broken escape is named, not decoded into a wrong (or cut) password
	run -1 kvfs get "$url?user=kv&password=s3cre%7" a/b
	assert_output --partial "password=: a % must be followed by two hex digits"
	run -1 kvfs get "$url?user=kv&password=s3%00cret" a/b
	assert_output --partial "%00 is not allowed"
	run -0 kvfs get "$url?user=kv&password=s3cr%65t" a/b
	# etcdctl's environment supplies what the URL leaves out (no password in ps)
	run -0 env ETCDCTL_USER=kv ETCDCTL_PASSWORD=s3cret "$KVFS_BIN" get "$url" a/b
	assert_output hello
	run -0 env ETCDCTL_PASSWORD=wrong "$KVFS_BIN" get "$url?user=kv&password=s3cret" a/b
	# the role covers team* only: another prefix is refused, clearly
	run -1 kvfs mkdir --create "etcd://127.0.0.1:$SOLO_PORT/other?user=kv&password=s3cret" a
	assert_output --partial "permission denied"
	# a mount (its watch included) with the credentials
	STORE="$url?user=kv&password=s3cret"
	mount_store
	run -0 cat "$MNT/a/b"
	assert_output hello
	# the world-readable mount table names the store without its options
	run -0 grep " $MNT " /proc/mounts
	assert_output --partial "etcd://127.0.0.1:$SOLO_PORT/team/docs "
	refute_output --partial s3cret
	kvfs put "$url?user=kv&password=s3cret" a/c 'from outside'
	eventually 10 test -e "$MNT/a/c"
	run -0 cat "$MNT/a/c"
	assert_output 'from outside'
	mount_teardown
	MNT=
	solo_stop
}

@test "etcd over TLS: cacert, cert and key from the URL (a CA of the test's own)" {
	command -v openssl >/dev/null || skip "openssl is not installed"
	local d=$BATS_TEST_TMPDIR/pki
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kvfs-test-ca \
		-keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
	local who
	for who in server client; do
		openssl req -newkey rsa:2048 -nodes -subj "/CN=kvfs-$who" \
			-keyout "$d/$who.key" -out "$d/$who.csr" 2>/dev/null
		printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/ext"
		openssl x509 -req -in "$d/$who.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
			-CAcreateserial -days 1 -extfile "$d/ext" -out "$d/$who.crt" 2>/dev/null
	done
	solo_start tls --cert-file "$d/server.crt" --key-file "$d/server.key" \
		--client-cert-auth --trusted-ca-file "$d/ca.crt"
	SOLO_SCHEME=https
	SOLO_CTL_OPTS="--cacert $d/ca.crt --cert $d/client.crt --key $d/client.key"
	solo_wait
	local url="etcd://127.0.0.1:$SOLO_PORT/sec"
	# without the CA the member's certificate is not trusted; without ours it refuses us
	run -1 kvfs mkdir --create "$url?cert=$d/client.crt&key=$d/client.key" a
	run -1 kvfs mkdir --create "$url?cacert=$d/ca.crt" a
	run -0 kvfs mkdir --create "$url?cacert=$d/ca.crt&cert=$d/client.crt&key=$d/client.key" a
	run -0 kvfs put "$url?cacert=$d/ca.crt&cert=$d/client.crt&key=$d/client.key" a/b 'over tls'
	run -0 kvfs get "$url?cacert=$d/ca.crt&cert=$d/client.crt&key=$d/client.key" a/b
	assert_output 'over tls'
	# the data went to the member (read back with etcdctl over TLS)
	run -0 solo_ctl get --prefix --keys-only sec
	assert_output --partial 'sec'
	solo_stop
}
