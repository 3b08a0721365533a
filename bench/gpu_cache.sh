#!/usr/bin/env bash
# The GPU cache (--gpu-cache) against no cache, in one call: for each graph and chunk count, GCN
# 100-256-256-47 on GPUS GPUs (default 1), store on host, trained with --gpu-cache off and then auto; prints each
# run's summary lines (epoch, exposed time, bytes per epoch, GPU cache, memory) and the ratios.
# Usage: OUT=DIR [EPOCHS=8] [DTYPE=fp32] [GPUS=1] [CACHES="off auto"] [BACKEND=cuda] [BIN=DIR]
#        bench/gpu_cache.sh "GRAPHS" "N_LIST" [extra ht-train args]
#   CACHES: the --gpu-cache values to run, the first the reference (e.g. "off 0.5 2" for budgets in
#   GiB: below the features' size only the row tier of their hottest rows). BACKEND=cpu emulates
#   the budgets (host-link bytes per epoch are the plan's, the same as on a GPU; times are not).
#   GRAPHS: products (uniform random, N 2.45 M, E 123.7 M, range partitions), community (the
#   stochastic-block-model graph of bench/run.sh, METIS), rmat (R-MAT scale 21, E 120 M, range).
# Binaries and libraries from .carry/bin and .carry/lib (the device machine's layout; BIN, LIB override); TRAIN_BIN: another ht-train (a baseline) on the same files; graphs,
# partitions and plans are cached in /tmp/cache (products and community share bench/run.sh's and
# bench/products_timeline.sh's files there).
set -u
export LD_LIBRARY_PATH=${LIB:-$PWD/.carry/lib}
B=${BIN:-$PWD/.carry/bin}; T=${TRAIN_BIN:-$B}; C=${CACHE_DIR:-/tmp/cache}; mkdir -p "$C" "$OUT"
source "$(dirname "${BASH_SOURCE[0]}")/bench_graphs.sh"
for graph in $1; do
  bench_graph "$graph" || exit
  for n in $2; do
    m=${GPUS:-1}; plan=$C/$P$n; (( m > 1 )) && plan=$C/$P${m}x$n
    if [[ ! -f $plan.htplan ]]; then
      $B/ht-partition -g "$G" -m "$m" -n "$n" --method $method -o "$plan.htp" > "$OUT/part_${graph}$n.log" 2>&1 &&
        $B/ht-reorganize -g "$G" -p "$plan.htp" -o "$plan.htplan" > "$OUT/reorg_${graph}$n.log" 2>&1 || { echo "plan $graph n=$n failed"; exit 1; }
    fi
    declare -A epoch
    caches=(${CACHES:-off auto})
    for cache in "${caches[@]}"; do
      tag=${graph}_m${m}n${n}_${DTYPE:-fp32}_cache-$cache
      $T/ht-train --graph "$G" --partition "$plan.htp" --plan "$plan.htplan" --backend ${BACKEND:-cuda} --gpus "$m" --model gcn \
        --layers 100-256-256-47 --epochs "${EPOCHS:-8}" --warmup 2 --eval-every 100 --dropout 0 --optimizer adam \
        --comm full --store host --host-dtype "${DTYPE:-fp32}" --gpu-cache $cache --timeline-out "$OUT/tl_$tag.json" \
        --metrics-out "$OUT/m_$tag.jsonl" "${@:3}" > "$OUT/train_$tag.log" 2>&1
      echo "== $tag (rc $?)"
      grep -E "^median epoch|^exposed|^per epoch|^GPU cache|^memory|^link|loss" "$OUT/train_$tag.log" | grep -v "^epoch" | tail -8
      epoch[$cache]=$(sed -n 's/^median epoch \([0-9.]*\) ms.*/\1/p' "$OUT/train_$tag.log")
      python3 - "$OUT/m_$tag.jsonl" <<'PY'
import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if '"type":"epoch"' in l][-1]
gib = lambda b: b / 2**30
print(f"-- last epoch: host link {gib(e['h2d_bytes'] + e['d2h_bytes']):.3f} GiB (h2d {gib(e['h2d_bytes']):.3f}, "
      f"d2h {gib(e['d2h_bytes']):.3f}), GPU cache {gib(e['cache_bytes']):.3f} GiB")
PY
    done
    # The cache changes where rows are read from, never their values: the losses must be the same bits.
    ref=${caches[0]}
    for cache in "${caches[@]:1}"; do
      python3 - "$OUT/m_${graph}_m${m}n${n}_${DTYPE:-fp32}_cache-$ref.jsonl" "$OUT/m_${graph}_m${m}n${n}_${DTYPE:-fp32}_cache-$cache.jsonl" "$ref" "$cache" <<'PY'
import json, sys
def losses(path):
    try: return [json.loads(l)["loss"] for l in open(path) if '"type":"epoch"' in l]
    except OSError: return None
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print(f"-- losses per epoch, --gpu-cache {sys.argv[4]} against {sys.argv[3]}:", "identical" if a and a == b else f"DIFFER ({a} vs {b})")
PY
      [[ -n ${epoch[$ref]} && -n ${epoch[$cache]} ]] &&
        echo "-- $graph m=$m n=$n: epoch with --gpu-cache $cache = $(python3 -c "print(f'{${epoch[$cache]}/${epoch[$ref]}:.3f}')") x $ref"
    done
  done
done
