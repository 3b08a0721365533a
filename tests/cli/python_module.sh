#!/usr/bin/env bash
# The Python module python/hongtu on a tiny graph made by ht-convert --generate:
# the graph file agrees with ht-convert --inspect --json, the partition file
# with its graph (part_of, matches), the metrics file has its epoch lines and
# summary, a predictions file scores to the summary's test accuracy, a model
# .npz loads as named arrays, OGB split ids read from csv.gz, wrong files
# raise errors naming them, and `python3 -m hongtu` prints JSON.
# Usage: python_module.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-partition ht-train
PY="${HT_PYTHON:-/usr/bin/python3}"
"$PY" -c 'import numpy' 2>/dev/null || { echo "skip: $PY lacks numpy (set HT_PYTHON)"; exit 77; }
export PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1

"$BIN/ht-convert" -q --generate community --vertices 300 --classes 3 --feature-dim 8 --seed 3 -o g.htg \
  || { echo "FAIL: ht-convert --generate"; exit 1; }
"$BIN/ht-convert" --inspect g.htg --json > inspect.json || fail "ht-convert --inspect"
"$BIN/ht-partition" -q -g g.htg -m 2 -n 2 -o g.htp >part.txt 2>&1 || { echo "FAIL: ht-partition"; cat part.txt; exit 1; }
"$BIN/ht-train" -q --graph g.htg --partition g.htp --backend cpu --epochs 5 --metrics-out m.jsonl \
  --predict-out pred.csv >train.txt 2>&1 || { echo "FAIL: ht-train"; cat train.txt; exit 1; }

"$PY" - <<'EOF' >py.txt 2>&1 || { fail "the module's checks:"; cat py.txt; }
import gzip, json, os
import numpy as np
import hongtu

g = hongtu.read_htg("g.htg")
ins = json.load(open("inspect.json"))
for key in ("num_vertices", "num_edges"):
    assert g.summary()[key] == ins[key], (key, g.summary()[key], ins[key])
assert g.num_vertices == 300 and g.feature_dim == 8 and g.num_classes == 3

p = hongtu.read_partition("g.htp")
assert (p.m, p.n, p.num_vertices) == (2, 2, 300), (p.m, p.n, p.num_vertices)
assert sorted(np.asarray(p.new_to_old).tolist()) == list(range(300))
part = p.part_of()
assert np.bincount(part).tolist() == np.diff(p.part_offsets).tolist()
assert p.matches(g)

m = hongtu.read_metrics("m.jsonl")
assert len(m["epochs"]) == 5 and m["summary"]["epochs"] == 5, m["summary"]
s = m["summary"]
score = hongtu.score_predictions("pred.csv", g, "test")
# The predictions are those of one evaluated epoch; when the best validation epoch is the last, the
# final and the best-epoch test accuracies are the same epoch's.
assert score["count"] == int(np.count_nonzero(np.asarray(g.split) == hongtu.SPLIT_TEST))
assert score["accuracy"] in (s["final_test_acc"], s["test_acc_at_best_val"]), (score, s)
if s["best_epoch"] == s["epochs"] - 1:
    assert score["accuracy"] == s["test_acc_at_best_val"] == s["final_test_acc"], (score, s)
ids, preds = hongtu.read_predictions("pred.csv")
assert len(ids) == 300 and preds.min() >= 0 and preds.max() < 3
# Scoring a chosen id list (as next to an OGB split) equals scoring the split they make.
test_ids = np.flatnonzero(np.asarray(g.split) == hongtu.SPLIT_TEST)
os.makedirs("ogb/split/x")
with gzip.open("ogb/split/x/test.csv.gz", "wt") as f:
    f.write("".join("%d\n" % v for v in test_ids))
assert np.array_equal(hongtu.ogb_split_ids("ogb", "test"), test_ids)
assert hongtu.score_predictions("pred.csv", g, ids=hongtu.ogb_split_ids("ogb", "test")) == score

np.savez("model.npz", **{"l0.W": np.ones((8, 4), np.float32), "l0.b": np.zeros((1, 4), np.float32)})
w = hongtu.load_model_npz("model.npz")
assert sorted(w) == ["l0.W", "l0.b"] and w["l0.W"].shape == (8, 4)

for path, reader, text in (("g.htp", hongtu.read_htg, "bad magic"), ("g.htg", hongtu.read_partition, "bad magic")):
    try:
        reader(path)
        raise AssertionError("%s read as the wrong kind of file" % path)
    except hongtu.HtgError as err:
        assert path in str(err) and text in str(err), err
open("bad.csv", "w").write("id,prediction\n0,x\n")
try:
    hongtu.read_predictions("bad.csv")
    raise AssertionError("bad.csv accepted")
except ValueError as err:
    assert "bad.csv:2" in str(err), err
print("module checks passed")
EOF
grep -q "module checks passed" py.txt && echo "ok: module checks"

"$PY" -m hongtu score pred.csv g.htg test > score.json 2>err.txt && "$PY" -c 'import json,sys; json.load(open("score.json"))' \
  && echo "ok: python3 -m hongtu score" || { fail "python3 -m hongtu score: $(cat err.txt)"; }
"$PY" -m hongtu partition g.htp > /dev/null 2>err.txt && echo "ok: python3 -m hongtu partition" \
  || fail "python3 -m hongtu partition: $(cat err.txt)"
"$PY" -m hongtu graph g.htp > /dev/null 2>err.txt
rc=$?
[[ $rc -eq 1 ]] && grep -q "hongtu: error: g.htp" err.txt && echo "ok: a wrong file is one error line" \
  || fail "python3 -m hongtu graph g.htp: rc $rc, $(cat err.txt)"

finish "python module: all checks passed"
