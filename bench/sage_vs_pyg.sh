#!/usr/bin/env bash
# GraphSAGE against PyG's SAGEConv (issue 38): accuracy and epoch time, in one call on a GPU machine.
#
# Accuracy: for each graph of LIST, ht-train --model sage --runs RUNS (in memory: --chunks 1, BACKEND)
# and bench/pyg_accuracy.py --model sage with the same layers, dropout, learning rate, weight decay,
# epochs and seeds (1..RUNS): the mean ± std of the test accuracy at the best validation epoch of each,
# and the difference in points (goal: within 1).
# Timing: the products-like bench graph (bench_graphs.sh) at n = 4 chunks (ht-partition -n 4 --method
# range + ht-reorganize, as device_runs.sh scale), ht-train --model sage 100-256-256-47 against
# bench/pyg_baseline.py --model sage (in GPU memory), median epochs (goal: ratio <= 0.8).
# Prints one Markdown table (also $OUT/sage_vs_pyg.md); every log under $OUT.
#
# Usage: bench/sage_vs_pyg.sh        (all settings are environment variables)
#   LIST        graphs (default "cora citeseer community"; "" = none): real ones as GRAPHS/NAME.htg (made from
#               DATA/NAME/raw with ht-convert into $OUT/graphs when missing: planetoid), community =
#               bench_graphs.sh's community graph (2.45 M vertices, in C)
#   BIN         ht-convert, ht-train, ht-partition, ht-reorganize (default build/bin)
#   PY          the Python with torch (and torch_geometric; without it pyg_accuracy.py runs plain
#               PyTorch and says so), default python3; HT_PY the one with numpy for reading graphs
#               (default PY when it has numpy, else /usr/bin/python3)
#   GRAPHS, DATA, C   where the real graphs, the raw datasets and the bench graphs are
#               (default $OUT/graphs, ../shared/datasets, /tmp/cache)
#   BACKEND     cuda (default) or cpu (the reference executor: to try the script out; PyG then
#               runs with --device cpu)
#   RUNS 5, EPOCHS 200, HIDDEN 64, NLAYERS 2, DROPOUT 0.5, LR 0.01, WD 5e-4, EARLY 0 (--early-stop):
#               the small graphs
#   EPOCHS_BIG 30, HIDDEN_BIG 256, NLAYERS_BIG 3, DROPOUT_BIG 0.5, LR_BIG 0.01, WD_BIG 0, EARLY_BIG 0:
#               community (tta-community's GCN reached validation 1.0 in a few epochs there)
#   NORMALIZE   1: --normalize-features on both sides (default 0)
#   TIMING      1 (default): the products-like timing; 0 skips it. TIME_EPOCHS 10 (3 warm-up), NS 4;
#               TIME_GRAPH: another .htg instead of products-like (to try it out)
#   TLIM        seconds one run may take at most (default 240); TOTAL the whole script (default 540):
#               a run gets what is left when less
#   OUT         folder of logs and results (default sage-vs-pyg-YYYYmmdd-HHMM)
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
B="${BIN:-$ROOT/build/bin}"
PY="${PY:-python3}"
if [[ -z "${HT_PY:-}" ]]; then
  if "$PY" -c "import numpy" 2>/dev/null; then HT_PY="$PY"; else HT_PY=/usr/bin/python3; fi
fi
OUT="${OUT:-sage-vs-pyg-$(date -u +%Y%m%d-%H%M)}"
DATA="${DATA:-$ROOT/../shared/datasets}"
C="${C:-/tmp/cache}"
GRAPHS="${GRAPHS:-$OUT/graphs}"
BACKEND="${BACKEND:-cuda}"
RUNS="${RUNS:-5}" TLIM="${TLIM:-240}" TOTAL="${TOTAL:-540}"
case ${1:-} in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
  "") ;;
  *) echo "sage_vs_pyg.sh: no arguments (settings are environment variables; --help)" >&2; exit 2 ;;
esac
[[ $BACKEND == cuda || $BACKEND == cpu ]] || { echo "sage_vs_pyg.sh: BACKEND is cuda or cpu" >&2; exit 2; }
for tool in ht-convert ht-train ht-partition ht-reorganize; do
  [[ -x $B/$tool ]] || { echo "sage_vs_pyg.sh: $B/$tool not built (set BIN)" >&2; exit 1; }
