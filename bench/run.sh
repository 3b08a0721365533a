#!/usr/bin/env bash
# Benchmark suite of SPEC §9: named workloads on generated graphs at the paper's sizes, hongtu
# (ht-partition, ht-reorganize, ht-train) and the PyG baseline side by side, one table at the end.
#
# Usage: bench/run.sh BIN_DIR OUT_DIR [options]
#   BIN_DIR              folder with ht-convert, ht-partition, ht-reorganize, ht-train
#   OUT_DIR              logs/, metrics/, results/, runs.tsv, steps.tsv, env.txt and summary.md go here
#   --quick              workload `quick` (reddit-like GCN: PyG, 1 GPU n = 1 and n = 4), a 560 s time
#                        budget and a 300 s limit per step: fits one 10-minute call with graph generation
#   --workloads LIST     comma-separated names (default: all): reddit-gcn reddit-gat products-gcn
#                        products-gat community-gcn community-gat quick tiny-gcn tiny-gat;
#                        aliases reddit, products, community, tiny, all
#   --gpus M             "all GPUs" = M (default: nvidia-smi's count; 2 emulated with --backend cpu)
#   --epochs E           epochs per run (default 13), of which --warmup W (default 3) are not timed
#   --budget S           start no step after S seconds (the rest is reported SKIPPED); 0 = none
#   --step-timeout S     kill a step after S seconds (reported FAILED, rc 124); 0 = none
#   --train-args "ARGS"  extra ht-train arguments for every hongtu run, e.g. "--no-overlap" or
#                        "--gcn-order aggregate" for an A/B against the defaults (recorded in summary.md)
#   --no-pyg             leave out the PyG baseline
#   --dry-run            print the commands instead of running them
#   --backend cpu        (for tests) ht-train on the CPU executor and PyG on the CPU
# Environment: HT_BENCH_CACHE (default OUT_DIR/cache) holds generated graphs, partitions and plans,
# keyed by their parameters and reused when present; HT_PYG_PYTHON picks the python that has
# torch + torch_geometric (default: the first of $HT_PYTHON, python3, /usr/bin/python3 that
# imports both); HT_PYTHON (default /usr/bin/python3) runs bench/report.py (standard library only).
# Exit code: 0 when no run FAILED (runs SKIPPED for the time budget or a missing torch are in
# the table), 1 when some run failed, 2 on bad usage.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "bench/run.sh: error: $*" >&2; exit 2; }

[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -ge 2 ]] || { usage >&2; exit 2; }
CMDLINE="bench/run.sh $*"
BIN=$1; OUT=$2; shift 2
WORKLOADS=""; QUICK=0; DRY=0; BACKEND=cuda; NGPU=""; EPOCHS=13; WARMUP=3; BUDGET=0; STEP_TIMEOUT=0; PYG=1
TRAIN_ARGS=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) QUICK=1 ;;
    --workloads) [[ $# -ge 2 ]] || die "--workloads needs a list"; WORKLOADS=$2; shift ;;
    --gpus) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--gpus needs a positive integer"; NGPU=$2; shift ;;
    --epochs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--epochs needs a positive integer"; EPOCHS=$2; shift ;;
    --warmup) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--warmup needs an integer >= 0"; WARMUP=$2; shift ;;
    --budget) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--budget needs seconds"; BUDGET=$2; shift ;;
    --step-timeout) [[ ${2:-} =~ ^[0-9]+$ ]] || die "--step-timeout needs seconds"; STEP_TIMEOUT=$2; shift ;;
    --train-args) [[ $# -ge 2 ]] || die "--train-args needs a quoted argument list"
                  read -r -a TRAIN_ARGS <<< "$2"; shift ;;
    --no-pyg) PYG=0 ;;
    --dry-run) DRY=1 ;;
    --backend) [[ ${2:-} == cpu || ${2:-} == cuda ]] || die "--backend is cpu or cuda"; BACKEND=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
if (( QUICK )); then
  [[ -z $WORKLOADS ]] && WORKLOADS=quick
  (( BUDGET == 0 )) && BUDGET=560
  (( STEP_TIMEOUT == 0 )) && STEP_TIMEOUT=300
fi
[[ -z $WORKLOADS ]] && WORKLOADS=all
for tool in ht-convert ht-partition ht-reorganize ht-train; do
  [[ -x $BIN/$tool ]] || die "$BIN/$tool not found or not executable (BIN_DIR must hold the hongtu binaries)"
