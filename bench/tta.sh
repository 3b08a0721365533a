#!/usr/bin/env bash
# Time to accuracy (issue 36): hongtu full-graph training (in memory, out of core; 1 and 2 GPUs)
# against PyG full-graph GCN and mini-batch neighbor sampling (GraphSAGE and GCN, fan-outs 15-10-5
# and 25-10, batch 1024 and 4096, sampling on the GPU), on the same graphs and the same split, each
# run to early stopping; bench/tta.py report then fixes one target validation accuracy per graph
# and writes the table (epoch time, time to target, best validation and its test accuracy, time to
# best, setup, peak GPU memory) and the plot (validation accuracy against wall time).
#
# Usage: bench/tta.sh [--smoke] [--out DIR] [--graphs "NAMES"] [--gpus N] [--backend cuda|cpu]
#                     [--lr-list "LRS"] [--epochs E] [--patience P] [--target GRAPH=ACC]...
#   --smoke       a small community graph (20 k vertices) and Cora, few epochs, one mini-batch
#                 configuration: checks the whole chain in minutes (runs on the CPU backend when
#                 no GPU is visible; the baselines then run with --device cpu when torch is there)
#   --graphs      of: community2m (2.45 M vertices, avg degree 50: the community generator at the
#                 products size), community12m (12 M vertices, avg degree 25), cora, citeseer,
#                 facebook, tolokers, minesweeper (the real datasets in $DATA). Default: all
#   --gpus N      GPUs to use at most (default: what nvidia-smi lists, else 1)
#   --lr-list     mini-batch learning rates to sweep (default "0.003"; the paper tuned theirs:
#                 sweep "0.001 0.003 0.01" for the published table)
#   --target      a graph's target validation accuracy (default: 0.98 x the best validation
#                 accuracy of hongtu's in-memory run on it)
# Environment: HT_BIN (ht-convert, ht-train; default build/bin), PY (the Python with torch and PyG;
#   default python3), HT_PY (the one with numpy and matplotlib for graphs and the report; default
#   /usr/bin/python3 when it has numpy, else PY), DATA (default ../shared/datasets beside the
#   repository), GRAPHS (where the .htg files are kept between runs; default $OUT/graphs).
# Output in DIR (default tta-YYYYmmdd-HHMM): GRAPH__SYSTEM.jsonl (ht-train metrics),
#   GRAPH__SYSTEM.json (baselines), logs/, env.json, tta_table.md, tta.png. No number is written
#   into bench/RESULTS.md by this script: copy the table there with the machine named.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
B="${HT_BIN:-$ROOT/build/bin}"
PY="${PY:-python3}"
if [[ -z "${HT_PY:-}" ]]; then
  if /usr/bin/python3 -c "import numpy" 2>/dev/null; then HT_PY=/usr/bin/python3; else HT_PY="$PY"; fi
fi
DATA="${DATA:-$ROOT/../shared/datasets}"

smoke=0 out="" graphs="" gpus="" backend="" lrs="0.003" epochs="" patience="" targets=()
usage() { sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) smoke=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --graphs) graphs=${2:?--graphs needs names}; shift ;;
    --gpus) gpus=${2:?--gpus needs a count}; shift ;;
    --backend) backend=${2:?--backend needs cuda or cpu}; shift ;;
    --lr-list) lrs=${2:?--lr-list needs learning rates}; shift ;;
    --epochs) epochs=${2:?--epochs needs a count}; shift ;;
    --patience) patience=${2:?--patience needs a count}; shift ;;
    --target) targets+=(--target "${2:?--target needs GRAPH=ACC}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "tta.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done
for v in "$gpus" "$epochs" "$patience"; do
  [[ -z $v || $v =~ ^[1-9][0-9]*$ ]] || { echo "tta.sh: '$v' is not a positive count" >&2; exit 2; }
done
[[ -z $backend || $backend == cuda || $backend == cpu ]] || { echo "tta.sh: --backend is cuda or cpu" >&2; exit 2; }
for tool in ht-convert ht-train; do
  [[ -x $B/$tool ]] || { echo "tta.sh: $B/$tool not built (make build, or set HT_BIN)" >&2; exit 1; }
done
"$HT_PY" -c "import numpy" 2>/dev/null || { echo "tta.sh: $HT_PY has no numpy (set HT_PY)" >&2; exit 1; }

visible=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ -n $backend ]] || backend=$([[ ${visible:-0} -gt 0 ]] && echo cuda || echo cpu)
[[ -n $gpus ]] || gpus=$([[ ${visible:-0} -gt 0 ]] && echo "$visible" || echo 1)
device=$([[ $backend == cuda ]] && echo cuda || echo cpu)
if [[ $smoke -eq 1 ]]; then
  : "${graphs:=community_smoke cora}" "${epochs:=12}" "${patience:=5}"
else
  : "${graphs:=community2m community12m cora citeseer facebook tolokers minesweeper}" "${epochs:=500}" "${patience:=50}"
