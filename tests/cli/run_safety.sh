#!/usr/bin/env bash
# Long runs that survive (issue 17) at the shell: no tool overwrites an input
# or writes two outputs to one file (hard links included); config files with
# unknown keys or malformed lines are refused with the line number; enum and
# numeric options are checked in their own terms; options that do not apply
# are refused; ht-convert refuses NaN/Inf; ht-train stops on SIGTERM after the
# epoch with a checkpoint, exit 143 and no temporary files, and the resumed
# run ends with the same predictions and losses as an uninterrupted one;
# SIGINT ends ht-convert with exit 130 and no temporary file; --predict-only.
# Usage: run_safety.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train
PY="${HT_PYTHON:-/usr/bin/python3}"
export OMP_NUM_THREADS=1

# expect_error NAME PATTERN TOOL ARGS...: non-zero exit, one stderr line matching PATTERN.
expect_error() {
  local name="$1" pattern="$2" tool="$3"
  shift 3
  "$BIN/$tool" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}
# unchanged NAME FILE CHECKSUM: the file still has its checksum.
unchanged() {
  [[ "$(cksum <"$2")" == "$3" ]] || fail "$1: $2 was changed"
}

"$BIN/ht-convert" -q --generate community --vertices 400 --classes 3 --feature-dim 6 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }
"$BIN/ht-partition" -q -g g.htg --parts 2 --chunks 2 -o p.htp || { echo "FAIL: ht-partition"; exit 1; }
"$BIN/ht-reorganize" -q -g g.htg -p p.htp -o plan.htplan || { echo "FAIL: ht-reorganize"; exit 1; }
G=$(cksum <g.htg); P=$(cksum <p.htp); L=$(cksum <plan.htplan)
ln g.htg hard.htg

# --- inputs are sacred ----------------------------------------------------------
T=(ht-train -g g.htg --epochs 2)
expect_error "metrics over graph" "'g.htg' is an input of this run" "${T[@]}" --metrics-out g.htg
expect_error "model over hard link" "is an input of this run" "${T[@]}" --save-model hard.htg
expect_error "predictions over plan" "is an input of this run" ht-train -g g.htg -p p.htp --plan plan.htplan \
  --epochs 1 --predict-out plan.htplan
expect_error "two outputs one file" "also the output of --metrics-out" "${T[@]}" --metrics-out x --save-model x
expect_error "output dir missing" "does not exist" "${T[@]}" --save-model no/dir/m
expect_error "partition stats over output" "also the output of --output" ht-partition -g g.htg -o q.htp \
  --stats-json q.htp
expect_error "partition over graph" "is an input of this run" ht-partition -g g.htg -o hard.htg
expect_error "reorganize stats over partition" "is an input of this run" ht-reorganize -g g.htg -p p.htp \
  -o q.htplan --stats-json p.htp
unchanged "inputs" g.htg "$G"
unchanged "inputs" p.htp "$P"
unchanged "inputs" plan.htplan "$L"
[[ -e x || -e q.htp || -e q.htplan ]] && fail "an output of a refused run exists"

# --- strict options and configs -------------------------------------------------
expect_error "epochs 0" "^ht-train: error: --epochs: must be in \[1, 1000000000\], got 0" "${T[@]}" --epochs 0
expect_error "numeric enum" "--comm: '0' is not one of baseline, full, p2p" "${T[@]}" --comm 0
expect_error "bad enum" "--model: 'gcm' is not one of gat, gcn, sage" "${T[@]}" --model gcm
expect_error "negative lr" "--lr: must be in" "${T[@]}" --lr -0.01
expect_error "nan lr" "--lr: must be a finite number, got nan" "${T[@]}" --lr nan
expect_error "negative seed" "--seed: must be an integer" "${T[@]}" --seed -1
expect_error "momentum 2" "--momentum: must be in \[0, 1)" "${T[@]}" --optimizer sgd --momentum 2
expect_error "heads with gcn" "--heads: applies to --model gat only" "${T[@]}" --heads 4
expect_error "out-heads with gcn" "--out-heads: applies to --model gat only" "${T[@]}" --out-heads 2
expect_error "attn-dropout with gcn" "--attn-dropout: applies to --model gat only" "${T[@]}" --attn-dropout 0.1
expect_error "gcn-order with gat" "--gcn-order: applies to --model gcn only" "${T[@]}" --model gat --gcn-order transform
expect_error "momentum with adam" "--momentum: applies to --optimizer sgd only" "${T[@]}" --momentum 0.9
expect_error "chunks with a partition" "--chunks: applies when partitioning in memory" ht-train -g g.htg -p p.htp \
  --plan plan.htplan --chunks 3
