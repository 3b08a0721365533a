#!/usr/bin/env bash
# --chunks auto at the shell: ht-partition needs --gpu-mem, refuses model
# options that contradict the graph or each other, refuses the sizing
# options without auto, logs its choice and writes a partition of that many
# chunks (which ht-train trains); too small a budget is one error line naming
# the smallest working set and leaves no output; ht-train without a budget on
# the CPU backend takes one chunk with a note, with --gpu-mem a count that
# trains exactly as the same count given by hand; --help documents auto.
# Usage: chunks_auto.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert ht-partition ht-train
export OMP_NUM_THREADS=2

# expect_error NAME PATTERN TOOL ARGS...: non-zero exit, one stderr line matching PATTERN.
expect_error() {
  local name="$1" pattern="$2" tool="$3"
  shift 3
  "$BIN/$tool" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}
# chosen LOG: the n of the "chunks: auto chose n = K" line.
chosen() { sed -n 's/.*chunks: auto chose n = \([0-9]*\) per GPU.*/\1/p' "$1"; }
# losses METRICS: the epoch lines' losses.
losses() { grep -o '"loss":[^,]*' "$1"; }

"$BIN/ht-convert" -q --generate community --vertices 20000 --classes 8 --feature-dim 64 --seed 5 -o g.htg ||
  { echo "FAIL: ht-convert"; exit 1; }

# ht-partition: the choice, its log line, and the partition it wrote.
"$BIN/ht-partition" -g g.htg --parts 2 --chunks auto --gpu-mem 30M --chunking balanced --stats-json s.json \
  -o p.htp >out.txt 2>err.txt || { fail "ht-partition --chunks auto"; cat err.txt; }
n=$(chosen err.txt)
[[ -n "$n" && "$n" -gt 1 ]] || { fail "ht-partition: no choice above 1 logged"; cat err.txt; }
grep -q "working set .* + GPU cache tier .* of 30.00 MiB per GPU, --gpu-mem; n = .* needs" err.txt ||
  { fail "ht-partition: the reason is not logged"; cat err.txt; }
grep -q "\"chunks\":$n," s.json || fail "ht-partition: stats JSON is not for n = $n"
"$BIN/ht-train" -q -g g.htg -p p.htp --backend cpu --epochs 1 --metrics-out pm.jsonl >/dev/null 2>err.txt ||
  { fail "ht-train on the auto partition"; cat err.txt; }
grep -q "\"chunks\":$n," pm.jsonl || fail "ht-train did not train the auto partition's n = $n"

# A larger model needs more chunks in the same memory.
"$BIN/ht-partition" -g g.htg --parts 2 --chunks auto --gpu-mem 30M --chunking balanced --layers 64-128-8 \
  -o wide.htp >/dev/null 2>err.txt || { fail "ht-partition --layers"; cat err.txt; }
wide=$(chosen err.txt)
[[ -n "$wide" && "$wide" -gt "$n" ]] || fail "wider layers: n = $wide, not more than $n"

expect_error "auto without --gpu-mem" "option --chunks: auto needs --gpu-mem SIZE" \
  ht-partition -g g.htg --chunks auto -o x.htp
expect_error "sizing option without auto" "option --layers: applies to --chunks auto only" \
  ht-partition -g g.htg --chunks 3 --layers 64-16-8 -o x.htp
# Model options that contradict the graph or each other (issue 35): refused, not sized for.
expect_error "--layers against the features" "option --layers: starts with 32 but the graph has 64 feature columns" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 30M --layers 32-16-8 -o x.htp
expect_error "--layers against the classes" "option --layers: ends with 5 but the graph has 8 classes" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 30M --layers 64-16-5 -o x.htp
expect_error "--heads with GCN" "option --heads: applies to --model gat only" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 30M --heads 4 -o x.htp
expect_error "--gcn-order with GAT" "option --gcn-order: applies to --model gcn only" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 30M --model gat --gcn-order transform -o x.htp
expect_error "--hidden beside --layers" "option --hidden: applies to --layers auto only" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 30M --layers 64-16-8 --hidden 32 -o x.htp
[[ -e x.htp ]] && fail "a refused ht-partition left x.htp"
expect_error "bad --gpu-mem" "option --gpu-mem: 'lots' is not a size" \
  ht-partition -g g.htg --chunks auto --gpu-mem lots -o x.htp
