#!/usr/bin/env bash
# How ht-convert writes a graph file (issue 33): a features section of more
# than one 64 MiB block (written through a shared map where the file system
# allocates ahead, else pwritten) gives the same bytes at 1 and 2 threads,
# with and without --no-sync; -v names each large section's write and the
# commit; --no-sync is refused outside conversions; no temporary file is left.
# Usage: convert_write.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
cli_test_start "$1" ht-convert
CONVERT="$BIN/ht-convert"

"$CONVERT" --help >help.txt 2>&1
grep -q -- "--no-sync" help.txt || fail "--help lacks --no-sync"

# 140,000 rows of 256 bf16 values: 71.7 MB of features, two checksum blocks.
GEN=(--generate web --vertices 140000 --edges 1400000 --feature-dim 256 --classes 8 --feature-dtype bf16 --seed 3)
for t in 1 2; do
  for sync in "" --no-sync; do
    OMP_NUM_THREADS=$t "$CONVERT" -v "${GEN[@]}" $sync -o "g$t$sync.htg" >out.txt 2>&1 ||
      fail "generate at $t threads $sync: $(tail -n 3 out.txt)"
    grep -q "write features: .* (.* GB/s, \(mapped\|pwrite\); thread-seconds: fill" out.txt ||
      fail "-v lacks the features section's write: $(grep write out.txt)"
    if [[ -z "$sync" ]]; then pattern="commit (fsync, rename)"; else pattern="commit (rename)"; fi
    grep -q "write: $pattern" out.txt || fail "-v lacks '$pattern' $sync: $(grep commit out.txt)"
  done
done
for f in g1--no-sync.htg g2.htg g2--no-sync.htg; do
  cmp -s g1.htg "$f" || fail "$f differs from g1.htg"
done
"$CONVERT" --inspect g2--no-sync.htg >/dev/null 2>err.txt || fail "--inspect of the --no-sync file: $(cat err.txt)"

"$CONVERT" --inspect g1.htg --no-sync >/dev/null 2>stderr.txt
rc=$?
[[ $rc -eq 2 ]] || fail "--no-sync with --inspect: exit $rc, expected 2"
grep -q -- "--no-sync" stderr.txt || fail "--no-sync with --inspect: $(cat stderr.txt)"

leftover=$(ls | grep '\.tmp\.' || true)
[[ -z "$leftover" ]] || fail "temporary files left: $leftover"

finish "ht-convert's graph writes: all checks passed"
