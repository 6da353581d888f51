# Shared by the tests/cluster/*.sh tests (tools/cluster: namespace hosts on one machine).
# Source it after setting SRC (the repository) and BUILD (the build folder). Every test takes
# the cluster down when it ends, however it ends (trap on EXIT); a cluster that was up before
# the test is replaced.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

cluster() { "$SRC/tools/cluster" "$@"; }

tmp_paths=()  # removed at the end too

teardown() {
  local rc=$?
  rm -rf "${tmp_paths[@]+"${tmp_paths[@]}"}"
  ! declare -F test_cleanup >/dev/null || test_cleanup  # a test's own leftovers
  "$SRC/tools/cluster" down >/dev/null 2>&1 || true
  exit "$rc"
}

# cluster_up N [up options]: brings up N hosts; exit 77 (skip) where tools/cluster cannot (not
# root, no network namespaces).
cluster_up() {
  trap teardown EXIT
  local rc=0
  hostfile=$("$SRC/tools/cluster" up "$@") || rc=$?
  [ "$rc" != 77 ] || exit 77
  [ "$rc" = 0 ] || fail "tools/cluster up $* exited $rc"
  [ -s "$hostfile" ] || fail "tools/cluster up $* printed '$hostfile', not a hostfile"
}

# Bytes through the bridge-side end of host K's link: tx = into the host, rx = out of it.
link_bytes() { cat "/sys/class/net/pbv$1/statistics/$2_bytes"; }
