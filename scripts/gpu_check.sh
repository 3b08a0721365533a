#!/usr/bin/env bash
# GPU validation run for the lent GPU machines (see bench/RESULTS.md):
# the CUDA tests, Cora accuracy on the GPU vs the CPU executor, and the
# pipeline on a generated community graph with 1..m GPUs and every comm mode.
# Usage: scripts/gpu_check.sh BIN_DIR CORA_HTG OUT_DIR
set -uo pipefail
BIN=$1; CORA=$2; OUT=$3
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L | wc -l)
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv; nvidia-smi topo -m; } > "$OUT/gpus.txt" 2>&1
echo "== $NGPU GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"

echo "== CUDA tests"
"$BIN/test_cuda_executor" > "$OUT/test_cuda.log" 2>&1; echo "test_cuda_executor rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |OK \]|FAILED \]" "$OUT/test_cuda.log" | grep -v "^chunk" | sort | uniq -c | sort -rn | head -20

train() {  # name, extra args...
  local name=$1; shift
  "$BIN/ht-train" -q --metrics-out "$OUT/$name.jsonl" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  printf "%-28s rc=%d  %s | %s\n" "$name" $rc "$(grep -o 'test accuracy there [0-9.]*' "$OUT/$name.log")" \
    "$(grep -o 'median epoch [0-9.]* ms' "$OUT/$name.log")"
}
echo "== Cora: GPU vs CPU executor (same seed)"
GCN="--graph $CORA --layers 1433-16-7 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --decay-first-layer-only --normalize-features --epochs 200 --seed 1"
GAT="--graph $CORA --model gat --layers 1433-8-7 --heads 8 --out-heads 1 --dropout 0.6 --attn-dropout 0.6 --lr 0.005 --weight-decay 5e-4 --normalize-features --epochs 200 --seed 1"
for b in cpu cuda; do train "cora_gcn_${b}_m1" $GCN --backend $b; done
for b in cpu cuda; do train "cora_gat_${b}_m1" $GAT --backend $b; done
if [ "$NGPU" -ge 2 ]; then
  for b in cpu cuda; do train "cora_gcn_${b}_m${NGPU}_n2" $GCN --backend $b --gpus "$NGPU" --chunks 2; done
  for b in cpu cuda; do train "cora_gat_${b}_m${NGPU}_n2" $GAT --backend $b --gpus "$NGPU" --chunks 2; done
fi

echo "== community graph, 400k vertices: partition, reorganize, train on the GPU(s)"
G="$OUT/community.htg"
"$BIN/ht-convert" -q --generate community --vertices 400000 --classes 16 --feature-dim 256 --avg-degree 20 --seed 3 -o "$G"
for m in 1 $NGPU; do
  [ "$m" -gt "$NGPU" ] && continue
  "$BIN/ht-partition" -q -g "$G" --parts "$m" --chunks 4 -o "$OUT/c_m$m.htp" > "$OUT/part_m$m.log" 2>&1
  "$BIN/ht-reorganize" -q -g "$G" -p "$OUT/c_m$m.htp" --stats-json "$OUT/plan_m$m.json" -o "$OUT/c_m$m.htplan" > "$OUT/reorg_m$m.log" 2>&1
  for comm in baseline p2p full; do
    [ "$m" -eq 1 ] && [ "$comm" != full ] && continue
    train "community_gcn_m${m}_n4_${comm}" --graph "$G" -p "$OUT/c_m$m.htp" --plan "$OUT/c_m$m.htplan" --backend cuda \
      --layers 256-128-16 --epochs 13 --warmup 3 --comm $comm
  done
  train "community_gat_m${m}_n4_full" --graph "$G" -p "$OUT/c_m$m.htp" --plan "$OUT/c_m$m.htplan" --backend cuda \
    --model gat --layers 256-32-16 --heads 4 --epochs 13 --warmup 3
done
echo "== memory cap error"
"$BIN/ht-train" -q --graph "$G" --backend cuda --chunks 1 --gpu-mem 0.05 --epochs 1 2>&1 | tail -1