expect_error "layers vs classes" "--layers: ends with 9 but the graph has 3 classes" "${T[@]}" --layers 6-16-9
expect_error "layers trailing dash" "is not a list of positive widths" "${T[@]}" --layers 6-16-3-
expect_error "parts beyond vertices" "option --parts: 3001 partitions" ht-partition -g g.htg --parts 3001 -o q.htp
expect_error "huge vertex weight" "--chunk-vertex-weight: must be in" ht-partition -g g.htg \
  --chunk-vertex-weight 1e308 -o q.htp
printf 'epochs = 1\n# a comment\nepoch = 1\n' >typo.ini
expect_error "config unknown key" "typo.ini:3: unknown option 'epoch'" "${T[@]}" --config typo.ini
printf 'parts = 2\ngarbage\n' >garbage.ini
expect_error "config garbage line" "garbage.ini:2: 'garbage' is not a 'key = value' line" ht-partition -g g.htg \
  -o q.htp --config garbage.ini
printf 'parts 2\n' >nokey.ini
expect_error "config without =" "nokey.ini:1:" ht-reorganize -g g.htg -p p.htp -o q.htplan --config nokey.ini
printf 'vertices = 10\nfeature_dim = 3\n' >under.ini
expect_error "config underscore key" "under.ini:2: unknown option 'feature_dim'" ht-convert --generate random \
  -o q.htg --config under.ini

# --- divergence and non-finite inputs ---------------------------------------------
"$PY" - <<'PYEOF'
import struct
def save(path, descr, shape, values, code):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    while (10 + len(d) + 1) % 64: d += ' '
    d += '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(d)) + d.encode())
        f.write(struct.pack('<%d%s' % (len(values), code), *values))
save('fnan.npy', '<f4', '(5, 2)', [1, 1, 1, 1, 1, 1, 1, float('nan'), 1, 1], 'f')
save('f8big.npy', '<f8', '(5, 2)', [1, 1, 1, 1, 1e300, 1, 1, 1, 1, 1], 'd')
open('e.txt', 'w').write('0 1\n1 2\n2 3\n3 4\n')
open('ew.txt', 'w').write('0 1 1.0\n1 2 inf\n2 3 1\n3 4 1\n')
PYEOF
expect_error "NaN feature" "fnan.npy: feature of vertex 3, column 1 is NaN" ht-convert --format edgelist -i e.txt \
  --features fnan.npy -o q.htg
expect_error "f8 beyond float" "f8big.npy: feature of vertex 2, column 0 is infinite" ht-convert --format edgelist \
  -i e.txt --features f8big.npy -o q.htg
expect_error "convert over features" "is an input of this run" ht-convert --format edgelist -i e.txt \
  --features fnan.npy -o fnan.npy --allow-nonfinite
expect_error "Inf weight" "ew.txt: the weight of edge 1 (CSC order) is infinite" ht-convert --format edgelist \
  -i ew.txt -o q.htg
"$BIN/ht-convert" -q --format edgelist -i ew.txt --allow-nonfinite -o q.htg || fail "--allow-nonfinite refused"
rm -f q.htg
expect_error "diverging lr" "training diverged at epoch [0-9]*: layer" ht-train -g g.htg --epochs 30 --optimizer sgd --lr 1000 --weight-decay 1000 \
  --save-model m.bin --predict-out pred.csv
[[ -e m.bin || -e pred.csv ]] && fail "diverged run wrote outputs"

# --- SIGTERM, checkpoint, exact resume --------------------------------------------
TR=(-g g.htg -p p.htp --plan plan.htplan --dropout 0.5 --eval-every 3)
"$BIN/ht-train" -q "${TR[@]}" --epochs 1000000 --checkpoint ck.htckpt --checkpoint-every 2 \
  --metrics-out never.jsonl >/dev/null 2>term.txt &
