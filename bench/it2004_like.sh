#!/usr/bin/env bash
# The it-2004-like workload of issue 20: a billion edges on one GPU machine. A web-like graph
# (ht-convert --generate web: hosts, power-law in- and out-degrees with hubs; bench/GENERATORS.md)
# at it-2004's size, N 41 M, E 1.2 B, F 256, C 64, 25% training vertices, then ht-partition,
# ht-reorganize and ht-train (GCN 256-128-128-64, 16-bit host store, 3 epochs) in sequence.
#
# Every step writes its output into the cache and is skipped when that output is already there,
# so that successive 10-minute device calls continue the sequence on a warm machine (MAX_STEPS=1
# or BUDGET=S stop after one step or after S seconds). Each step's wall time and peak RSS
# (/usr/bin/time -v), with its input and output bytes, go to $OUT/steps.tsv and its output to
# $OUT/<step>.log; a summary of the numbers ends the run (also in $OUT/summary.txt).
#
# Usage: [VAR=value ...] bench/it2004_like.sh
#   N, E, F, C          graph size (41000000, 1200000000, 256, 64; E defaults to it-2004's degree,
#                       1.2e9 * N / 41e6); TRAIN_FRACTION 0.25, VAL_FRACTION 0.25
#   HOST_SIZE, SEED     web generator: mean pages per host (1000), seed (1)
#   FEATURE_DTYPE       features in the graph file: bf16 (default: 26 GB instead of 47 GB on the
#                       64 GiB disk; ht-train --host-dtype bf16 takes them as they are) or fp32
#   METHOD              ht-partition --method (auto); GPUS (1), CHUNKS (16): -m and -n
#   BACKEND             ht-train --backend (cuda; cpu for tests); DTYPE --host-dtype (bf16)
#   HIDDEN, EPOCHS      hidden width (128: GCN F-128-128-C), epochs (3)
#   TRAIN_ARGS          extra ht-train arguments; GEN_ARGS, PART_ARGS, REORG_ARGS: ht-convert's,
#                       ht-partition's, ht-reorganize's; NO_VERIFY=1 skips section checksums in the readers
#   BIN, LIB            binaries and libraries (.carry/bin, .carry/lib: the device machine's layout)
#   CACHE               outputs, kept between calls (/tmp/cache/it2004); OUT: logs ($OUT or out/it2004)
#   MAX_STEPS, BUDGET   run at most this many steps / start none after BUDGET seconds (0 = no limit)
# Exit code: 0 when every step ran or was cached, 1 when one failed, 3 when steps are left for the
# next call (MAX_STEPS or BUDGET), 2 on bad usage.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -eq 0 ]] || { usage >&2; exit 2; }

N=${N:-41000000}; F=${F:-256}; C=${C:-64}
[[ $N =~ ^[0-9]+$ ]] && E=${E:-$((N * 1200000000 / 41000000))}
TRAIN_FRACTION=${TRAIN_FRACTION:-0.25}; VAL_FRACTION=${VAL_FRACTION:-0.25}
HOST_SIZE=${HOST_SIZE:-1000}; SEED=${SEED:-1}; FEATURE_DTYPE=${FEATURE_DTYPE:-bf16}
METHOD=${METHOD:-auto}; GPUS=${GPUS:-1}; CHUNKS=${CHUNKS:-16}
BACKEND=${BACKEND:-cuda}; DTYPE=${DTYPE:-bf16}; HIDDEN=${HIDDEN:-128}; EPOCHS=${EPOCHS:-3}
TRAIN_ARGS=${TRAIN_ARGS:-}; GEN_ARGS=${GEN_ARGS:-}; PART_ARGS=${PART_ARGS:-}; REORG_ARGS=${REORG_ARGS:-}; NO_VERIFY=${NO_VERIFY:-0}
BIN=${BIN:-$PWD/.carry/bin}; LIB=${LIB:-$PWD/.carry/lib}
CACHE=${CACHE:-/tmp/cache/it2004}; OUT=${OUT:-$PWD/out/it2004}
MAX_STEPS=${MAX_STEPS:-0}; BUDGET=${BUDGET:-0}
for v in N E F C HOST_SIZE SEED GPUS CHUNKS HIDDEN EPOCHS MAX_STEPS BUDGET; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "it2004_like.sh: error: $v must be a non-negative integer, got '${!v}'" >&2; exit 2; }
done
for t in ht-convert ht-partition ht-reorganize ht-train; do
  [[ -x $BIN/$t ]] || { echo "it2004_like.sh: error: $BIN/$t not found or not executable (set BIN)" >&2; exit 2; }
done
[[ -d $LIB ]] && export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT" || exit 2

# Outputs, keyed by everything that makes them: a changed parameter never reuses a stale file.
GKEY=web_n${N}_e${E}_f${F}_c${C}_t${TRAIN_FRACTION}_v${VAL_FRACTION}_h${HOST_SIZE}_s${SEED}_${FEATURE_DTYPE}
PKEY=${GKEY}/${METHOD}_m${GPUS}_n${CHUNKS}
TKEY=${PKEY}/${BACKEND}_${DTYPE}_h${HIDDEN}_e${EPOCHS}
mkdir -p "$CACHE/$TKEY" || exit 2
G=$CACHE/$GKEY/g.htg; P=$CACHE/$PKEY/p.htp; PLAN=$CACHE/$PKEY/p.htplan; M=$CACHE/$TKEY/metrics.jsonl
VERIFY=(); [[ $NO_VERIFY == 1 ]] && VERIFY=(--no-verify)
LAYERS=$F-$HIDDEN-$HIDDEN-$C