done
"$HT_PY" -c "import numpy" 2>/dev/null || { echo "sage_vs_pyg.sh: $HT_PY has no numpy (set HT_PY)" >&2; exit 1; }
mkdir -p "$OUT" "$C" || exit 1
device=$([[ $BACKEND == cuda ]] && echo cuda || echo cpu)
t0=$SECONDS
# A run's limit: TLIM, or what TOTAL leaves when less (0: no time left, the run is skipped).
limit() { local left=$((TOTAL - (SECONDS - t0))); [[ $left -gt TLIM ]] && left=$TLIM; [[ $left -gt 5 ]] && echo "$left" || echo 0; }
# run TAG CMD...: CMD under the limit, stdout and stderr in $OUT/TAG.log; says how it ended.
run() {
  local tag=$1 lim; shift
  lim=$(limit)
  [[ $lim -gt 0 ]] || { echo "== $tag: skipped, no time left of TOTAL = $TOTAL s"; return 1; }
  timeout -k 10 "$lim" "$@" > "$OUT/$tag.log" 2>&1
  local rc=$?
  echo "== $tag: rc=$rc after $((SECONDS - t0)) s$([[ $rc == 124 || $rc == 137 ]] && echo " (timed out at $lim s)")"
  [[ $rc -eq 0 ]] || tail -3 "$OUT/$tag.log" | cut -c1-200
  return $rc
}
# shape FILE: "F C" of a graph file.
shape() { "$HT_PY" "$HERE/htg.py" "$1" | "$HT_PY" -c "import json,sys; d=json.load(sys.stdin); print(d['feature_dim'], d['num_classes'])"; }

echo "sage_vs_pyg: backend $BACKEND, graphs: ${LIST-cora citeseer community}, runs $RUNS; PyG: $PY ($("$PY" "$HERE/tta.py" env 2>/dev/null || echo no torch))"
# shellcheck source=bench_graphs.sh
source "$HERE/bench_graphs.sh"
for name in ${LIST-cora citeseer community}; do
  if [[ $name == community ]]; then
    bench_graph community || { echo "== $name: generation failed ($OUT/gen_community.log)"; continue; }
    g=$G ep=${EPOCHS_BIG:-30} hid=${HIDDEN_BIG:-256} nl=${NLAYERS_BIG:-3} dr=${DROPOUT_BIG:-0.5} lr=${LR_BIG:-0.01} wd=${WD_BIG:-0} es=${EARLY_BIG:-0}
  else
    g=$GRAPHS/$name.htg
    if [[ ! -f $g ]]; then
      mkdir -p "$OUT/graphs"; g=$OUT/graphs/$name.htg
      [[ -f $g ]] || "$B/ht-convert" -q --format planetoid --input "$DATA/$name/raw" --name "$name" -o "$g" \
        > "$OUT/convert_$name.log" 2>&1 || { echo "== $name: no $GRAPHS/$name.htg and converting $DATA/$name/raw failed"; continue; }
    fi
    ep=${EPOCHS:-200} hid=${HIDDEN:-64} nl=${NLAYERS:-2} dr=${DROPOUT:-0.5} lr=${LR:-0.01} wd=${WD:-5e-4} es=${EARLY:-0}
  fi
  read -r F K < <(shape "$g") || { echo "== $name: unreadable $g"; continue; }
  layers=$F; for ((i = 1; i < nl; i++)); do layers+="-$hid"; done; layers+="-$K"
  norm=(); [[ ${NORMALIZE:-0} == 1 ]] && norm=(--normalize-features)
  echo "$name: $g, layers $layers, dropout $dr, lr $lr, weight decay $wd, $ep epochs, early stop $es, $RUNS runs" |
    tee "$OUT/acc_${name}.config"
  run "acc_${name}_hongtu" "$B/ht-train" -g "$g" --model sage --backend "$BACKEND" --gpus 1 --chunks 1 --layers "$layers" \
    --dropout "$dr" --lr "$lr" --weight-decay "$wd" --epochs "$ep" --eval-every 1 --early-stop "$es" --runs "$RUNS" --seed 1 "${norm[@]}" \
    --metrics-out "$OUT/acc_${name}_hongtu.jsonl"
  grep -E "^[0-9]+ runs:" "$OUT/acc_${name}_hongtu.log"
  run "acc_${name}_pyg" "$PY" "$HERE/pyg_accuracy.py" "$g" --model sage --layers "$layers" --dropout "$dr" --lr "$lr" \
    --weight-decay "$wd" --epochs "$ep" --eval-every 1 --early-stop "$es" --runs "$RUNS" --seed 1 "${norm[@]}" --device "$device" -q \
    --json "$OUT/acc_${name}_pyg.json"
  grep -E "^pyg " "$OUT/acc_${name}_pyg.log"
done

if [[ ${TIMING:-1} == 1 ]]; then
  if { if [[ -n ${TIME_GRAPH:-} ]]; then G=$TIME_GRAPH P=$(basename "$G" .htg)_; else bench_graph products; fi; } && [[ -f $G ]]; then
    ns=${NS:-4} te=${TIME_EPOCHS:-10}
    read -r F K < <(shape "$G"); tl="$F-256-256-$K"  # products-like: 100-256-256-47, as scale mode's GCN
    plan=$C/${P}1x${ns}_range
    [[ -f $plan.htplan ]] || { "$B/ht-partition" -q -g "$G" -m 1 -n "$ns" --method range -o "$plan.htp" > "$OUT/partition_products.log" 2>&1 &&
      "$B/ht-reorganize" -q -g "$G" -p "$plan.htp" -o "$plan.htplan" >> "$OUT/partition_products.log" 2>&1; } ||
      { echo "== products: partition/plan failed ($OUT/partition_products.log)"; rm -f "$plan.htp" "$plan.htplan"; }
    if [[ -f $plan.htplan ]]; then
      run time_products_hongtu "$B/ht-train" -g "$G" --partition "$plan.htp" --plan "$plan.htplan" --backend "$BACKEND" --gpus 1 \
        --model sage --layers "$tl" --epochs "$te" --warmup 3 --eval-every 100 --dropout 0 --comm full --store host \
        --metrics-out "$OUT/time_products_hongtu.jsonl"
      grep -E "^median epoch" "$OUT/time_products_hongtu.log"
    fi
    run time_products_pyg "$PY" "$HERE/pyg_baseline.py" "$G" --model sage --layers "$tl" --epochs "$te" --warmup 3 \
      --device "$device" --json "$OUT/time_products_pyg.json"
    grep -E "^pyg " "$OUT/time_products_pyg.log"
  else
    echo "== products: generation failed ($OUT/gen_products.log)"
  fi
