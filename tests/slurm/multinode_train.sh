#!/usr/bin/env bash
# Multi-process training through Slurm (scripts/slurm/train_multinode.sbatch)
# on the throwaway single-node cluster of tests/slurm/cluster.sh (installs
# Debian's slurm-wlm and munge first when they are missing). The CPU backend
# runs on a generated community graph, prepared beforehand by ht_pipeline.sh
# (convert, partition, reorganize) with m = 2 and m = 4. The checks:
#   1. 2 tasks x 1 device (m = 2): COMPLETED, outputs (metrics, model,
#      predictions, checkpoint) in runs/<job name>-<job id>/, written once (the
#      summary appears once in the log), and bit for bit those of the
#      one-process run with --gpus 2 (every epoch's loss and accuracies, the
#      summary, the model file, the predictions);
#   2. 2 tasks x 2 emulated devices (m = 4): the same, against --gpus 4;
#   3. a partition whose m is not tasks x devices: the script refuses it before
#      srun (FAILED 1:0), naming both counts, and nothing is trained;
#   4. HT_COMM=baseline with two processes: refused before srun;
#   5. an error in ht-train (an output folder that does not exist, which rank 0
#      refuses): the whole job ends promptly, FAILED with a non-zero code, and
#      the log holds the rank's one-line error;
#   6. SIGTERM to the training step (the time-limit warning): the processes
#      stop after an epoch, the checkpoint is written, the job ends 143.
# Every daemon it starts is stopped by pid on exit, whatever happens.
#
#   bash tests/slurm/multinode_train.sh BIN_DIR SOURCE_DIR     (exit 77 = skipped)
#
# Needs ht-train with multi-process support (issue 16) and an srun that can
# start Open MPI processes (pmix or pmi2: checked, skipped without).
set -uo pipefail
BIN=$(cd "$1" 2>/dev/null && pwd) || BIN=$1
SRC=$(cd "$2" && pwd)
# Whole-test budget (after installing Slurm), so that a stuck job fails the
# test here, with logs and cleanup, before any CTest timeout kills it.
BUDGET_S=${HT_SLURM_TEST_BUDGET:-600}

# shellcheck source=SCRIPTDIR/cluster.sh
source "$SRC/tests/slurm/cluster.sh"
slurm_test_start "$0" "$BIN" "$SRC" ht-slurm-mp-test 20
mpi_list=$(srun --mpi=list 2>&1)
grep -qw -e pmix -e pmi2 <<<"$mpi_list" ||
  skip "this Slurm offers no pmix or pmi2 plugin (srun --mpi=list: $(tr '\n' ' ' <<<"$mpi_list")): srun cannot start MPI processes"

EPOCHS=30
TRAIN_ARGS="--lr 0.02 --eval-every 5"
cat >"$T/job.conf" <<EOF
# Test configuration (see scripts/slurm/example.conf and train_multinode.sbatch --help).
HT_BIN=$BIN
HT_RUNS_DIR=$T/runs
HT_NAME=community
HT_CONVERT_ARGS=--generate community --vertices 2000 --classes 6 --feature-dim 16 --seed 7
HT_CHUNKS=2
HT_METHOD=metis
HT_BACKEND=cpu
HT_EPOCHS=$EPOCHS
HT_TRAIN_ARGS=$TRAIN_ARGS
HT_PLOTS=0
EOF
# The job must find the checkout by itself (scontrol's Command=).
unset HT_ROOT HT_CHUNKS HT_PARTS HT_RUN_DIR HT_RUNS_DIR HT_DATA_DIR HT_GPUS_PER_TASK HT_COMM HT_TRAIN_ARGS
export OMP_NUM_THREADS=1
cd "$T" || fail "cd $T"
DATA=$T/runs/data
GRAPH=$DATA/community.htg

# The prepared files, made by the pipeline's steps outside Slurm.
for m in 2 4; do
  HT_PARTS=$m HT_RUN_DIR=$T/prep$m bash "$SRC/scripts/slurm/ht_pipeline.sh" -c job.conf convert partition reorganize \
    >"$T/prep$m.log" 2>&1 || { cat "$T/prep$m.log" >&2; fail "preparing the m = $m files (ht_pipeline.sh)"; }
  [ -f "$DATA/community.m$m-n2-metis.htplan" ] || fail "no plan for m = $m"
done
pass "graph, partitions and plans for m = 2 and 4 prepared ($(elapsed))"

