#!/usr/bin/env bash
# The benchmark tools of bench/ on the CPU: bench/htg.py reads what ht-convert
# writes (checked against `ht-convert --inspect --json`) and rejects corrupted
# files; pyg_baseline.py's and pyg_accuracy.py's --help and --load-only work
# without torch; sage_vs_pyg.sh's --help;
# bench/run.sh prints the paper-size commands with --dry-run, runs the tiny
# workload on the CPU executor into a table that matches the metrics files,
# reuses its cache, reports an injected failure as FAILED with the log path; and
# report.py computes the PyG ratio and the SPEC targets from a PyG result.
# Usage: bench_tools.sh BIN_DIR SOURCE_DIR
set -u
BIN=$1; SRC=$2
PY="${HT_PYTHON:-/usr/bin/python3}"
for t in ht-convert ht-partition ht-reorganize ht-train; do
  [ -x "$BIN/$t" ] || { echo "skipped: $BIN/$t not built"; exit 77; }
done
"$PY" -c 'import numpy' 2>/dev/null || { echo "skipped: $PY has no numpy (set HT_PYTHON)"; exit 77; }
export HT_PYTHON="$PY" PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in bench/

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() {  # description, command...
  local what=$1; shift
  "$@" > "$TMP/check.out" 2>&1 || { fail "$what"; sed 's/^/  | /' "$TMP/check.out" | tail -20; }
}

# --- htg.py against ht-convert --inspect -------------------------------------------------------
G=$TMP/g.htg
"$BIN/ht-convert" -q --generate random --vertices 500 --edges 6000 --feature-dim 8 --classes 3 --seed 7 -o "$G" \
  || { echo "FAIL: ht-convert --generate"; exit 1; }
"$BIN/ht-convert" --inspect "$G" --json > "$TMP/inspect.json" || fail "ht-convert --inspect"
check "htg.py agrees with ht-convert --inspect" "$PY" - "$SRC/bench" "$G" "$TMP/inspect.json" <<'EOF'
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import htg
g = htg.read_htg(sys.argv[2])
ins = json.load(open(sys.argv[3]))
s = g.summary()
for k in ("num_vertices", "num_edges", "feature_dim", "num_classes", "bytes", "header_checksum", "class_counts",
          "unlabeled", "split", "flags", "id_bytes", "has_orig_ids", "weighted"):
    assert s[k] == ins[k], (k, s[k], ins[k])
# Statistics recomputed from the arrays: the CSC is read the right way round.
dst = g.destinations()
src = np.asarray(g.sources).astype(np.int64)
indeg, outdeg = np.bincount(dst, minlength=g.num_vertices), np.bincount(src, minlength=g.num_vertices)
assert [indeg.min(), indeg.max()] == [ins["in_degree"]["min"], ins["in_degree"]["max"]], "in-degree"
assert [outdeg.min(), outdeg.max()] == [ins["out_degree"]["min"], ins["out_degree"]["max"]], "out-degree"
assert int(np.count_nonzero(src == dst)) == ins["self_loops"], "self loops"
pairs = np.unique(dst * g.num_vertices + src)
assert g.num_edges - pairs.size == ins["duplicate_edges"], "duplicates"
assert int(np.count_nonzero(np.asarray(g.features))) == ins["feature_nonzeros"], "feature nonzeros"
assert g.features.shape == (500, 8) and g.labels.shape == (500,) and g.split.shape == (500,)
print("ok")
EOF

