#!/usr/bin/env bash
# Usage errors in the option's own terms (issue 17): an option given twice is
# named with its count (not CLI11's "At Most 1 required but received 2"); a
# --hidden / --layers width that cannot fit names the option and the memory
# it needs, before any work (beyond the machine's memory) or when an
# allocation fails (under a memory limit), not a bare "out of memory";
# unknown options before missing required ones, --gpus and --backend cuda
# in ht-train's terms, --gpu-mem sizes, --predict-only without outputs.
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

# --- the command line in ht-train's terms (issue 35) -----------------------------
# An unknown option is reported before a missing required one (a typo hid behind "--graph is required").
expect_error "unknown before required" "The following argument was not expected: --bogus" ht-train --bogus
[[ $(cat stderr.txt) == *"is required"* ]] && fail "unknown before required: names the required option"
"$BIN/ht-train" -q --bogus >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "unknown option: exit code not 2"
expect_error "--gpus beyond the vertices" "option --gpus: 3001 GPUs for a graph of 400 vertices" \
  ht-train -g g.htg --backend cpu --gpus 3001 --epochs 1
grep -q -- "--parts" stderr.txt && fail "--gpus 3001 names --parts, which ht-train does not have"
# --gpu-mem takes sizes as ht-partition's and --host-mem do.
"$BIN/ht-train" -q -g g.htg --backend cpu --chunks auto --gpu-mem 1G --epochs 1 >/dev/null 2>stderr.txt ||
  fail "--gpu-mem 1G refused: $(cat stderr.txt)"
expect_error "--gpu-mem not a size" "option --gpu-mem: 'lots' is not 0 or a size like 80G" \
  ht-train -g g.htg --backend cpu --chunks auto --gpu-mem lots --epochs 1
# --backend cuda where no GPU is visible: said in those words (not a CUDA error of the link probe).
if "$BIN/ht-train" -q -g g.htg --backend cuda --epochs 1 >/dev/null 2>stderr.txt; then
  echo "skip: --backend cuda ran (a GPU is visible)"
elif grep -q "no CUDA executor" stderr.txt; then
  echo "skip: this build has no CUDA executor"
else
  before=$failures
  check_one_error_line "--backend cuda without a GPU" "option --backend: cuda: no CUDA GPU is visible; use --backend cpu" 1
  [[ $failures -eq $before ]] && echo "ok: --backend cuda without a GPU -> $(cat stderr.txt)"
fi
# --predict-only without an output prints the accuracy (as documented) and says it predicts.
"$BIN/ht-train" -q -g g.htg --backend cpu --epochs 2 --save-model m.htm >/dev/null 2>&1 || fail "save a model"
"$BIN/ht-train" -g g.htg --backend cpu --predict-only --load-model m.htm >stdout.txt 2>stderr.txt ||
  fail "--predict-only without outputs refused: $(cat stderr.txt)"
grep -q "^accuracy: train" stdout.txt || fail "--predict-only printed no accuracy: $(cat stdout.txt)"
grep -q "predicting with GCN" stderr.txt || fail "--predict-only does not say it predicts: $(cat stderr.txt)"
grep -q "training GCN" stderr.txt && fail "--predict-only says it trains"
# --spmm: the CPU backend ignores it (one implementation), and the metrics record it; an
# unknown backend is refused with the names.
"$BIN/ht-train" -q -g g.htg --backend cpu --epochs 1 --spmm cusparse --metrics-out spmm.jsonl >/dev/null 2>stderr.txt ||
  fail "--spmm cusparse on the cpu backend refused: $(cat stderr.txt)"
grep -q '"--spmm":"cusparse"' spmm.jsonl || fail "the metrics do not record --spmm: $(head -c 300 spmm.jsonl)"
expect_error "--spmm unknown" "--spmm: 'cublas' is not one of auto, cusparse, own" ht-train -g g.htg --spmm cublas

finish "option messages: ok"
