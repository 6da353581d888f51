#!/usr/bin/env bash
# The machine probe for 1 and 2 threads and every core, and CLBlast's tuning, measured (or read
# from their caches) before the namespace-host tests, whose ranks would otherwise each measure
# them on shared cores.
# Usage: probe_warm.sh PRIMBENCH
set -euo pipefail
for t in $(printf '%s\n' 1 2 "$(nproc)" | sort -un); do
  "$1" run gemm m8 --impl cpu/packed --reps 1 --threads "$t" >/dev/null
done
# CLBlast's tuning (ocl/clblast, once per device, then cached): the data-parallel tests' ocl
# ranks would otherwise each tune at once on the shared cores (118 s on a fresh Zen 3 machine,
# past those tests' 180 s with the steps). Exit 3: no OpenCL device or CLBlast here.
rc=0
"$1" run gemm m8 --impl ocl/clblast --reps 1 >/dev/null || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "probe_warm: ocl/clblast exited $rc" >&2; exit 1; }
echo "probe ready for 1, 2 and $(nproc) threads; CLBlast tuned (or no OpenCL)"
