#!/usr/bin/env bash
# ht-train's final summary and metrics file on the CPU backend: the busy-time
# line, the exposed-time line, the evaluation-time line, the link-bound line
# (not measured on the CPU: no number), the setup line; per epoch the exposed
# times and, on evaluated epochs only, eval_ms; in the summary object their
# medians, setup_seconds and setup_over_epoch, and the link fields as null.
# Usage: train_summary.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN_DIR="$(cd "$1" 2>/dev/null && pwd)"
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

"$BIN_DIR/ht-convert" -q --generate community --vertices 800 --classes 4 --feature-dim 8 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }
"$BIN_DIR/ht-train" -q --graph g.htg --gpus 2 --chunks 2 --backend cpu --epochs 6 --warmup 2 --eval-every 2 \
  --metrics-out m.jsonl >out.txt 2>err.txt || { echo "FAIL: ht-train exit code"; cat err.txt; exit 1; }

expect_line() {  # expect_line REGEX: exactly one stdout line matches
  local n
  n=$(grep -c -E -- "$1" out.txt)
  [[ $n -eq 1 ]] || { fail "summary: $n lines match '$1'"; cat out.txt; }
}
num='[0-9]+\.[0-9]+'
expect_line "^median epoch $num ms \(busy: h2d $num, d2d $num, compute $num, cpu $num\) over epochs after 2 warm-up$"
expect_line "^exposed: compute $num ms, h2d $num, d2h $num, host $num, idle $num \(sum $num% of epoch\)$"
expect_line "^evaluation: median $num ms over 2 evaluations after warm-up \(not in the epoch time\)$"
expect_line "^link-bound lower bound: not measured \(no GPU host link on this backend\)$"
expect_line "^setup $num s = $num median epochs$"

"$PY" - m.jsonl >py.txt 2>&1 <<'EOF' || { fail "metrics file"; cat py.txt; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in rows if r["type"] == "epoch"]
summary = [r for r in rows if r["type"] == "summary"][-1]
assert len(epochs) == 6, len(epochs)
exposed = ["x_compute_ms", "x_h2d_ms", "x_d2h_ms", "x_host_ms", "x_idle_ms"]
for r in epochs:
    for k in exposed + ["epoch_ms", "h2d_ms", "d2d_ms", "compute_ms", "cpu_ms"]:
        assert isinstance(r[k], (int, float)) and r[k] >= 0, (r["epoch"], k)
    evaluated = (r["epoch"] + 1) % 2 == 0
    assert ("eval_ms" in r) == evaluated and ("val_acc" in r) == evaluated, r
    if evaluated:
        assert r["eval_ms"] > 0, r
for k in exposed:
    assert k + "_median" in summary, k
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else 0.5 * sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1])
timed = [r for r in epochs if r["epoch"] >= 2]
assert abs(summary["eval_ms_median"] - med([r["eval_ms"] for r in timed if "eval_ms" in r])) < 1e-9
assert summary["evaluations_timed"] == 2
assert abs(summary["x_idle_ms_median"] - med([r["x_idle_ms"] for r in timed])) < 1e-9
assert summary["setup_seconds"] > 0
assert abs(summary["setup_over_epoch"] - summary["setup_seconds"] * 1e3 / summary["epoch_ms_median"]) < 1e-6
# A small store (under 1 GiB) is allocated after the device plans, not beside them; its pages are timed.
# The executor starts beside the files' reading and the plan's making (issue 33), nothing else goes beside.
assert summary["setup_phases_beside"] == {"device start": "checks to plan"}, summary["setup_phases_beside"]
assert set(summary["setup_phase_parts"]["device start"]) == {"executor", "waited for"}, summary["setup_phase_parts"]
assert summary["setup_phase_parts"]["vertex store"]["pages"] >= 0, summary["setup_phase_parts"]
assert summary["link_measured"] is False
for k in ("link_h2d_bytes_per_s", "link_d2h_bytes_per_s", "link_bound_ms", "epoch_over_link_bound",
          "link_phase_bound_ms", "epoch_over_link_phase_bound"):
    assert summary[k] is None, (k, summary[k])
assert 0 < summary["forward_h2d_bytes"] <= summary["h2d_bytes"], summary["forward_h2d_bytes"]
assert 0 < summary["forward_d2h_bytes"] <= summary["d2h_bytes"], summary["forward_d2h_bytes"]
EOF

finish "ht-train summary: all checks passed"