# The one-process runs the jobs must equal: the options train_multinode.sbatch passes.
reference() {  # reference M
  local m=$1 dir=$T/ref$1 args
  read -ra args <<<"$TRAIN_ARGS"
  mkdir -p "$dir"
  "$BIN/ht-train" --graph "$GRAPH" --partition "$DATA/community.m$m-n2-metis.htp" \
    --plan "$DATA/community.m$m-n2-metis.htplan" --model gcn --epochs "$EPOCHS" --backend cpu --gpus "$m" \
    --comm full "${args[@]}" --metrics-out "$dir/metrics.jsonl" --save-model "$dir/model.htmodel" \
    --predict-out "$dir/predictions.csv" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; fail "one-process reference run, --gpus $m"; }
}
reference 2
reference 4
pass "one-process reference runs with 2 and 4 devices ($(elapsed))"

expect_state() {  # expect_state ID "STATE CODE" WHAT   (CODE may be a regex)
  local got left=$((BUDGET_S - (SECONDS - START)))
  [ "$left" -gt 0 ] || fail "$3: out of time (${BUDGET_S} s, HT_SLURM_TEST_BUDGET) before job $1 ended"
  got=$(slurm_job_wait "$1" "$left")
  [[ "$got" =~ ^$2$ ]] || fail "$3: job $1 ended '$got', expected '$2'"
}

# What must be the same bits: every epoch's loss and accuracies, the summary's
# results, the model and the predictions.
results() {
  grep -o '"\(type\|epoch\|loss\|train_acc\|val_acc\|test_acc\|best_epoch\|best_val_acc\|test_acc_at_best_val\|final_loss\|final_test_acc\)":[^,}]*' "$1"
}
same_as_reference() {  # same_as_reference RUN_DIR M WHAT
  local run=$1 ref=$T/ref$2 f
  for f in metrics.jsonl model.htmodel predictions.csv train.htckpt run.env logs/train.log logs/pipeline.log; do
    [ -s "$run/$f" ] || fail "$3: missing or empty $run/$f"
  done
  diff <(results "$ref/metrics.jsonl") <(results "$run/metrics.jsonl") >"$T/diff.txt" ||
    { head -n 20 "$T/diff.txt" >&2; fail "$3: losses or accuracies differ from the one-process run with --gpus $2"; }
  [ "$(grep -c '"type":"epoch"' "$run/metrics.jsonl")" -eq "$EPOCHS" ] || fail "$3: metrics.jsonl does not hold $EPOCHS epochs"
  cmp -s "$ref/model.htmodel" "$run/model.htmodel" || fail "$3: model.htmodel differs from the one-process run's"
  cmp -s "$ref/predictions.csv" "$run/predictions.csv" || fail "$3: predictions.csv differs from the one-process run's"
}
written_once() {  # written_once RUN_DIR SLURM_OUT WHAT: rank 0 alone reports and writes
  local n
  n=$(grep -c "best validation accuracy" "$2")
  [ "$n" -eq 1 ] || fail "$3: the summary appears $n times in $2 (expected once: rank 0 writes it)"
  n=$(find "$1" -name '*.tmp*' | wc -l)
  [ "$n" -eq 0 ] || fail "$3: $n temporary file(s) left in $1"
}

