#!/bin/bash
# Two hosts on one machine, for tests: run as `unshare --user --map-root-user --net two_hosts.sh LOGS COMMAND...`.
# This network namespace is host 0 and a second one is host 1, joined by a veth pair whose ends have the
# addresses 127.0.1.1 and 127.0.1.2 (loopback-range addresses, routed over the veth with route_localnet: nothing
# leaves the machine). COMMAND runs on each host with HOST_INDEX set, its output in LOGS/host_<index>.log.
# Prints `host 1 network held by <pid>` (killing every process of that namespace loses the host), then each
# host's exit status.
set -eu
logs=$1
shift
ip link set lo up
unshare --net sleep 3600 &
peer=$!
sleep 0.2
ip link add host0 type veth peer name host1
ip link set host1 netns "$peer"
on_host1() { nsenter --net="/proc/$peer/ns/net" "$@"; }
echo 1 >/proc/sys/net/ipv4/conf/all/route_localnet
echo 1 >/proc/sys/net/ipv4/conf/host0/route_localnet
ip addr add 127.0.1.1/24 dev host0
ip link set host0 up
on_host1 ip link set lo up
on_host1 sh -c 'echo 1 >/proc/sys/net/ipv4/conf/all/route_localnet; echo 1 >/proc/sys/net/ipv4/conf/host1/route_localnet'
on_host1 ip addr add 127.0.1.2/24 dev host1
on_host1 ip link set host1 up
echo "host 1 network held by $peer"
HOST_INDEX=0 "$@" >"$logs/host_0.log" 2>&1 &
first=$!
HOST_INDEX=1 on_host1 "$@" >"$logs/host_1.log" 2>&1 &
second=$!
set +e
wait "$first"
echo "host 0 exited with $?"
wait "$second"
echo "host 1 exited with $?"
kill "$peer" 2>/dev/null
exit 0