TIME=()
[[ -x /usr/bin/time ]] && TIME=(/usr/bin/time -v -o)
START=$(date +%s)
STEPS=$OUT/steps.tsv
printf 'step\tstatus\twall_s\tpeak_rss_kib\tinput_bytes\toutput_bytes\tcommand\n' > "$STEPS"
ran=0; failed=0; left=0

# step NAME "INPUTS" OUTPUT COMMAND...: skipped when OUTPUT exists; else runs COMMAND (its output
# in $OUT/NAME.log) under /usr/bin/time -v and records wall time, peak RSS and the bytes of the
# input files and of the output (the memory rule of issue 20: peak RSS <= 1.5 x their sum).
step() {
  local name=$1 inputs=$2 output=$3; shift 3
  local status wall=0 rss="" bytes="" in_bytes=0 f
  if [[ -s $output ]]; then
    status=cached
  elif (( failed > 0 )); then
    status=skipped  # an earlier step failed
  elif { (( MAX_STEPS > 0 )) && (( ran >= MAX_STEPS )); } ||
       { (( BUDGET > 0 )) && (( $(date +%s) - START >= BUDGET )); }; then
    status=left; left=$((left + 1))
  else
    echo "== $name: $*"
    local t0 t1 rc
    t0=$(date +%s.%N)
    if (( ${#TIME[@]} )); then "${TIME[@]}" "$OUT/$name.time" "$@" > "$OUT/$name.log" 2>&1; rc=$?
    else "$@" > "$OUT/$name.log" 2>&1; rc=$?; fi
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    [[ -f $OUT/$name.time ]] && rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$OUT/$name.time")
    ran=$((ran + 1))
    if (( rc == 0 )) && [[ -s $output ]]; then status=ran
    else status="failed(rc=$rc)"; failed=$((failed + 1)); tail -5 "$OUT/$name.log" | sed "s/^/  $name | /"; fi
  fi
  [[ -e $output ]] && bytes=$(stat -c %s "$output")
  for f in $inputs; do [[ -e $f ]] && in_bytes=$((in_bytes + $(stat -c %s "$f"))); done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$wall" "${rss:-n/a}" "$in_bytes" "${bytes:-0}" "$*" >> "$STEPS"
  echo "== $name: $status (${wall} s, peak RSS ${rss:-n/a} KiB)"
}

# shellcheck disable=SC2086  # *_ARGS are lists of words
step generate "" "$G" "$BIN/ht-convert" --generate web --vertices "$N" --edges "$E" --feature-dim "$F" --classes "$C" \
  --host-size "$HOST_SIZE" --train-fraction "$TRAIN_FRACTION" --val-fraction "$VAL_FRACTION" --seed "$SEED" \
  --feature-dtype "$FEATURE_DTYPE" -v $GEN_ARGS -o "$G"
step partition "$G" "$P" "$BIN/ht-partition" -g "$G" -m "$GPUS" -n "$CHUNKS" --method "$METHOD" "${VERIFY[@]}" $PART_ARGS -o "$P"
step reorganize "$G $P" "$PLAN" "$BIN/ht-reorganize" -g "$G" -p "$P" "${VERIFY[@]}" $REORG_ARGS -o "$PLAN"
# shellcheck disable=SC2086  # TRAIN_ARGS is a list of words
step train "$G $P $PLAN" "$M" "$BIN/ht-train" --graph "$G" --partition "$P" --plan "$PLAN" --backend "$BACKEND" --gpus "$GPUS" \
  --model gcn --layers "$LAYERS" --host-dtype "$DTYPE" --epochs "$EPOCHS" --warmup 1 --eval-every 1 \
  "${VERIFY[@]}" --metrics-out "$M" $TRAIN_ARGS

# --- summary ------------------------------------------------------------------------------------
{
  echo "it-2004-like: N $N, E $E, F $F ($FEATURE_DTYPE in the file), C $C, GCN $LAYERS, $BACKEND, m $GPUS, n $CHUNKS, method $METHOD, host dtype $DTYPE"
  echo "cache $CACHE/$TKEY"
  awk -F'\t' 'NR > 1 {
      rss = $4 == "n/a" ? "n/a" : sprintf("%.2f GiB", $4 / 1048576)
      ratio = ($4 != "n/a" && $5 + $6 > 0) ? sprintf("%.2f", $4 * 1024 / ($5 + $6)) : "-"
      printf "  %-10s %-14s wall %8s s  peak RSS %10s  in %7.2f GB  out %7.2f GB  RSS/(in+out) %s\n",
             $1, $2, $3, rss, $5 / 1e9, $6 / 1e9, ratio }' "$STEPS"
  if [[ -s $M ]]; then
    "${HT_PYTHON:-python3}" - "$M" <<'EOF' 2>/dev/null || grep '"summary"' "$M"
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
print("  train: %d epochs, median epoch %.0f ms (h2d %.0f, compute %.0f), best val acc %.4f, test acc %.4f" % (
    s["epochs"], s["epoch_ms_median"], s.get("h2d_ms_median", 0), s.get("compute_ms_median", 0),
    s["best_val_acc"], s["test_acc_at_best_val"]))
EOF
  fi
  grep -h -E "^wrote|peak memory" "$OUT/generate.log" 2>/dev/null | tail -1 | sed 's/^/  generate: /'
} | tee "$OUT/summary.txt"

(( failed > 0 )) && exit 1
(( left > 0 )) && { echo "steps left for the next call: $left (outputs are cached in $CACHE)"; exit 3; }
exit 0