fi
out=${out:-tta-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out/logs" || exit 1
G="${GRAPHS:-$out/graphs}"
mkdir -p "$G" || exit 1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"

"$PY" "$HERE/tta.py" env > "$out/env.json" 2>/dev/null || echo '{"torch": null}' > "$out/env.json"
has_torch=$("$HT_PY" -c "import json,sys; print(1 if json.load(open(sys.argv[1])).get('torch') else 0)" "$out/env.json")
echo "tta: backend $backend, $gpus GPU(s), graphs: $graphs; baselines' Python: $PY ($(cat "$out/env.json"))"
[[ $has_torch -eq 1 ]] || echo "tta: torch is not installed for $PY: only hongtu runs (the baselines are recorded as skipped)"

# graph NAME: makes $G/NAME.htg when missing; returns 1 (said) when its data is not there.
graph() {
  local f="$G/$1.htg" gen=()
  [[ -f $f ]] && return 0
  case $1 in
    community_smoke) gen=(--generate community --vertices 20000 --avg-degree 20 --feature-dim 32 --classes 8) ;;
    community2m) gen=(--generate community --vertices 2450000 --avg-degree 50 --feature-dim 100 --classes 47) ;;
    community12m) gen=(--generate community --vertices 12000000 --avg-degree 25 --feature-dim 100 --classes 47) ;;
    cora|citeseer) gen=(--format planetoid --input "$DATA/$1/raw" --name "$1") ;;
    facebook) gen=(--format facebook --input "$DATA/facebook/raw") ;;
    tolokers|minesweeper) gen=(--format npz --input "$DATA/heterophilous/raw/$1.npz" --split-index 0) ;;
    *) echo "tta: unknown graph '$1'" >&2; return 1 ;;
  esac
  if [[ ${gen[0]} == --format && ! -e ${gen[3]} ]]; then
    echo "tta: $1: ${gen[3]} is not there (set DATA); skipped"
    return 1
  fi
  [[ ${gen[0]} == --generate ]] && gen+=(--train-fraction 0.1 --val-fraction 0.1 --seed 1)
  "$B/ht-convert" -q "${gen[@]}" -o "$f" > "$out/logs/convert_$1.log" 2>&1 ||
    { echo "tta: converting $1 failed (logs/convert_$1.log)"; return 1; }
}

# hongtu NAME SYSTEM ARGS...: one ht-train run to early stopping (a failure is logged, not fatal).
hongtu() {
  local name=$1 system=$2
  shift 2
  local m="$out/${name}__${system}.jsonl"
  echo "tta: $name: $system"
  "$B/ht-train" --graph "$G/$name.htg" --backend "$backend" --layers "$layers" --dropout 0.5 --lr 0.01 \
    --epochs "$epochs" --eval-every 1 --early-stop "$patience" --metrics-out "$m" "$@" \
    > "$out/logs/${name}__${system}.log" 2>&1 || echo "tta: $name: $system failed (logs/${name}__${system}.log)"
}

# baseline NAME SYSTEM ARGS...: one tta.py baseline run.
baseline() {
  local name=$1 system=$2
  shift 2
  echo "tta: $name: $system"
  "$PY" "$HERE/tta.py" baseline "$G/$name.htg" --device "$device" --epochs "$epochs" --eval-every 1 \
    --early-stop "$patience" --label "$system" --json "$out/${name}__${system}.json" -q "$@" \
    > "$out/logs/${name}__${system}.log" 2>&1 || echo "tta: $name: $system failed (logs/${name}__${system}.log)"
}

for name in $graphs; do
  graph "$name" || continue
  shape=$("$HT_PY" "$HERE/htg.py" "$G/$name.htg") || { echo "tta: $name: unreadable graph"; continue; }
  read -r F C < <("$HT_PY" -c "import json,sys; d=json.loads(sys.argv[1]); print(d['feature_dim'], d['num_classes'])" "$shape")
  layers="$F-256-256-$C"
  if [[ $smoke -eq 1 ]]; then
    hongtu "$name" hongtu-inmem-1gpu --gpus 1 --chunks 1
    hongtu "$name" hongtu-ooc-1gpu --gpus 1 --chunks 2 --store host
    hongtu "$name" hongtu-ooc-2gpu --gpus 2 --chunks 2 --store host
  else
    hongtu "$name" hongtu-inmem-1gpu --gpus 1 --chunks 1 --store auto
    hongtu "$name" hongtu-ooc-1gpu --gpus 1 --chunks auto --store host
    if [[ $gpus -ge 2 ]]; then
      hongtu "$name" hongtu-2gpu-n1 --gpus 2 --chunks 1 --store host
      hongtu "$name" hongtu-ooc-2gpu --gpus 2 --chunks auto --store host
    fi
  fi
  baseline "$name" pyg-full --method full --num-layers 3 --lr 0.01
  for arch in sage gcn; do
    for fan in 15-10-5 25-10; do
      for batch in 1024 4096; do
        [[ $smoke -eq 1 && ( $fan != 15-10-5 || $batch != 1024 ) ]] && continue
        for lr in $lrs; do
          sys="minibatch-$arch-$fan-b$batch"
          [[ $(wc -w <<<"$lrs") -gt 1 ]] && sys="$sys-lr$lr"
          baseline "$name" "$sys" --method minibatch --arch "$arch" --fanouts "$fan" --batch "$batch" --lr "$lr"
        done
      done
    done
  done
done

"$HT_PY" "$HERE/tta.py" report "$out" --table "$out/tta_table.md" --plot "$out/tta.png" "${targets[@]}" ||
  { echo "tta: the report failed"; exit 1; }
echo "tta: results in $out (table tta_table.md, plot tta.png)"