# Corruptions: truncated, header byte changed, a source id out of range (the data checks).
head -c 20000 "$G" > "$TMP/trunc.htg"
"$PY" "$SRC/bench/htg.py" "$TMP/trunc.htg" > /dev/null 2> "$TMP/err" && fail "truncated file accepted"
grep -q "trunc.htg.*truncated" "$TMP/err" || fail "truncation message: $(cat "$TMP/err")"
cp "$G" "$TMP/hdr.htg"; printf '\x05' | dd of="$TMP/hdr.htg" bs=1 seek=70 conv=notrunc 2>/dev/null
"$PY" "$SRC/bench/htg.py" "$TMP/hdr.htg" > /dev/null 2> "$TMP/err" && fail "corrupted header accepted"
grep -q "hdr.htg (byte 32): header checksum" "$TMP/err" || fail "header message: $(cat "$TMP/err")"
SRC_OFF=$("$PY" -c "import sys; sys.path.insert(0, '$SRC/bench'); import htg; print(htg.read_container('$G')[2]['csc_sources'].offset)")
cp "$G" "$TMP/ids.htg"; printf '\xff\xff\xff\x7f' | dd of="$TMP/ids.htg" bs=1 seek="$SRC_OFF" conv=notrunc 2>/dev/null
"$PY" "$SRC/bench/htg.py" "$TMP/ids.htg" > /dev/null 2> "$TMP/err" && fail "source id >= N accepted"
grep -q "csc_sources.*>= N = 500" "$TMP/err" || fail "source id message: $(cat "$TMP/err")"

# --- pyg_baseline.py without torch -------------------------------------------------------------
PYG="$SRC/bench/pyg_baseline.py"
"$PY" "$PYG" --help > "$TMP/help" 2>&1 || fail "pyg_baseline.py --help exit code"
grep -q -- "--model" "$TMP/help" && grep -q -- "--load-only" "$TMP/help" || fail "pyg_baseline.py --help text"
"$PY" "$PYG" "$G" --layers 8-16-3 --load-only > "$TMP/load.json" || fail "pyg_baseline.py --load-only"
check "pyg_baseline.py --load-only shapes" "$PY" - "$TMP/load.json" "$TMP/inspect.json" <<'EOF'
import json, sys
got, ins = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["num_vertices"] == ins["num_vertices"] and got["num_edges"] == ins["num_edges"]
assert got["train"] == ins["split"]["train"] and got["test"] == ins["split"]["test"]
assert got["edge_index_shape"] == [2, ins["num_edges"]]
assert got["max_source"] < ins["num_vertices"] and got["max_destination"] < ins["num_vertices"]
assert got["layers"] == [8, 16, 3]
EOF
"$PY" "$PYG" "$G" --layers 8-16-4 --load-only > /dev/null 2> "$TMP/err"
[ $? -eq 2 ] && grep -q "C = 3 classes" "$TMP/err" || fail "pyg_baseline.py accepts layers that do not fit the graph"
# The community workloads' graph (SBM generator: its own split, no --train-fraction).
"$BIN/ht-convert" -q --generate community --vertices 600 --avg-degree 8 --feature-dim 6 --classes 4 --seed 2 \
  -o "$TMP/c.htg" || fail "ht-convert --generate community"
"$BIN/ht-convert" --inspect "$TMP/c.htg" --json > "$TMP/c.inspect.json" || fail "ht-convert --inspect community"
"$PY" "$PYG" "$TMP/c.htg" --layers 6-16-4 --load-only > "$TMP/c.load.json" || fail "pyg_baseline.py --load-only community"
check "pyg_baseline.py reads the community graph" "$PY" - "$TMP/c.load.json" "$TMP/c.inspect.json" <<'EOF'
import json, sys
got, ins = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["num_vertices"] == ins["num_vertices"] == 600 and got["num_edges"] == ins["num_edges"] > 0
assert got["train"] == ins["split"]["train"] > 0 and got["test"] == ins["split"]["test"] > 0
assert got["edge_index_shape"] == [2, ins["num_edges"]] and got["layers"] == [6, 16, 4]
EOF
if ! "$PY" -c 'import torch, torch_geometric' 2>/dev/null; then
  "$PY" "$PYG" "$G" > /dev/null 2> "$TMP/err" && fail "pyg_baseline.py trained without torch?"
  grep -q "needs torch and torch_geometric" "$TMP/err" || fail "no-torch message: $(cat "$TMP/err")"
fi