done
BIN=$(cd "$BIN" && pwd)

# --- workloads ---------------------------------------------------------------------------------
expand_workloads() {
  local w
  for w in ${1//,/ }; do
    case $w in
      all) echo reddit-gcn reddit-gat products-gcn products-gat community-gcn community-gat ;;
      reddit|products|community|tiny) echo "$w-gcn $w-gat" ;;
      reddit-gcn|reddit-gat|products-gcn|products-gat|community-gcn|community-gat|tiny-gcn|tiny-gat|quick) echo "$w" ;;
      *) die "unknown workload '$w' (known: reddit-gcn reddit-gat products-gcn products-gat community-gcn community-gat quick tiny-gcn tiny-gat; aliases reddit products community tiny all)" ;;
    esac
  done
}
LIST=$(expand_workloads "$WORKLOADS") || exit 2

# Graph parameters: N E F C (uniform random graphs, SPEC §9) and how to partition them.
# community: a stochastic-block-model graph at the products size (average degree D instead of an
# edge count; E ≈ 121.8 M after the generator drops duplicates), where METIS has communities to find.
graph_params() {
  GEN=random; D=""; METHOD=range
  case $1 in
    reddit) N=232965; E=114000000; F=602; C=41 ;;
    products) N=2449029; E=123718280; F=100; C=47 ;;
    community) GEN=community; N=2450000; D=50; F=100; C=47; METHOD=metis ;;
    tiny) N=3000; E=40000; F=16; C=4 ;;
  esac
  SEED=1
}

# Runs of a workload, one per line: `pyg GRAPH MODEL LAYERS HEADS` or `ht GRAPH MODEL LAYERS HEADS M N COMM`.
# GAT: --layers gives the width per head; hidden layers have 4 heads concatenated (64 x 4 = 256,
# the GCN hidden width), the output layer 1 head.
workload_runs() {
  local w=$1 M=$NGPU g model layers heads=1
  case $w in
    quick) echo "pyg reddit gcn 602-256-41 1"
           echo "ht reddit gcn 602-256-41 1 1 1 full"
           echo "ht reddit gcn 602-256-41 1 1 4 full"
           return ;;
    reddit-gcn) g=reddit; model=gcn; layers=602-256-41 ;;
    reddit-gat) g=reddit; model=gat; layers=602-64-41; heads=4 ;;
    products-gcn) g=products; model=gcn; layers=100-256-256-47 ;;
    products-gat) g=products; model=gat; layers=100-64-64-47; heads=4 ;;
    community-gcn) g=community; model=gcn; layers=100-256-256-47 ;;
    community-gat) g=community; model=gat; layers=100-64-64-47; heads=4 ;;
    tiny-gcn) g=tiny; model=gcn; layers=16-16-4 ;;
    tiny-gat) g=tiny; model=gat; layers=16-8-4; heads=2 ;;
  esac
  local r="$g $model $layers $heads"
  echo "pyg $r"
  if [[ $g == tiny ]]; then
    echo "ht $r 1 1 full"; echo "ht $r 1 4 full"; echo "ht $r 1 4 baseline"
    if (( M > 1 )); then echo "ht $r $M 1 full"; for c in baseline p2p full; do echo "ht $r $M 2 $c"; done; fi
    return
  fi
  echo "ht $r 1 1 full"; echo "ht $r 1 4 full"; echo "ht $r 1 8 full"
  [[ $model == gcn ]] && echo "ht $r 1 4 baseline"
  if (( M > 1 )); then
    echo "ht $r $M 1 full"
    for c in baseline p2p full; do
      [[ $model == gat && $c == p2p ]] && continue
      echo "ht $r $M 4 $c"
    done
    [[ $model == gcn ]] && echo "ht $r $M 8 full"
  fi
}

# --- environment -------------------------------------------------------------------------------
if [[ -z $NGPU ]]; then
  if [[ $BACKEND == cpu ]]; then NGPU=2
  elif NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') && (( NGPU > 0 )); then :
  else echo "bench/run.sh: warning: nvidia-smi lists no GPU; assuming 1 (use --gpus)" >&2; NGPU=1; fi