fi

"$HT_PY" - "$OUT" "${LIST-cora citeseer community}" "${NS:-4}" "$RUNS" <<'EOF' | tee "$OUT/sage_vs_pyg.md"
import json, os, re, statistics, sys
RUN_LINE = re.compile(r"^run \d+ \(seed \d+\): best validation [0-9.]+ at epoch \d+, test ([0-9.]+)")
out, names, ns, runs = sys.argv[1], sys.argv[2].split(), sys.argv[3], int(sys.argv[4])

def ht_runs(path):
    """ht-train's metrics: (mean, std, median epoch ms, runs): the 'runs' line of --runs, else what
    the runs that finished left (their summaries: a run stopped by the time limit)."""
    runs, summ = None, []
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("type") == "runs":
                    runs = r
                elif r.get("type") == "summary":
                    summ.append(r)
    except (OSError, ValueError):
        pass
    if runs:
        return (runs["test_acc_at_best_val_mean"], runs["test_acc_at_best_val_std"],
                statistics.median(p["epoch_ms_median"] for p in runs["per_run"]), runs["runs"])
    if summ:
        accs = [s["test_acc_at_best_val"] for s in summ]
        return (statistics.mean(accs), statistics.stdev(accs) if len(accs) > 1 else 0.0,
                statistics.median(s["epoch_ms_median"] for s in summ), len(summ))
    # ht-train stopped from outside writes no metrics file: its log's per-run lines (no epoch time)
    accs = []
    try:
        with open(path[:-len(".jsonl")] + ".log") as f:
            for line in f:
                m = RUN_LINE.match(line)
                if m:
                    accs.append(float(m.group(1)))
    except OSError:
        pass
    if accs:
        return statistics.mean(accs), statistics.stdev(accs) if len(accs) > 1 else 0.0, None, len(accs)
    return None

def pyg(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def acc(a, s, k):
    return "%.2f ± %.2f%s" % (100 * a, 100 * s, "" if k == runs else " (%d runs)" % k)

def ms(v):
    return "—" if v is None else "%.2f" % v

print("| graph | layers | hongtu acc (%) | PyG acc (%) | hongtu − PyG (points) | within 1 point | "
      "hongtu epoch (ms) | PyG epoch (ms) | ratio hongtu / PyG | PyG implementation |")
print("|---|---|---:|---:|---:|---|---:|---:|---:|---|")
for name in names:
    h, p = ht_runs(os.path.join(out, "acc_%s_hongtu.jsonl" % name)), pyg(os.path.join(out, "acc_%s_pyg.json" % name))
    layers = (p or {}).get("layers", "")
    ha = acc(h[0], h[1], h[3]) if h else "failed"
    pa = acc(p["test_acc_at_best_val_mean"], p["test_acc_at_best_val_std"], p.get("runs_done", runs)) if p else "failed"
    diff = 100 * (h[0] - p["test_acc_at_best_val_mean"]) if h and p else None
    ratio = h[2] / p["epoch_ms_median"] if h and p and h[2] and p["epoch_ms_median"] else None
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        name, layers, ha, pa, "—" if diff is None else "%+.2f" % diff,
        "—" if diff is None else ("yes" if abs(diff) <= 1 else "NO"), ms(h[2] if h else None),
        ms(p["epoch_ms_median"] if p else None), "—" if ratio is None else "%.2f" % ratio,
        (p or {}).get("implementation", "")))
h, p = ht_runs(os.path.join(out, "time_products_hongtu.jsonl")), pyg(os.path.join(out, "time_products_pyg.json"))
if h or p:
    pm = p.get("epoch_ms_median") if p else None
    ratio = h[2] / pm if h and pm else None
    note = "PyG out of memory (%s)" % p.get("stage") if p and p.get("oom") else "PyG SAGEConv in GPU memory"
    print("| products-like (timing, n = %s) | %s | | | | | %s | %s | %s%s | %s |" % (
        ns, (p or {}).get("layers", ""), ms(h[2] if h else None), ms(pm), "—" if ratio is None else "%.2f" % ratio,
        "" if ratio is None else (" (goal ≤ 0.8: %s)" % ("met" if ratio <= 0.8 else "NOT met")), note))
EOF
echo "sage_vs_pyg: took $((SECONDS - t0)) s; logs and results in $OUT"
