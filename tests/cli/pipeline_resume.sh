#!/usr/bin/env bash
# The batch pipeline (scripts/slurm/ht_pipeline.sh, here outside Slurm) under
# a stop signal: SIGTERM to the pipeline's shell (what `#SBATCH
# --signal=B:TERM@120` sends before a time limit) is forwarded to ht-train,
# which writes its checkpoint in the run directory and exits 143; run again
# with the same run directory (what a requeued job does), the train step
# resumes from the checkpoint and completes with every epoch in its metrics.
# Usage: pipeline_resume.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN="$(cd "$1" 2>/dev/null && pwd)"
SRC="$(cd "$2" && pwd)"
[[ -x "$BIN/ht-train" ]] || { echo "skip: $BIN/ht-train not built"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export OMP_NUM_THREADS=1 HT_BIN="$BIN" HT_ROOT="$SRC" HT_RUNS_DIR="$WORK/runs" HT_RUN_DIR="$WORK/runs/r1"
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES SLURM_GPUS_ON_NODE
cat >job.conf <<'CONF'
HT_NAME=sbm
HT_CONVERT_ARGS=--generate community --vertices 400 --classes 3 --feature-dim 6 --seed 2
HT_CHUNKS=2
HT_CPU_DEVICES=2
HT_EPOCHS=400000
HT_CHECKPOINT_EVERY=2
HT_TRAIN_ARGS=--dropout 0.5 --eval-every 50
HT_PLOTS=0
CONF
bash "$SRC/scripts/slurm/ht_pipeline.sh" -c job.conf all >run1.txt 2>&1 &
pid=$!
ck=$HT_RUN_DIR/train.htckpt
for _ in $(seq 600); do [[ -e "$ck" ]] && break; sleep 0.1; done
[[ -e "$ck" ]] || { fail "no checkpoint after 60 s"; cat run1.txt; }
sleep 0.3
kill -TERM $pid
wait $pid
rc=$?
[[ $rc -eq 143 ]] || { fail "pipeline exit code $rc, expected 143"; tail -5 run1.txt; }
grep -q "stopped by SIGTERM after epoch [0-9]* of 400000: checkpoint written to $ck" "$HT_RUN_DIR/logs/train.log" ||
  { fail "train.log lacks the stop line"; tail -3 "$HT_RUN_DIR/logs/train.log"; }
grep -q "train: stopped by a signal (exit 143)" "$HT_RUN_DIR/logs/pipeline.log" || fail "pipeline.log lacks the stop"
[[ -e "$HT_RUN_DIR/metrics.jsonl" ]] && fail "the stopped run wrote its metrics"
K=$(sed -n 's/.*after epoch \([0-9]*\) of.*/\1/p' "$HT_RUN_DIR/logs/train.log" | tail -n 1)
N=$((K + 3))
HT_EPOCHS=$N bash "$SRC/scripts/slurm/ht_pipeline.sh" -c job.conf all >run2.txt 2>&1 ||
  { fail "the rerun failed"; tail -5 run2.txt; }
grep -q "train: resuming from $ck" "$HT_RUN_DIR/logs/pipeline.log" || fail "the rerun did not resume"
n=$(grep -c '"type":"epoch"' "$HT_RUN_DIR/metrics.jsonl")
[[ $n -eq $N ]] || fail "metrics after resume: $n epochs, expected $N"
finish "pipeline resume: stopped after epoch $K, resumed and completed $N epochs"
