#!/usr/bin/env bash
# Issue 33 at the shell: --method auto takes the multilevel partitioner above
# 2^22 adjacency entries (and METIS below), ht-partition --method multilevel
# writes the same bytes with 1, 2 and 4 threads (locality chunks included),
# ht-reorganize --no-check skips only the plan check (the plan it writes
# passes --check and has the checked run's volumes) and is refused with
# --check, the phase lines are there, and bench/partition_speed.sh checks its
# variables and prints its commands.
# Usage: partition_speed.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-partition ht-reorganize
PY="${HT_PYTHON:-/usr/bin/python3}"

# 90 k vertices of average degree 50: about 4.4 M adjacency entries, just above 2^22 (4194304).
"$BIN/ht-convert" -q --generate community --vertices 90000 --avg-degree 50 --feature-dim 4 --classes 8 \
  -o big.htg || fail "ht-convert (big)"
"$BIN/ht-convert" -q --generate community --vertices 3000 --avg-degree 20 --feature-dim 4 --classes 8 \
  -o small.htg || fail "ht-convert (small)"

# --- --method auto ------------------------------------------------------------
"$BIN/ht-partition" -g big.htg -m 4 -n 2 -o auto.htp >/dev/null 2>auto.log || fail "auto on big: $(tail -2 auto.log)"
grep -q -- "--method auto: multilevel (.*more than 4194304, where METIS takes too long" auto.log ||
  fail "auto above 2^22 entries: no multilevel line: $(grep -- '--method auto' auto.log)"
"$BIN/ht-partition" -g small.htg -m 4 -n 2 -o small.htp >/dev/null 2>small.log || fail "auto on small"
grep -q -- "--method auto: metis (" small.log || fail "auto below 2^22 entries: $(grep -- '--method auto' small.log)"

# --- the same bytes with 1 and 2 threads ----------------------------------------
for t in 1 2 4; do
  OMP_NUM_THREADS=$t "$BIN/ht-partition" -q -g big.htg -m 4 -n 4 --method multilevel --chunking locality \
    -o "ml$t.htp" >/dev/null || fail "multilevel with $t threads"
done
cmp -s ml1.htp ml2.htp && cmp -s ml1.htp ml4.htp || fail "--method multilevel: different partition files with 1, 2 and 4 threads"
grep -q "phases: .*stats .*write" auto.log || fail "ht-partition: no phase line"

# --- ht-reorganize --no-check -------------------------------------------------------
"$BIN/ht-reorganize" -g small.htg -p small.htp --stats-json checked.json -o checked.htplan >/dev/null 2>checked.log ||
  fail "ht-reorganize: $(tail -2 checked.log)"
"$BIN/ht-reorganize" -g small.htg -p small.htp --no-check --stats-json unchecked.json -o unchecked.htplan \
  >/dev/null 2>unchecked.log || fail "ht-reorganize --no-check: $(tail -2 unchecked.log)"
grep -q "plan checked in" checked.log || fail "the default run does not check the plan"
grep -q "plan not checked (--no-check)" unchecked.log || fail "--no-check: no line saying the plan was not checked"
grep -q "plan checked in" unchecked.log && fail "--no-check still checked the plan"
grep -q "phases: read .* renumber .* build .* check .* write" checked.log || fail "ht-reorganize: no phase line"
"$PY" - checked.json unchecked.json <<'EOF' || fail "--no-check: the plans' statistics differ or phases are missing"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("read_seconds", "renumber_seconds", "check_seconds", "write_seconds"):
    assert k in a and k in b, k
assert a["check_seconds"] > 0 and b["check_seconds"] == 0
skip = {k for k in a if k.endswith("seconds")}
assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
EOF
# The sections after the header (the plan's lists) are the same bytes; the
# header holds the build time.
[[ $(stat -c %s checked.htplan) == $(stat -c %s unchecked.htplan) ]] || fail "--no-check: plan sizes differ"
"$BIN/ht-reorganize" -q -g small.htg -p small.htp --check unchecked.htplan >/dev/null ||
  fail "--check refuses the plan written with --no-check"
"$BIN/ht-reorganize" -q -g small.htg -p small.htp --check unchecked.htplan --no-check >/dev/null 2>stderr.txt
check_one_error_line "--no-check with --check" "--no-check: not used with --check" $?

# --- bench/partition_speed.sh ------------------------------------------------------
SCRIPT="$SRC/bench/partition_speed.sh"
"$SCRIPT" --help | grep -q "Usage: \[VAR=value ...\] bench/partition_speed.sh" || fail "partition_speed.sh --help"
PARTS=x "$SCRIPT" >/dev/null 2>stderr.txt
rc=$?
[[ $rc == 2 ]] || fail "partition_speed.sh PARTS=x: exit code $rc, not 2"
grep -q "PARTS must be a non-negative integer" stderr.txt || fail "partition_speed.sh PARTS=x: $(cat stderr.txt)"
BIN="$BIN" CACHE="$WORK/cache" OUT="$WORK/out" DRY_RUN=1 THREADS="1 2" "$SCRIPT" >dry.txt 2>&1 ||
  fail "partition_speed.sh DRY_RUN=1: $(tail -2 dry.txt)"
grep -q "OMP_NUM_THREADS=2 .*ht-partition .*-m 4 -n 4 --method multilevel" dry.txt || fail "dry run: multilevel at 2 threads"
grep -q "ht-convert --generate web --vertices 65600000 --edges 2500000000" dry.txt || fail "dry run: friendster-like graph"
grep -q "metis skipped on friendster" dry.txt || fail "dry run: METIS not skipped beyond its idx_t"
grep -q "ht-reorganize .*--no-check" dry.txt || fail "dry run: no reorganize --no-check"

finish "partition_speed: all checks passed"
