#!/usr/bin/env bash
# Includes point one way through the layers (scripts/check_layers.py, docs/ARCHITECTURE.md):
# the repository passes, and a tree with one wrong-way include fails naming file and line.
# Usage: layers.sh BIN_DIR SOURCE_DIR
set -u
SRC="$(cd "$2" && pwd)"
PY="${HT_PYTHON:-python3}"
fail() { echo "FAIL: $*"; exit 1; }

out=$("$PY" "$SRC/scripts/check_layers.py" "$SRC") || fail "the repository has wrong-way includes: $out"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for d in lib/core lib/graph lib/plan lib/models datasets partition lib/engine lib/cuda lib/dist lib/train apps/cli apps; do
  mkdir -p "$WORK/$d"
done
printf '#include "core/error.hpp"\n#include "graph/graph.hpp"\n' > "$WORK/lib/engine/ok.cpp"
printf '// fine\n#include "engine/trainer.hpp"\n' > "$WORK/lib/graph/wrong.hpp"
printf '#include "engine/executor.hpp"\n' > "$WORK/partition/same_rank.cpp"
printf '#include "engine/transport.hpp"\n#include "cuda/cuda_check.hpp"\n' > "$WORK/lib/dist/beside_cuda.cpp"
# The option helpers (CLI11) are the tools' own: a library including them fails, a tool may.
printf '#include "cli/cli.hpp"\n' > "$WORK/lib/train/uses_cli.cpp"
printf '#include "cli/cli.hpp"\n#include "train/train_job.hpp"\n' > "$WORK/apps/tool.cpp"
printf '#include "core/error.hpp"\n#include "apps/x.hpp"\n' > "$WORK/apps/cli/cli.cpp"
out=$("$PY" "$SRC/scripts/check_layers.py" "$WORK") && fail "wrong-way includes passed: $out"
grep -q "lib/graph/wrong.hpp:2: layer graph" <<<"$out" || fail "no line for the graph -> engine include: $out"
grep -q "partition/same_rank.cpp:1: layer partition" <<<"$out" || fail "no line for the same-rank include: $out"
grep -q "lib/dist/beside_cuda.cpp:2: layer dist" <<<"$out" || fail "no line for the dist -> cuda include: $out"
grep -q "lib/dist/beside_cuda.cpp:1" <<<"$out" && fail "dist -> engine was reported: $out"
grep -q "lib/train/uses_cli.cpp:1: layer train" <<<"$out" || fail "no line for the train -> cli include: $out"
grep -q "apps/cli/cli.cpp:2: layer cli" <<<"$out" || fail "no line for the cli -> apps include: $out"
grep -q "ok.cpp" <<<"$out" && fail "a downward include was reported: $out"
grep -q "tool.cpp" <<<"$out" && fail "a tool's include of cli/ was reported: $out"
grep -q "apps/cli/cli.cpp:1" <<<"$out" && fail "cli -> core was reported: $out"
echo "ok: layers"
