#!/usr/bin/env bash
# ht-train --gpu-cache on the CPU backend (which emulates a budget per GPU):
# a budget below the features' size holds the row tier of their hottest rows,
# one above holds every matrix whole; every run gives the
# same bits as --gpu-cache off (losses and accuracies), moves fewer bytes over
# the host link, and says what it holds (log, summary line, metrics JSON);
# with everything cached an fp32 store reads nothing over the link; bad
# values end with one error line.
# Usage: train_gpu_cache.sh BIN_DIR SOURCE_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train
export OMP_NUM_THREADS=1

# R-MAT (skewed degrees), 4096 vertices, features 32 x 4 B x 4096 = 512 KiB.
"$BIN/ht-convert" -q --generate rmat --scale 12 --edges 40000 --classes 5 --feature-dim 32 --seed 2 -o g.htg ||
  { echo "FAIL: generate"; exit 1; }
"$BIN/ht-partition" -q --graph g.htg --parts 2 --chunks 3 --method range -o p.htp >/dev/null &&
  "$BIN/ht-reorganize" -q --graph g.htg --partition p.htp -o p.htplan >/dev/null 2>&1 || { echo "FAIL: partition"; exit 1; }
run=(--graph g.htg --partition p.htp --plan p.htplan --backend cpu --gpus 2 --layers 32-48-5 --epochs 2
     --eval-every 1 --dropout 0.3 --comm full)
losses() { grep -o '"\(loss\|train_acc\|val_acc\|test_acc\)":[^,]*' "$1"; }
field() { grep '"type":"summary"' "$1" | grep -o "\"$2\":[^,}]*" | cut -d: -f2- | tr -d '"'; }

"$BIN/ht-train" "${run[@]}" --gpu-cache off --metrics-out off.jsonl >off.log 2>&1 || { fail "off: exit code"; cat off.log; }
# 0.0001 GiB = 105 KiB per GPU: less than a GPU's 256 KiB of features.
for budget in 0.0001 1; do
  "$BIN/ht-train" "${run[@]}" --gpu-cache $budget --metrics-out c$budget.jsonl >c$budget.log 2>&1 ||
    { fail "--gpu-cache $budget: exit code"; cat c$budget.log; continue; }
  diff <(losses off.jsonl) <(losses c$budget.jsonl) >/dev/null || fail "--gpu-cache $budget: losses differ from off"
  [[ -n $(losses off.jsonl) ]] || fail "no losses in the metrics"
  (( $(field c$budget.jsonl h2d_bytes) < $(field off.jsonl h2d_bytes) )) || fail "--gpu-cache $budget: h2d bytes not lower"
  (( $(field c$budget.jsonl cache_bytes) > 0 )) || fail "--gpu-cache $budget: cache_bytes 0"
  grep -q "^GPU cache (holds " c$budget.log || { fail "--gpu-cache $budget: no summary line"; cat c$budget.log; }
done
(( $(field c0.0001.jsonl gpu_cache_tier_rows) > 0 )) || fail "small budget: no tier rows in the summary"
grep -q "GPU cache tier: the [0-9]* rows of h^0 loaded most often" c0.0001.log || fail "small budget: no tier of h^0"
# What the budget holds whole first is what saves the most per byte (the narrow gradient matrices),
# the features' tier takes the rest.
grep -q '"gpu_cache_matrices":"[^"]*tier of h^0"' c0.0001.jsonl || fail "small budget: matrices field"
(( $(field c0.0001.jsonl d2h_bytes) <= $(field off.jsonl d2h_bytes) )) || fail "small budget: more d2h bytes"
(( $(field c0.0001.jsonl gpu_cache_saved_bytes_estimate) > 0 )) || fail "small budget: no saving estimated"
(( $(field c0.0001.jsonl gpu_cache_held_bytes) <= 104858 )) || fail "small budget: holds more than the budget"
grep -q '"gpu_cache_matrices":"h^0, ' c1.jsonl || fail "large budget: h^0 not whole"
(( $(field c1.jsonl h2d_bytes) == 0 )) || fail "large budget: an fp32 store still reads over the link"
(( $(field off.jsonl gpu_cache_held_bytes) == 0 )) || fail "off: holds something"
# Two emulated GPUs: the balance line and its fields (issue 32: the slowest GPU against the mean).
grep -q "^per-GPU compute busy: slowest [0-9.]* ms, mean [0-9.]* ms" off.log || fail "no per-GPU busy line"
awk -v a="$(field off.jsonl gpu_busy_max_ms_median)" -v b="$(field off.jsonl gpu_busy_mean_ms_median)" \
  'BEGIN { exit !(b > 0 && a >= b) }' || fail "gpu_busy fields: slowest below the mean, or none"

for bad in -1 0 abc; do
  "$BIN/ht-train" "${run[@]}" --gpu-cache "$bad" >/dev/null 2>stderr.txt
  check_one_error_line "--gpu-cache $bad" "gpu-cache" $?
done
finish "ok: row tier and whole matrices give the same bits with fewer host-link bytes"
