#!/usr/bin/env bash
# Test hosts as network namespaces on this machine (docs/ETCD.md "Partitions",
# tests/90-etcd-partition.bats): three etcd members and two kvfs hosts, each a
# namespace of its own with an address from 198.51.100.0/24 (a documentation
# range), joined by a router namespace that can cut, delay and drop.
#
# Usage: scripts/netns-cluster.sh VERB [ARGS]   (as root)
#   start            makes the namespaces and links, starts the members, waits
#                    until they are healthy, prints the URL for kvfs
#                    (etcd://198.51.100.10:2379,198.51.100.11:2379,198.51.100.12:2379);
#                    one that fails or is interrupted removes what it made
#   cut HOST...      cuts those hosts (m0 m1 m2 k0 k1) off from every other
#                    host; they still reach each other (`cut m0 k0` is a
#                    minority/majority split). Cuts add up until heal.
#   heal             removes every cut and every delay
#   delay MS PCT HOST...  packets from those hosts wait MS milliseconds
#                    and PCT in 100 of them are dropped (as netem on each
#                    one's own link: what it sends)
#   exec HOST CMD... runs CMD in HOST's network namespace only (nsenter
#                    --net): it keeps the caller's mounts, so a kvfs daemon
#                    started so mounts where the caller's tools see it
#   leader           the member that leads now (m0-m2), asked from k0
#   addr HOST        the host's address
#   stop             stops what start started and removes it all
#   clean            the same for a run that was killed: every process in
#                    the namespaces, the namespaces (their links go with
#                    them), the mounts recorded by `exec`, the directory
# Environment:
#   KVFS_NET      the run's prefix for its namespace names (default kvfsnet);
#                 two runs with different prefixes never meet
#   KVFS_NET_DIR  members' data, logs, pids (default ${TMPDIR:-/tmp}/$KVFS_NET)
# Nothing leaves the machine: the addresses live only inside the namespaces,
# and the root namespace gets no link and no route. Delay is made in user
# space (scripts/netns-delay.py reads the steered packets from a TUN device
# in the router namespace and writes each back after its wait), as this
# kernel has no netem.
set -euo pipefail

net=${KVFS_NET:-kvfsnet}
[[ "$net" =~ ^[a-z][a-z0-9-]{0,20}$ ]] || { echo "netns-cluster: bad KVFS_NET" >&2; exit 1; }
dir=${KVFS_NET_DIR:-${TMPDIR:-/tmp}/$net}
here=$(cd "$(dirname "$0")" && pwd)
router=$net-r
hosts=(m0 m1 m2 k0 k1)
# Short elections: a cut leader is replaced in about a second, not ten.
# Pre-vote (etcd 3.5's default, off in 3.4): a member cut off alone keeps
# campaigning, and without it rejoins with a higher term, which deposes
# the majority's leader: after a minority cut's heal the cluster had no
# leader for 2.5 to 5 s (docs/ETCD.md section 12).
heartbeat_ms=100
election_ms=1000
# Rule priorities in the router: cuts before the delay's return path
# before the delay's steering before the main table (32766).
pref_cut=40 pref_back=50 pref_delay=60
delay_table=100

die() { echo "netns-cluster: $*" >&2; exit 1; }

addr() {
	case "$1" in
	m0) echo 198.51.100.10 ;; m1) echo 198.51.100.11 ;; m2) echo 198.51.100.12 ;;
	k0) echo 198.51.100.20 ;; k1) echo 198.51.100.21 ;;
	*) die "no host '$1' (hosts: ${hosts[*]})" ;;
	esac
}

ns() { addr "$1" >/dev/null && echo "$net-$1"; }

url() { echo "etcd://$(addr m0):2379,$(addr m1):2379,$(addr m2):2379"; }

# Every command in a namespace enters its network namespace only (nsenter
# --net), never `ip netns exec`: that one makes a mount namespace of its
# own, a copy of ours, and this machine's mounts are private, so every FUSE
# mount alive at that moment stayed mounted in the copy while the command
# ran: the daemon of another suite's test (make test runs the asan pass
# beside this one) did not exit after its unmount until the delay process
# ended (two asan tests killed after 10 s, 2026-11-30).
in_router() { nsenter --net="/run/netns/$router" -- "$@"; }

