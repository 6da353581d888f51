#!/usr/bin/env bash
# The cluster shapes what it claims: over 2 namespace hosts whose links tools/cluster shapes at
# RATE, mpi/ring's busbw at 16M floats (64 MB per rank) is within 20% of RATE. For 2 ranks
# busbw is the bytes each rank sends per second one way, so it meets the link rate when the
# link is the bottleneck; tbf counts frames with their headers, so TCP's payload tops out near
# 95% of RATE. CLAIMED (default RATE) is the rate asserted: claiming another rate than the one
# shaped (e.g. RATE 500mbit, CLAIMED 1gbit) must fail, which shows the check can fail.
# Usage: shaped_rate.sh SRC BUILD [RATE] [CLAIMED]
SRC=$1 BUILD=$2 RATE=${3:-1gbit} CLAIMED=${4:-${3:-1gbit}}
source "$SRC/tests/cluster/lib.sh"

# Bytes per second of a tc rate (1gbit, 500mbit).
to_bytes_per_s() {
  [[ "$1" =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] || fail "'$1' is not a rate like 1gbit or 500mbit"
  local -A mult=([bit]=1 [kbit]=1000 [mbit]=1000000 [gbit]=1000000000)
  echo $((BASH_REMATCH[1] * mult[${BASH_REMATCH[2]}] / 8))
}
claimed_Bps=$(to_bytes_per_s "$CLAIMED")

cluster_up 2 --rate "$RATE"
json=$(mktemp) log=$(mktemp)
tmp_paths+=("$json" "$log")
# One measurement: 3 repetitions of mpi/ring at 16M; prints the figures and ends with PASS, LOW
# (best below 80% of CLAIMED) or HIGH (best above 120%). The best repetition is compared: other
# processes on the machine can only slow a repetition down, never lift it above the shaper, so
# the best is the link's rate.
measure() {
  cluster mpirun -np 2 "$BUILD/bench_allreduce" --benchmark_filter='^allreduce/mpi/ring/deepbench:16M/' \
    --primbench_iters=3 --benchmark_repetitions=3 --primbench_check=0 \
    --benchmark_out="$json" --benchmark_out_format=json >"$log" 2>&1 ||
    { cat "$log" >&2; fail "bench_allreduce on 2 hosts"; }
  # Rank 0's JSON: the busbw (bytes/s) and the CPU share (cpu_time / real_time) of each
  # repetition ("run_type": "iteration" rows).
  awk -v c="$claimed_Bps" -v r="$RATE" -v cl="$CLAIMED" '
    /"name":/ { it = 0 }
    /"run_type": "iteration"/ { it = 1 }
    it && /"real_time":/ { rt = $2 + 0 }
    it && /"cpu_time":/ { ct = $2 + 0; cpu = cpu sprintf(" %.0f%%", rt > 0 ? 100 * ct / rt : 0) }
    it && /"busbw":/ { v = $2; sub(",", "", v); v += 0; all = all sprintf(" %.1f", v / 1e6); n++
                        if (v > best) best = v }
    END {
      if (n != 3) { printf "expected 3 repetitions with busbw, got %d\nLOW\n", n; exit }
      ratio = best / c
      printf "mpi/ring 16M over 2 hosts shaped at %s: busbw%s MB/s (rank 0 on a core%s of the time); best %.1f MB/s = %.0f%% of the claimed %s (%.1f MB/s)\n",
        r, all, cpu, best / 1e6, 100 * ratio, cl, c / 1e6
      print (ratio < 0.8 ? "LOW" : ratio > 1.2 ? "HIGH" : "PASS")
    }' "$json"
}

# Above the claim is the shaper not holding the link: that fails at once. Below it can also be
# the machine: the kernel's TCP and tbf work competes for the 2 cores with the busy-polling ranks,
# and CI once saw 82, 71 and 48 MB/s on a 1gbit link (rank 0 on a core 93%, 70% and 51% of the
# time) where 117 is usual. So a low measurement is repeated, up to 3 in all, and only 3 low ones
# fail: a claim the link does not meet (RATE 500mbit, CLAIMED 1gbit) is low every time.
for attempt in 1 2 3; do
  out=$(measure)
  printf '%s\n' "$out" | sed '$d'
  verdict=$(printf '%s\n' "$out" | tail -n 1)
  case "$verdict" in
    PASS) echo PASS; exit 0 ;;
    HIGH) fail "busbw is over 120% of $CLAIMED: the link is not shaped to it" ;;
  esac
  echo "attempt $attempt: busbw below 80% of $CLAIMED"
done
fail "busbw is not within 20% of $CLAIMED in 3 attempts"
