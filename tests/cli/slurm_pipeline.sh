#!/usr/bin/env bash
# The batch-job scripts (scripts/slurm/) on a real Slurm: starts a throwaway
# single-node cluster (munged + slurmctld + slurmd, tests/slurm/cluster.sh;
# installs Debian's slurm-wlm and munge first when they are missing) and
# checks, with the CPU backend on a generated community graph:
#   1. pipeline.sbatch runs convert -> partition -> reorganize -> train as one
#      job: COMPLETED, outputs and logs in runs/<job name>-<job id>/, test
#      accuracy at the best validation epoch well above chance;
#   2. a second identical submission reuses the three preprocessing outputs
#      (stamps match, files untouched) and trains again;
#   3. submit_chain.sh with another chunk count: four jobs linked by afterok,
#      all COMPLETED, the graph reused, partition and plan recomputed;
#   4. a failing step (HT_PARTS=0: ht-partition rejects --parts 0) fails the
#      single job with the tool's exit code and no metrics;
#   5. the same in a chain: partition FAILED, reorganize and train CANCELLED.
# Every daemon it starts is stopped by pid on exit, whatever happens.
#
#   bash tests/cli/slurm_pipeline.sh BIN_DIR SOURCE_DIR     (exit 77 = skipped)
set -uo pipefail
BIN=$(cd "$1" 2>/dev/null && pwd) || BIN=$1
SRC=$(cd "$2" && pwd)
# Whole-test budget (after installing Slurm), so that a stuck job fails the
# test here, with logs and cleanup, before any CTest timeout kills it.
BUDGET_S=${HT_SLURM_TEST_BUDGET:-600}

# shellcheck source=../slurm/cluster.sh
source "$SRC/tests/slurm/cluster.sh"
slurm_test_start "$0" "$BIN" "$SRC" ht-slurm-test 15

CLASSES=6
cat >"$T/job.conf" <<EOF
# Test configuration (see scripts/slurm/example.conf).
HT_BIN=$BIN
HT_RUNS_DIR=$T/runs
HT_NAME=community
HT_CONVERT_ARGS=--generate community --vertices 3000 --classes $CLASSES --feature-dim 32 --seed 7
HT_CHUNKS=2
HT_CPU_DEVICES=2
HT_EPOCHS=60
HT_TRAIN_ARGS=--lr 0.02 --eval-every 2
EOF
# The jobs must find the checkout by themselves (scontrol's Command=).
unset HT_ROOT HT_CHUNKS HT_PARTS HT_RUN_DIR HT_RUNS_DIR HT_DATA_DIR
export OMP_NUM_THREADS=1
cd "$T" || fail "cd $T"
DATA=$T/runs/data
GRAPH=$DATA/community.htg
PART2=$DATA/community.m2-n2-metis.htp
PLAN2=$DATA/community.m2-n2-metis.htplan

expect_state() {  # expect_state ID "STATE CODE" WHAT
  local got left=$((BUDGET_S - (SECONDS - START)))
  [ "$left" -gt 0 ] || fail "$3: out of time (${BUDGET_S} s, HT_SLURM_TEST_BUDGET) before job $1 ended"
  got=$(slurm_job_wait "$1" "$left")
  [ "$got" = "$2" ] || fail "$3: job $1 ended '$got', expected '$2'"
}

# Accuracy at the best validation epoch, from the summary line.
check_accuracy() {
  local metrics=$1 acc
  [ -f "$metrics" ] || fail "no $metrics"
  acc=$(grep '"type":"summary"' "$metrics" | sed -n 's/.*"test_acc_at_best_val":\([0-9.eE+-]*\).*/\1/p')
  [ -n "$acc" ] || fail "$metrics has no summary line with test_acc_at_best_val"
  # Chance is 1/CLASSES; the generated classes are well separated.
  awk -v a="$acc" -v c="$CLASSES" 'BEGIN { exit !(a >= 0.6 && a > 3.0 / c) }' ||
    fail "$metrics: test accuracy at best validation $acc is not well above chance (1/$CLASSES)"
  echo "$acc"
}

mtimes() { stat -c '%n %.9Y' "$@"; }

# 1. One job for the whole pipeline.
id1=$(sbatch --parsable -J e2e "$SRC/scripts/slurm/pipeline.sbatch" job.conf) || fail "sbatch pipeline.sbatch"
expect_state "$id1" "COMPLETED 0:0" "pipeline.sbatch"
run1=$T/runs/e2e-$id1
for f in metrics.jsonl model.htmodel predictions.csv partition.stats.json reorganize.stats.json run.env \
         logs/pipeline.log logs/convert.log logs/partition.log logs/reorganize.log logs/train.log; do
  [ -s "$run1/$f" ] || fail "pipeline.sbatch: missing or empty $run1/$f"
done
[ -s "$T/e2e-$id1.out" ] || fail "no Slurm output e2e-$id1.out in the submit folder"
for s in convert partition reorganize; do
  grep -q "$s: running" "$run1/logs/pipeline.log" || fail "first run: $s did not run"
