#!/usr/bin/env bash
# ht-convert --feature-dtype at the shell (issue 15): --help shows the option
# and its default; a bad value gets a parse error listing the accepted ones;
# bf16/fp16 files are half the feature bytes, --inspect (text and JSON) and
# bench/htg.py name the dtype and read the same values; fp16 out of range is
# one error line naming the option, vertex and column, with no file left;
# ht-train on a bf16 file with --host-dtype bf16 writes the same logits as on
# the fp32 file.
# Usage: feature_dtype.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN_DIR="$(cd "$1" 2>/dev/null && pwd)"
SRC="$(cd "$2" && pwd)"
for tool in ht-convert ht-train; do
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
CONVERT="$BIN_DIR/ht-convert"

"$CONVERT" --help >help.txt 2>&1
grep -q -- "--feature-dtype ENUM:bf16|fp16|fp32=fp32" help.txt ||
  fail "--help lacks --feature-dtype with its values and default: $(grep -- --feature-dtype help.txt)"

"$CONVERT" -q --generate random --vertices 10 --edges 20 --feature-dtype fp8 -o x.htg >stdout.txt 2>stderr.txt
rc=$?
[[ $rc -ne 0 ]] || fail "--feature-dtype fp8 accepted"
head -n 1 stderr.txt | grep -q -- "--feature-dtype.*'fp8' is not one of" || fail "bad value message: $(cat stderr.txt)"
[[ ! -e x.htg ]] || fail "output left behind for a bad value"

GEN=(--generate community --vertices 400 --classes 3 --feature-dim 8 --seed 4)
for t in fp32 bf16 fp16; do
  "$CONVERT" -q "${GEN[@]}" --feature-dtype "$t" -o "$t.htg" 2>err.txt || fail "convert $t: $(cat err.txt)"
done
"$CONVERT" --inspect bf16.htg >inspect.txt 2>&1 || fail "--inspect bf16"
grep -q "features .*8 columns bf16" inspect.txt || fail "--inspect text lacks the dtype: $(grep features inspect.txt)"
for t in fp32 bf16 fp16; do
  "$CONVERT" --inspect "$t.htg" --json >"$t.json" || fail "--inspect --json $t"
done
check_py() {
  "$PY" - "$SRC/bench" "$@" <<'EOF' >py.txt 2>&1 || fail "htg.py: $(cat py.txt)"
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import htg
g32 = htg.read_htg("fp32.htg")
x32 = np.asarray(g32.features)
for t in ("bf16", "fp16"):
    g = htg.read_htg(t + ".htg")
    ins = json.load(open(t + ".json"))
    assert ins["feature_dtype"] == t == g.feature_dtype == g.summary()["feature_dtype"], (t, ins["feature_dtype"])
    assert g.features.dtype.itemsize == 2
    x = g.features_f32()
    assert x.dtype == np.float32 and x.shape == x32.shape
    # Rounded to nearest: within half a unit of the 16-bit format's precision.
    rel = 2.0 ** (-8 if t == "bf16" else -11)
    assert np.all(np.abs(x - x32) <= rel * np.abs(x32) + 1e-7), t
    assert int(np.count_nonzero(x)) == ins["feature_nonzeros"]
    sec = htg.read_container(t + ".htg")[2]["features"]
    assert sec.length * 2 == htg.read_container("fp32.htg")[2]["features"].length
assert json.load(open("fp32.json"))["feature_dtype"] == "fp32"
print("ok")
EOF
}
check_py

# fp16 out of range: one line naming the option, the vertex and the column; no output.
"$CONVERT" -q "${GEN[@]}" --signal 1e6 --feature-dtype fp16 -o big.htg >stdout.txt 2>stderr.txt
check_one_error_line "fp16 out of range" "--feature-dtype: feature of vertex [0-9]*, column [0-9]* is .*fp16" $?
compgen -G "big.htg*" >/dev/null && fail "fp16 out of range: output left behind"
"$CONVERT" -q "${GEN[@]}" --signal 1e6 --feature-dtype bf16 -o big.htg 2>err.txt || fail "bf16 of large values: $(cat err.txt)"

# Training: the bf16 file with a bf16 store gives the fp32 file's logits (bf16 store) bit for bit.
TRAIN=(--gpus 2 --chunks 2 --backend cpu --epochs 3 --warmup 0 --host-dtype bf16)
"$BIN_DIR/ht-train" -q --graph fp32.htg "${TRAIN[@]}" --logits-out a.npy >/dev/null 2>err.txt || fail "train fp32 file: $(cat err.txt)"
"$BIN_DIR/ht-train" -q --graph bf16.htg "${TRAIN[@]}" --logits-out b.npy >/dev/null 2>err.txt || fail "train bf16 file: $(cat err.txt)"
cmp -s a.npy b.npy || fail "logits of the bf16 file differ from the fp32 file's"
[[ -s a.npy ]] || fail "no logits written"

finish "ht-convert --feature-dtype: all checks passed"
