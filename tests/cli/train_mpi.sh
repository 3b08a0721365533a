#!/usr/bin/env bash
# ht-train as a job of several processes (mpirun, the CPU backend): a job of
# P processes of G emulated GPUs each gives the same bits as one process with
# m = P x G (losses, accuracies and the final logits), for P = 2 and 4, both
# comm modes, GCN in either layer order, GAT and a bf16 store; process 0
# alone writes the outputs; bad jobs (--comm baseline, --gpus that do not
# match the partition, files that differ between processes, processes given
# different options, --store device) end with one error line and a non-zero
# exit; a process killed mid-run ends the job
# instead of leaving the others waiting; SIGTERM to every process stops the
# job after an epoch with the checkpoint and exit 143.
# Usage: train_mpi.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped: no MPI)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train
MPIEXEC="${HT_MPIEXEC:-}"
if [[ -z "$MPIEXEC" ]]; then
  echo "skip: this build has no MPI (HT_MPIEXEC not set by CMake)"
  exit 77
fi
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
launch() { "$MPIEXEC" --oversubscribe -np "$@"; }

"$BIN/ht-convert" -q --generate community --vertices 3000 --classes 6 --feature-dim 24 --avg-degree 8 --seed 3 \
  -o g.htg || { echo "FAIL: generate"; exit 1; }
for m in 2 4; do
  "$BIN/ht-partition" -q --graph g.htg --parts $m --chunks 3 -o p$m.htp >/dev/null &&
    "$BIN/ht-reorganize" -q --graph g.htg --partition p$m.htp -o p$m.htplan >/dev/null 2>&1 ||
    { echo "FAIL: partition m = $m"; exit 1; }
done
files() { echo --graph g.htg --partition p$1.htp --plan p$1.htplan; }
common=(--backend cpu --epochs 3 --eval-every 1 --dropout 0.3)
gcn=(--layers 24-16-6)
losses() { grep -o '"\(loss\|train_acc\|val_acc\|test_acc\)":[^,]*' "$1"; }

# same NAME M P G ARGS...: one process with m = M against P processes of G.
same() {
  local name="$1" m="$2" p="$3" g="$4"
  shift 4
  "$BIN/ht-train" -q $(files $m) "${common[@]}" --gpus $m "$@" --metrics-out one.jsonl --logits-out one.npy \
    >one.txt 2>&1 || { fail "$name: one process failed"; cat one.txt; return; }
  launch $p "$BIN/ht-train" -q $(files $m) "${common[@]}" --gpus $g "$@" --metrics-out job.jsonl \
    --logits-out job.npy >job.txt 2>&1 || { fail "$name: the job of $p processes failed"; cat job.txt; return; }
  if ! cmp -s one.npy job.npy; then fail "$name: logits differ"; return; fi
  if [[ "$(losses one.jsonl)" != "$(losses job.jsonl)" ]]; then fail "$name: losses or accuracies differ"; return; fi
  if [[ $(grep -c '"processes":'"$p" job.jsonl) -ne 1 ]]; then fail "$name: not one summary line of $p processes"; return; fi
  echo "ok: $name ($p processes of $g, the same bits as one process of $m)"
}
same "gcn full" 2 2 1 "${gcn[@]}" --comm full
same "gcn p2p" 2 2 1 "${gcn[@]}" --comm p2p
same "gcn aggregate-first" 4 4 1 "${gcn[@]}" --comm full --gcn-order aggregate
same "gcn transform-first, 2 GPUs per process" 4 2 2 "${gcn[@]}" --comm p2p --gcn-order transform
same "gat full" 4 4 1 --model gat --heads 2 --layers 24-8-6 --comm full
same "gat p2p, 2 GPUs per process" 4 2 2 --model gat --heads 2 --layers 24-8-6 --comm p2p
same "bf16 store" 2 2 1 "${gcn[@]}" --comm full --host-dtype bf16
# Kept remote rows between processes: a reader keeps the rows of its previous
# step, their owner does not send them again (fewer rows cross), same bits.
net_rows() { grep '"type":"epoch"' "$1" | tail -1 | grep -o '"net_rows":[0-9]*' | cut -d: -f2; }
same "gat, kept remote rows" 4 4 1 --model gat --heads 2 --layers 24-8-6 --comm full --keep-remote-rows on
kept=$(net_rows job.jsonl)
same "gat, every remote row" 4 4 1 --model gat --heads 2 --layers 24-8-6 --comm full --keep-remote-rows off
every=$(net_rows job.jsonl)
if [[ -z $kept || -z $every ]] || (( kept <= 0 || kept >= every )); then
  fail "kept remote rows: ${kept:-?} rows between processes per epoch, not fewer than ${every:-?}"
else
  echo "ok: kept remote rows: $kept rows between processes per epoch, against $every"
fi