# --- pyg_accuracy.py and sage_vs_pyg.sh without torch (issue 38) ---------------------------------
ACC="$SRC/bench/pyg_accuracy.py"
"$PY" "$ACC" --help > "$TMP/acc_help" 2>&1 || fail "pyg_accuracy.py --help exit code"
grep -q -- "--weight-decay" "$TMP/acc_help" && grep -q -- "--runs" "$TMP/acc_help" || fail "pyg_accuracy.py --help text"
"$PY" "$ACC" "$TMP/c.htg" --hidden 16 --load-only > "$TMP/acc_load.json" || fail "pyg_accuracy.py --load-only"
check "pyg_accuracy.py --load-only: ht-train's --layers auto and the split" "$PY" - "$TMP/acc_load.json" "$TMP/c.inspect.json" <<'EOF'
import json, sys
got, ins = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert got["layers"] == [6, 16, 4], got["layers"]
assert got["train"] == ins["split"]["train"] > 0 and got["val"] == ins["split"]["val"] > 0
assert got["test"] == ins["split"]["test"] > 0 and got["num_edges"] == ins["num_edges"]
EOF
"$PY" "$ACC" "$TMP/c.htg" --layers 6-16-5 --load-only > /dev/null 2> "$TMP/err"
[ $? -eq 2 ] && grep -q "C = 4 classes" "$TMP/err" || fail "pyg_accuracy.py accepts layers that do not fit the graph"
"$PY" "$ACC" "$TMP/c.htg" --runs 0 --load-only > /dev/null 2>&1
[ $? -eq 2 ] || fail "pyg_accuracy.py accepts --runs 0"
bash "$SRC/bench/sage_vs_pyg.sh" --help | grep -q "EPOCHS_BIG" || fail "sage_vs_pyg.sh --help"
bash "$SRC/bench/sage_vs_pyg.sh" extra > /dev/null 2>&1
[ $? -eq 2 ] || fail "sage_vs_pyg.sh accepts an argument"

# --- run.sh --dry-run --------------------------------------------------------------------------
RUN="$SRC/bench/run.sh"
bash "$RUN" "$BIN" "$TMP/dry" --quick --dry-run > "$TMP/dry.txt" 2>&1 || fail "run.sh --dry-run exit code"
[ -e "$TMP/dry" ] && fail "--dry-run created the output folder"
grep -q -- "ht-convert --generate random --vertices 232965 --edges 114000000 --feature-dim 602 --classes 41" "$TMP/dry.txt" \
  || fail "--dry-run: reddit-like generation command"
[ "$(grep -c -- '--generate' "$TMP/dry.txt")" -eq 1 ] || fail "--dry-run generates the graph more than once"
[ "$(grep -c 'ht-train .*--epochs 13 --warmup 3 --eval-every 13' "$TMP/dry.txt")" -eq 2 ] || fail "--dry-run: two ht-train runs"
grep -q "ht-partition .*-m 1 -n 4 --method range" "$TMP/dry.txt" || fail "--dry-run: range partition n=4"
grep -q "pyg_baseline.py .*--layers 602-256-41" "$TMP/dry.txt" || fail "--dry-run: PyG baseline"
bash "$RUN" "$BIN" "$TMP/dry2" --quick --dry-run --train-args "--no-overlap --gcn-order aggregate" > "$TMP/dry2.txt" 2>&1 \
  || fail "run.sh --train-args exit code"
[ "$(grep -c 'ht-train .*--metrics-out [^ ]* --no-overlap --gcn-order aggregate' "$TMP/dry2.txt")" -eq 2 ] \
  || fail "--train-args: not passed to both ht-train runs"
grep -q "pyg_baseline.py .*--no-overlap" "$TMP/dry2.txt" && fail "--train-args leaked into the PyG run"
bash "$RUN" "$BIN" "$TMP/dryc" --workloads community --gpus 2 --dry-run > "$TMP/dryc.txt" 2>&1 \
  || fail "run.sh --workloads community --dry-run exit code"
grep -q -- "ht-convert --generate community --vertices 2450000 --avg-degree 50 --feature-dim 100 --classes 47" \
  "$TMP/dryc.txt" || fail "--dry-run: community generation command"
[ "$(grep -c -- '--generate' "$TMP/dryc.txt")" -eq 1 ] || fail "--dry-run: community graph generated more than once"
for mn in "1 -n 1" "1 -n 4" "1 -n 8" "2 -n 1" "2 -n 4" "2 -n 8"; do
  grep -q "ht-partition .*-m $mn --method metis" "$TMP/dryc.txt" || fail "--dry-run: community METIS partition -m $mn"
