#!/usr/bin/env bash
# Data-parallel training's faults on one host (plain mpirun), each ending the job within a bound
# with a clear one-line error from every surviving rank and a non-zero status:
#   mismatch FIELD   two ranks that disagree on FIELD (batch, network, backend, bucket, allreduce,
#                    overlap, reps): every rank names FIELD
#   kill WHERE       rank 1 killed (SIGKILL) in step 3, during an all-reduce (kill_allreduce) or
#                    its forward (kill_step): rank 0 says what it was doing; a --json written
#                    before the job stays whole
#   weights          rank 1's weights changed before the check of step 2: every rank reports that
#                    the weights differ
# Usage: dp_faults.sh PRIMBENCH MPIEXEC CASE [ARG]
set -uo pipefail
BIN=$1 MPIEXEC=$2 CASE=$3 ARG=${4:-}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

opts=(--train --data-parallel --policy first --reps 5 --dp-timeout 20)
net_b=tiny_resnet  # rank 1's network
out=$(mktemp)
json=$(mktemp --suffix=.json)
trap 'rm -f "$out" "$json" "$json".*' EXIT
start=$(date +%s)

# run_job ARGS_OF_RANK_0 -- ARGS_OF_RANK_1: two ranks (MPMD when they differ).
run_job() {
  local a=() b=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
  shift
  b=("$@")
  timeout 90 "$MPIEXEC" -np 1 "$BIN" net tiny_resnet "${opts[@]}" "${a[@]+"${a[@]}"}" : \
    -np 1 "$BIN" net "$net_b" "${opts[@]}" "${b[@]+"${b[@]}"}" >"$out" 2>&1
}

case "$CASE" in
  mismatch)
    declare -A diff=(
      [batch]="--batch 2 -- --batch 4|--batch"
      [network]="--|network"
      [backend]="-- --backend ref|--backend"
      [bucket]="--bucket-mb 25 -- --bucket-mb 10|--bucket-mb"
      [allreduce]="--allreduce mpi/ring -- --allreduce mpi/native|--allreduce"
      [overlap]="-- --no-overlap|--no-overlap"
      [reps]="-- --reps 6|--reps"
    )
    [ -n "${diff[$ARG]+x}" ] || fail "unknown field '$ARG'"
    spec=${diff[$ARG]}
    field=${spec#*|}
    read -r -a args <<<"${spec%|*}"
    [ "$ARG" != network ] || net_b=tiny_inception
    run_job "${args[@]}"
    rc=$?
    ;;
  kill)
    echo '{"earlier": "result"}' >"$json"
    before=$(md5sum <"$json")
    PRIMBENCH_INJECT_DP=1:$ARG:3 run_job --json "$json" -- --json "$json"
    rc=$?
    ;;
  weights)
    PRIMBENCH_INJECT_DP=1:weights:2 run_job --
    rc=$?
    ;;
  *) fail "unknown case '$CASE'" ;;
esac
took=$(($(date +%s) - start))
cat "$out"
echo "exit $rc after $took s"
[ "$rc" != 124 ] || fail "the job hung (killed by timeout after 90 s)"
[ "$rc" != 0 ] || fail "the job exited 0"
[ "$took" -le 60 ] || fail "the job took $took s to end"

case "$CASE" in
  mismatch)
    for r in 0 1; do
      n=$(grep -c "^primbench: $field: differs across ranks: this rank ($r of 2)" "$out")
      [ "$n" = 1 ] || fail "rank $r printed $n lines naming $field (1 expected)"
    done
    ;;
  kill)
    grep -q "^primbench: rank 0 of 2 ([^)]*): stopped by SIGTERM during data-parallel step 3" "$out" ||
      grep -q "^primbench: rank 0 of 2 ([^)]*): watchdog: .* step 3 " "$out" ||
      fail "rank 0 did not say it stopped during step 3"
    grep -q "rank 1 .* exited on signal 9" "$out" || fail "mpirun did not name the killed rank"
    [ "$(md5sum <"$json")" = "$before" ] || fail "the --json written before the job changed"
    ! ls "$json".* >/dev/null 2>&1 || fail "a temporary result file was left: $(ls "$json".*)"
    ;;
  weights)
    for r in 0 1; do
      grep -q "^primbench: error: data-parallel step 2: the weights differ across ranks (rank $r of 2" "$out" ||
        fail "rank $r did not report the weights differing after step 2"
    done
    ;;
esac
echo PASS
