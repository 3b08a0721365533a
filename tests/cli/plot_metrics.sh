#!/usr/bin/env bash
# scripts/plot_metrics and scripts/demo_plots.sh on metrics files written by
# ht-train (two comm modes on a small generated graph): every figure is a
# valid, non-trivial PNG; --compare makes its three figures; bad inputs give
# one error line naming the file (and line) with exit code 1 and no output.
#
#   bash tests/cli/plot_metrics.sh BIN_DIR SOURCE_DIR     (exit 77 = skipped)
set -uo pipefail
BIN=$1
SRC=$2
PLOT=$SRC/scripts/plot_metrics
PY=${HT_PYTHON:-/usr/bin/python3}

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
for t in ht-convert ht-train; do [ -x "$BIN/$t" ] || skip "$BIN/$t is not built"; done
"$PY" -c 'import matplotlib' 2>/dev/null || skip "$PY has no matplotlib (make deps installs python3-matplotlib)"

T=$(mktemp -d "${TMPDIR:-/tmp}/ht-plot-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=1

"$BIN/ht-convert" -q --generate community --vertices 1500 --classes 5 --feature-dim 16 --seed 3 -o "$T/g.htg" ||
  fail "ht-convert"
for comm in baseline full; do
  "$BIN/ht-train" -q --graph "$T/g.htg" --gpus 2 --chunks 2 --backend cpu --comm "$comm" --epochs 12 \
    --eval-every 3 --metrics-out "$T/$comm.jsonl" >/dev/null || fail "ht-train --comm $comm"
done

# check_png FILE: PNG signature, at least 600x400 pixels, more than 15 KB
# (a blank figure of that size compresses to a few KB).
check_png() {
  local f=$1 sig dims w h size
  [ -f "$f" ] || fail "$f was not made"
  sig=$(od -An -tx1 -N8 "$f" | tr -d ' \n')
  [ "$sig" = 89504e470d0a1a0a ] || fail "$f: not a PNG (signature $sig)"
  dims=$(od -An -tu1 -j16 -N8 "$f")
  read -r w1 w2 w3 w4 h1 h2 h3 h4 <<<"$dims"
  w=$(((w1 << 24) | (w2 << 16) | (w3 << 8) | w4))
  h=$(((h1 << 24) | (h2 << 16) | (h3 << 8) | h4))
  { [ "$w" -ge 600 ] && [ "$h" -ge 400 ]; } || fail "$f: ${w}x$h pixels, expected at least 600x400"
  size=$(stat -c %s "$f")
  [ "$size" -gt 15000 ] || fail "$f: only $size bytes; is the figure empty?"
}

# One run: three figures, their paths printed.
out=$("$PLOT" "$T/full.jsonl" -o "$T/one") || fail "plot_metrics on one run"
for f in accuracy epoch_time link_bytes; do check_png "$T/one/$f.png"; done
[ "$(echo "$out" | wc -l)" -eq 3 ] || fail "plot_metrics should print the 3 files it wrote, printed: $out"
[ -z "$(find "$T/one" -name '.*')" ] || fail "temporary files left in $T/one"
# Default folder: plots/ beside the metrics file.
"$PLOT" "$T/full.jsonl" >/dev/null || fail "plot_metrics without -o"
check_png "$T/plots/accuracy.png"
echo "ok: one run"

# Comparison of runs.
"$PLOT" --compare "$T/baseline.jsonl" "$T/full.jsonl" -o "$T/cmp" >/dev/null || fail "plot_metrics --compare"
for f in compare_accuracy compare_time compare_bytes; do check_png "$T/cmp/$f.png"; done
# --format svg|pdf: the same figures in that format (issue 35), nothing else.
"$PLOT" --compare "$T/baseline.jsonl" "$T/full.jsonl" -o "$T/svg" --format svg >/dev/null || fail "--format svg"
for f in compare_accuracy compare_time compare_bytes; do
  grep -q "<svg" "$T/svg/$f.svg" 2>/dev/null || fail "--format svg: $f.svg is no SVG"
done
ls "$T/svg"/*.png >/dev/null 2>&1 && fail "--format svg wrote PNG files too"
"$PLOT" "$T/full.jsonl" -o "$T/pdf" --format pdf >/dev/null || fail "--format pdf"
for f in accuracy epoch_time link_bytes; do
  [[ "$(head -c 4 "$T/pdf/$f.pdf" 2>/dev/null)" == "%PDF" ]] || fail "--format pdf: $f.pdf is no PDF"
done
"$PLOT" "$T/full.jsonl" -o "$T/bad" --format gif >/dev/null 2>&1 && fail "--format gif accepted"
# epoch_time stacks the exposed times when the file has them (they add up to the epoch).
if grep -q '"x_compute_ms"' "$T/full.jsonl"; then
  "$PLOT" "$T/full.jsonl" -o "$T/svg1" --format svg >/dev/null || fail "plot_metrics svg of one run"
  grep -q "exposed times stacked" "$T/svg1/epoch_time.svg" || fail "epoch_time does not stack the exposed times"
fi
echo "ok: compare"

# demo_plots.sh: one folder per run and a comparison.
bash "$SRC/scripts/demo_plots.sh" "$T" "$T/demo" >/dev/null || fail "demo_plots.sh"
for f in baseline/accuracy full/epoch_time full/link_bytes compare/compare_time; do check_png "$T/demo/$f.png"; done
echo "ok: demo_plots.sh"

# Errors: exit code 1, one line on stderr naming the problem, no output folder.
expect_error() {  # expect_error PATTERN ARGS...
  local pattern=$1 err rc
  shift
  err=$("$PLOT" "$@" -o "$T/bad" 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 1 ] || fail "plot_metrics $*: exit code $rc, expected 1"
  [ "$(echo "$err" | wc -l)" -eq 1 ] || fail "plot_metrics $*: expected one error line, got: $err"
  echo "$err" | grep -q -- "$pattern" || fail "plot_metrics $*: error '$err' does not mention '$pattern'"
  [ ! -e "$T/bad" ] || fail "plot_metrics $*: made $T/bad despite the error"
}
expect_error "$T/missing.jsonl: no such file" "$T/missing.jsonl"
head -n 3 "$T/full.jsonl" >"$T/trunc.jsonl"
head -c 40 "$T/full.jsonl" | tail -c 40 >>"$T/trunc.jsonl"
expect_error "trunc.jsonl:4: not valid JSON" "$T/trunc.jsonl"
: >"$T/empty.jsonl"
expect_error "empty.jsonl: no epoch records" "$T/empty.jsonl"
grep -v '"type":"epoch"' "$T/full.jsonl" >"$T/summary_only.jsonl"
expect_error "no epoch records" "$T/summary_only.jsonl"
echo '{"type":"epoch","epoch":0}' >"$T/noloss.jsonl"
expect_error "noloss.jsonl:1: epoch record without a numeric 'loss'" "$T/noloss.jsonl"
expect_error "is a folder" "$T/one"
expect_error "add --compare" "$T/full.jsonl" "$T/baseline.jsonl"
expect_error "2 labels for 1 runs" --compare "$T/full.jsonl" --labels a,b
expect_error "missing.jsonl: no such file" --compare "$T/full.jsonl" "$T/missing.jsonl"
err=$("$PLOT" "$T/full.jsonl" -o "$T/one/accuracy.png" 2>&1 >/dev/null) && fail "an output path that is a file was accepted"
echo "$err" | grep -q "accuracy.png" || fail "output folder error does not name it: $err"
err=$(HT_PYTHON=/nonexistent/python "$PLOT" "$T/full.jsonl" 2>&1 >/dev/null) && fail "a missing HT_PYTHON was accepted"
echo "$err" | grep -q "HT_PYTHON" || fail "missing python error does not say HT_PYTHON: $err"
echo "ok: errors"
echo "PASS"