done
grep -q -- "--method range" "$TMP/dryc.txt" && fail "--dry-run: community partitioned by range"
# GCN: 1 GPU n = 1, 4, 8, n = 4 baseline; 2 GPUs n = 1, n = 4 x 3 modes, n = 8. GAT: 1 GPU x 3; 2 GPUs n = 1, n = 4 x 2.
[ "$(grep -c 'ht-train .*--model gcn --layers 100-256-256-47 ' "$TMP/dryc.txt")" -eq 9 ] || fail "--dry-run: community GCN runs"
[ "$(grep -c 'ht-train .*--model gat --layers 100-64-64-47 .*--heads 4 ' "$TMP/dryc.txt")" -eq 6 ] \
  || fail "--dry-run: community GAT runs"
[ "$(grep -c 'pyg_baseline.py .*community' "$TMP/dryc.txt")" -eq 2 ] || fail "--dry-run: community PyG runs"
bash "$RUN" "$BIN" "$TMP/dry" --workloads nosuch --dry-run > /dev/null 2> "$TMP/err"
[ $? -eq 2 ] && grep -q "unknown workload 'nosuch'" "$TMP/err" || fail "unknown workload not refused"

# --- run.sh on the tiny workload, CPU executor --------------------------------------------------
OUT=$TMP/out
bash "$RUN" "$BIN" "$OUT" --workloads tiny-gcn --backend cpu --epochs 3 --warmup 1 > "$TMP/run.txt" 2>&1 \
  || { fail "run.sh tiny-gcn exit code"; tail -30 "$TMP/run.txt"; }
[ -s "$OUT/summary.md" ] || fail "no summary.md"
check "table matches the metrics files" "$PY" - "$OUT" <<'EOF'
import json, os, sys
out = sys.argv[1]
table = open(os.path.join(out, "summary.md")).read()
runs = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "runs.tsv"))]
ht = [r for r in runs if r[1] == "ht"]
assert len(ht) == 7, [r[0] for r in runs]   # 1 GPU: n=1, n=4 full/baseline; 2 GPUs: n=1, n=2 x 3 modes
for r in ht:
    assert r[10] == "ok", r
    summ = [json.loads(l) for l in open(r[12]) if '"summary"' in l][-1]
    row = [l for l in table.splitlines() if l.startswith("| tiny-gcn |") and "| %s | %s | %s |" % (r[7], r[8], r[9]) in l]
    assert len(row) == 1, (r[0], row)
    cells = [c.strip() for c in row[0].split("|")]
    assert cells[6] == "%.1f" % summ["epoch_ms_median"], (cells[6], summ["epoch_ms_median"])
    assert cells[15] == "%.4f" % summ["test_acc_at_best_val"], cells[15]
pyg = [r for r in runs if r[1] == "pyg"]
assert len(pyg) == 1 and pyg[0][10] in ("ok", "SKIPPED"), pyg
assert "tiny-gcn, 2 GPUs × 2 chunks: baseline" in table and "speedup of full over baseline" in table
assert "tiny-gcn, 1 chunks per GPU, full: 1 GPU" in table          # scaling line
assert "| tiny | 2 | 2 |" in table                                 # preprocessing row
time_rows = [l for l in table.split("## Where the epoch goes")[1].split("\n## ")[0].splitlines()
             if l.startswith("| tiny-gcn.m")]
assert len(time_rows) == 7 and all("| not measured |" in l for l in time_rows), time_rows
EOF
grep -q "generate tiny" "$OUT/steps.tsv" || fail "steps.tsv has no generation step"
# Second run into the same folder: everything comes from the cache.
bash "$RUN" "$BIN" "$OUT" --workloads tiny-gcn --backend cpu --epochs 2 --warmup 1 > "$TMP/run2.txt" 2>&1 \
  || fail "second run.sh exit code"
grep -q -E "generate|partition|reorganize" "$OUT/steps.tsv" && fail "cached graph/partition/plan were remade"
grep -q "generate tiny.*: cached" "$TMP/run2.txt" || fail "second run does not say it reused the graph"