fi
CACHE=${HT_BENCH_CACHE:-$OUT/cache}
LOGS=$OUT/logs; METRICS=$OUT/metrics; RESULTS=$OUT/results
REPORT_PY=${HT_PYTHON:-/usr/bin/python3}
command -v "$REPORT_PY" >/dev/null 2>&1 || REPORT_PY=python3

find_pyg_python() {
  local p
  for p in ${HT_PYG_PYTHON:-} ${HT_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    "$p" -c "import torch, torch_geometric" >/dev/null 2>&1 && { echo "$p"; return 0; }
  done
  return 1
}
PYG_PY=""
if (( PYG && !DRY )); then PYG_PY=$(find_pyg_python) || PYG_PY=""; fi
(( DRY )) && PYG_PY=${HT_PYG_PYTHON:-python3}

START=$SECONDS
declare -A FAILED_ARTIFACT   # path -> log of the step that failed to make it
declare -A REUSED            # cached paths already announced
declare -A MADE              # paths made by this run (or printed, with --dry-run)

say() { printf '[%4ds] %s\n' $((SECONDS - START)) "$*"; }
budget_spent() { (( BUDGET > 0 && SECONDS - START >= BUDGET )); }

# run_step NAME LOG COMMAND...: runs the command with its output in LOG; returns its exit code.
# When the time budget is spent it starts nothing, sets BUDGET_SKIP=1 and returns 1.
BUDGET_SKIP=0
run_step() {
  local name=$1 log=$2; shift 2
  BUDGET_SKIP=0
  if (( DRY )); then printf '%q ' "$@"; printf '> %q 2>&1\n' "$log"; return 0; fi
  if budget_spent; then say "$name: SKIPPED (time budget of ${BUDGET}s spent)"; BUDGET_SKIP=1; return 1; fi
  local t0=$SECONDS rc
  { printf '+ '; printf '%q ' "$@"; printf '\n'; } > "$log"
  if (( STEP_TIMEOUT > 0 )); then
    timeout --kill-after=10 "$STEP_TIMEOUT" "$@" >> "$log" 2>&1; rc=$?
  else
    "$@" >> "$log" 2>&1; rc=$?
  fi
  printf 'exit code %d after %d s\n' "$rc" $((SECONDS - t0)) >> "$log"
  printf '%s\t%d\t%d\t%s\n' "$name" "$rc" $((SECONDS - t0)) "$log" >> "$OUT/steps.tsv"
  if (( rc == 0 )); then say "$name: ok ($((SECONDS - t0)) s)"; else say "$name: FAILED rc=$rc, see $log"; fi
  return $rc
}

# make_artifact PATH NAME LOG COMMAND...: reuses PATH when present, else makes it (once per run).
make_artifact() {
  local path=$1 name=$2 log=$3; shift 3
  [[ -n ${FAILED_ARTIFACT[$path]:-} ]] && return 1
  [[ -n ${MADE[$path]:-} ]] && return 0
  if [[ -f $path ]]; then
    if [[ -z ${REUSED[$path]:-} ]]; then
      REUSED[$path]=1
      if (( DRY )); then echo "# cached: $path"; else say "$name: cached"; fi
    fi
    return 0
  fi
  run_step "$name" "$log" "$@" && { MADE[$path]=1; return 0; }
  FAILED_ARTIFACT[$path]=$log
  (( BUDGET_SKIP )) && FAILED_ARTIFACT[$path]="time budget"
  return 1
}

# ensure_graph G: sets GRAPH (and N E D F C SEED GEN METHOD).
ensure_graph() {
  graph_params "$1"
  if [[ $GEN == community ]]; then
    # The generator's own split (10% train, 20% validation): its labels are learnable.
    local key="$1-N$N-D$D-F$F-C$C-s$SEED"
    GRAPH=$CACHE/$key.htg
    make_artifact "$GRAPH" "generate $key" "$LOGS/generate.$key.log" \
      "$BIN/ht-convert" --generate community --vertices "$N" --avg-degree "$D" --feature-dim "$F" --classes "$C" \
      --seed "$SEED" -o "$GRAPH"
    return
  fi
  local key="$1-N$N-E$E-F$F-C$C-s$SEED"
  GRAPH=$CACHE/$key.htg
  make_artifact "$GRAPH" "generate $key" "$LOGS/generate.$key.log" \
    "$BIN/ht-convert" --generate "$GEN" --vertices "$N" --edges "$E" --feature-dim "$F" --classes "$C" \
    --train-fraction 0.25 --seed "$SEED" -o "$GRAPH"
}

# forget_stale INPUT OUTPUTS...: cached outputs are stale when this run has just made their input.
forget_stale() {
  local input=$1; shift
  (( DRY )) && return
  [[ -n ${MADE[$input]:-} && -z ${MADE[$1]:-} ]] && rm -f "$@"
  return 0
}

# ensure_plan M N (after ensure_graph): sets PART, PLAN and their stats files.
# --method range for the uniform random graphs: every partition needs nearly every vertex whatever
# the cut, so METIS (minutes, GiBs on 10^8 edges) buys nothing over contiguous id ranges there.
# The community graph (METHOD=metis) is where the cut pays for it.
ensure_plan() {
  local key; key=$(basename "$GRAPH" .htg).m$1.n$2.$METHOD
  PART=$CACHE/$key.htp; PLAN=$CACHE/$key.htplan
  PART_STATS=$CACHE/$key.htp.json; PLAN_STATS=$CACHE/$key.htplan.json
  forget_stale "$GRAPH" "$PART" "$PLAN" "$PART_STATS" "$PLAN_STATS"
  make_artifact "$PART" "partition $key" "$LOGS/partition.$key.log" \
    "$BIN/ht-partition" -g "$GRAPH" -m "$1" -n "$2" --method "$METHOD" --stats-json "$PART_STATS" -o "$PART" || return 1
  forget_stale "$PART" "$PLAN" "$PLAN_STATS"
  make_artifact "$PLAN" "reorganize $key" "$LOGS/reorganize.$key.log" \
    "$BIN/ht-reorganize" -g "$GRAPH" -p "$PART" --stats-json "$PLAN_STATS" -o "$PLAN"
}

# record NAME KIND WORKLOAD GRAPH MODEL LAYERS HEADS M N COMM STATUS LOG RESULT PART_STATS PLAN_STATS
record() {
  (( DRY )) && return
  local IFS=$'\t'
  echo "$*" >> "$OUT/runs.tsv"
  "$REPORT_PY" "$HERE/report.py" "$OUT" --quiet || echo "bench/run.sh: warning: report.py failed" >&2
}

failed_status() {  # the artifact's failure, as a status
  local why=${FAILED_ARTIFACT[$1]:-}
  if [[ $why == "time budget" ]]; then echo SKIPPED; else echo FAILED; fi
}

run_ht() {  # workload graph model layers heads m n comm
  local w=$1 g=$2 model=$3 layers=$4 heads=$5 m=$6 n=$7 comm=$8
  local name="$w.m$m.n$n.$comm"
  local log=$LOGS/$name.log metrics=$METRICS/$name.jsonl
  if ! ensure_graph "$g"; then
    record "$name" ht "$w" "$g" "$model" "$layers" "$heads" "$m" "$n" "$comm" "$(failed_status "$GRAPH")" \
      "${FAILED_ARTIFACT[$GRAPH]}" - - -
    return
  fi
  if ! ensure_plan "$m" "$n"; then
    local bad=$PART; [[ -n ${FAILED_ARTIFACT[$PART]:-} ]] || bad=$PLAN
    record "$name" ht "$w" "$g" "$model" "$layers" "$heads" "$m" "$n" "$comm" "$(failed_status "$bad")" \
      "${FAILED_ARTIFACT[$bad]}" - "$PART_STATS" "$PLAN_STATS"
    return
  fi
  local args=(--graph "$GRAPH" --partition "$PART" --plan "$PLAN" --backend "$BACKEND" --gpus "$m"
              --model "$model" --layers "$layers" --epochs "$EPOCHS" --warmup "$WARMUP" --eval-every "$EPOCHS"
              --dropout 0 --optimizer adam --lr 0.01 --comm "$comm" --metrics-out "$metrics")
  [[ $model == gat ]] && args+=(--heads "$heads" --out-heads 1)
  args+=("${TRAIN_ARGS[@]}")
  local status=ok
  run_step "train $name" "$log" "$BIN/ht-train" "${args[@]}" || status=FAILED
  (( BUDGET_SKIP )) && { status=SKIPPED; log="time budget"; }
  record "$name" ht "$w" "$g" "$model" "$layers" "$heads" "$m" "$n" "$comm" "$status" "$log" "$metrics" \
    "$PART_STATS" "$PLAN_STATS"
}

run_pyg() {  # workload graph model layers heads
  local w=$1 g=$2 model=$3 layers=$4 heads=$5
  local name="$w.pyg" log=$LOGS/$w.pyg.log result=$RESULTS/$w.pyg.json
  if ! ensure_graph "$g"; then
    record "$name" pyg "$w" "$g" "$model" "$layers" "$heads" 1 1 pyg "$(failed_status "$GRAPH")" \
      "${FAILED_ARTIFACT[$GRAPH]}" - - -
    return
  fi
  if [[ -z $PYG_PY ]]; then
    say "$name: SKIPPED (no python with torch and torch_geometric; set HT_PYG_PYTHON)"
    record "$name" pyg "$w" "$g" "$model" "$layers" "$heads" 1 1 pyg SKIPPED "no python with torch+torch_geometric" - - -
    return
  fi
  local dev=cuda; [[ $BACKEND == cpu ]] && dev=cpu
  local status=ok
  local args=("$GRAPH" --model "$model" --layers "$layers" --epochs "$EPOCHS" --warmup "$WARMUP" --device "$dev"
              --json "$result")
  [[ $model == gat ]] && args+=(--heads "$heads")
  run_step "pyg $name" "$log" "$PYG_PY" "$HERE/pyg_baseline.py" "${args[@]}" || status=FAILED
  (( BUDGET_SKIP )) && { status=SKIPPED; log="time budget"; }
  record "$name" pyg "$w" "$g" "$model" "$layers" "$heads" 1 1 pyg "$status" "$log" "$result" - -
}

# --- main --------------------------------------------------------------------------------------
if (( ! DRY )); then
  mkdir -p "$OUT" "$CACHE" "$LOGS" "$METRICS" "$RESULTS" || die "cannot create $OUT"
  OUT=$(cd "$OUT" && pwd)
  CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)
  LOGS=$OUT/logs; METRICS=$OUT/metrics; RESULTS=$OUT/results
  rm -f "$OUT/runs.tsv" "$OUT/steps.tsv" "$OUT/summary.md"
  {
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host=$(uname -n) ($(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM)"
    if [[ $BACKEND == cuda ]]; then
      echo "gpus=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd ';')"
      echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    fi
    echo "backend=$BACKEND"
    echo "all_gpus=$NGPU"
    echo "hongtu=$("$BIN/ht-train" --version 2>&1 | head -1)"
    echo "commit=$(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "pyg_python=${PYG_PY:-none}"
    [[ -n $PYG_PY ]] && echo "pyg_versions=$("$PYG_PY" -c 'import torch, torch_geometric as g; print("torch", torch.__version__, "torch_geometric", g.__version__)' 2>&1 | tail -1)"
    echo "epochs=$EPOCHS warm-up $WARMUP"
    echo "command=$CMDLINE"
    echo "settings=workloads $WORKLOADS, all GPUs = $NGPU, backend $BACKEND, budget ${BUDGET}s, step timeout ${STEP_TIMEOUT}s, ht-train extra arguments: ${TRAIN_ARGS[*]:-none}"
  } > "$OUT/env.txt"
  [[ $BACKEND == cuda ]] && nvidia-smi topo -m > "$OUT/gpu_topology.txt" 2>&1
  say "workloads: ${LIST//$'\n'/ }; all GPUs = $NGPU; backend $BACKEND; cache $CACHE; PyG python: ${PYG_PY:-none}"
fi

for w in $LIST; do
  while read -r kind g model layers heads m n comm; do
    if [[ $kind == pyg ]]; then (( PYG )) && run_pyg "$w" "$g" "$model" "$layers" "$heads"
    else run_ht "$w" "$g" "$model" "$layers" "$heads" "$m" "$n" "$comm"; fi
  done < <(workload_runs "$w")
done

(( DRY )) && exit 0
"$REPORT_PY" "$HERE/report.py" "$OUT" || { echo "bench/run.sh: error: report.py failed" >&2; exit 1; }
echo "(table written to $OUT/summary.md; logs under $OUT/logs)"
awk -F'\t' '$11 == "FAILED" { bad = 1 } END { exit bad }' "$OUT/runs.tsv"
