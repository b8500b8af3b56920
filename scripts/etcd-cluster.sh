#!/usr/bin/env bash
# Runs a throw-away etcd cluster of 3 members (or KVFS_ETCD_MEMBERS) on
# loopback ports for kvfs's etcd backend and its tests (docs/ETCD.md).
# Everything lives under one directory.
#
# Usage: scripts/etcd-cluster.sh start|stop|stop-one [N]|hang-one [N]|status
#   start     starts the members not running yet (a stopped member comes back
#             with its data) and wakes hung ones, waits until every member is
#             healthy, and prints
#             the URL to give kvfs: etcd://127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2
#             (append /PREFIX to name a store inside the cluster).
#   stop      stops all members and removes their data.
#   stop-one  stops member N (0-2, default 2) only, keeping its data: the
#             other two keep a quorum, so writes go on (the member-loss test).
#   hang-one  freezes member N (default 2) with SIGSTOP: its port still takes
#             connections, but nothing answers (a hung machine, a network
#             that drops its answers); start wakes it. Prints its endpoint.
#   status    one line per member: its client URL and running/stopped, then
#             the URL; exits 1 when none runs.
#   endpoints the members' client URLs, comma-separated (for etcdctl --endpoints)
# Environment:
#   KVFS_ETCD_DIR   the cluster's directory (default ${TMPDIR:-/tmp}/kvfs-etcd-$UID)
#   KVFS_ETCD_PORT  first port (default 23790): member i listens for clients
#                   on PORT+2i and for peers on PORT+2i+1
#   KVFS_ETCD_MEMBERS  how many members (1-3, default 3): one member has no
#                   replication to pay for, where a suite tests a store, not
#                   a cluster (scripts/test-etcd.sh)
#   KVFS_ETCD_MAX_REQUEST_BYTES, KVFS_ETCD_MAX_TXN_OPS  the members' limits
#                   (default 10485760 and 8192; etcd's own are 1572864 and 128)
#   KVFS_ETCD_QUOTA_BYTES  the members' storage quota (--quota-backend-bytes;
#                   unset: etcd's own, 2 GiB), what `df` of a mount shows
# Installs Debian's etcd-server and etcd-client when etcd is missing.
set -euo pipefail

dir=${KVFS_ETCD_DIR:-${TMPDIR:-/tmp}/kvfs-etcd-$(id -u)}
base=${KVFS_ETCD_PORT:-23790}
members=${KVFS_ETCD_MEMBERS:-3}
[[ "$members" =~ ^[1-3]$ ]] || { echo "etcd-cluster: KVFS_ETCD_MEMBERS must be 1-3" >&2; exit 1; }
# Limits (docs/ETCD.md "Limits"): 10 MiB is the largest request size etcd
# recommends (it warns above it); etcd documents no ceiling for operations
# per Txn (default 128), so the cap is set where 10 MiB of small keys fits.
max_request_bytes=${KVFS_ETCD_MAX_REQUEST_BYTES:-10485760}
max_txn_ops=${KVFS_ETCD_MAX_TXN_OPS:-8192}
quota=()
[ -z "${KVFS_ETCD_QUOTA_BYTES:-}" ] || quota=(--quota-backend-bytes "$KVFS_ETCD_QUOTA_BYTES")
# Old revisions are kept 10 minutes: watchers that fall further behind get
# "compacted" and must resynchronize (docs/ETCD.md "Change feed").
compaction=(--auto-compaction-mode=periodic --auto-compaction-retention=10m)

die() { echo "etcd-cluster: $*" >&2; exit 1; }

client_port() { echo $((base + 2 * $1)); }
peer_port() { echo $((base + 2 * $1 + 1)); }

url() {
	local i out=""
	for ((i = 0; i < members; i++)); do
		out+="${out:+,}127.0.0.1:$(client_port "$i")"
	done
	echo "etcd://$out"
}

endpoints() {
	local i out=""
	for ((i = 0; i < members; i++)); do
		out+="${out:+,}http://127.0.0.1:$(client_port "$i")"
	done
	echo "$out"
}

# The pid of member $1 when it runs, else nothing (status 1).
member_pid() {
	local f="$dir/m$1.pid" pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# A recycled pid is not ours: the command line must name this member's data.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--data-dir $dir/m$1.etcd" || return 1
	echo "$pid"
}

install_etcd() {
	command -v etcd >/dev/null && command -v etcdctl >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || die "etcd is not installed (run as root to install etcd-server and etcd-client)"
	echo "etcd-cluster: installing etcd-server etcd-client" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends etcd-server etcd-client >/dev/null
	command -v etcd >/dev/null || die "etcd still missing after apt-get install"
}

# True when something listens on 127.0.0.1:$1.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