expect_error "too small a budget" \
  "option --chunks: auto: the smallest GPU working set, .* at n = [0-9]* chunks per GPU (GPU [0-9]), does not fit in the 2.00 MiB per GPU of --gpu-mem" \
  ht-partition -g g.htg --parts 2 --chunks auto --gpu-mem 2M -o x.htp
[[ -e x.htp ]] && fail "a failed ht-partition left x.htp"
expect_error "bad --chunks" "--chunks: must be auto or an integer" ht-partition -g g.htg --chunks many -o x.htp

# ht-train in memory: no budget on the CPU backend -> n = 1, with a note.
"$BIN/ht-train" -g g.htg --gpus 2 --backend cpu --chunks auto --epochs 1 --metrics-out one.jsonl >/dev/null 2>err.txt ||
  { fail "ht-train --chunks auto"; cat err.txt; }
grep -q "chunks: auto chose n = 1 per GPU: no GPU memory budget (the CPU backend" err.txt || { fail "no note"; cat err.txt; }
grep -q '"chunks":1,' one.jsonl || fail "ht-train --chunks auto without budget: not n = 1"

# With --gpu-mem (GiB; 25.6 MiB): a count above 1 that trains as the count given by hand.
"$BIN/ht-train" -g g.htg --gpus 2 --backend cpu --chunks auto --gpu-mem 0.025 --epochs 3 --dropout 0.2 \
  --metrics-out auto.jsonl >/dev/null 2>err.txt || { fail "ht-train --chunks auto --gpu-mem"; cat err.txt; }
k=$(chosen err.txt)
[[ -n "$k" && "$k" -gt 1 ]] || { fail "ht-train: no choice above 1 logged"; cat err.txt; }
"$BIN/ht-train" -q -g g.htg --gpus 2 --backend cpu --chunks "$k" --epochs 3 --dropout 0.2 --metrics-out hand.jsonl \
  >/dev/null 2>err.txt || { fail "ht-train --chunks $k"; cat err.txt; }
grep -q "\"chunks\":$k," auto.jsonl || fail "auto run's summary is not for n = $k"
[[ "$(losses auto.jsonl)" == "$(losses hand.jsonl)" && -n "$(losses hand.jsonl)" ]] ||
  fail "--chunks auto (n = $k) and --chunks $k lose differently"
expect_error "ht-train: too small a budget" "option --chunks: auto: the smallest GPU working set" \
  ht-train -g g.htg --backend cpu --chunks auto --gpu-mem 0.001 --epochs 1 --metrics-out never.jsonl
[[ -e never.jsonl ]] && fail "a failed ht-train left its metrics file"
expect_error "ht-train: --store device" "option --store: device needs one chunk .* not --chunks auto" \
  ht-train -g g.htg --backend cpu --chunks auto --store device --epochs 1
expect_error "ht-train: --gpu-mem without auto on cpu" "option --gpu-mem: applies to --backend cuda, or to --chunks auto" \
  ht-train -g g.htg --backend cpu --chunks 2 --gpu-mem 1 --epochs 1

"$BIN/ht-partition" --help | grep -q "or auto: the fewest whose GPU working set" || fail "ht-partition --help: no auto"
"$BIN/ht-partition" --help | grep -q "GPU memory for --chunks auto" || fail "ht-partition --help: no sizing group"
"$BIN/ht-train" --help | grep -q "or auto: the fewest whose GPU working set" || fail "ht-train --help: no auto"

finish "--chunks auto: all checks passed"