# One host: its namespace, a veth pair to the router (eth0 inside, the
# host's name in the router), a /32 address and a default route via the
# router. The veths are made inside the namespaces: no name in the root one.
make_host() {
	local h=$1 a n
	a=$(addr "$h") n=$(ns "$h")
	ip netns add "$n"
	ip -n "$router" link add "$h" type veth peer name eth0 netns "$n"
	ip -n "$n" link set lo up
	ip -n "$n" addr add "$a/32" dev eth0
	ip -n "$n" link set eth0 up
	ip -n "$n" route add 198.51.100.1 dev eth0
	ip -n "$n" route add default via 198.51.100.1 dev eth0
	ip -n "$router" link set "$h" up
	ip -n "$router" route add "$a/32" dev "$h"
}

make_router() {
	ip netns add "$router"
	ip -n "$router" link set lo up
	ip -n "$router" addr add 198.51.100.1/32 dev lo
	in_router sysctl -qw net.ipv4.ip_forward=1
	# packets the delay writes back come in on its TUN device, not the
	# link their source lives behind
	in_router sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

start_member() {
	local i=$1 cluster="" j
	for j in 0 1 2; do
		cluster+="${cluster:+,}m$j=http://$(addr "m$j"):2380"
	done
	# setsid, closed descriptors: the member holds none of the caller's pipes
	setsid nsenter --net="/run/netns/$(ns "m$i")" -- \
		etcd --name "m$i" --logger=zap --data-dir "$dir/m$i.etcd" \
		--listen-client-urls "http://$(addr "m$i"):2379" \
		--advertise-client-urls "http://$(addr "m$i"):2379" \
		--listen-peer-urls "http://$(addr "m$i"):2380" \
		--initial-advertise-peer-urls "http://$(addr "m$i"):2380" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "$net" \
		--heartbeat-interval "$heartbeat_ms" --election-timeout "$election_ms" --pre-vote \
		--max-request-bytes 10485760 --max-txn-ops 8192 \
		</dev/null >>"$dir/m$i.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
}

etcdctl_k0() {
	nsenter --net="/run/netns/$(ns k0)" -- env ETCDCTL_API=3 etcdctl \
		--endpoints="http://$(addr m0):2379,http://$(addr m1):2379,http://$(addr m2):2379" \
		--dial-timeout=1s --command-timeout=2s "$@"
}

cmd_start() {
	local h i tries
	ip netns list | grep -q "^$router\b" && die "$net already exists (stop or clean it)"
	command -v etcd >/dev/null || die "etcd is not installed (scripts/deps.sh)"
	# a start that fails half-way (or is interrupted) leaves nothing behind
	trap 'cmd_stop >/dev/null 2>&1' EXIT
	trap 'exit 1' INT TERM HUP
	mkdir -p "$dir"
	make_router
	for h in "${hosts[@]}"; do
		make_host "$h"
	done
	for i in 0 1 2; do
		start_member "$i"
	done
	for ((tries = 0; tries < 300; tries++)); do
		if etcdctl_k0 endpoint health >/dev/null 2>&1; then
			trap - EXIT INT TERM HUP
			url
			return 0
		fi
		sleep 0.1
	done
	tail -n 3 "$dir"/m*.log >&2 || true
	die "members not healthy after 30 s (logs: $dir/m*.log)"
}

# cut HOST...: every pair (one of them, one of the rest) is dropped silently
# both ways (a blackhole, as a real partition: no answer, no refusal).
cmd_cut() {
	local in=" $* " h o
	[ $# -gt 0 ] || die "cut: which hosts?"
	for h in "$@"; do addr "$h" >/dev/null; done
	for h in "$@"; do
		for o in "${hosts[@]}"; do
			[[ "$in" == *" $o "* ]] && continue
			echo "rule add pref $pref_cut from $(addr "$h") to $(addr "$o") blackhole"
			echo "rule add pref $pref_cut from $(addr "$o") to $(addr "$h") blackhole"
		done
	done | ip -n "$router" -batch -
}

del_rules() {
	while ip -n "$router" rule del pref "$1" 2>/dev/null; do :; done
}

stop_delay() {
	local pid
	del_rules "$pref_delay"
	del_rules "$pref_back"
	pid=$(cat "$dir/delay.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || true
	rm -f "$dir/delay.pid"
}

# Every cut goes in one batch, so that the hosts meet again all at once
# (rule by rule, one ip process each, took 2-3 s at load 40), then the delay.
cmd_heal() {
	ip -n "$router" rule show pref "$pref_cut" |
		sed -n "s/^$pref_cut:[[:space:]]*/rule del pref $pref_cut /p" |
		ip -n "$router" -batch - 2>/dev/null || true
	del_rules "$pref_cut"	# (any the batch left)
	stop_delay
}

# delay MS PCT HOST...: the router sends the packets those hosts send
# through the TUN device "dly", where netns-delay.py holds each MS ms and
# drops PCT %; what it writes back comes in on dly and takes the main table.
cmd_delay() {
	local ms=$1 pct=$2 h tries
	shift 2
	[ $# -gt 0 ] || die "delay: which hosts?"
	stop_delay
	in_router setsid python3 "$here/netns-delay.py" dly "$ms" "$pct" \
		</dev/null >>"$dir/delay.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	echo $! >"$dir/delay.pid"
	for ((tries = 0; tries < 100; tries++)); do
		ip -n "$router" link show dly >/dev/null 2>&1 && break
		sleep 0.05
	done
	ip -n "$router" link set dly up
	in_router sysctl -qw net.ipv4.conf.dly.rp_filter=0
	ip -n "$router" route replace default dev dly table "$delay_table"
	ip -n "$router" rule add pref "$pref_back" iif dly lookup main
	for h in "$@"; do
		ip -n "$router" rule add pref "$pref_delay" iif "$h" lookup "$delay_table"
	done
}

cmd_exec() {
	local n
	n=$(ns "$1")
	shift
	exec nsenter --net="/run/netns/$n" -- "$@"
}

cmd_leader() {
	etcdctl_k0 endpoint status -w json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    h = s["Status"]["header"]
    if h["member_id"] == s["Status"]["leader"]:
        print({"10": "m0", "11": "m1", "12": "m2"}[s["Endpoint"].split(":")[1].split(".")[-1]])
        break
else:
    sys.exit(1)'
}

# Every process whose network is one of ours: TERM, then KILL after 5 s.
kill_ours() {
	local n pids tries
	for n in $(ip netns list | awk -v p="^$net-" '$1 ~ p { print $1 }'); do
		pids=$(ip netns pids "$n" 2>/dev/null || true)
		# shellcheck disable=SC2086 # one pid a word
		[ -z "$pids" ] || kill $pids 2>/dev/null || true
	done
	for ((tries = 0; tries < 50; tries++)); do
		pids=""
		for n in $(ip netns list | awk -v p="^$net-" '$1 ~ p { print $1 }'); do
			pids+=" $(ip netns pids "$n" 2>/dev/null || true)"
		done
		[ -n "${pids// /}" ] || return 0
		sleep 0.1
	done
	# shellcheck disable=SC2086 # one pid a word
	kill -KILL $pids 2>/dev/null || true
}

# The mount points of our kvfs daemons (a kvfs in a host's namespace, its
# last argument), which kill_ours leaves dead: cleared lazily after.
our_mounts() {
	local n p
	for n in $(ip netns list | awk -v p="^$net-" '$1 ~ p { print $1 }'); do
		for p in $(ip netns pids "$n" 2>/dev/null || true); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = kvfs ] || continue
			tr '\0' '\n' <"/proc/$p/cmdline" | tail -n 1
		done
	done | sort -u
}

cmd_stop() {
	local m mounts n
	mounts=$(our_mounts)
	kill_ours
	for m in $mounts; do
		if grep -qs " $m fuse" /proc/mounts; then fusermount3 -uz "$m" 2>/dev/null || true; fi
	done
	for n in $(ip netns list | awk -v p="^$net-" '$1 ~ p { print $1 }'); do
		ip netns del "$n"
	done
	rm -rf "$dir"
}

case "${1:-}" in
start) cmd_start ;;
cut) shift; cmd_cut "$@" ;;
heal) cmd_heal ;;
delay) shift; [ $# -ge 3 ] || die "usage: delay MS PCT HOST..."; cmd_delay "$@" ;;
exec) shift; [ $# -ge 2 ] || die "usage: exec HOST CMD..."; cmd_exec "$@" ;;
leader) cmd_leader ;;
addr) addr "${2:-}" ;;
url) url ;;
stop | clean) cmd_stop ;;
*) die "usage: $0 start|cut HOST...|heal|delay MS PCT HOST...|exec HOST CMD...|leader|addr HOST|url|stop|clean" ;;
esac
