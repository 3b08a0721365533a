#!/usr/bin/env bash
# Time to accuracy (issue 36): hongtu full-graph training (in memory, out of core; 1 and 2 GPUs)
# against PyG full-graph GCN and mini-batch neighbor sampling (GraphSAGE and GCN, fan-outs 15-10-5
# and 25-10, batch 1024 and 4096, sampling on the GPU), on the same graphs and the same split, each
# run to early stopping (or a time cap); bench/tta.py report then fixes one target validation
# accuracy per graph and writes the table (epoch time, time to target, best validation and its
# test accuracy, time to best, setup, peak GPU memory), the best learning rate of each system (a
# sweep: --lr-list) and the plot (validation accuracy against wall time).
#
# Usage: bench/tta.sh [--smoke] [--out DIR] [--graphs "NAMES"] [--gpus N] [--backend cuda|cpu]
#                     [--lr-list "LRS"] [--time-cap S] [--systems "KINDS"] [--minibatch "CONFIGS"]
#                     [--chunks N] [--epochs E] [--patience P] [--target GRAPH=ACC]...
#   --smoke       a small community graph (20 k vertices) and Cora, few epochs, one mini-batch
#                 configuration per model: checks the whole chain in minutes (runs on the CPU
#                 backend when no GPU is visible; the baselines then run with --device cpu when
#                 torch is there)
#   --graphs      of: community2m (2.45 M vertices, avg degree 50: the community generator at the
#                 products size), community12m (12 M vertices, avg degree 25), community_smoke,
#                 cora, citeseer, facebook, tolokers, minesweeper (the real datasets in $DATA).
#                 Default: all but community_smoke
#   --gpus N      GPUs to use at most (default: what nvidia-smi lists, else 1)
#   --lr-list     learning rates every system is trained with, one run each (hongtu, PyG
#                 full-graph and mini-batch alike; the table keeps each system's fastest to the
#                 target: the fairness of issue 36). Default: one run per system at its own
#                 default (hongtu and PyG full-graph 0.01, mini-batch 0.003)
#   --time-cap S  seconds of training per run at most (ht-train --time-limit, tta.py --time-limit:
#                 the run stops at its first evaluation past S, with its results); default: none
#   --systems     which to run, of: hongtu-inmem hongtu-ooc hongtu-2gpu pyg-full minibatch
#                 (default: all; hongtu-2gpu only with 2 GPUs)
#   --minibatch   mini-batch configurations ARCH:FANOUTS:BATCH, default the eight of
#                 {sage,gcn} x {15-10-5,25-10} x {1024,4096} (smoke: sage and gcn, 15-10-5, 1024)
#   --chunks N|auto  hongtu out of core: partition once per GPU count with ht-partition (--method
#                 auto: multilevel on large graphs, where ht-train's in-memory METIS for m = 2 takes
#                 minutes) and ht-reorganize into N chunks per GPU (auto: the fewest that fit GPU_MEM,
#                 default the first GPU's free memory), shared by the learning rates (default: each
#                 run partitions in memory with ht-train --chunks auto; no 2-GPU n = 1 run then)
#   --target      a graph's target validation accuracy (default: 0.98 x the best validation
#                 accuracy of hongtu's in-memory run on it, the best of its learning rates)
# Environment: HT_BIN (ht-convert, ht-train, ht-partition, ht-reorganize; default build/bin), PY
#   (the Python with torch and PyG; default python3), HT_PY (the one with numpy and matplotlib for
#   graphs and the report; default /usr/bin/python3 when it has numpy, else PY), DATA (default
#   ../shared/datasets beside the repository), GRAPHS (where the .htg files, partitions and plans
#   are kept between runs; default $OUT/graphs), COMMUNITY_EXTRA (more ht-convert options for the
#   community graphs, e.g. "--homophily 0.3": at the defaults a 3-layer GCN recovers nearly every
#   label, validation accuracy -> 1.0), GPU_MEM (--chunks auto's budget), HT_TRAIN_EXTRA (more
#   ht-train options for every hongtu run, e.g. "--host-dtype bf16" where the host store is short).
# Output in DIR (default tta-YYYYmmdd-HHMM): GRAPH__SYSTEM[-lrX].jsonl (ht-train metrics),
#   GRAPH__SYSTEM[-lrX].json (baselines), logs/, env.json, tta_table.md, tta_best_lr.md, tta.png.
#   No number is written into bench/RESULTS.md by this script: copy the tables there with the
#   machine named.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
B="${HT_BIN:-$ROOT/build/bin}"
PY="${PY:-python3}"
if [[ -z "${HT_PY:-}" ]]; then
  if /usr/bin/python3 -c "import numpy" 2>/dev/null; then HT_PY=/usr/bin/python3; else HT_PY="$PY"; fi
