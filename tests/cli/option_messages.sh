#!/usr/bin/env bash
# Usage errors in the option's own terms (issue 17): an option given twice is
# named with its count (not CLI11's "At Most 1 required but received 2"); a
# --hidden / --layers width that cannot fit names the option and the memory
# it needs, before any work (beyond the machine's memory) or when an
# allocation fails (under a memory limit), not a bare "out of memory".
# Usage: option_messages.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-train
export OMP_NUM_THREADS=1

# expect_error NAME PATTERN TOOL ARGS...: non-zero exit, one stderr line matching PATTERN.
expect_error() {
  local name="$1" pattern="$2" tool="$3"
  shift 3
  "$BIN/$tool" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  grep -q "At Most\|required but received" stderr.txt && fail "$name: CLI11's wording: $(cat stderr.txt)"
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}

"$BIN/ht-convert" -q --generate community --vertices 400 --classes 3 --feature-dim 6 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }

# --- an option given twice --------------------------------------------------------
expect_error "--hidden twice" "option --hidden given 2 times; give it once" ht-train -g g.htg --hidden 8 --hidden 16
expect_error "--epochs three times" "option --epochs given 3 times; give it once" ht-train -g g.htg --epochs 1 \
  --epochs 2 --epochs=3
expect_error "-g and --graph" "option --graph given 2 times" ht-train -g g.htg --graph g.htg --epochs 1
expect_error "enum twice" "option --model given 2 times" ht-train -g g.htg --model gcn --model gat
expect_error "converter option twice" "option --format given 2 times" ht-convert --format edgelist \
  --format mtx -i g.htg -o x.htg
[[ -e x.htg ]] && fail "a refused run wrote its output"
"$BIN/ht-train" -q -q -g g.htg --epochs 1 >/dev/null 2>stderr.txt || fail "-q -q refused: $(cat stderr.txt)"

# --- widths that cannot fit ----------------------------------------------------------
expect_error "--layers beyond memory" \
  "option --layers: the GCN model 6-2000000000-3 needs at least .* TiB of memory (parameters and gradients .*, a row per vertex and layer .* for N = 400) but this machine has .*; choose smaller widths" \
  ht-train -g g.htg --layers 6-2000000000-3 --epochs 1
expect_error "--hidden beyond memory" \
  "option --hidden: 1048576: the GAT model 6-1048576-3 (1024 heads) needs at least .* TiB of memory" \
  ht-train -g g.htg --model gat --hidden 1048576 --heads 1024 --epochs 1
expect_error "width times heads beyond int" "option --layers: .* needs a layer wider than 2^31 - 1 values" \
  ht-train -g g.htg --model gat --layers 6-2000000000-3 --heads 2 --epochs 1
# Within the machine's memory but over the process's limit (1.5 GB of address
# space < the 1.63 GiB the model needs at the least): the failed allocation
# names the option and the need.
(
  ulimit -v 1500000 2>/dev/null || exit 3
  "$BIN/ht-train" -q -g g.htg --hidden 1048576 --epochs 1 >stdout.txt 2>stderr.txt
)
rc=$?
if [[ $rc -ne 3 ]]; then
  before=$failures
  check_one_error_line "--hidden over a memory limit" \
    "option --hidden: 1048576: out of memory with the GCN model 6-1048576-3, which needs at least 1.63 GiB of memory" $rc
  grep -q "error: out of memory$" stderr.txt && fail "--hidden over a memory limit: bare out of memory"
  [[ $failures -eq $before ]] && echo "ok: --hidden over a memory limit -> $(cat stderr.txt)"
fi
"$BIN/ht-train" -q -g g.htg --hidden 64 --epochs 1 >/dev/null 2>stderr.txt || fail "--hidden 64 refused: $(cat stderr.txt)"

# --backend defaults to auto, which says what it chose (cuda with a visible GPU, else cpu).
"$BIN/ht-train" -g g.htg --epochs 1 >/dev/null 2>stderr.txt || fail "default backend run failed: $(cat stderr.txt)"
grep -Eq -- "--backend auto: (cpu|cuda) \(" stderr.txt || fail "--backend auto did not say what it chose: $(cat stderr.txt)"
grep -Eq "backend (cpu|cuda), m = 1" stderr.txt || fail "the training line names no backend: $(cat stderr.txt)"

finish "option messages: ok"