pid=$!
for _ in $(seq 300); do [[ -e ck.htckpt ]] && break; sleep 0.1; done
sleep 0.3
kill -TERM $pid
wait $pid
rc=$?
[[ $rc -eq 143 ]] || fail "SIGTERM: exit code $rc, expected 143"
grep -q "^ht-train: stopped by SIGTERM after epoch [0-9]* of 1000000: checkpoint written to ck.htckpt" term.txt ||
  { fail "SIGTERM line"; cat term.txt; }
[[ -e never.jsonl ]] && fail "interrupted run committed its metrics"
compgen -G "*.tmp.*" >/dev/null && fail "temporary files left: $(ls ./*.tmp.*)"
K=$(sed -n 's/.*after epoch \([0-9]*\) of.*/\1/p' term.txt)
if [[ -n "$K" ]]; then
  N=$((K + 3))
  "$BIN/ht-train" -q "${TR[@]}" --epochs $N --metrics-out full.jsonl --predict-out full.csv >/dev/null ||
    fail "uninterrupted run"
  "$BIN/ht-train" -q "${TR[@]}" --epochs $N --resume ck.htckpt --checkpoint ck.htckpt --metrics-out res.jsonl \
    --predict-out res.csv >/dev/null || fail "resumed run"
  cmp -s full.csv res.csv || fail "resumed predictions differ from the uninterrupted run's"
  "$PY" - full.jsonl res.jsonl <<'PYEOF' || fail "resumed metrics differ"
import json, sys
def losses(p):
    keys = ("epoch", "loss", "train_acc", "val_acc", "test_acc")
    return [tuple(r.get(k) for k in keys) for r in map(json.loads, open(p)) if r["type"] == "epoch"]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
assert a == b and len(a) > 3, (a[-2:], b[-2:])
PYEOF
  expect_error "resume other plan" "checkpoint is for another" ht-train -g g.htg --epochs $N --resume ck.htckpt
fi

# --- SIGINT of a converter: no temporary file, exit 130 -----------------------------
"$BIN/ht-convert" -q --generate rmat --scale 18 --feature-dim 64 -o big.htg 2>int.txt &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
if [[ $rc -ne 0 ]]; then
  [[ $rc -eq 130 ]] || fail "SIGINT: exit code $rc, expected 130"
  compgen -G "big.htg.*" >/dev/null && fail "SIGINT left a temporary file: $(ls big.htg.*)"
  if [[ -e big.htg ]]; then  # the signal landed after the output was in place: it must say so
    grep -q "^ht-convert: interrupted by SIGINT; the outputs finished before it are complete" int.txt ||
      { fail "SIGINT after the output: line"; cat int.txt; }
    "$BIN/ht-convert" --inspect big.htg >/dev/null 2>&1 || fail "SIGINT after the output: big.htg does not read"
  else
    grep -q "^ht-convert: interrupted by SIGINT; no output written" int.txt || { fail "SIGINT line"; cat int.txt; }
  fi
fi

# --- inference ----------------------------------------------------------------------
"$BIN/ht-train" -q "${TR[@]}" --epochs 3 --save-model model.bin --predict-out train.csv >/dev/null || fail "train"
"$BIN/ht-train" -g g.htg -p p.htp --plan plan.htplan --predict-only --load-model model.bin --predict-out inf.csv --logits-out inf.npy \
  >inf.txt 2>/dev/null || fail "--predict-only"
cmp -s train.csv inf.csv || fail "--predict-only predictions differ from the trained run's"
grep -q "^accuracy: train [0-9.]*, validation [0-9.]*, test [0-9.]*$" inf.txt || { fail "accuracy line"; cat inf.txt; }
[[ $(stat -c %s inf.npy) -eq $((128 + 400 * 3 * 4)) ]] || fail "logits .npy size"
expect_error "predict-only without model" "--predict-only: needs the parameters" ht-train -g g.htg --predict-only \
  --predict-out q.csv
expect_error "predict-only with dropout" "--dropout: does not apply to --predict-only" ht-train -g g.htg \
  --predict-only --load-model model.bin --predict-out q.csv --dropout 0.5
finish "run safety: all checks passed"
