#!/usr/bin/env bash
# Partitioning and reorganization speed (issue 33): generates the community graph (bench/run.sh's
# SBM) and the friendster-like web graph (bench/it2004_like.sh's generator at friendster's size),
# then times ht-partition with --method auto, metis and multilevel at each thread count, and
# ht-reorganize (with and without the plan check) on auto's partition; one table with the edge
# cut, alpha and seconds of every run, and the phases that dominate.
#
# Usage: [VAR=value ...] bench/partition_speed.sh
#   GRAPHS              which graphs (community friendster)
#   COMMUNITY_N, COMMUNITY_D   community graph: vertices (2450000), average degree (50)
#   FS_N, FS_E, HOST_SIZE      friendster-like web graph: vertices (65600000), edges (2500000000),
#                       mean pages per host (1000)
#   F, SEED             feature columns written into the graphs (16: partitioning reads none) and seed (1)
#   PARTS, CHUNKS       ht-partition -m and -n (4, 4)
#   METHODS             --method values to time (auto metis multilevel); metis is skipped on a graph
#                       beyond its 32-bit idx_t (more than 2^31 - 1 adjacency entries)
#   THREADS             OMP_NUM_THREADS values (the machine's core count; e.g. "1 2 16")
#   METIS_THREADS       the THREADS values at which --method metis runs (all of THREADS; METIS itself
#                       is single-threaded, so one value saves its minutes at the others)
#   REORGANIZE          1: also time ht-reorganize on auto's partition, checked and --no-check (1)
#   BIN                 binaries (build/bin, else .carry/bin); LIB a folder of shared libraries put first
#                       on LD_LIBRARY_PATH (BIN/../lib when it exists, e.g. .carry/lib; LIB.tar.xz is
#                       unpacked beside it when only that exists); CACHE graphs, partitions, plans and the
#                       runs' own logs and JSON files (/tmp/cache/partition_speed)
#   OUT                 what to keep (out/partition_speed), four files: table.txt and table.tsv (one row
#                       per run: cut, cut/METIS, alpha, seconds, phases), runs.log (every run's log, in
#                       order, under a '==== key' line) and stats.jsonl (every run's stats JSON on one
#                       line, with its key); DRY_RUN=1 prints the commands only
# The graphs are kept in CACHE and reused; partitions and plans are made again on every run.
# On the 16-core GPU machine with binaries in .carry (issue 33's target, about 5 minutes):
#   GRAPHS=community METHODS="metis multilevel" THREADS="16 1" METIS_THREADS=16 REORGANIZE=0 \
#     BIN=.carry/bin bench/partition_speed.sh
# Exit code: 0 when every run worked, 1 when one failed, 2 on bad usage.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -eq 0 ]] || { usage >&2; exit 2; }

GRAPHS=${GRAPHS:-community friendster}
COMMUNITY_N=${COMMUNITY_N:-2450000}; COMMUNITY_D=${COMMUNITY_D:-50}
FS_N=${FS_N:-65600000}; FS_E=${FS_E:-2500000000}; HOST_SIZE=${HOST_SIZE:-1000}
F=${F:-16}; SEED=${SEED:-1}; PARTS=${PARTS:-4}; CHUNKS=${CHUNKS:-4}
METHODS=${METHODS:-auto metis multilevel}; THREADS=${THREADS:-$(nproc)}; REORGANIZE=${REORGANIZE:-1}
METIS_THREADS=${METIS_THREADS:-$THREADS}
if [[ -z ${BIN:-} ]]; then BIN=$PWD/build/bin; [[ -x $BIN/ht-partition || ! -d $PWD/.carry/bin ]] || BIN=$PWD/.carry/bin; fi
BIN=$(cd "$BIN" 2>/dev/null && pwd || echo "$BIN")
LIB=${LIB:-$(dirname "$BIN")/lib}
CACHE=${CACHE:-/tmp/cache/partition_speed}; OUT=${OUT:-$PWD/out/partition_speed}
DRY_RUN=${DRY_RUN:-0}
die() { echo "partition_speed.sh: error: $*" >&2; exit 2; }
for v in COMMUNITY_N COMMUNITY_D FS_N FS_E HOST_SIZE F SEED PARTS CHUNKS REORGANIZE DRY_RUN; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done
for t in $THREADS; do [[ $t =~ ^[1-9][0-9]*$ ]] || die "THREADS: '$t' is not a positive integer"; done
for t in $METIS_THREADS; do [[ $t =~ ^[1-9][0-9]*$ ]] || die "METIS_THREADS: '$t' is not a positive integer"; done
for m in $METHODS; do [[ $m =~ ^(auto|metis|multilevel|range|random)$ ]] || die "METHODS: unknown method '$m'"; done
for g in $GRAPHS; do [[ $g =~ ^(community|friendster)$ ]] || die "GRAPHS: unknown graph '$g' (community, friendster)"; done
# The binaries' libraries (a carried .carry/lib, or its archive beside it).
if [[ ! -d $LIB && -f $LIB.tar.xz ]] && (( ! DRY_RUN )); then
  tar xJf "$LIB.tar.xz" -C "$(dirname "$LIB")" || die "cannot unpack $LIB.tar.xz"
