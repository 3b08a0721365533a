#!/usr/bin/env bash
# The sparse products' backends side by side (ht-train --spmm own vs cusparse), in one call: for each
# graph, one GPU, n = N chunks, store on host, GCN 100-256-256-47 (both layer orders as --gcn-order
# auto picks them) and GAT 100-64-64-47 (4 heads, 1 averaged head out) trained EPOCHS epochs with each
# backend; prints each run's median epoch, the ratio cusparse / own, and the largest relative
# difference of the per-epoch losses (float rounding: expected below 1e-5).
# Usage: OUT=DIR [EPOCHS=6] [N=4] [MODELS="gcn gat"] [BIN=DIR] [LIB=DIR] bench/spmm_backends.sh ["GRAPHS"]
#   GRAPHS (default "products community rmat"): products (uniform random, N 2.45 M, E 123.7 M, range
#   partitions), community (the stochastic-block-model graph of bench/run.sh, METIS), rmat (R-MAT scale
#   21, E 120 M, range: hub rows); bench/bench_graphs.sh makes them.
# Binaries and libraries from .carry/bin and .carry/lib (the device machine's layout; BIN, LIB
# override); graphs, partitions and plans cached in /tmp/cache (shared with bench/gpu_cache.sh).
# Writes $OUT/spmm_backends.md (the table) and $OUT/spmm_runs.tar.gz (logs and metrics): 2 files.
set -u
export LD_LIBRARY_PATH=${LIB:-$PWD/.carry/lib}
B=${BIN:-$PWD/.carry/bin}; C=${CACHE_DIR:-/tmp/cache}; mkdir -p "$C" "$OUT"
R=$(mktemp -d); n=${N:-4}
source "$(dirname "${BASH_SOURCE[0]}")/bench_graphs.sh"
table=$OUT/spmm_backends.md
echo "| graph | model | own: median epoch ms | cusparse: median epoch ms | cusparse / own | max rel. loss diff |" > "$table"
echo "|---|---|---|---|---|---|" >> "$table"
for graph in ${1:-products community rmat}; do
  OUT=$R bench_graph "$graph" || continue
  plan=$C/$P$n
  if [[ ! -f $plan.htplan ]]; then
    $B/ht-partition -g "$G" -m 1 -n "$n" --method $method -o "$plan.htp" > "$R/part_$graph.log" 2>&1 &&
      $B/ht-reorganize -g "$G" -p "$plan.htp" -o "$plan.htplan" > "$R/reorg_$graph.log" 2>&1 || { echo "plan $graph n=$n failed"; continue; }
  fi
  for model in ${MODELS:-gcn gat}; do
    args=(--model gcn --layers 100-256-256-47)
    [[ $model == gat ]] && args=(--model gat --layers 100-64-64-47 --heads 4 --out-heads 1)
    declare -A ms=()
    for backend in own cusparse; do
      tag=${graph}_${model}_$backend
      timeout ${TLIM:-300} $B/ht-train --graph "$G" --partition "$plan.htp" --plan "$plan.htplan" --backend cuda --gpus 1 \
        "${args[@]}" --spmm $backend --epochs "${EPOCHS:-6}" --warmup 2 --eval-every 100 --dropout 0 --comm full \
        --store host --metrics-out "$R/m_$tag.jsonl" > "$R/train_$tag.log" 2>&1
      echo "== $tag (rc $?)"
      grep -E "^median epoch|^exposed|sparse products" "$R/train_$tag.log" | head -4
      ms[$backend]=$(sed -n 's/^median epoch \([0-9.]*\) ms.*/\1/p' "$R/train_$tag.log")
    done
    python3 - "$R/m_${graph}_${model}_own.jsonl" "$R/m_${graph}_${model}_cusparse.jsonl" "$graph" "$model" \
      "${ms[own]:-}" "${ms[cusparse]:-}" >> "$table" <<'PY'
import json, sys
def losses(path):
    try: return [json.loads(l)["loss"] for l in open(path) if '"type":"epoch"' in l]
    except OSError: return []
a, b = losses(sys.argv[1]), losses(sys.argv[2])
diff = max((abs(x - y) / max(abs(x), 1e-30) for x, y in zip(a, b)), default=float("nan")) if a and len(a) == len(b) else float("nan")
own, lib = sys.argv[5], sys.argv[6]
ratio = f"{float(lib) / float(own):.3f}" if own and lib else "-"
print(f"| {sys.argv[3]} | {sys.argv[4]} | {own or '-'} | {lib or '-'} | {ratio} | {diff:.2e} |")
PY
    tail -1 "$table"
  done
done
tar czf "$OUT/spmm_runs.tar.gz" -C "$R" . && rm -rf "$R"
cat "$table"
