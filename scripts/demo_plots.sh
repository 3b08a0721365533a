#!/usr/bin/env bash
# Figures for `make demo`: every metrics file (*.jsonl) in METRICS_DIR gets
# its own folder of plots (OUT_DIR/<name>/: accuracy, epoch time, link
# bytes), and when there are several, OUT_DIR/compare/ holds the comparison
# (accuracy, median epoch time and bytes per link of every run).
#
#   scripts/demo_plots.sh METRICS_DIR OUT_DIR
#
# Uses HT_PYTHON (default /usr/bin/python3) with matplotlib (make deps).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: scripts/demo_plots.sh METRICS_DIR OUT_DIR" >&2
  exit 1
fi
metrics_dir=$1 out_dir=$2
plot=$(dirname "${BASH_SOURCE[0]}")/plot_metrics
[ -d "$metrics_dir" ] || { echo "demo_plots: error: $metrics_dir: no such folder" >&2; exit 1; }
mapfile -t files < <(find "$metrics_dir" -maxdepth 1 -name '*.jsonl' -type f | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || { echo "demo_plots: error: $metrics_dir has no metrics files (*.jsonl)" >&2; exit 1; }
mkdir -p "$out_dir"
for f in "${files[@]}"; do
  "$plot" "$f" -o "$out_dir/$(basename "$f" .jsonl)" >/dev/null
  echo "demo_plots: $f -> $out_dir/$(basename "$f" .jsonl)/"
done
if [ ${#files[@]} -gt 1 ]; then
  "$plot" --compare "${files[@]}" -o "$out_dir/compare" >/dev/null
  echo "demo_plots: comparison of ${#files[@]} runs -> $out_dir/compare/"
fi
