#!/usr/bin/env bash
# Installs the Debian packages kvfs needs to build and test, only when some
# are missing (apt-get update first). Run as root on a fresh machine.
set -euo pipefail
pkgs=(build-essential pkg-config libfuse3-dev fuse3 liblmdb-dev lmdb-utils
      bats bats-assert bats-support attr rsync tar jq vim xxd python3 procps
      util-linux bsdutils diffutils
      clang libclang-rt-14-dev)   # make fuzz: clang and its libFuzzer runtime
# etcd backend (docs/ETCD.md): the cluster for tests/80-etcd-client.bats, libcurl and cJSON
pkgs+=(etcd-server etcd-client libcurl4-openssl-dev libcjson-dev)
pkgs+=(openssl bc)   # tests/84-etcd-list.bats: a CA of its own for TLS; bench-etcd.sh: bc
pkgs+=(parallel)     # scripts/run-tests.sh: bats runs two suites at once
pkgs+=(iproute2)     # scripts/netns-cluster.sh: namespaces, veths, rules (nsenter: util-linux)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages: ${missing[*]} (run as root to install)" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