fi
DATA="${DATA:-$ROOT/../shared/datasets}"

smoke=0 out="" graphs="" gpus="" backend="" lrs="" cap="" systems="" mbconf="" chunks="" epochs="" patience=""
targets=()
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --smoke) smoke=1 ;;
    --out) out=${2:?--out needs a folder}; shift ;;
    --graphs) graphs=${2:?--graphs needs names}; shift ;;
    --gpus) gpus=${2:?--gpus needs a count}; shift ;;
    --backend) backend=${2:?--backend needs cuda or cpu}; shift ;;
    --lr-list) lrs=${2:?--lr-list needs learning rates}; shift ;;
    --time-cap) cap=${2:?--time-cap needs seconds}; shift ;;
    --systems) systems=${2:?--systems needs names}; shift ;;
    --minibatch) mbconf=${2:?--minibatch needs ARCH:FANOUTS:BATCH configurations}; shift ;;
    --chunks) chunks=${2:?--chunks needs a count}; shift ;;
    --epochs) epochs=${2:?--epochs needs a count}; shift ;;
    --patience) patience=${2:?--patience needs a count}; shift ;;
    --target) targets+=(--target "${2:?--target needs GRAPH=ACC}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "tta.sh: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
  shift
done
bad() { echo "tta.sh: $*" >&2; exit 2; }
for v in "$gpus" "$epochs" "$patience" "${chunks/#auto/1}" "$cap"; do
  [[ -z $v || $v =~ ^[1-9][0-9]*$ ]] || bad "'$v' is not a positive count"
done
[[ -z $backend || $backend == cuda || $backend == cpu ]] || bad "--backend is cuda or cpu"
for lr in $lrs; do [[ $lr =~ ^[0-9]*\.?[0-9]+([eE]-?[0-9]+)?$ ]] || bad "--lr-list: '$lr' is not a learning rate"; done
[[ $(tr ' ' '\n' <<<"$lrs" | grep -c .) -eq $(tr ' ' '\n' <<<"$lrs" | grep . | sort -u | wc -l) ]] ||
  bad "--lr-list: a learning rate is given twice"
for k in $systems; do
  [[ $k =~ ^(hongtu-inmem|hongtu-ooc|hongtu-2gpu|pyg-full|minibatch)$ ]] || bad "--systems: unknown '$k'"
done
for c in $mbconf; do
  [[ $c =~ ^(sage|gcn):[1-9][0-9]*(-[1-9][0-9]*)*:[1-9][0-9]*$ ]] || bad "--minibatch: '$c' is not ARCH:FANOUTS:BATCH"
done
for tool in ht-convert ht-train; do
  [[ -x $B/$tool ]] || { echo "tta.sh: $B/$tool not built (make build, or set HT_BIN)" >&2; exit 1; }
done
if [[ -n $chunks ]]; then
  for tool in ht-partition ht-reorganize; do
    [[ -x $B/$tool ]] || { echo "tta.sh: $B/$tool not built (--chunks needs it)" >&2; exit 1; }
  done
fi
"$HT_PY" -c "import numpy" 2>/dev/null || { echo "tta.sh: $HT_PY has no numpy (set HT_PY)" >&2; exit 1; }

visible=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[[ -n $backend ]] || backend=$([[ ${visible:-0} -gt 0 ]] && echo cuda || echo cpu)
[[ -n $gpus ]] || gpus=$([[ ${visible:-0} -gt 0 ]] && echo "$visible" || echo 1)
device=$([[ $backend == cuda ]] && echo cuda || echo cpu)
if [[ $smoke -eq 1 ]]; then
  : "${graphs:=community_smoke cora}" "${epochs:=12}" "${patience:=5}" "${mbconf:=sage:15-10-5:1024 gcn:15-10-5:1024}"
else
  : "${graphs:=community2m community12m cora citeseer facebook tolokers minesweeper}" "${epochs:=500}" "${patience:=50}"
fi
if [[ -z $mbconf ]]; then
  for arch in sage gcn; do for fan in 15-10-5 25-10; do for batch in 1024 4096; do
    mbconf+="$arch:$fan:$batch "
  done; done; done
fi
: "${systems:=hongtu-inmem hongtu-ooc hongtu-2gpu pyg-full minibatch}"
wants() { [[ " $systems " == *" $1 "* ]]; }
out=${out:-tta-$(date -u +%Y%m%d-%H%M)}
mkdir -p "$out/logs" || exit 1
G="${GRAPHS:-$out/graphs}"
mkdir -p "$G" || exit 1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
n_lrs=$(wc -w <<<"$lrs")
# A run's wall limit from outside (a hang must not eat the machine): setup allowance + the cap and
# one more epoch and evaluation per learning rate. Only with --time-cap.
outer() { [[ -n $cap ]] && echo "timeout -k 10 $((240 + ${1:-1} * (cap * 3 / 2 + 60)))"; }

"$PY" "$HERE/tta.py" env > "$out/env.json" 2>/dev/null || echo '{"torch": null}' > "$out/env.json"
has_torch=$("$HT_PY" -c "import json,sys; print(1 if json.load(open(sys.argv[1])).get('torch') else 0)" "$out/env.json")
echo "tta: backend $backend, $gpus GPU(s), graphs: $graphs; systems: $systems; lr: ${lrs:-each system default}; time cap: ${cap:-none}"
echo "tta: baselines' Python: $PY ($(cat "$out/env.json"))"
[[ $has_torch -eq 1 ]] || echo "tta: torch is not installed for $PY: only hongtu runs (the baselines are recorded as skipped)"

# graph NAME: makes $G/NAME.htg when missing; returns 1 (said) when its data is not there.
graph() {
  local f="$G/$1.htg" gen=() t0=$SECONDS
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
  # Generated graphs: the community generator's defaults otherwise (homophily 0.8, signal = noise =
  # 1: features alone separate the classes poorly, neighbors' averages well; bench/GENERATORS.md).
  # COMMUNITY_EXTRA (e.g. "--homophily 0.3") makes them harder: give a new GRAPHS folder with it.
  # shellcheck disable=SC2206
  [[ ${gen[0]} == --generate ]] && gen+=(--train-fraction 0.1 --val-fraction 0.1 --seed 1 ${COMMUNITY_EXTRA:-})
  "$B/ht-convert" -q "${gen[@]}" -o "$f" > "$out/logs/convert_$1.log" 2>&1 ||
    { echo "tta: converting $1 failed (logs/convert_$1.log)"; rm -f "$f"; return 1; }
  echo "tta: $1: made in $((SECONDS - t0)) s"
}

# plan NAME M: the partition and plan of NAME for M GPUs x $chunks chunks (made once); prints the
# ht-train options that use them; returns 1 (said) when they could not be made.
plan() {
  local p="$G/${1}_m$2n$chunks" t0=$SECONDS auto=()
  if [[ $chunks == auto ]]; then
    local mem=${GPU_MEM:-}
    [[ -n $mem || $backend != cuda ]] ||
      mem="$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)MiB"
    [[ -n $mem && $mem != MiB ]] || { echo "tta: --chunks auto needs GPU_MEM (a size, e.g. 40G) here" >&2; return 1; }
    auto=(--gpu-mem "$mem" --layers "$layers")
    p="$G/${1}_m${2}auto$mem"
  fi
  if [[ ! -f $p.htplan ]]; then
    "$B/ht-partition" -g "$G/$1.htg" -m "$2" -n "$chunks" "${auto[@]}" --method auto -o "$p.htp" > "$out/logs/partition_${1}_m$2.log" 2>&1 &&
      "$B/ht-reorganize" -q -g "$G/$1.htg" -p "$p.htp" -o "$p.htplan" >> "$out/logs/partition_${1}_m$2.log" 2>&1 ||
      { echo "tta: $1: partitioning for $2 GPU(s) failed (logs/partition_${1}_m$2.log)" >&2; rm -f "$p.htp" "$p.htplan"; return 1; }
    echo "tta: $1: partition and plan for m = $2, n = $chunks in $((SECONDS - t0)) s ($(grep -m1 -o -E 'auto chose n = [0-9]+' "$out/logs/partition_${1}_m$2.log"))" >&2
  fi
  echo "--partition $p.htp --plan $p.htplan"
}

# hongtu NAME SYSTEM ARGS...: ht-train to early stopping (or the cap), once per learning rate (a
# failure is logged, not fatal).
hongtu() {
  local name=$1 system=$2 lr sys
  shift 2
  for lr in ${lrs:-0.01}; do
    sys=$system
    [[ $n_lrs -gt 1 ]] && sys="$system-lr$lr"
    echo "tta: $name: $sys"
    $(outer) "$B/ht-train" --graph "$G/$name.htg" --backend "$backend" --layers "$layers" --dropout 0.5 --lr "$lr" \
      --epochs "$epochs" --warmup 1 --eval-every 1 --early-stop "$patience" ${cap:+--time-limit "$cap"} \
      --metrics-out "$out/${name}__$sys.jsonl" "$@" ${HT_TRAIN_EXTRA:-} > "$out/logs/${name}__$sys.log" 2>&1 ||
      echo "tta: $name: $sys failed (logs/${name}__$sys.log: $(tail -1 "$out/logs/${name}__$sys.log" | cut -c1-200))"
  done
}

# baseline NAME SYSTEM ARGS...: one tta.py process: the graph loaded once, a run per learning rate.
baseline() {
  local name=$1 system=$2
  shift 2
  echo "tta: $name: $system${lrs:+ (lr $lrs)}"
  $(outer "$n_lrs") "$PY" "$HERE/tta.py" baseline "$G/$name.htg" --device "$device" --epochs "$epochs" --eval-every 1 \
    --early-stop "$patience" ${cap:+--time-limit "$cap"} --label "$system" --json "$out/${name}__$system.json" -q \
    "$@" ${lrs:+--lr $lrs} > "$out/logs/${name}__$system.log" 2>&1 ||
    echo "tta: $name: $system failed (logs/${name}__$system.log: $(tail -1 "$out/logs/${name}__$system.log" | cut -c1-200))"
}

for name in $graphs; do
  graph "$name" || continue
  shape=$("$HT_PY" "$HERE/htg.py" "$G/$name.htg") || { echo "tta: $name: unreadable graph"; continue; }
  read -r F C < <("$HT_PY" -c "import json,sys; d=json.loads(sys.argv[1]); print(d['feature_dim'], d['num_classes'])" "$shape")
  layers="$F-256-256-$C"
  ooc=(--chunks auto) ooc2=(--chunks auto)
  [[ $smoke -eq 1 ]] && ooc=(--chunks 2) ooc2=(--chunks 2)
  if [[ -n $chunks ]]; then
    if wants hongtu-ooc; then read -r -a ooc < <(plan "$name" 1) || ooc=(); fi
    if wants hongtu-2gpu && [[ $gpus -ge 2 ]]; then read -r -a ooc2 < <(plan "$name" 2) || ooc2=(); fi
  fi
  if wants hongtu-inmem; then
    if [[ $smoke -eq 1 ]]; then hongtu "$name" hongtu-inmem-1gpu --gpus 1 --chunks 1
    else hongtu "$name" hongtu-inmem-1gpu --gpus 1 --chunks 1 --store auto; fi
  fi
  if wants hongtu-ooc && [[ ${#ooc[@]} -gt 0 ]]; then hongtu "$name" hongtu-ooc-1gpu --gpus 1 "${ooc[@]}" --store host; fi
  if wants hongtu-2gpu && [[ $gpus -ge 2 && ${#ooc2[@]} -gt 0 ]]; then
    [[ $smoke -eq 1 || -n $chunks ]] || hongtu "$name" hongtu-2gpu-n1 --gpus 2 --chunks 1 --store host
    hongtu "$name" hongtu-ooc-2gpu --gpus 2 "${ooc2[@]}" --store host
  fi
  if wants pyg-full; then
    if [[ -n $lrs ]]; then baseline "$name" pyg-full --method full --num-layers 3
    else baseline "$name" pyg-full --method full --num-layers 3 --lr 0.01; fi
  fi
  if wants minibatch; then
    for c in $mbconf; do
      IFS=: read -r arch fan batch <<<"$c"
      baseline "$name" "minibatch-$arch-$fan-b$batch" --method minibatch --arch "$arch" --fanouts "$fan" --batch "$batch"
    done
  fi
done

"$HT_PY" "$HERE/tta.py" report "$out" --table "$out/tta_table.md" --best-table "$out/tta_best_lr.md" --plot "$out/tta.png" \
  "${targets[@]}" || { echo "tta: the report failed"; exit 1; }
echo "tta: results in $out (tables tta_table.md and tta_best_lr.md, plot tta.png)"
