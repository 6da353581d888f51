# Sourced by tools/bench and tools/allreduce (from the repository root): a new results folder,
# and results/latest pointing at it.

# new_results_folder PROG: sets `results` ($PRIMBENCH_RESULTS_DIR, default results), `out`
# (results/<UTC timestamp>, -2, -3.. when taken) and `out_abs` (absolute), and creates it;
# exits 2 with one line naming PRIMBENCH_RESULTS_DIR when it cannot be created or written.
new_results_folder() {
  results=${PRIMBENCH_RESULTS_DIR:-results}
  local ts n=1
  ts=$(date -u +%Y%m%dT%H%M%SZ)
  out=$results/$ts
  while [ -e "$out" ]; do n=$((n + 1)); out=$results/$ts-$n; done
  if ! mkdir -p "$out" 2>/dev/null || [ ! -w "$out" ]; then
    echo "$1: PRIMBENCH_RESULTS_DIR: cannot create or write the results folder $out" >&2
    exit 2
  fi
  case "$out" in /*) out_abs=$out ;; *) out_abs=$PWD/$out ;; esac
}

# point_latest: results/latest names $out, replaced atomically.
point_latest() {
  ln -sfn "$(basename "$out")" "$results/.latest.tmp" && mv -fT "$results/.latest.tmp" "$results/latest"
}