# 1. Two processes of one device each: m = 2.
id1=$(HT_PARTS=2 HT_GPUS_PER_TASK=1 sbatch --parsable -J mp2 --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
  "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (2 x 1)"
expect_state "$id1" "COMPLETED 0:0" "2 tasks x 1 device"
run1=$T/runs/mp2-$id1
same_as_reference "$run1" 2 "2 tasks x 1 device"
written_once "$run1" "$T/mp2-$id1.out" "2 tasks x 1 device"
if ! grep -q '^TASKS=2$' "$run1/run.env" || ! grep -q '^M=2$' "$run1/run.env"; then
  fail "run.env: expected TASKS=2 and M=2"
fi
grep -q -- "--gpus 1 " "$run1/logs/pipeline.log" || fail "2 x 1: ht-train was not started with --gpus 1"
pass "2 tasks x 1 device, job $id1: COMPLETED, results identical to one process with 2 devices ($(elapsed))"

# 2. Two processes of two emulated devices each: m = 4.
id2=$(HT_PARTS=4 HT_GPUS_PER_TASK=2 sbatch --parsable -J mp4 --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
  "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (2 x 2)"
expect_state "$id2" "COMPLETED 0:0" "2 tasks x 2 devices"
run2=$T/runs/mp4-$id2
same_as_reference "$run2" 4 "2 tasks x 2 devices"
written_once "$run2" "$T/mp4-$id2.out" "2 tasks x 2 devices"
pass "2 tasks x 2 devices, job $id2: COMPLETED, results identical to one process with 4 devices ($(elapsed))"

# 3. m = 2 files for 2 tasks x 2 devices: refused before srun.
id3=$(HT_PARTS=2 HT_GPUS_PER_TASK=2 sbatch --parsable -J mismatch --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
  "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (mismatch)"
expect_state "$id3" "FAILED 1:0" "m = 2 for 2 x 2"
grep -q "has m = 2 partitions but the job runs 2 process(es) x 2 GPU(s) = 4" "$T/mismatch-$id3.out" ||
  fail "mismatch: the error does not name both counts: $(grep error "$T/mismatch-$id3.out")"
! grep -q "train: srun" "$T/runs/mismatch-$id3/logs/pipeline.log" 2>/dev/null || fail "mismatch: training was started"
[ ! -e "$T/runs/mismatch-$id3/metrics.jsonl" ] || fail "mismatch: metrics were written"
pass "m = 2 for 2 x 2 devices, job $id3: refused before srun ($(elapsed))"

# 4. --comm baseline with two processes: refused before srun.
id4=$(HT_PARTS=2 HT_GPUS_PER_TASK=1 HT_COMM=baseline sbatch --parsable -J baseline --nodes=1 --ntasks-per-node=2 \
  --cpus-per-task=1 "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (baseline)"
expect_state "$id4" "FAILED 1:0" "HT_COMM=baseline"
grep -q "HT_COMM=baseline: with several processes only p2p and full" "$T/baseline-$id4.out" ||
  fail "baseline: no error line naming the comm mode"
pass "HT_COMM=baseline with 2 processes, job $id4: refused ($(elapsed))"

# 5. ht-train fails (every rank refuses an output in a folder that does not
# exist): the whole job ends at once, FAILED, with the error line.
t5=$SECONDS
id5=$(HT_PARTS=2 HT_GPUS_PER_TASK=1 HT_TRAIN_ARGS="$TRAIN_ARGS --logits-out $T/no-such-dir/logits.npy" \
  sbatch --parsable -J rankerr --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --time=5 \
  "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (rank error)"
expect_state "$id5" "FAILED [1-9][0-9]*:0" "an error in ht-train"
[ $((SECONDS - t5)) -lt 240 ] || fail "rank error: the job took $((SECONDS - t5)) s to end (a rank waited for the failed one?)"
grep -q "ht-train: error (process [0-9]* of 2): .*no-such-dir" "$T/runs/rankerr-$id5/logs/train.log" ||
  fail "rank error: no one-line ht-train error naming the folder in logs/train.log"
grep -q "train: FAILED with exit code" "$T/runs/rankerr-$id5/logs/pipeline.log" || fail "rank error: no failure line"
[ ! -e "$T/runs/rankerr-$id5/metrics.jsonl" ] || fail "rank error: metrics were written"
pass "an error in ht-train, job $id5: the job ended FAILED in $((SECONDS - t5)) s with the error line ($(elapsed))"

# 6. SIGTERM to the training step (what --signal=TERM@120 sends before the
# time limit): every process stops after the same epoch, the checkpoint is
# written, the job ends 143 (HT_REQUEUE=0: no requeue here).
id6=$(HT_PARTS=2 HT_GPUS_PER_TASK=1 HT_EPOCHS=1000000 HT_REQUEUE=0 sbatch --parsable -J stop --nodes=1 \
  --ntasks-per-node=2 --cpus-per-task=1 --time=3 "$SRC/scripts/slurm/train_multinode.sbatch" job.conf) || fail "sbatch (stop)"
run6=$T/runs/stop-$id6
for _ in $(seq 1 240); do
  grep -q '^epoch' "$run6/logs/train.log" 2>/dev/null && break
  sleep 0.5
done
grep -q '^epoch' "$run6/logs/train.log" 2>/dev/null || fail "stop: training did not start within 120 s"
sleep 2
scancel --signal=TERM "$id6" || fail "scancel --signal=TERM $id6"
expect_state "$id6" "FAILED 143:0" "SIGTERM to the training step"
grep -q "stopped by SIGTERM after epoch .*checkpoint written" "$run6/logs/train.log" ||
  fail "stop: no 'stopped by SIGTERM … checkpoint written' line in logs/train.log"
[ -s "$run6/train.htckpt" ] || fail "stop: no checkpoint"
[ ! -e "$run6/metrics.jsonl" ] || fail "stop: metrics were written by a stopped run"
grep -q "train: stopped by a signal (exit 143)" "$run6/logs/pipeline.log" || fail "stop: the script did not see a stop"
pass "SIGTERM to the training step, job $id6: stopped with a checkpoint ($(elapsed))"

echo "PASS: Slurm multi-process training test in $(elapsed)"
