#!/usr/bin/env bash
# ht-train's time-to-accuracy options on the command line (CPU backend, a small generated graph):
# --early-stop, --target-acc and --time-limit stop and say when; --runs K prints a line per run and the mean ±
# std; the predictions of the best epoch score the summary's test accuracy; --save-model FILE.npz
# loads with numpy; the metrics summary records the options, version and start time; refusals
# are usage errors (exit 2) with one line. Then bench/tta.py's report on that run and a baseline
# result, and bench/tta.sh's argument handling (the bench itself needs a GPU and torch).
# Usage: train_tta.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-train
PY=/usr/bin/python3
"$PY" -c "import numpy" 2>/dev/null || PY=python3
"$PY" -c "import numpy" 2>/dev/null || { echo "skip: no python3 with numpy"; exit 77; }
export OMP_NUM_THREADS=1

"$BIN/ht-convert" -q --generate community --vertices 600 --classes 4 --feature-dim 8 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }
T=("$BIN/ht-train" -q --graph g.htg --gpus 2 --chunks 2 --backend cpu --dropout 0.5 --lr 0.05)

# Early stop, best-epoch outputs, the .npz model, the metrics' provenance.
"${T[@]}" --epochs 300 --early-stop 3 --metrics-out m.jsonl --predict-out p.csv --save-model m.npz \
  >out.txt 2>err.txt || { fail "early stop run: $(cat err.txt)"; }
grep -q -E '^stopped after [0-9]+ of 300 epochs \(early stop \(patience 3\)\); best epoch [0-9]+ reached [0-9.]+ s after the start of training, [0-9.]+ s after the start of the process; outputs from the (best|last) epoch [0-9]+$' out.txt ||
  { fail "early stop line"; cat out.txt; }
"$PY" - m.jsonl p.csv m.npz g.htg "$SRC/bench" >py.txt 2>&1 <<'EOF' || { fail "early stop outputs"; cat py.txt; }
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[5])
import htg
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r for r in rows if r["type"] == "summary"][0]
epochs = [r for r in rows if r["type"] == "epoch"]
assert s["stop_reason"] == "early stop (patience 3)", s["stop_reason"]
assert s["epochs"] == s["best_epoch"] + 4 == len(epochs), (s["epochs"], s["best_epoch"])
assert s["epochs_planned"] == 300
assert s["options"]["--early-stop"] == "3" and s["options"]["--backend"] == "cpu", s["options"]
assert s["options"]["--outputs-from"] == "best" and s["options"]["--no-bias"] == "false", s["options"]
assert s["version"].startswith("hongtu ") and s["host"] and s["start_time"].endswith("Z"), s
assert 0 < s["best_train_seconds"] <= s["train_seconds"] and s["best_process_seconds"] + 0.011 > s["best_train_seconds"]  # /proc ticks: 10 ms
assert all("train_seconds" in e and "process_seconds" in e for e in epochs)
# The predictions score exactly the summary's test accuracy.
g = htg.read_htg(sys.argv[4])
pred = np.loadtxt(sys.argv[2], delimiter=",", skiprows=1, dtype=np.int64)
labels, split = np.asarray(g.labels), np.asarray(g.split)
p = np.empty(g.num_vertices, dtype=np.int64)
p[pred[:, 0]] = pred[:, 1]
test = (split == 3) & (labels >= 0)
acc = float((p[test] == labels[test]).sum()) / test.sum()
assert acc == s["test_acc_at_best_val"], (acc, s["test_acc_at_best_val"])
z = np.load(sys.argv[3])
config = json.loads(z["config"].item())
assert config["format"] == "hongtu-model" and config["dims"] == [8, 16, 4], config
assert z["l0.W"].shape == (8, 16) and z["l0.W"].dtype == np.float32 and z["l1.W"].shape == (16, 4)
assert config["tensors"] == [k for k in z.files if k != "config"], (config["tensors"], z.files)
EOF

# Target accuracy.
"${T[@]}" --epochs 300 --target-acc 0.5 --metrics-out t.jsonl >out.txt 2>err.txt || fail "target run: $(cat err.txt)"
grep -q -E '^stopped after [0-9]+ of 300 epochs \(target accuracy 0.5 reached\);.*; target 0.5 at epoch [0-9]+, [0-9.]+ s \([0-9.]+ s\)$' out.txt ||
  { fail "target line"; cat out.txt; }