done
[ "$(wc -l <"$run1/predictions.csv")" -eq 3001 ] || fail "predictions.csv: expected a header and 3000 rows"
grep -q '^BACKEND=cpu$' "$run1/run.env" || fail "run.env: expected the cpu backend (no GPU here)"
grep -q '"gpus":2' "$run1/metrics.jsonl" || fail "metrics: expected 2 emulated devices"
acc1=$(check_accuracy "$run1/metrics.jsonl") || exit 1
if "${HT_PYTHON:-/usr/bin/python3}" -c 'import matplotlib' 2>/dev/null; then
  n_png=$(find "$run1/plots" -name '*.png' -size +5k 2>/dev/null | wc -l)
  [ "$n_png" -eq 3 ] || fail "plots: $n_png of 3 made in $run1/plots (matplotlib is installed)"
else
  echo "note: no matplotlib for ${HT_PYTHON:-/usr/bin/python3}: plots not checked"
fi
pass "pipeline.sbatch job $id1: COMPLETED, test accuracy at best val $acc1 ($(elapsed))"

# 2. Same submission again: preprocessing reused, untouched.
before=$(mtimes "$GRAPH" "$PART2" "$PLAN2" "$GRAPH.stamp" "$PART2.stamp" "$PLAN2.stamp")
id2=$(sbatch --parsable -J e2e "$SRC/scripts/slurm/pipeline.sbatch" job.conf) || fail "second sbatch"
expect_state "$id2" "COMPLETED 0:0" "second pipeline.sbatch"
run2=$T/runs/e2e-$id2
for s in convert partition reorganize; do
  grep -q "$s: reused" "$run2/logs/pipeline.log" || fail "second run: $s was not reused"
done
[ "$(mtimes "$GRAPH" "$PART2" "$PLAN2" "$GRAPH.stamp" "$PART2.stamp" "$PLAN2.stamp")" = "$before" ] ||
  fail "second run: preprocessing outputs were rewritten"
check_accuracy "$run2/metrics.jsonl" >/dev/null || exit 1
pass "second job $id2 reused graph, partition and plan ($(elapsed))"

# 3. Four dependent jobs with another chunk count (environment beats config).
graph_before=$(mtimes "$GRAPH")
ids=$(HT_CHUNKS=3 bash "$SRC/scripts/slurm/submit_chain.sh" -c job.conf -J chain --parsable) ||
  fail "submit_chain.sh"
IFS=: read -r c1 c2 c3 c4 <<<"$ids"
[ -n "$c4" ] || fail "submit_chain.sh --parsable printed '$ids', expected four job ids"
for j in "$c1" "$c2" "$c3" "$c4"; do expect_state "$j" "COMPLETED 0:0" "chain"; done
runc=$T/runs/chain-$c1
grep -q "convert: reused" "$runc/logs/pipeline.log" || fail "chain: the graph was not reused"
grep -q "partition: running" "$runc/logs/pipeline.log" || fail "chain: the partition for n = 3 was not made"
[ -f "$DATA/community.m2-n3-metis.htplan" ] || fail "chain: no plan for n = 3"
[ "$(mtimes "$GRAPH")" = "$graph_before" ] || fail "chain: the graph was rewritten"
grep -q '"chunks":3' "$runc/metrics.jsonl" || fail "chain: training did not use n = 3"
for s in convert partition reorganize train; do
  ls "$runc"/slurm-*-"$s".out >/dev/null 2>&1 || fail "chain: no Slurm output for the $s job in $runc"
done
accc=$(check_accuracy "$runc/metrics.jsonl") || exit 1
pass "chain $ids: all COMPLETED in order, graph reused, n = 3 partition made, accuracy $accc ($(elapsed))"

# 4. A failing step fails the single job with the tool's exit code (2: a
# usage error, here --parts 0).
idf=$(HT_PARTS=0 sbatch --parsable -J bad "$SRC/scripts/slurm/pipeline.sbatch" job.conf) || fail "sbatch (bad)"
expect_state "$idf" "FAILED 2:0" "pipeline.sbatch with HT_PARTS=0"
runf=$T/runs/bad-$idf
grep -q -- "--parts" "$runf/logs/partition.log" || fail "failed job: partition.log does not name --parts"
grep -q "partition: FAILED with exit code 2" "$runf/logs/pipeline.log" || fail "failed job: no failure line"
[ ! -e "$runf/metrics.jsonl" ] || fail "failed job: training ran after the failed step"
pass "HT_PARTS=0 job $idf: FAILED 2:0 at the partition step ($(elapsed))"

# 5. In a chain, the failure cancels the later jobs.
ids=$(HT_PARTS=0 bash "$SRC/scripts/slurm/submit_chain.sh" -c job.conf -J badchain --parsable) ||
  fail "submit_chain.sh (bad)"
IFS=: read -r f1 f2 f3 f4 <<<"$ids"
expect_state "$f1" "COMPLETED 0:0" "bad chain, convert"
expect_state "$f2" "FAILED 2:0" "bad chain, partition"
expect_state "$f3" "CANCELLED 0:0" "bad chain, reorganize"
expect_state "$f4" "CANCELLED 0:0" "bad chain, train"
pass "bad chain $ids: partition FAILED, reorganize and train CANCELLED ($(elapsed))"

echo "PASS: Slurm pipeline test in $(elapsed)"
