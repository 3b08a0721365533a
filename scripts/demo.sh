#!/usr/bin/env bash
# The end-to-end job of `make demo`: generate the default dataset (a community
# graph whose labels a GCN can learn), convert/inspect, partition, reorganize,
# train (on the GPU when one is present and the CUDA executor was built, else
# on the CPU reference executor with 2 emulated GPUs), print the accuracy and
# draw the training curves.
set -euo pipefail
BUILD_DIR=${1:-build}
BIN="$BUILD_DIR/bin"
OUT=${HT_DEMO_DIR:-$BUILD_DIR/demo}
mkdir -p "$OUT"

backend=cpu
gpus=2
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && "$BIN/ht-train" --version | grep -q "cuda"; then
  backend=cuda
  gpus=$(nvidia-smi -L | wc -l)
fi
echo "== demo: backend $backend, $gpus GPU(s) ($( [ $backend = cpu ] && echo emulated || echo real )), output in $OUT"

step() { echo; echo "== $*"; }

step "1/5 generate the default dataset (community graph, 50,000 vertices, 16 classes)"
"$BIN/ht-convert" --generate community --vertices 50000 --classes 16 --feature-dim 128 --avg-degree 12 \
  --homophily 0.7 --signal 0.6 --noise 1.0 --seed 7 -o "$OUT/community.htg"

step "2/5 inspect"
"$BIN/ht-convert" --inspect "$OUT/community.htg"

step "3/5 partition: m = $gpus, n = 4 chunks per GPU"
"$BIN/ht-partition" --graph "$OUT/community.htg" --parts "$gpus" --chunks 4 \
  --stats-json "$OUT/partition.json" -o "$OUT/community.htp"

step "4/5 reorganize and build the communication plan"
"$BIN/ht-reorganize" --graph "$OUT/community.htg" --partition "$OUT/community.htp" \
  --stats-json "$OUT/plan.json" -o "$OUT/community.htplan"

step "5/5 train GCN 128-64-16 for 100 epochs ($backend)"
"$BIN/ht-train" --graph "$OUT/community.htg" --partition "$OUT/community.htp" --plan "$OUT/community.htplan" \
  --backend "$backend" --model gcn --layers 128-64-16 --epochs 100 --eval-every 10 --dropout 0.5 --lr 0.01 \
  --weight-decay 5e-4 --metrics-out "$OUT/metrics.jsonl" --predict-out "$OUT/predictions.csv"

if [ -x scripts/demo_plots.sh ]; then
  step "plots"
  scripts/demo_plots.sh "$OUT" "$OUT/plots"
fi
echo
echo "== demo done: metrics $OUT/metrics.jsonl, predictions $OUT/predictions.csv"