# Time limit: the first evaluation past it ends the run, with the summary and the metrics.
"${T[@]}" --epochs 1000000 --time-limit 0.3 --metrics-out tl.jsonl >out.txt 2>err.txt || fail "time limit run: $(cat err.txt)"
grep -q -E '^stopped after [0-9]+ of 1000000 epochs \(time limit 0.3 s\);' out.txt || { fail "time limit line"; cat out.txt; }
"$PY" -c "
import json
rows = [json.loads(l) for l in open('tl.jsonl')]
s = rows[-1]
assert s['type'] == 'summary' and s['stop_reason'] == 'time limit 0.3 s' and s['time_limit'] == 0.3, s
last = [r for r in rows if r['type'] == 'epoch'][-1]
prev = [r for r in rows if r['type'] == 'epoch'][-2]
assert last['train_seconds'] >= 0.3 > prev['train_seconds'], (prev['train_seconds'], last['train_seconds'])
" 2>py.txt || { fail "time limit record"; cat py.txt; }

# Several runs.
"${T[@]}" --epochs 4 --runs 3 --seed 10 --metrics-out r.jsonl >out.txt 2>err.txt || fail "runs: $(cat err.txt)"
for k in 0 1 2; do
  grep -q "^run $k (seed 1$k): best validation " out.txt || { fail "no line for run $k"; cat out.txt; }
done
grep -q -E '^3 runs: test accuracy at best validation [0-9.]+ ± [0-9.]+; time to it [0-9.]+ ± [0-9.]+ s \(train\)' out.txt ||
  { fail "runs line"; cat out.txt; }
"$PY" -c "
import json, statistics, sys
rows = [json.loads(l) for l in open('r.jsonl')]
runs = [r for r in rows if r['type'] == 'runs'][0]
accs = [r['test_acc_at_best_val'] for r in rows if r['type'] == 'summary']
assert [r['seed'] for r in rows if r['type'] == 'summary'] == [10, 11, 12]
assert abs(runs['test_acc_at_best_val_mean'] - statistics.mean(accs)) < 1e-12
assert abs(runs['test_acc_at_best_val_std'] - statistics.stdev(accs)) < 1e-12
assert len(runs['per_run']) == 3
" 2>py.txt || { fail "runs record"; cat py.txt; }

# Refusals: one line naming the option, before any work (exit 1, as ht-train's other option
# checks after parsing; a value CLI11 rejects is a usage error, exit 2).
expect_refused() {  # expect_refused NAME PATTERN RC ARGS...
  local name=$1 pattern=$2 want=$3 rc
  shift 3
  "$BIN/ht-train" -q --graph g.htg --backend cpu "$@" >/dev/null 2>stderr.txt
  rc=$?
  check_one_error_line "$name" "$pattern" $rc
  [[ $rc -eq $want ]] || fail "$name: exit code $rc, not $want"
}
expect_refused "runs with a model" "--save-model: not with --runs 2" 1 --epochs 2 --runs 2 --save-model x.htmodel
expect_refused "outputs-from alone" "--outputs-from: applies to --save-model" 2 --epochs 2 --outputs-from last
expect_refused "target above 1" "--target-acc" 2 --epochs 2 --target-acc 1.5
expect_refused "early stop negative" "--early-stop" 2 --epochs 2 --early-stop -1
expect_refused "time limit negative" "--time-limit" 2 --epochs 2 --time-limit -1
expect_refused "npz model loaded" "--load-model" 1 --predict-only --load-model m.npz --predict-out q.csv
expect_refused "runs with predict-only" "--runs" 2 --predict-only --runs 2 --load-model m.npz --predict-out q.csv

# Embeddings: the first hidden layer's output, N x 16, non-negative (after the ReLU).
expect_refused "embeddings of a fused layer" "--no-fuse-transforms" 1 --epochs 2 --embeddings-out e.npy
expect_refused "embeddings layer alone" "--embeddings-layer: needs --embeddings-out" 2 --epochs 2 --embeddings-layer 2
"${T[@]}" --epochs 3 --no-fuse-transforms --embeddings-out e.npy >/dev/null 2>err.txt || fail "embeddings: $(cat err.txt)"
"$PY" -c "
import numpy as np
e = np.load('e.npy')
assert e.shape == (600, 16) and e.dtype == np.float32 and (e >= 0).all() and (e > 0).any(), e.shape
" 2>py.txt || { fail "embeddings file"; cat py.txt; }

