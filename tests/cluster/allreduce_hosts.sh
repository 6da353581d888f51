#!/usr/bin/env bash
# All-reduce across N namespace hosts (tools/cluster): the MPI conformance tests (every
# implementation on odd sizes up to 1M+1, bitwise equal across ranks and runs), the CLI's
# check on odd sizes, tools/allreduce --hostfile with the cluster's hostfile, and proof that the
# traffic crossed every host's veth link (its byte counters), i.e. went over TCP between the
# namespaces, not through shared memory.
# Usage: allreduce_hosts.sh SRC BUILD N [PB_MPI_TESTS]
SRC=$1 BUILD=$2 N=$3 MPI_TESTS=${4:-$2/tests/pb_mpi_tests}
source "$SRC/tests/cluster/lib.sh"

cluster_up "$N" --rate 10gbit
echo "== pb_mpi_tests on $N hosts"
# The largest size 1048577 instead of 16777217 (tests/mpi/test_allreduce_mpi.cpp says why).
cluster mpirun -np "$N" -x PB_TEST_ALLREDUCE_LARGEST=1048577 "$MPI_TESTS" ||
  fail "pb_mpi_tests on $N hosts"

n_max=1000003
declare -A tx0 rx0
for n in 1 7 12345 $n_max; do
  if [ "$n" = "$n_max" ]; then
    for ((k = 0; k < N; k++)); do tx0[$k]=$(link_bytes "$k" tx) rx0[$k]=$(link_bytes "$k" rx); done
  fi
  echo "== primbench run allreduce n$n --impl all --check on $N hosts"
  out=$(cluster mpirun -np "$N" "$BUILD/primbench" run allreduce "n$n" --impl all --check 2>&1) ||
    { echo "$out"; fail "primbench run allreduce n$n on $N hosts"; }
  echo "$out"
  pass=$(grep -c ' PASS ' <<<"$out" || true)
  [ "$pass" -ge 3 ] || fail "n$n: expected a PASS row per implementation, got $pass"
  ! grep -q 'FAIL' <<<"$out" || fail "n$n: a FAIL row"
done

# The n_max run all-reduced n_max floats with every implementation: whatever the algorithm,
# each host sends and receives at least (N-1)/N of the vector in one all-reduce, over its
# link. Shared memory (or loopback) would leave the counters near zero.
min=$((4 * n_max * (N - 1) / N))
for ((k = 0; k < N; k++)); do
  dtx=$(($(link_bytes "$k" tx) - tx0[$k])) drx=$(($(link_bytes "$k" rx) - rx0[$k]))
  echo "host $k: $drx bytes out, $dtx bytes in over pbv$k"
  [ "$dtx" -ge "$min" ] && [ "$drx" -ge "$min" ] ||
    fail "host $k: only $drx bytes out and $dtx in over its link (at least $min expected): the traffic did not cross the veth"
done

echo "== tools/allreduce --hostfile $hostfile --ranks $N"
res=$(mktemp -d)
tmp_paths+=("$res")
fit=$(PRIMBENCH_RESULTS_DIR=$res "$SRC/tools/allreduce" --hostfile "$hostfile" --ranks "$N" \
  --build "$BUILD" --benchmark_filter='mpi/ring/deepbench:(100K|4M)/' --primbench_iters=3) ||
  { echo "$fit"; fail "tools/allreduce with the cluster's hostfile"; }
echo "$fit"
grep -q "== $N ranks on $N hosts, link 10gbit = 1.250 GB/s" <<<"$fit" ||
  fail "tools/allreduce's fit does not name $N hosts and the 10gbit link"
grep -Eq '^4.2M +mpi/ring ' <<<"$fit" || fail "tools/allreduce's fit names no pick at 4.2M floats"
json=$(ls "$res"/*/bench_allreduce_np"$N".json 2>/dev/null | head -1)
[ -n "$json" ] && grep -q "\"mpi_ranks\": \"$N\"" "$json" && grep -q '"busbw"' "$json" ||
  fail "tools/allreduce wrote no bench_allreduce_np$N.json with $N ranks and busbw"
# The context says where it ran: N hosts, and the cluster's link rate (the fit keeps runs at
# other rates apart and puts busbw against this one).
grep -q "\"mpi_hosts\": \"$N\"" "$json" && grep -q '"link_rate": "10gbit"' "$json" ||
  fail "bench_allreduce_np$N.json does not record $N hosts and the 10gbit link: $(grep -E '"(mpi_hosts|link_rate)"' "$json")"
echo "PASS: all-reduce across $N namespace hosts"