# An ht-train that fails: every run is FAILED with its log, the script goes on and exits 1.
mkdir "$TMP/badbin"
for t in ht-convert ht-partition ht-reorganize; do ln -s "$(cd "$BIN" && pwd)/$t" "$TMP/badbin/$t"; done
printf '#!/bin/sh\necho "ht-train: error: injected failure" >&2\nexit 3\n' > "$TMP/badbin/ht-train"
chmod +x "$TMP/badbin/ht-train"
HT_BENCH_CACHE=$OUT/cache bash "$RUN" "$TMP/badbin" "$TMP/bad" --workloads tiny-gcn --backend cpu --no-pyg \
  > "$TMP/bad.txt" 2>&1
[ $? -eq 1 ] || fail "run.sh with a failing ht-train should exit 1"
[ "$(grep -c 'FAILED (logs/tiny-gcn\.m[0-9]\.n[0-9]\.[a-z0-9]*\.log)' "$TMP/bad/summary.md")" -eq 7 ] \
  || fail "failed runs not reported as FAILED with their logs: $(grep -c FAILED "$TMP/bad/summary.md")"
grep -q "injected failure" "$TMP/bad/summary.md" || fail "the failure's error line is not in the summary"

# A time budget: the first step runs (and fails slowly), the rest are SKIPPED, not FAILED.
# The budget leaves a few seconds for what comes before the first step (report.py after the
# skipped PyG run) on a loaded machine; the step outlasts it.
printf '#!/bin/sh\n[ "$1" = --version ] && exit 0\nsleep 6\nexit 3\n' > "$TMP/badbin/ht-train"
HT_BENCH_CACHE=$OUT/cache bash "$RUN" "$TMP/badbin" "$TMP/budget" --workloads tiny-gcn --backend cpu --no-pyg \
  --budget 5 > "$TMP/budget.txt" 2>&1
[ $? -eq 1 ] || fail "run.sh with a budget and one failed run should exit 1"
[ "$(grep -c '| FAILED (logs/' "$TMP/budget/summary.md")" -eq 1 ] || fail "budget: one FAILED run expected"
[ "$(grep -c '| SKIPPED (time budget) |' "$TMP/budget/summary.md")" -eq 6 ] || fail "budget: six SKIPPED runs expected"

# report.py with a PyG result: ratio column and SPEC targets (a PyG result written as the script would).
check "report.py PyG ratio and targets" "$PY" - "$OUT" "$SRC/bench/report.py" <<'EOF'
import json, os, subprocess, sys
out, report = sys.argv[1], sys.argv[2]
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "runs.tsv"))]
inmem = [r for r in rows if r[1] == "ht" and r[7:10] == ["1", "1", "full"]][0]
ms = [json.loads(l) for l in open(inmem[12]) if '"summary"' in l][-1]["epoch_ms_median"]
res = os.path.join(out, "results", "fixture.pyg.json")
for oom, expect_cell, expect_line in ((False, "| 0.50 |", "0.50× PyG (target ≤ 0.8×: met)"), (True, "| PyG OOM |", None)):
    json.dump({"epoch_ms_median": None if oom else 2 * ms, "oom": oom, "peak_gpu_bytes": 3 << 30, "test_acc": 0.5,
               "error": "x" if oom else None}, open(res, "w"))
    with open(os.path.join(out, "runs.tsv"), "w") as f:
        for r in rows:
            if r[1] == "pyg":
                r = r[:10] + ["ok", "-", res, "-", "-"]
            f.write("\t".join(r) + "\n")
    text = subprocess.run([sys.executable, report, out], check=True, capture_output=True, text=True).stdout
    row = [l for l in text.splitlines() if "| 1 | 1 | full |" in l][0]
    assert expect_cell in row, row
    if expect_line:
        assert expect_line in text, text
    pyg_row = [l for l in text.splitlines() if "| PyG |" in l][0]
    assert ("OOM" in pyg_row) == oom and "3.00 GiB" in pyg_row, pyg_row
EOF

if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "bench tools: all checks passed"