# The bench's report on these runs and a baseline's result; the bench's argument handling.
mkdir res
cp m.jsonl res/g__hongtu-inmem-1gpu.jsonl
cat >res/g__minibatch-sage.json <<'EOF'
{"system": "minibatch-sage", "graph": "g", "status": "ok", "epochs": 3, "epoch_s_median": 0.5,
 "best_val_acc": 0.6, "test_acc_at_best_val": 0.55, "best_epoch": 2, "best_seconds": 1.5, "setup_seconds": 0.1,
 "peak_gpu_bytes": 1073741824, "sampler_note": "plain PyTorch on the GPU",
 "curve": [[0.5, 0.3, 0.3, 0], [1.0, 0.45, 0.4, 1], [1.5, 0.6, 0.55, 2]]}
EOF
"$PY" "$SRC/bench/tta.py" report res --table res/t.md --target g=0.45 >out.txt 2>err.txt || { fail "report: $(cat err.txt)"; }
grep -q -F '| g | minibatch-sage | 0.45 | 0.5000 | 1.00 | 0.6000 | 0.5500 | 1.50 | 3 | 0.10 | 1.00 GiB | plain PyTorch on the GPU |' res/t.md ||
  { fail "report row of the baseline"; cat res/t.md; }
grep -q -E '^\| g \| hongtu-inmem-1gpu \| 0.45 \| [0-9.]+ \| [0-9.]+ \|' res/t.md || { fail "report row of hongtu"; cat res/t.md; }
"$PY" "$SRC/bench/tta.py" report res --table res/t2.md >/dev/null 2>err.txt || fail "report with the default target"
# A learning-rate sweep: results named SYSTEM-lrX; the best-lr table keeps the fastest to the target.
mkdir sweep
for lr in 0.01 0.003; do
  t=$([[ $lr == 0.01 ]] && echo 2.0 || echo 1.0)
  cat >sweep/g__minibatch-gcn-lr$lr.json <<EOF2
{"system": "minibatch-gcn-lr$lr", "graph": "g", "status": "ok", "lr": $lr, "epochs": 2, "epoch_s_median": 0.5,
 "best_val_acc": 0.7, "test_acc_at_best_val": 0.65, "best_epoch": 1, "best_seconds": $t, "stop_reason": "time limit 2 s",
 "curve": [[0.5, 0.3, 0.3, 0], [$t, 0.7, 0.65, 1]]}
EOF2
done
cat >sweep/g__pyg-full-lr0.03.json <<'EOF2'
{"system": "pyg-full-lr0.03", "graph": "g", "status": "oom", "lr": 0.03, "note": "CUDA out of memory at stage train"}
EOF2
cp m.jsonl sweep/g__hongtu-inmem-1gpu-lr0.05.jsonl  # trained with --lr 0.05 (T above)
"$PY" "$SRC/bench/tta.py" report sweep --table sweep/t.md --best-table sweep/b.md --target g=0.6 >out.txt 2>err.txt ||
  { fail "sweep report: $(cat err.txt)"; }
grep -q -F '| g | minibatch-gcn | 0.6 | 0.003: 1.00; 0.01: 2.00 | 0.003 | 1.00 | 0.5000 | 0.7000 | 0.6500 | — |' sweep/b.md ||
  { fail "best-lr row"; cat sweep/b.md; }
