#!/usr/bin/env bash
# ht-train's host memory planner at the shell (issue 20): --help shows
# --host-mem; a bad size is one error line; a run whose plan needs more than
# --host-mem stops before loading with one line that names the need, the
# limit and where it came from, and the option that would fit (here
# --host-dtype bf16, with what it would need), leaving no output file; that
# option then runs under the same limit, and the summary line and the
# metrics file show the plan beside the measured peak RSS.
# Usage: host_memory.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN_DIR="$(cd "$1" 2>/dev/null && pwd)"
for tool in ht-convert ht-partition ht-reorganize ht-train; do
  if [[ ! -x "$BIN_DIR/$tool" ]]; then
    echo "skip: $BIN_DIR/$tool not built"
    exit 77
  fi
done
PY="${HT_PYTHON:-/usr/bin/python3}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
export OMP_NUM_THREADS=1
B="$BIN_DIR"

# Four layers over 20,000 vertices: the vertex store is the item that a
# 16-bit dtype halves.
"$B/ht-convert" -q --generate community --vertices 20000 --avg-degree 10 --feature-dim 64 --classes 4 --seed 3 \
  -o g.htg || { echo "FAIL: ht-convert"; exit 1; }
"$B/ht-partition" -q -g g.htg -m 1 -n 4 --method range -o p.htp >/dev/null || { echo "FAIL: ht-partition"; exit 1; }
"$B/ht-reorganize" -q --graph g.htg --partition p.htp -o plan.htplan >/dev/null || { echo "FAIL: ht-reorganize"; exit 1; }
TRAIN=("$B/ht-train" -q --graph g.htg --partition p.htp --plan plan.htplan --backend cpu --layers 64-128-128-128-4
  --epochs 2)

"$B/ht-train" --help >help.txt 2>&1
grep -q -- "--host-mem TEXT=auto" help.txt || fail "--help lacks --host-mem with its default: $(grep -- --host-mem help.txt)"

"${TRAIN[@]}" --host-mem lots >stdout.txt 2>stderr.txt
check_one_error_line "bad --host-mem" "--host-mem.*'lots' is not auto, 0 or a size" $?

# What each dtype needs: the figure of the error under a limit of 1 MiB.
need_of() {  # need_of DTYPE: the bytes the error line says the run needs
  "${TRAIN[@]}" --host-dtype "$1" --host-mem 1MiB >stdout.txt 2>stderr.txt
  check_one_error_line "$1 under 1 MiB" "host memory: this run needs .* but 1.00 MiB is available (--host-mem); " $?
  "$PY" - stderr.txt <<'EOF'
import re, sys
m = re.search(r"needs ([0-9.]+) (B|KiB|MiB|GiB)", open(sys.argv[1]).read())
print(int(float(m.group(1)) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]))
EOF
}
f32=$(need_of fp32)
bf16=$(need_of bf16)
if ! [[ $f32 -gt $bf16 && $bf16 -gt 0 ]]; then
  fail "needs: fp32 $f32, bf16 $bf16 (bf16 should need less)"
  finish "unreachable"
fi
limit=$(((f32 + bf16) / 2))

# Between the two: fp32 is refused before any work, naming bf16, and leaves nothing.
before=$(ls -A)
"${TRAIN[@]}" --host-mem "${limit}b" --metrics-out m.jsonl --save-model model.htm --predict-out p.csv \
  >stdout.txt 2>stderr.txt
rc=$?
check_one_error_line "fp32 over the limit" \
  "host memory: this run needs .* at .* (.*vertex store .*) but .* is available (--host-mem); --host-dtype bf16 would need .* and fit" $rc
[[ $rc -eq 1 ]] || fail "exit code $rc, expected 1"
[[ "$(ls -A)" == "$before" ]] || fail "files left behind: $(ls -A | tr '\n' ' ')"

# The advice runs under the same limit.
"${TRAIN[@]}" --host-dtype bf16 --host-mem "${limit}b" --metrics-out m.jsonl >stdout.txt 2>stderr.txt ||
  { fail "--host-dtype bf16 under the limit: $(cat stderr.txt)"; finish "unreachable"; }
grep -q -E "^host memory: plan [0-9.]+ MiB at [a-z]+ \(.*vertex store .*\), peak process RSS [0-9.]+ MiB = [0-9]+% of the plan; limit [0-9.]+ MiB \(--host-mem\)$" stdout.txt ||
  fail "summary line: $(grep '^host memory' stdout.txt)"
"$PY" - m.jsonl "$limit" >py.txt 2>&1 <<'EOF' || { fail "metrics file"; cat py.txt; }
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"summary"' in l][-1]
limit = int(sys.argv[2])
assert s["host_limit_bytes"] == limit and s["host_limit_source"] == "--host-mem", s
assert 0 < s["host_plan_need_bytes"] <= limit, s
assert s["host_plan_need_bytes"] <= s["host_plan_bytes"], s
assert s["host_plan_items"]["vertex store"] > 0 and s["host_plan_phase"] in ("setup", "training"), s
assert sum(s["host_plan_items"].values()) <= s["host_plan_bytes"], s
assert s["peak_rss_bytes"] <= 1.1 * s["host_plan_bytes"], (s["peak_rss_bytes"], s["host_plan_bytes"])
EOF

# Partitioned in memory: the first check cannot count the plan yet, and says so.
"$B/ht-train" -q --graph g.htg --backend cpu --layers 64-128-128-128-4 --epochs 1 --host-mem 1MiB \
  >stdout.txt 2>stderr.txt
check_one_error_line "in-memory plan" "the plan, built in memory later, not counted yet" $?

# A wide model (1.6 G parameters) refused at once: the check counts the
# parameters from the widths; it used to build them (minutes at 6-17 GB).
start=$SECONDS
timeout 60 "$B/ht-train" -q --graph g.htg --backend cpu --layers 64-40000-40000-4 --epochs 1 --host-mem 4G \
  >stdout.txt 2>stderr.txt
rc=$?
[[ $rc -eq 124 ]] && fail "wide model: still running after 60 s (the memory check allocates?)"
check_one_error_line "wide model" "host memory: this run needs .* GiB" $rc
(( SECONDS - start <= 20 )) || fail "wide model: refused after $((SECONDS - start)) s, not at once"

finish "ht-train --host-mem: all checks passed"