fi
[[ -d $LIB ]] && export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if (( ! DRY_RUN )); then
  for t in ht-convert ht-partition ht-reorganize; do
    [[ -x $BIN/$t ]] || die "$BIN/$t not found or not executable (set BIN)"
  done
fi
LOGS=$CACHE/logs
mkdir -p "$CACHE" "$LOGS" "$OUT" || exit 2
TABLE=$OUT/table.tsv
printf 'graph\tstep\tmethod\tthreads\tcut_pct\talpha\tseconds\tdetail\n' > "$TABLE"
: > "$OUT/runs.log"; : > "$OUT/stats.jsonl"
failed=0

# run LOG COMMAND...: runs it (or prints it with DRY_RUN=1), its output in LOG,
# appended to OUT/runs.log.
run() {
  local log=$1 rc=0; shift
  echo "+ $*"
  (( DRY_RUN )) && return 0
  "$@" > "$log" 2>&1 || rc=$?
  { echo "==== $(basename "$log" .log): $*"; cat "$log"; } >> "$OUT/runs.log"
  (( rc == 0 )) || { echo "  failed (rc=$rc), last lines of $log:"; tail -3 "$log" | sed 's/^/  | /'; return 1; }
}

# align: tab-separated lines as aligned columns (column -t, where the machine lacks it: python3).
align() {
  if command -v column > /dev/null; then column -t -s $'\t'; return; fi
  python3 -c "
import sys
rows = [l.rstrip('\n').split('\t') for l in sys.stdin]
w = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(max(map(len, rows), default=0))]
for r in rows: print('  '.join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())"
}

# keep_json KEY FILE: the stats JSON on one line of OUT/stats.jsonl.
keep_json() {
  python3 -c "import json,sys; print(json.dumps({'key': sys.argv[1], 'stats': json.load(open(sys.argv[2]))}))" \
    "$1" "$2" >> "$OUT/stats.jsonl"
}

# json FILE EXPR: prints a Python expression over the stats JSON object d.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

graph_file() {
  case $1 in
    community) echo "$CACHE/community_n${COMMUNITY_N}_d${COMMUNITY_D}_f${F}_s${SEED}.htg" ;;
    friendster) echo "$CACHE/web_n${FS_N}_e${FS_E}_h${HOST_SIZE}_f${F}_s${SEED}.htg" ;;
  esac
}

make_graph() {
  local name=$1 g; g=$(graph_file "$1")
  [[ -s $g ]] && return 0
  local t0=$SECONDS
  case $name in
    community) run "$LOGS/generate_$name.log" "$BIN/ht-convert" --generate community --vertices "$COMMUNITY_N" \
                 --avg-degree "$COMMUNITY_D" --feature-dim "$F" --classes 47 --seed "$SEED" -o "$g" ;;
    friendster) run "$LOGS/generate_$name.log" "$BIN/ht-convert" --generate web --vertices "$FS_N" --edges "$FS_E" \
                  --host-size "$HOST_SIZE" --feature-dim "$F" --classes 64 --feature-dtype bf16 --seed "$SEED" -o "$g" ;;
  esac || return 1
  (( DRY_RUN )) || echo "  generated $g in $((SECONDS - t0)) s"
}

