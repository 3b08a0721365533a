#!/usr/bin/env bash
# Accuracy of the 16-bit host store (issue 15): Cora and CiteSeer, GCN and GAT
# with their published hyperparameters, 200 epochs, 5 seeds, for each
# --host-dtype (fp32, bf16, fp16), always out of core (--store host, 2 chunks)
# so that every dtype takes the same path. Prints one table: mean test
# accuracy at the best validation epoch per dataset, model and dtype, and the
# difference from fp32 (target: within 0.5 points).
#
# Usage: bench/dtype_accuracy.sh BIN_DIR GRAPH_DIR OUT_DIR [--backend cpu|cuda] [--seeds K] [--epochs E]
#   GRAPH_DIR holds cora.htg and citeseer.htg (ht-convert --format planetoid).
set -euo pipefail
die() { echo "dtype_accuracy.sh: error: $*" >&2; exit 2; }
[[ $# -ge 3 ]] || die "usage: bench/dtype_accuracy.sh BIN_DIR GRAPH_DIR OUT_DIR [--backend cpu|cuda] [--seeds K] [--epochs E]"
BIN=$1 DATA=$2 OUT=$3
shift 3
BACKEND=cuda SEEDS=5 EPOCHS=200
while [[ $# -gt 0 ]]; do
  case $1 in
    --backend) BACKEND=$2; shift ;;
    --seeds) SEEDS=$2; shift ;;
    --epochs) EPOCHS=$2; shift ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
[[ -x $BIN/ht-train ]] || die "$BIN/ht-train not found"
mkdir -p "$OUT/logs"
RESULTS=$OUT/accuracy.tsv
echo -e "dataset\tmodel\tdtype\tseed\ttest_acc\tbest_val\tfinal_loss" > "$RESULTS"

model_args() {
  case $1 in
    gcn) echo "--model gcn --hidden 16 --dropout 0.5 --lr 0.01 --weight-decay 5e-4 --decay-first-layer-only" ;;
    gat) echo "--model gat --hidden 8 --heads 8 --out-heads 1 --dropout 0.6 --attn-dropout 0.6 --lr 0.005 --weight-decay 5e-4" ;;
  esac
}

for ds in cora citeseer; do
  [[ -f $DATA/$ds.htg ]] || die "$DATA/$ds.htg not found"
  for model in gcn gat; do
    for dtype in fp32 bf16 fp16; do
      for seed in $(seq 1 "$SEEDS"); do
        log=$OUT/logs/$ds-$model-$dtype-$seed.log
        # shellcheck disable=SC2046
        "$BIN/ht-train" --graph "$DATA/$ds.htg" $(model_args $model) --normalize-features --epochs "$EPOCHS" \
          --seed "$seed" --backend "$BACKEND" --store host --chunks 2 --host-dtype $dtype --warmup 0 \
          --metrics-out "$OUT/logs/$ds-$model-$dtype-$seed.jsonl" > "$log" 2>&1 || { echo "FAILED: $log" >&2; tail -3 "$log" >&2; exit 1; }
        line=$(grep '^best validation accuracy' "$log")
        val=$(sed -E 's/^best validation accuracy ([0-9.]+).*/\1/' <<<"$line")
        test=$(sed -E 's/.*test accuracy there ([0-9.]+).*/\1/' <<<"$line")
        loss=$(tail -1 "$OUT/logs/$ds-$model-$dtype-$seed.jsonl" | sed -E 's/.*"final_loss":([^,]+).*/\1/')
        echo -e "$ds\t$model\t$dtype\t$seed\t$test\t$val\t$loss" >> "$RESULTS"
      done
    done
  done
done

python3 - "$RESULTS" <<'EOF'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
acc = {}
for r in rows:
    acc.setdefault((r["dataset"], r["model"], r["dtype"]), []).append(float(r["test_acc"]))
print("| dataset | model | dtype | seeds | mean test acc | vs fp32 (points) | within 0.5 |")
print("|---|---|---|---|---|---|---|")
for (ds, model, dtype), v in acc.items():
    base = statistics.mean(acc[(ds, model, "fp32")])
    m = statistics.mean(v)
    d = (m - base) * 100
    ok = "—" if dtype == "fp32" else ("yes" if abs(d) <= 0.5 else "NO")
    print(f"| {ds} | {model} | {dtype} | {len(v)} | {m*100:.2f} | {d:+.2f} | {ok} |")
EOF
