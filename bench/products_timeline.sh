#!/usr/bin/env bash
# The products-like bench graph (bench/run.sh's products-gcn) trained with per-queue timelines:
# for each chunk count n and host dtype, GCN 100-256-256-47, m = 1, writes $OUT/tl_n<n>_<dtype>.json
# (bench/timeline.py draws it), the metrics and the log, and prints the summary lines.
# Usage: OUT=DIR [EPOCHS=6] [TAG=_x] bench/products_timeline.sh "N_LIST" "DTYPES" [extra ht-train args]
# Binaries and libraries from .carry/bin and .carry/lib (the device machine's layout); the graph and
# plans are cached in /tmp/cache.
export LD_LIBRARY_PATH=$PWD/.carry/lib
B=$PWD/.carry/bin; C=/tmp/cache; mkdir -p $C $OUT
G=$C/p.htg
[[ -f $G ]] || $B/ht-convert --generate random --vertices 2449029 --edges 123718280 --feature-dim 100 --classes 47 --train-fraction 0.25 --seed 1 -o $G > $OUT/gen.log 2>&1
for n in $1; do
  [[ -f $C/p$n.htplan ]] || { $B/ht-partition -g $G -m 1 -n $n --method range -o $C/p$n.htp > $OUT/part$n.log 2>&1; $B/ht-reorganize -g $G -p $C/p$n.htp -o $C/p$n.htplan > $OUT/reorg$n.log 2>&1; }
  for dt in $2; do
    tag=n${n}_${dt}${TAG:-}
    $B/ht-train --graph $G --partition $C/p$n.htp --plan $C/p$n.htplan --backend cuda --gpus 1 --model gcn --layers 100-256-256-47 --epochs ${EPOCHS:-6} --warmup 2 --eval-every 100 --dropout 0 --optimizer adam --comm full --host-dtype $dt --timeline-out $OUT/tl_$tag.json --metrics-out $OUT/m_$tag.jsonl "${@:3}" > $OUT/train_$tag.log 2>&1
    echo "== $tag"; grep -E "epoch|summary|bound|exposed" $OUT/train_$tag.log | tail -6
  done
done
