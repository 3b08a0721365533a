#!/usr/bin/env bash
# A job of several processes in which one fails ends at once, non-zero: no
# process waits forever for a message that will never come (lib/dist,
# tests/dist_abort_demo.cpp). Skips (77) in a build without MPI.
# Usage: dist_abort.sh BIN_DIR SOURCE_DIR
set -u
DEMO="$1/dist_abort_demo"
MPIEXEC="${HT_MPIEXEC:-mpirun}"
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$DEMO" ] || { echo "skip: no $DEMO (built only with MPI)"; exit 77; }
command -v "$MPIEXEC" >/dev/null || { echo "skip: no $MPIEXEC"; exit 77; }
# mpirun as root (containers, CI) needs both; 4 processes on 2 cores need oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# run NP MODE: sets out and rc; a job still running after 20 s is a hang.
run() {
  local start=$SECONDS
  out=$(timeout -k 5 20 "$MPIEXEC" -np "$1" "$DEMO" "$2" 2>&1)
  rc=$?
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "-np $1 $2: the job hung (killed after 20 s): $out"
  echo "-np $1 $2: exit $rc in $((SECONDS - start)) s"
}

run 2 ok
[ $rc -eq 0 ] || fail "ok: exit $rc: $out"
grep -q "^ok: MPI (.*, 2 processes)" <<<"$out" || fail "ok: no describe line: $out"

for np in 2 4; do
  run $np abort
  [ $rc -eq 3 ] || fail "abort: exit $rc, not the code 3 given to abort: $out"
  grep -q "error: process 1 fails on purpose; aborting the job" <<<"$out" || fail "abort: no error line: $out"
  grep -q "^ok:" <<<"$out" && fail "abort: process 0 passed the barrier: $out"

  run $np throw
  [ $rc -ne 0 ] || fail "throw: exit 0: $out"
  grep -q "error: process 1 fails on purpose (throw)" <<<"$out" || fail "throw: no error line: $out"
  grep -q "^ok:" <<<"$out" && fail "throw: process 0 passed the barrier: $out"
done
echo "ok: dist_abort"
