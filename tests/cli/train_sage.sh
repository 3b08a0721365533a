#!/usr/bin/env bash
# ht-train --model sage (GraphSAGE, mean aggregator, root weight) at the shell:
# trains in memory and out of core (2 GPUs, 3 chunks) in every comm mode and
# with a bf16 store on the CPU backend, the losses of the comm modes equal;
# the saved model (W_root included) predicts as the run did; a checkpoint
# resumes; GCN's and GAT's options are refused with one line.
# Usage: train_sage.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-train
export OMP_NUM_THREADS=1

"$BIN/ht-convert" -q --generate community --vertices 400 --classes 3 --feature-dim 6 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }
T=("$BIN/ht-train" -q -g g.htg --model sage --backend cpu --epochs 3 --seed 2)

# The loss column of a metrics file, one line per epoch.
losses() { grep -o '"loss": *[-0-9.e]*' "$1" | cut -c1-16; }

"${T[@]}" --metrics-out one.jsonl >/dev/null 2>err.txt || { fail "sage in memory"; cat err.txt; }
for comm in baseline p2p full; do
  "${T[@]}" --gpus 2 --chunks 3 --comm "$comm" --metrics-out "$comm.jsonl" >/dev/null 2>err.txt ||
    { fail "sage --comm $comm"; cat err.txt; continue; }
  [[ -n "$(losses "$comm.jsonl")" ]] || fail "sage --comm $comm: no losses in the metrics"
done
[[ "$(losses p2p.jsonl)" == "$(losses full.jsonl)" ]] || fail "p2p and full losses differ"
[[ "$(losses baseline.jsonl)" == "$(losses full.jsonl)" ]] || fail "baseline and full losses differ"
"${T[@]}" --gpus 2 --chunks 3 --host-dtype bf16 >/dev/null 2>err.txt || { fail "sage bf16 store"; cat err.txt; }

# Save, load, predict; checkpoint and resume.
"${T[@]}" --save-model m.htm --predict-out a.txt >/dev/null 2>err.txt || { fail "sage save"; cat err.txt; }
"$BIN/ht-train" -q -g g.htg --model sage --backend cpu --load-model m.htm --predict-only --predict-out b.txt \
  >/dev/null 2>err.txt || { fail "sage predict-only"; cat err.txt; }
cmp -s a.txt b.txt || fail "predictions of the saved SAGE model differ from the run's"
"${T[@]}" --checkpoint c.ckpt >/dev/null 2>err.txt || { fail "sage checkpoint"; cat err.txt; }
"$BIN/ht-train" -q -g g.htg --model sage --backend cpu --epochs 4 --seed 2 --resume c.ckpt >/dev/null 2>err.txt ||
  { fail "sage resume"; cat err.txt; }

# Options of the other models: one error line each.
for opt in "--heads 2" "--out-heads 2" "--attn-dropout 0.1" "--gcn-order transform"; do
  # shellcheck disable=SC2086
  "${T[@]}" $opt >stdout.txt 2>stderr.txt
  check_one_error_line "sage $opt" "${opt%% *}: applies to --model" $?
done

finish "ok: ht-train --model sage"