grep -q -F '| g | pyg-full | 0.6 | 0.03: oom |' sweep/b.md || { fail "best-lr row of a failed sweep"; cat sweep/b.md; }
grep -q -E '^\| g \| hongtu-inmem-1gpu \| 0.6 \| 0.05: [0-9.]+ \| 0.05 \|' sweep/b.md || { fail "best-lr row of hongtu"; cat sweep/b.md; }
grep -q -F 'stopped by the time limit 2 s' sweep/t.md || { fail "time limit note"; cat sweep/t.md; }
# The default target: 0.98 x the best of hongtu's in-memory learning rates.
"$PY" "$SRC/bench/tta.py" report sweep --table sweep/t2.md >/dev/null 2>err.txt || fail "sweep report, default target"
"$PY" - sweep/t2.md m.jsonl <<'EOF2' || fail "default target of a sweep"
import json, math, sys
best = [json.loads(l) for l in open(sys.argv[2])][-1]["best_val_acc"]
want = math.floor(0.98 * best * 1000) / 1000
rows = [l.split("|") for l in open(sys.argv[1]) if l.startswith("| g |")]
assert all(float(r[3]) == want for r in rows), (want, rows)
EOF2
# A baseline sweep without torch: one skipped result per rate, named by it; bad rates refused.
mkdir b && "$PY" "$SRC/bench/tta.py" baseline g.htg --lr 0.01 0.003 --time-limit 5 --epochs 2 --device cpu --label mb --json b/x.json \
  >/dev/null 2>err.txt
"$PY" - b <<'EOF2' || fail "baseline sweep files"
import json, os, sys
names = sorted(os.listdir(sys.argv[1]))
assert names == ["x-lr0.003.json", "x-lr0.01.json"], names
for n in names:
    r = json.load(open(os.path.join(sys.argv[1], n)))
    assert r["system"] == "mb-" + n[2:-5] and r["time_limit"] == 5, r
    assert r["status"] == "skipped" or (r["status"] == "ok" and r["epochs"] == 2 and len(r["curve"]) == 2), r
EOF2
"$PY" "$SRC/bench/tta.py" baseline g.htg --lr 0.01 0.01 >/dev/null 2>stderr.txt
[[ $? -eq 2 ]] && grep -q "given twice" stderr.txt || fail "tta.py baseline --lr twice"
"$PY" "$SRC/bench/tta.py" baseline g.htg --lr 0 >/dev/null 2>stderr.txt
[[ $? -eq 2 ]] || fail "tta.py baseline --lr 0"
"$PY" "$SRC/bench/tta.py" env >env.json 2>/dev/null || fail "tta.py env"
"$PY" -c "import json; d = json.load(open('env.json')); assert 'torch' in d and 'pyg_lib' in d" || fail "env keys"
bash "$SRC/bench/tta.sh" --bogus >/dev/null 2>stderr.txt
[[ $? -eq 2 ]] && grep -q "unknown argument '--bogus'" stderr.txt || fail "tta.sh --bogus"
bash "$SRC/bench/tta.sh" --help >help.txt 2>&1 && grep -q -- "--smoke" help.txt || fail "tta.sh --help"
HT_BIN=/nonexistent bash "$SRC/bench/tta.sh" --smoke --out x >/dev/null 2>stderr.txt
[[ $? -eq 1 ]] && grep -q "not built" stderr.txt || fail "tta.sh without the tools"
for bad in "--lr-list '0.01 0.01'" "--lr-list abc" "--systems bogus" "--minibatch sage:15-10" "--time-cap 0" "--chunks x"; do
  eval bash "$SRC/bench/tta.sh" "$bad" >/dev/null 2>stderr.txt
  [[ $? -eq 2 ]] && [[ $(wc -l <stderr.txt) -eq 1 ]] || { fail "tta.sh $bad: not refused in one line"; cat stderr.txt; }
done
# The bench end to end on the CPU backend: a sweep of two rates under a time cap (the baselines
# are recorded as skipped without torch).
HT_BIN="$BIN" bash "$SRC/bench/tta.sh" --smoke --backend cpu --out sm --graphs community_smoke --epochs 1 \
  --systems "hongtu-inmem pyg-full" --lr-list "0.01 0.05" --time-cap 1 >sm.txt 2>&1 || { fail "tta.sh smoke"; tail sm.txt; }
for f in community_smoke__hongtu-inmem-1gpu-lr0.01.jsonl community_smoke__hongtu-inmem-1gpu-lr0.05.jsonl \
  community_smoke__pyg-full-lr0.01.json community_smoke__pyg-full-lr0.05.json tta_table.md tta_best_lr.md; do
  [[ -s sm/$f ]] || fail "tta.sh smoke: no sm/$f"
done
grep -q -E '^\| community_smoke \| hongtu-inmem-1gpu \| [0-9.]+ \| 0.01: ' sm/tta_best_lr.md || { fail "smoke best-lr table"; cat sm/tta_best_lr.md; }

finish "ht-train time to accuracy: all checks passed"
