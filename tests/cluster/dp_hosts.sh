#!/usr/bin/env bash
# Data-parallel training across N namespace hosts (tools/cluster): the weights tests of
# tests/mpi/test_data_parallel.cpp (every rank's weights equal the combined batch's after two
# steps, identical across ranks, every all-reduce, with and without overlap), then `primbench net
# --data-parallel` itself: its report and --json, and the gradients' bytes crossed every host's
# link (TCP between the namespaces, not shared memory).
# Usage: dp_hosts.sh SRC BUILD N
SRC=$1 BUILD=$2 N=$3
source "$SRC/tests/cluster/lib.sh"

cluster_up "$N" --rate 10gbit
echo "== pb_dp_tests on $N hosts"
cluster mpirun -np "$N" "$BUILD/tests/pb_dp_tests" || fail "pb_dp_tests on $N hosts"

declare -A tx0 rx0
for ((k = 0; k < N; k++)); do tx0[$k]=$(link_bytes "$k" tx) rx0[$k]=$(link_bytes "$k" rx); done
json=$(mktemp --suffix=.json)
tmp_paths+=("$json")
reps=5
echo "== primbench net resnet50_cifar --batch 2 --train --data-parallel on $N hosts"
out=$(cluster mpirun -np "$N" "$BUILD/primbench" net resnet50_cifar --batch 2 --train \
  --data-parallel --policy first --reps "$reps" --bucket-mb 10 --json "$json" 2>&1) ||
  { echo "$out"; fail "primbench net --data-parallel on $N hosts"; }
echo "$out"
grep -q "on $N rank(s)" <<<"$out" || fail "the report does not say $N ranks"
grep -q "weights identical on every rank after every step" <<<"$out" || fail "no weights check line"
grep -q "measured/projected" <<<"$out" || fail "no projection next to the measurement"
for key in '"ranks":'"$N" '"step_ms":' '"exposed_ms":' '"efficiency":' '"projected_ms":' \
  '"measured_over_projected":' '"data_parallel":true'; do
  grep -q "$key" "$json" || fail "--json lacks $key"
done
# Each step all-reduces the gradients (94 MB): whatever the algorithm, every host sends and
# receives at least (N-1)/N of them per step over its link.
grad=$(sed -n 's/.*"grad_MB":\([0-9.e+]*\).*/\1/p' "$json")
min=$(awk -v g="$grad" -v n="$N" -v r="$reps" 'BEGIN { printf "%d", g * 1e6 * (n - 1) / n * r }')
for ((k = 0; k < N; k++)); do
  dtx=$(($(link_bytes "$k" tx) - tx0[$k])) drx=$(($(link_bytes "$k" rx) - rx0[$k]))
  echo "host $k: $drx bytes out, $dtx bytes in over pbv$k ($min at least)"
  [ "$dtx" -ge "$min" ] && [ "$drx" -ge "$min" ] ||
    fail "host $k: the gradients did not cross its link"
done
echo "PASS: data-parallel training across $N namespace hosts"
