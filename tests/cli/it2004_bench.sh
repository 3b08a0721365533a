#!/usr/bin/env bash
# bench/it2004_like.sh end to end at a tiny size on the CPU backend (issue 20):
# generate (web), partition, reorganize, train run in sequence into the cache,
# steps.tsv records each step's wall time and peak RSS, the summary has the
# training numbers; a second run reuses every output; MAX_STEPS=1 stops after
# one step with exit code 3 and the next run finishes the sequence; a failing
# step is reported with its log and the steps after it are skipped.
# Usage: it2004_bench.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN_DIR="$(cd "$1" 2>/dev/null && pwd)"
SRC="$(cd "$2" && pwd)"
for tool in ht-convert ht-partition ht-reorganize ht-train; do
  if [[ ! -x "$BIN_DIR/$tool" ]]; then
    echo "skip: $BIN_DIR/$tool not built"
    exit 77
  fi
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export OMP_NUM_THREADS=2
# N 10 k, E = it-2004's degree (293 k links), F 16, C 8, GCN 16-16-16-8.
run() {
  env N=10000 F=16 C=8 HIDDEN=16 CHUNKS=4 BACKEND=cpu BIN="$BIN_DIR" LIB="$WORK/none" CACHE="$WORK/cache" \
    OUT="$WORK/out" "$@" bash "$SRC/bench/it2004_like.sh" > run.txt 2>&1
}

run
rc=$?
[[ $rc -eq 0 ]] || { fail "first run: exit code $rc"; cat run.txt; }
[[ $(grep -c -P '^(generate|partition|reorganize|train)\tran\t' out/steps.tsv) -eq 4 ]] ||
  { fail "steps.tsv does not list four steps that ran:"; cat out/steps.tsv; }
if [[ -x /usr/bin/time ]]; then
  awk -F'\t' 'NR > 1 && ($4 == "n/a" || $4 <= 0 || $3 !~ /^[0-9]+(\.[0-9]+)?$/) { exit 1 }' out/steps.tsv ||
    fail "steps.tsv lacks a wall time or peak RSS: $(cat out/steps.tsv)"
fi
grep -q -- "--generate web --vertices 10000 --edges 292682 --feature-dim 16 --classes 8" out/steps.tsv ||
  fail "generate step does not run the web generator at the asked size: $(grep generate out/steps.tsv)"
grep -q -- "--method auto" out/steps.tsv || fail "partition step does not use --method auto by default"
grep -q -- "--layers 16-16-16-8 --host-dtype bf16 --epochs 3" out/steps.tsv || fail "train step's model or dtype"
grep -q "train: 3 epochs, median epoch" out/summary.txt || { fail "summary lacks the training numbers"; cat out/summary.txt; }
grep -q "E = 292682" out/generate.log || fail "generated graph does not have the requested links"

run
rc=$?
[[ $rc -eq 0 ]] || fail "second run: exit code $rc"
[[ $(grep -c -P '\tcached\t' out/steps.tsv) -eq 4 ]] || { fail "second run remade outputs:"; cat out/steps.tsv; }

run CHUNKS=8 MAX_STEPS=1
rc=$?
[[ $rc -eq 3 ]] || fail "MAX_STEPS=1: exit code $rc, expected 3"
grep -q -P '^partition\tran\t' out/steps.tsv && grep -q -P '^reorganize\tleft\t' out/steps.tsv ||
  { fail "MAX_STEPS=1 did not stop after the partition step:"; cat out/steps.tsv; }
run CHUNKS=8
rc=$?
[[ $rc -eq 0 ]] && grep -q -P '^train\tran\t' out/steps.tsv || { fail "the next run did not finish"; cat run.txt; }

# A failing step: its log tail shown, the rest skipped, exit code 1.
run METHOD=no-such-method
rc=$?
[[ $rc -eq 1 ]] || fail "failing partition step: exit code $rc, expected 1"
grep -q "partition | .*no-such-method" run.txt || fail "failing step's log tail not shown: $(cat run.txt)"
grep -q -P '^partition\tfailed' out/steps.tsv && grep -q -P '^train\tskipped' out/steps.tsv ||
  { fail "steps.tsv does not record the failure and the skipped steps:"; cat out/steps.tsv; }

finish "it2004_like.sh: tiny run, cache reuse, MAX_STEPS and failures OK"