start_member() {
	local i=$1 cluster="" j p
	# Another cluster on our ports would answer the health check for us.
	for p in "$(client_port "$i")" "$(peer_port "$i")"; do
		port_busy "$p" && die "port $p is in use (set KVFS_ETCD_PORT to another base)"
	done
	for ((j = 0; j < members; j++)); do
		cluster+="${cluster:+,}m$j=http://127.0.0.1:$(peer_port "$j")"
	done
	# A member restarting with its data ignores the initial-cluster flags.
	# setsid and closed descriptors: the member outlives this script and
	# holds none of the caller's pipes open (bats waits on those).
	# The member writes its own pid (setsid may fork first), then becomes etcd.
	rm -f "$dir/m$i.pid"
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$dir/m$i.pid" \
		etcd --name "m$i" --logger=zap --data-dir "$dir/m$i.etcd" \
		--listen-client-urls "http://127.0.0.1:$(client_port "$i")" \
		--advertise-client-urls "http://127.0.0.1:$(client_port "$i")" \
		--listen-peer-urls "http://127.0.0.1:$(peer_port "$i")" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$i")" \
		--initial-cluster "$cluster" --initial-cluster-state new \
		--initial-cluster-token "kvfs-$base" \
		--max-request-bytes "$max_request_bytes" --max-txn-ops "$max_txn_ops" \
		"${compaction[@]}" ${quota[@]+"${quota[@]}"} \
		</dev/null >>"$dir/m$i.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
}

# True while member $1's process (maybe still starting) lives.
member_alive() {
	local pid
	pid=$(cat "$dir/m$1.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Waits (at most 30 s) until every running member answers healthy.
wait_healthy() {
	local tries i eps
	for ((tries = 0; tries < 300; tries++)); do
		eps=""
		for ((i = 0; i < members; i++)); do
			if [ ! -s "$dir/m$i.pid" ]; then	# not forked yet
				eps=""
				break
			fi
			if ! member_alive "$i"; then
				# exited at once (a port in use, a bad data dir): say why
				tail -n 3 "$dir/m$i.log" >&2 || true
				die "member $i exited (log: $dir/m$i.log)"
			fi
			eps+="${eps:+,}http://127.0.0.1:$(client_port "$i")"
		done
		if [ -n "$eps" ] && ETCDCTL_API=3 etcdctl --endpoints="$eps" --dial-timeout=1s \
			--command-timeout=2s endpoint health >/dev/null 2>&1; then
			# still ours after answering (not a stranger on the port)
			for ((i = 0; i < members; i++)); do
				member_pid "$i" >/dev/null || die "member $i exited (log: $dir/m$i.log)"
			done
			return 0
		fi
		sleep 0.1
	done
	die "members not healthy after 30 s (logs: $dir/m*.log)"
}

cmd_start() {
	local i pid started=0
	install_etcd
	mkdir -p "$dir"
	for ((i = 0; i < members; i++)); do
		if pid=$(member_pid "$i"); then
			if [[ "$(ps -o stat= -p "$pid")" == T* ]]; then
				kill -CONT "$pid"	# hung by hang-one: wakes
				started=1
			fi
			continue
		fi
		start_member "$i"
		started=1
	done
	[ "$started" -eq 0 ] || wait_healthy
	url
}

# Stops the members named (numbers) at once: TERM to each, then at most
# 10 s for all of them, then KILL. One after another, each later member
# lost its quorum first and took seconds longer to leave (5.6 s for three,
# against 1.x s at once).
stop_members() {
	local i pid tries pids=()
	for i in "$@"; do
		pid=$(member_pid "$i") || continue
		kill "$pid" 2>/dev/null || true
		kill -CONT "$pid" 2>/dev/null || true	# a hung member takes the TERM once it runs
		pids+=("$pid")
	done
	for pid in ${pids[@]+"${pids[@]}"}; do
		for ((tries = 0; tries < 100; tries++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	done
	for i in "$@"; do
		rm -f "$dir/m$i.pid"
	done
}

cmd_stop() {
	local i all=()
	for ((i = 0; i < members; i++)); do
		all+=("$i")
	done
	stop_members "${all[@]}"
	[ -d "$dir" ] || return 0
	for ((i = 0; i < members; i++)); do
		rm -rf "$dir/m$i.etcd" "$dir/m$i.log" "$dir/m$i.pid"
	done
	# The default directory is ours; a directory the caller named stays.
	[ -n "${KVFS_ETCD_DIR:-}" ] || rmdir "$dir" 2>/dev/null || true
}

cmd_stop_one() {
	local i=${1:-2}
	[[ "$i" =~ ^[0-9]+$ ]] && [ "$i" -lt "$members" ] || die "stop-one: member must be 0-$((members - 1))"
	member_pid "$i" >/dev/null || die "stop-one: member $i is not running"
	stop_members "$i"
	echo "127.0.0.1:$(client_port "$i")"
}

cmd_hang_one() {
	local i=${1:-2} pid
	[[ "$i" =~ ^[0-9]+$ ]] && [ "$i" -lt "$members" ] || die "hang-one: member must be 0-$((members - 1))"
	pid=$(member_pid "$i") || die "hang-one: member $i is not running"
	kill -STOP "$pid"
	echo "127.0.0.1:$(client_port "$i")"
}

cmd_status() {
	local i any=1
	for ((i = 0; i < members; i++)); do
		if member_pid "$i" >/dev/null; then
			echo "m$i http://127.0.0.1:$(client_port "$i") running"; any=0
		else
			echo "m$i http://127.0.0.1:$(client_port "$i") stopped"
		fi
	done
	[ "$any" -eq 0 ] && url
	return "$any"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
stop-one) cmd_stop_one "${2:-}" ;;
hang-one) cmd_hang_one "${2:-}" ;;
status) cmd_status ;;
endpoints) endpoints ;;
*) die "usage: $0 start|stop|stop-one [N]|hang-one [N]|status|endpoints" ;;
esac
