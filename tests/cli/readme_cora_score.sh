#!/usr/bin/env bash
# The README's Cora pipeline, as the README writes it (its ```sh block under
# "## The pipeline", read from README.md so that the test follows the doc),
# with --predict-out added: the predictions file, scored by the Python module
# (python3 -m hongtu score), gives the test accuracy the summary reports (the
# best validation epoch's: the outputs come from that epoch by default).
# Usage: readme_cora_score.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train
PY="${HT_PYTHON:-/usr/bin/python3}"
"$PY" -c 'import numpy, scipy' 2>/dev/null || { echo "skip: $PY lacks numpy or scipy (set HT_PYTHON)"; exit 77; }
DATA="$SRC/../shared/datasets"
[[ -d $DATA/cora/raw ]] || { echo "skip: $DATA/cora/raw is not there"; exit 77; }
export PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1

# The block: from the first ```sh line after "## The pipeline" to its closing ```.
awk '/^## The pipeline/ { p = 1 } p && /^```sh$/ { inside = 1; next } inside && /^```$/ { exit } inside' \
  "$SRC/README.md" > block.sh
grep -q "ht-train" block.sh || { echo "FAIL: no ht-train command in README.md's pipeline block"; exit 1; }
# Its paths: the binaries are $B (set by the block itself: B=build/bin), the data ../shared/datasets.
sed -i "s#^B=build/bin#B=$BIN#; s#\.\./shared/datasets#$DATA#g" block.sh
# The train command (last line of a continued command) gets the predictions file and quiet logs.
sed -i '/ht-train/,/[^\\]$/ s#--backend cpu$#--backend cpu --predict-out pred.csv --metrics-out m.jsonl#' block.sh
grep -q -- "--predict-out pred.csv" block.sh || { echo "FAIL: the README's ht-train command does not end in --backend cpu"; cat block.sh; exit 1; }
bash -e block.sh > run.log 2>&1 || { echo "FAIL: the README's pipeline:"; tail -20 run.log; exit 1; }

summary=$(sed -n 's/.*test accuracy there \([0-9.]*\).*/\1/p' run.log | tail -1)
[[ -n $summary ]] || { echo "FAIL: no 'test accuracy there' line in the summary"; tail -20 run.log; exit 1; }
"$PY" -m hongtu score pred.csv cora.htg test > score.json 2>&1 || { fail "python3 -m hongtu score:"; cat score.json; }
scored=$("$PY" -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["accuracy"])' score.json 2>/dev/null)
[[ $scored == "$summary" ]] || fail "predictions scored $scored by the Python module, the summary says $summary"
finish "ok: the README's Cora pipeline: predictions score $scored, as the summary says"
