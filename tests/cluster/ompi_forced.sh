#!/usr/bin/env bash
# mpi/ompi_<algorithm> really run Open MPI's forced algorithm, and mpi/native says which one
# Open MPI chose (issue 19, part 3), over 3 namespace hosts (one rank each, rank k on pbh<k>):
# - the bytes into each host betray the algorithm: basic_linear (linear reduce to rank 0, then
#   linear broadcast) brings 2n floats into rank 0's host and n into the others per call, ring
#   4n/3 into every host, so basic_linear / ring is 1.5 on host 0 and 0.75 on hosts 1 and 2;
# - the counter ompi_alg: mpi/native 6 (rabenseifner) at 4 MB and 3 (recursive doubling) at
#   4000 bytes, coll tuned's fixed table for 3 ranks; the forced ones their own number;
# - with coll_tuned_use_dynamic_rules off they are skipped with that reason (exit 3).
# Skipped (77) without root, or where the library is not Open MPI 4.1/5.0.
# Usage: ompi_forced.sh SRC BUILD
SRC=$1 BUILD=$2
source "$SRC/tests/cluster/lib.sh"

cluster_up 3 --rate none
if ! grep -Eq 'Open MPI v(4\.1|5\.0)' <<<"$(ompi_info --version 2>/dev/null)"; then
  echo "ompi_forced.sh: not Open MPI 4.1/5.0; skipped"
  exit 77
fi

n=4000000
# Bytes into host k (pbv<k>'s tx) during one `primbench run` of IMPL on 3 hosts.
declare -A into
run_counting() {
  local impl=$1 k
  local -a before
  for k in 0 1 2; do before[$k]=$(link_bytes "$k" tx); done
  out=$(cluster mpirun -np 3 "$BUILD/primbench" run allreduce "n$n" --impl "$impl" --reps 4 2>&1) ||
    { echo "$out"; fail "$impl on 3 hosts"; }
  echo "$out" | grep "^$impl"
  for k in 0 1 2; do into[$impl,$k]=$(($(link_bytes "$k" tx) - before[k])); done
}
run_counting mpi/ompi_basic_linear
run_counting mpi/ompi_ring
grep -q 'ompi_alg=4' <<<"$out" || fail "mpi/ompi_ring does not report ompi_alg=4"
for k in 0 1 2; do
  ratio=$(awk -v a="${into[mpi/ompi_basic_linear,$k]}" -v b="${into[mpi/ompi_ring,$k]}" \
    'BEGIN { printf "%.3f", a / b }')
  echo "host $k: ${into[mpi/ompi_basic_linear,$k]} bytes in with basic_linear, ${into[mpi/ompi_ring,$k]} with ring: ratio $ratio"
  if [ "$k" = 0 ]; then lo=1.35 hi=1.65; else lo=0.65 hi=0.85; fi
  awk -v r="$ratio" -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(r >= lo && r <= hi) }' ||
    fail "host $k: basic_linear/ring bytes $ratio, expected $lo-$hi: the algorithm was not forced"
done

for case in "1000000 6" "1000 3"; do
  set -- $case
  out=$(cluster mpirun -np 3 "$BUILD/primbench" run allreduce "n$1" --impl mpi/native 2>&1) ||
    { echo "$out"; fail "mpi/native n$1"; }
  grep -q "ompi_alg=$2\b" <<<"$out" || { echo "$out"; fail "mpi/native n$1 on 3 ranks: expected ompi_alg=$2"; }
  echo "ok: mpi/native n$1 on 3 ranks: ompi_alg=$2"
done

rc=0
out=$(cluster mpirun --mca coll_tuned_use_dynamic_rules 0 -np 3 "$BUILD/primbench" run allreduce n1000 \
  --impl mpi/ompi_ring 2>&1) || rc=$?
grep -q 'unsupported: coll_tuned_use_dynamic_rules is off' <<<"$out" && [ "$rc" != 0 ] ||
  { echo "$out"; fail "dynamic rules off: mpi/ompi_ring was not skipped with the reason"; }
echo "ok: dynamic rules off: mpi/ompi_ring skipped with the reason"
echo "PASS: Open MPI's algorithms forced and named"
