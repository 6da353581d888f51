#!/usr/bin/env bash
# tools/cluster itself: refusals (a delay tbf cannot give, a bad rate, a subnet that collides,
# not root), up removing a half-made previous cluster, the rsh agent (ssh's calling convention,
# the namespace and hostname it runs in, a host it does not know), status and down.
# Usage: tool.sh SRC
SRC=$1 BUILD=
source "$SRC/tests/cluster/lib.sh"

# expect RC PATTERN command...: the command exits RC and its stderr/stdout matches PATTERN.
expect() {
  local want=$1 pattern=$2 rc=0 out
  shift 2
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want: $out"
  grep -Eq -- "$pattern" <<<"$out" || fail "'$*' said '$out', expected /$pattern/"
  echo "ok: $* -> $rc: $(head -1 <<<"$out")"
}

[ "$(id -u)" = 0 ] || { echo "tool.sh: needs root; skipped"; exit 77; }
trap teardown EXIT

expect 2 '^cluster: --delay-us 50: not supported: .*tbf.*cannot delay' cluster up 2 --delay-us 50
expect 2 '^cluster: --rate: .10gigs. is not a rate' cluster up 2 --rate 10gigs
expect 2 '^cluster: up: the host count must be' cluster up 0
if command -v setpriv >/dev/null; then
  expect 77 '^cluster: needs root' setpriv --reuid=65534 --regid=65534 --clear-groups "$SRC/tools/cluster" up 2
fi

# A subnet a route of the root namespace already covers is refused.
ip link add pbtc0 type veth peer name pbtc1
test_cleanup() { ip link del pbtc0 2>/dev/null || true; }
ip addr add 10.213.9.1/24 dev pbtc0
ip link set pbtc0 up
expect 2 'collides with a route' cluster up 2 --subnet 10.213.9
test_cleanup

# A half-made cluster (a stray namespace and a stray bridge-side veth) is removed by up.
ip netns add pbh7
ip link add pbv9 type veth peer name pbx9
cluster_up 2 --rate 100mbit
[ "$(ip netns list | awk '{print $1}' | grep -E '^pbh[0-9]+$' | sort | tr '\n' ' ')" = "pbh0 pbh1 " ] ||
  fail "after up 2: namespaces $(ip netns list | tr '\n' ' ')"
! ip link show pbv9 >/dev/null 2>&1 || fail "up left the stray pbv9"
[ "$(cat "$hostfile")" = $'10.213.0.1 slots=1\n10.213.0.2 slots=1' ] || fail "hostfile: $(cat "$hostfile")"
tc qdisc show dev pbv1 | grep -q 'tbf .*rate 100Mbit' || fail "pbv1 is not shaped: $(tc qdisc show dev pbv1)"
tc -n pbh1 qdisc show dev pbe1 | grep -q 'tbf .*rate 100Mbit' || fail "pbe1 is not shaped"
status=$(cluster status)
grep -q 'pbh1: pbe1.* 10.213.0.2/24' <<<"$status" || fail "status: $status"

# The agent, called as Open MPI calls ssh (options first, then HOST, then the command's words).
agent=$(dirname "$hostfile")/agent
out=$("$agent" -x -o StrictHostKeyChecking=no 10.213.0.2 echo '$(hostname)' ';' ip -br -4 addr show dev pbe1)
grep -q '^pbh1$' <<<"$out" && grep -q '10.213.0.2/24' <<<"$out" ||
  fail "the agent did not run in pbh1 under its hostname: $out"
expect 255 'not a host of the cluster' "$agent" 10.213.0.77 true

# The mpirun flags pin MPI to TCP on the cluster subnet and keep shared memory out.
flags=$(cluster flags | tr '\n' ' ')
for want in "--mca pml ob1" "--mca btl tcp,self" "--mca btl_tcp_if_include 10.213.0.0/24" \
  "--mca oob_tcp_if_include 10.213.0.0/24" "--mca plm_rsh_agent $agent" "--bind-to none"; do
  grep -qF -- "$want" <<<"$flags" || fail "tools/cluster flags lacks '$want': $flags"
done

cluster down
[ -z "$(ip netns list | awk '{print $1}' | grep -E '^pbh[0-9]+$' || true)" ] || fail "down left namespaces"
! ip link show pbbr0 >/dev/null 2>&1 || fail "down left the bridge"
[ ! -e "$hostfile" ] || fail "down left $hostfile"
expect 0 'cluster: down' cluster status
expect 2 'no cluster is up' cluster flags
echo "PASS: tools/cluster"