for graph in $GRAPHS; do
  make_graph "$graph" || { failed=$((failed + 1)); continue; }
  G=$(graph_file "$graph")
  for threads in $THREADS; do
    for method in $METHODS; do
      key=${graph}_${method}_t${threads}
      P=$CACHE/$key.htp
      # METIS's idx_t is 32-bit: the web graph's symmetrized adjacency (up to 2 E) must stay below 2^31.
      if [[ $method == metis && " $METIS_THREADS " != *" $threads "* ]]; then
        echo "  metis skipped at $threads threads (METIS_THREADS=$METIS_THREADS)"
        continue
      fi
      if [[ $method == metis && $graph == friendster ]] && (( 2 * FS_E > 2147483647 )); then
        echo "  metis skipped on $graph: 2 x $FS_E adjacency entries exceed METIS's 32-bit idx_t"
        printf '%s\tpartition\tmetis\t%s\tn/a\tn/a\tn/a\tbeyond METIS idx_t\n' "$graph" "$threads" >> "$TABLE"
        continue
      fi
      if ! run "$LOGS/partition_$key.log" env OMP_NUM_THREADS="$threads" "$BIN/ht-partition" -g "$G" -m "$PARTS" \
          -n "$CHUNKS" --method "$method" --stats-json "$LOGS/partition_$key.json" -o "$P"; then
        failed=$((failed + 1))
        printf '%s\tpartition\t%s\t%s\tfailed\t\t\t\n' "$graph" "$method" "$threads" >> "$TABLE"
        continue
      fi
      (( DRY_RUN )) && continue
      J=$LOGS/partition_$key.json
      keep_json "partition_$key" "$J"
      ran=$(json "$J" "d['params']['method']")
      [[ $method == auto ]] && ran="auto:$ran"
      cut=$(json "$J" "'%.2f' % (100 * d['edge_cut_fraction'])")
      alpha=$(json "$J" "'%.3f' % d['alpha']")
      secs=$(json "$J" "'%.2f' % d['seconds']")
      detail=$(json "$J" "', '.join('%s %.1f' % (k, v) for k, v in d['phases'].items() if v >= 0.05)")
      printf '%s\tpartition\t%s\t%s\t%s\t%s\t%s\t%s\n' "$graph" "$ran" "$threads" "$cut" "$alpha" "$secs" "$detail" >> "$TABLE"
    done
    if (( REORGANIZE )) && [[ " $METHODS " == *" auto "* ]]; then
      P=$CACHE/${graph}_auto_t${threads}.htp
      for check in check no-check; do
        key=${graph}_t${threads}_${check}
        flag=(); [[ $check == no-check ]] && flag=(--no-check)
        t0=$(date +%s.%N)
        if ! run "$LOGS/reorganize_$key.log" env OMP_NUM_THREADS="$threads" "$BIN/ht-reorganize" -g "$G" -p "$P" \
            "${flag[@]}" --stats-json "$LOGS/reorganize_$key.json" -o "$CACHE/${graph}_t${threads}.htplan"; then
          failed=$((failed + 1)); continue
        fi
        (( DRY_RUN )) && continue
        t1=$(date +%s.%N)
        keep_json "reorganize_$key" "$LOGS/reorganize_$key.json"
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
        # The tool's phase line: "phases: read X s, renumber X s, build X s (...), check X s, write X s; total X s".
        detail=$(sed -n -E 's/^.*phases: (.*); total.*$/\1/p' "$LOGS/reorganize_$key.log" | sed -E 's/ \([^)]*\)//')
        printf '%s\treorganize\t%s\t%s\t\t\t%s\t%s\n' "$graph" "$check" "$threads" "$secs" "$detail" >> "$TABLE"
      done
    fi
  done
done

(( DRY_RUN )) && exit 0
echo
echo "partition_speed: m $PARTS, n $CHUNKS, $(nproc) cores, commit $(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo '?')"
# One more column: each partition's cut relative to METIS's on the same graph (any thread count).
awk -F'\t' -v OFS='\t' 'NR == FNR { if ($2 == "partition" && $3 == "metis" && $5 ~ /^[0-9.]+$/) metis[$1] = $5; next }
  FNR == 1 { print $1, $2, $3, $4, $5, "cut/metis", $6, $7, $8; next }
  { r = ($2 == "partition" && $5 ~ /^[0-9.]+$/ && metis[$1] > 0) ? sprintf("%.3f", $5 / metis[$1]) : ""
    print $1, $2, $3, $4, $5, r, $6, $7, $8 }' "$TABLE" "$TABLE" | align | tee "$OUT/table.txt"
(( failed > 0 )) && exit 1
exit 0
