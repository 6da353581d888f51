#!/usr/bin/env bash
# Data-parallel training across 2 namespace hosts at 1 Gbit/s, broken mid-run; each case must end
# the job within a bound, non-zero, with rank 0's one-line error, and leave a --json written
# before it whole:
#   link     host 1's link taken down (ip link set down inside its namespace) once the
#            gradients flow: host 1 is cut off (its own line cannot reach mpirun: the output goes
#            over that link), rank 0 is ended by mpirun or its watchdog
#   kill     rank 1's process killed (SIGKILL, from outside) once the gradients flow
#   inject   rank 1 killed at the start of an all-reduce (PRIMBENCH_INJECT_DP); the bound counts
#            from its death, not from the 30 MB mark: the step it dies in comes a few steps later,
#            and on a slow CPU beside another test that alone took more than 45 s
# Usage: dp_faults.sh SRC BUILD CASE
SRC=$1 BUILD=$2 CASE=$3
source "$SRC/tests/cluster/lib.sh"

cluster_up 2 --rate 1gbit
out=$(mktemp)
json=$(mktemp --suffix=.json)
tmp_paths+=("$out" "$json")
echo '{"earlier": "result"}' >"$json"
before=$(md5sum <"$json")
env=()
[ "$CASE" != inject ] || env=(-x PRIMBENCH_INJECT_DP=1:kill_allreduce:3)
start=$(date +%s)
cluster mpirun "${env[@]+"${env[@]}"}" -np 2 "$BUILD/primbench" net resnet50_cifar --batch 4 \
  --train --data-parallel --policy first --reps 50 --dp-timeout 10 --json "$json" >"$out" 2>&1 &
job=$!
# A job the test gave up on: mpirun ignores the first SIGTERM while it aborts.
test_cleanup() {
  kill "$job" 2>/dev/null || return 0
  sleep 1
  kill -KILL "$job" 2>/dev/null || true
}
# Mid-run: 30 MB of gradients through host 1's link.
until [ "$(link_bytes 1 rx)" -ge 30000000 ]; do
  kill -0 "$job" 2>/dev/null || break
  [ $(($(date +%s) - start)) -lt 60 ] || fail "no gradients crossed host 1's link in 60 s"
  sleep 0.2
done
rank1_pid() {
  for p in $(ip netns pids pbh1); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = primbench ] && echo "$p"
  done | head -1
}
cut=$(date +%s)
case "$CASE" in
  link) ip -n pbh1 link set pbe1 down ;;
  kill)
    pid=$(rank1_pid)
    [ -n "$pid" ] || fail "no primbench process in pbh1"
    kill -KILL "$pid"
    ;;
  inject)
    while [ -n "$(rank1_pid)" ]; do
      [ $(($(date +%s) - cut)) -lt 90 ] || { cat "$out"; fail "rank 1 did not kill itself in 90 s"; }
      sleep 0.2
    done
    cut=$(date +%s)
    ;;
  *) fail "unknown case '$CASE'" ;;
esac
# Bounded: the watchdog (10 s beyond a step) or mpirun (keepalive, about 4 s) ends it.
while kill -0 "$job" 2>/dev/null; do
  [ $(($(date +%s) - cut)) -lt 45 ] || { cat "$out"; fail "the job still runs 45 s after the fault"; }
  sleep 0.2
done
rc=0
wait "$job" || rc=$?
cat "$out"
echo "exit $rc, $(($(date +%s) - cut)) s after the fault"
[ "$rc" != 0 ] || fail "the job exited 0"
grep -Eq "^primbench: rank 0 of 2 \(pbh0\): (stopped by SIGTERM during|watchdog: )" "$out" ||
  fail "rank 0 printed no line saying what it was doing"
[ "$(grep -c '^primbench: rank 0 of 2' "$out")" = 1 ] || fail "rank 0 printed more than one line"
case "$CASE" in
  link) grep -q "lost communication with a remote daemon\|watchdog" "$out" || fail "no word of the lost host" ;;
  *) grep -q "rank 1 .* exited on signal 9" "$out" || fail "mpirun did not name the killed rank" ;;
esac
[ "$(md5sum <"$json")" = "$before" ] || fail "the --json written before the job changed"
! ls "$json".* >/dev/null 2>&1 || fail "a temporary result file was left"
echo "PASS: $CASE"
