#!/usr/bin/env bash
# Includes point one way through the layers (scripts/check_layers.py, docs/ARCHITECTURE.md):
# the repository passes, and a tree with one wrong-way include fails naming file and line; so
# does an include of a layer whose library the includer's CMake target does not link (unless
# the header is header-only).
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
# The job sits beside the CUDA library (ht_train does not link it): the link probe's struct is engine's.
printf '#include "engine/link_bandwidth.hpp"\n#include "cuda/link_probe.hpp"\n' > "$WORK/lib/train/probe.cpp"
# Links as CMake states them: train links engine (and through it graph), not partition; dist links
# core only, so it may include engine's header-only transport.hpp but not executor.hpp.
cat > "$WORK/lib/CMakeLists.txt" <<'CMAKE'
ht_module(ht_core core fmt::fmt)
ht_module(ht_graph graph ht_core)
ht_module(ht_engine engine ht_graph)  # a comment naming ht_partition links nothing
add_library(ht_dist STATIC ${_dist_srcs})
target_link_libraries(ht_dist PUBLIC ht_core)
ht_module(ht_train train
          ht_engine)
CMAKE
printf '#pragma once\n#include <string>\n' > "$WORK/lib/engine/transport.hpp"
printf '#pragma once\n#include "graph/graph.hpp"\n' > "$WORK/lib/engine/executor.hpp"
printf '#pragma once\nstruct LinkBandwidth {};\n' > "$WORK/lib/engine/link_bandwidth.hpp"
printf '#pragma once\n' > "$WORK/partition/chunking.hpp"
printf '#include "partition/chunking.hpp"\n' > "$WORK/partition/chunking.cpp"
printf '#include "graph/graph.hpp"\n#include "partition/chunking.hpp"\n' > "$WORK/lib/train/unlinked.cpp"
printf '#include "engine/executor.hpp"\n' > "$WORK/lib/dist/needs_engine.cpp"
# The option helpers (CLI11) are the tools' own: a library including them fails, a tool may.
printf '#include "cli/cli.hpp"\n' > "$WORK/lib/train/uses_cli.cpp"
printf '#include "cli/cli.hpp"\n#include "train/train_job.hpp"\n' > "$WORK/apps/tool.cpp"
printf '#include "core/error.hpp"\n#include "apps/x.hpp"\n' > "$WORK/apps/cli/cli.cpp"
out=$("$PY" "$SRC/scripts/check_layers.py" "$WORK") && fail "wrong-way includes passed: $out"
grep -q "lib/graph/wrong.hpp:2: layer graph" <<<"$out" || fail "no line for the graph -> engine include: $out"
grep -q "partition/same_rank.cpp:1: layer partition" <<<"$out" || fail "no line for the same-rank include: $out"
grep -q "lib/dist/beside_cuda.cpp:2: layer dist" <<<"$out" || fail "no line for the dist -> cuda include: $out"
grep -q "lib/dist/beside_cuda.cpp:1" <<<"$out" && fail "dist -> engine's header-only transport.hpp was reported: $out"
grep -q "lib/train/probe.cpp:2: layer train (rank 4) includes cuda/" <<<"$out" || fail "no line for train -> cuda: $out"
grep -q "lib/train/probe.cpp:1" <<<"$out" && fail "train -> engine was reported: $out"
grep -q "lib/train/unlinked.cpp:2: layer train includes partition/chunking.hpp but its library ht_train does not link ht_partition" <<<"$out" ||
  fail "no line for an include of a library ht_train does not link: $out"
grep -q "lib/train/unlinked.cpp:1" <<<"$out" && fail "train -> graph (linked through engine) was reported: $out"
grep -q "lib/dist/needs_engine.cpp:1: layer dist includes engine/executor.hpp but its library ht_dist does not link ht_engine" <<<"$out" ||
  fail "no line for a header that is not header-only: $out"
grep -q "lib/train/uses_cli.cpp:1: layer train" <<<"$out" || fail "no line for the train -> cli include: $out"
grep -q "apps/cli/cli.cpp:2: layer cli" <<<"$out" || fail "no line for the cli -> apps include: $out"
grep -q "ok.cpp" <<<"$out" && fail "a downward include was reported: $out"
grep -q "tool.cpp" <<<"$out" && fail "a tool's include of cli/ was reported: $out"
grep -q "apps/cli/cli.cpp:1" <<<"$out" && fail "cli -> core was reported: $out"
echo "ok: layers"