# expect_job_error NAME PATTERN P ARGS...: the job fails with one error line.
expect_job_error() {
  local name="$1" pattern="$2" p="$3"
  shift 3
  timeout 60 "$MPIEXEC" --oversubscribe -np $p "$@" >stdout.txt 2>raw.txt
  local rc=$?
  # Open MPI adds its own report of the abort: keep the tool's lines. Every
  # process that saw the error may report it before the abort ends it: the
  # same line, once per process.
  grep '^ht-train' raw.txt | sed 's/(process [0-9]* of /(process N of /' | sort -u >stderr.txt
  if [[ $rc -eq 124 ]]; then fail "$name: the job hung"; return; fi
  local before=$failures
  check_one_error_line "$name" "$pattern" $rc
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}
expect_job_error "comm baseline" "p2p or full" 2 "$BIN/ht-train" -q $(files 2) "${common[@]}" --comm baseline
expect_job_error "--gpus against the partition" "is 1 GPU(s) each, not 2" 2 "$BIN/ht-train" -q $(files 2) \
  "${common[@]}" --gpus 2
# Another partition of the same m (2 chunks, not 3) and its plan.
"$BIN/ht-partition" -q --graph g.htg --parts 2 --chunks 2 -o other.htp >/dev/null &&
  "$BIN/ht-reorganize" -q --graph g.htg --partition other.htp -o other.htplan >/dev/null 2>&1 ||
  fail "different files: the other partition"
# MPMD: process 1 reads other files than process 0.
timeout 60 "$MPIEXEC" --oversubscribe -np 1 "$BIN/ht-train" -q $(files 2) "${common[@]}" : \
  -np 1 "$BIN/ht-train" -q --graph g.htg --partition other.htp --plan other.htplan "${common[@]}" \
  >stdout.txt 2>raw.txt
rc=$?
if [[ $rc -eq 0 || $rc -eq 124 ]]; then
  fail "different files: exit code $rc"
elif ! grep -q "read a different file than process 0" raw.txt; then
  fail "different files: no error naming them:"
  cat raw.txt
else
  echo "ok: different files -> $(grep -m1 'different file' raw.txt)"
fi

# Processes given different options (MPMD: process 0 gets ARGS0, process 1
# ARGS1 besides the common ones): one line naming the option and the process,
# before any training (these used to corrupt the heap (--hidden, --model),
# hang (--epochs) or train to a result of no single run (--lr, --seed, --comm)).
options_differ() {
  local name="$1" pattern="$2" args0="$3" args1="$4"
  timeout 60 "$MPIEXEC" --oversubscribe -np 1 "$BIN/ht-train" -q $(files 2) "${base[@]}" $args0 : \
    -np 1 "$BIN/ht-train" -q $(files 2) "${base[@]}" $args1 >stdout.txt 2>raw.txt
  local rc=$?
  grep '^ht-train: error' raw.txt | sed 's/(process [0-9]* of /(process N of /' | sort -u >stderr.txt
  if [[ $rc -eq 124 ]]; then fail "$name: the job hung"; return; fi
  local before=$failures
  check_one_error_line "$name" "$pattern" $rc
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}
base=(--backend cpu --eval-every 1 --dropout 0.3)
options_differ "--hidden" "different options: --hidden (process 1 against process 0)" \
  "--epochs 3 --hidden 16" "--epochs 3 --hidden 32"
options_differ "--model" "different options: --model (process 1 against process 0)" "--epochs 3" \
  "--epochs 3 --model gat"
options_differ "--epochs" "different options: --epochs (process 1 against process 0)" "--epochs 3" "--epochs 5"
options_differ "--seed and --lr" "different options: --seed (process 1 against process 0), --lr (process 1" \
  "--epochs 3" "--epochs 3 --lr 0.02 --seed 9"
options_differ "--comm" "different options: --comm (process 1 against process 0)" "--epochs 3" "--epochs 3 --comm p2p"
options_differ "--normalize-features" "different options: --normalize-features (process 1" "--epochs 3" \
  "--epochs 3 --normalize-features"
expect_job_error "--store device" "--store: device (the in-memory mode) is one GPU's: not with several processes" \
  2 "$BIN/ht-train" -q $(files 2) "${common[@]}" --store device

# Only process 0 writes: the job's outputs exist once, complete.
launch 2 "$BIN/ht-train" -q $(files 2) "${common[@]}" --save-model model.htm --predict-out pred.csv \
  --metrics-out m.jsonl >job.txt 2>&1 || fail "outputs: job failed"
[[ -s model.htm && -s pred.csv ]] || fail "outputs: model or predictions missing"
[[ $(grep -c '"summary"' m.jsonl 2>/dev/null || grep -c '"processes"' m.jsonl) -eq 1 ]] ||
  fail "outputs: the metrics summary is not written once"
[[ $(wc -l <pred.csv) -eq 3001 ]] || fail "outputs: predictions have $(wc -l <pred.csv) lines, not 3001"
ls *.tmp* 2>/dev/null && fail "outputs: temporary files left"
echo "ok: process 0 writes the outputs"

