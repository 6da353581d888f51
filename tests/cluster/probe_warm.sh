#!/usr/bin/env bash
# The machine probe for 1 and 2 threads and every core, measured (or read from the cache) before
# the namespace-host tests, whose ranks would otherwise each measure it on shared cores.
# Usage: probe_warm.sh PRIMBENCH
set -euo pipefail
for t in $(printf '%s\n' 1 2 "$(nproc)" | sort -un); do
  "$1" run gemm m8 --impl cpu/packed --reps 1 --threads "$t" >/dev/null
done
echo "probe ready for 1, 2 and $(nproc) threads"