# SIGTERM to every process of the job (what Slurm's --signal and scancel
# --signal=TERM do): the job stops after one epoch, process 0 writes the
# checkpoint, and the job exits 143 with the one line. SIGTERM to mpirun
# itself is Open MPI's to handle: mpirun sends its processes SIGTERM and,
# a second later, SIGKILL (odls_base_sigkill_timeout) and exits 1 whatever
# they return (USAGE §8); checked here only to end the job.
# job_pids: this job's ht-train processes (the absolute path tells them apart).
job_pids() {
  local pid
  for pid in $(pgrep -f -- "--graph $WORK/g.htg"); do
    [[ "$(cat /proc/$pid/comm 2>/dev/null)" == ht-train ]] && echo $pid
  done
}
# endless_run OUT SIGNAL TARGET [ARGS...]: starts an endless 2-process job
# (ARGS added, output in OUT), sends SIGNAL to TARGET once it trains
# (processes: both; one: the second; mpirun) and waits up to 30 s for the
# job to end; sets rc; returns 1 (said) when it did not end.
endless_run() {
  local out=$1 signal=$2 target=$3
  shift 3
  "$MPIEXEC" --oversubscribe -np 2 "$BIN/ht-train" -q --graph "$WORK/g.htg" --partition "$WORK/p2.htp" \
    --plan "$WORK/p2.htplan" --backend cpu "${gcn[@]}" --epochs 1000000 --eval-every 1000 "$@" >"$out" 2>&1 &
  local mpirun_pid=$! pids="" _
  for _ in $(seq 1 100); do
    pids=$(job_pids)
    [[ $(echo $pids | wc -w) -eq 2 ]] && break
    sleep 0.1
  done
  if [[ $(echo $pids | wc -w) -ne 2 ]]; then
    fail "SIG$signal to the $target: the job's processes did not start"
    kill -9 $mpirun_pid $pids 2>/dev/null
    wait $mpirun_pid
    return 1
  fi
  sleep 2  # past the setup: training
  case $target in
    processes) kill -$signal $pids ;;
    one) kill -$signal $(echo $pids | cut -d' ' -f2) ;;
    mpirun) kill -$signal $mpirun_pid ;;
  esac
  for _ in $(seq 1 300); do
    kill -0 $mpirun_pid 2>/dev/null || break
    sleep 0.1
  done
  local ended=0
  if kill -0 $mpirun_pid 2>/dev/null; then
    fail "SIG$signal to the $target: the job still runs 30 s later"
    kill -9 $mpirun_pid 2>/dev/null
    ended=1
  fi
  wait $mpirun_pid
  rc=$?
  kill -9 $(job_pids) 2>/dev/null  # (a stopped process, should the launcher have left it)
  return $ended
}
# A process killed mid-run ends the job (no process waits forever).
if endless_run kill.txt KILL one; then
  [[ $rc -ne 0 ]] && echo "ok: killing one process ended the job (exit $rc)" || fail "kill: job exit code 0"
fi

signal_run() {  # signal_run TARGET: SIGTERM to TARGET (processes | mpirun) of a job with a checkpoint; sets rc
  rm -f stop.htckpt
  endless_run stop.txt TERM "$1" --checkpoint stop.htckpt --checkpoint-every 1000000
}
signal_run processes
stop_line="^ht-train: stopped by SIGTERM after epoch [0-9]* of 1000000: checkpoint written to stop.htckpt"
if [[ $rc -ne 143 ]]; then
  fail "SIGTERM to the job's processes: exit $rc, not 143"
  cat stop.txt
elif ! grep -q "$stop_line" stop.txt || [[ ! -s stop.htckpt ]]; then
  fail "SIGTERM to the job's processes: no stop line or no checkpoint:"
  cat stop.txt
elif [[ $(grep -c "$stop_line" stop.txt) -ne 1 ]]; then
  fail "SIGTERM to the job's processes: the stop line $(grep -c "$stop_line" stop.txt) times, not once (process 0 says it)"
  cat stop.txt
else
  echo "ok: SIGTERM to the job's processes -> exit 143, $(grep -m1 "$stop_line" stop.txt | cut -c1-60)..."
fi
signal_run mpirun
[[ $rc -ne 0 ]] && echo "ok: SIGTERM to mpirun ended the job (Open MPI's exit $rc)" ||
  fail "SIGTERM to mpirun: exit 0"

# A stopped process (SIGSTOP: a frozen node, a debugger) leaves the others
# waiting in their next exchange: after --peer-timeout seconds the waiting
# process ends itself with one line, and the launcher the job.
if endless_run frozen.txt STOP one --peer-timeout 2; then
  if [[ $rc -eq 0 ]]; then
    fail "a stopped process: the job's exit code is 0"
  elif ! grep -q "no answer from the other processes for [0-9]* s in .*--peer-timeout" frozen.txt; then
    fail "a stopped process: no peer-timeout line:"
    cat frozen.txt
  else
    echo "ok: a stopped process ends the job after --peer-timeout (exit $rc)"
  fi
fi

finish "ht-train under MPI: ok"
