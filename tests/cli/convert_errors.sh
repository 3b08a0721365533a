#!/usr/bin/env bash
# ht-convert at the shell: exit codes, one-line errors naming the file and
# position, no output file (or temporary) left behind for bad inputs, --help,
# and --inspect --json printing valid JSON.
# Usage: convert_errors.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN="$(cd "$1" 2>/dev/null && pwd)/ht-convert"
if [[ ! -x "$BIN" ]]; then
  echo "skip: $BIN not built"
  exit 77
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
PY=/usr/bin/python3
# expect_error NAME PATTERN ARGS...: non-zero exit, exactly one stderr line
# (at -q) matching PATTERN, and no .htg or temporary file left in $WORK.
expect_error() {
  local name="$1" pattern="$2"
  shift 2
  rm -f out.htg
  "$BIN" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  if compgen -G "*.htg*" >/dev/null; then fail "$name: output left behind: $(ls ./*.htg*)"; fi
  if [[ $failures -eq $before ]]; then echo "ok: $name -> $(cat stderr.txt)"; fi
}

# expect_parse_error NAME PATTERN ARGS...: a command-line parse error from
# CLI11: non-zero exit, the option named (CLI11 adds a "Run with --help" line).
expect_parse_error() {
  local name="$1" pattern="$2"
  shift 2
  "$BIN" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  if [[ $rc -eq 0 ]]; then fail "$name: exit code 0"; fi
  if ! head -n 1 stderr.txt | grep -q -- "$pattern"; then fail "$name: stderr lacks '$pattern':"; cat stderr.txt; fi
  if compgen -G "*.htg*" >/dev/null; then fail "$name: output left behind"; fi
  if [[ $failures -eq $before ]]; then echo "ok: $name -> $(head -n 1 stderr.txt)"; fi
}

# A .npy file: write_npy PATH DESCR SHAPE HEX-DATA (version 1 header).
write_npy() {
  local path="$1" descr="$2" shape="$3" data="$4"
  local dict="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
  while (( (10 + ${#dict} + 1) % 64 != 0 )); do dict="$dict "; done
  local len=$(( ${#dict} + 1 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))";
    printf '%s\n' "$dict"; printf "$data"; } >"$path"
}

# --- help and modes -----------------------------------------------------------
"$BIN" --help >help.txt 2>&1 || fail "--help exit code"
grep -q -- "--format" help.txt || fail "--help lacks --format"
grep -q -- "--generate" help.txt || fail "--help lacks --generate"
grep -q -- "--inspect" help.txt || fail "--help lacks --inspect"
"$BIN" --version >/dev/null 2>&1 || fail "--version exit code"
expect_error "no mode" "give exactly one of them"
expect_error "two modes" "give exactly one of them" --format edgelist -i x --inspect y
# Usage errors exit 2 in every tool (a missing mode, output or input; an option of another mode).
for args in "" "--generate rmat --vertices 64" "--format edgelist -o out.htg" "--format mtx -i x --json -o out.htg"; do
  "$BIN" -q $args >/dev/null 2>&1
  rc=$?
  [[ $rc -eq 2 ]] || fail "usage error '$args': exit code $rc, not 2"
done
expect_parse_error "unknown format" "--format: 'dot' is not one of edgelist, facebook, mtx, npy-edges, npz, ogb, planetoid" --format dot -i x -o out.htg

# --- bad inputs ------------------------------------------------------------------
printf '0 1\n1 2\n' >good.txt
expect_error "missing input" "missing.txt: input file not found" --format edgelist -i missing.txt -o out.htg
printf '# c\n0 1\n1 x\n' >nonnum.txt
expect_error "non-numeric token" "nonnum.txt:3: non-numeric token 'x' in column 2" --format edgelist -i nonnum.txt -o out.htg
printf '0 1\n1 2 3 4\n' >cols.txt
expect_error "column count" "cols.txt:2: expected 2 columns" --format edgelist -i cols.txt -o out.htg
printf '0 1\n-1 2\n' >neg.txt
expect_error "negative id" "neg.txt:2: negative vertex id -1" --format edgelist -i neg.txt -o out.htg
write_npy feat3.npy '<f4' '(3,)' '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40'
printf '0 1\n1 7\n' >far.txt
expect_error "id out of range" "far.txt:2: vertex id 7 in column 2 is out of range (N = 3 from feat3.npy)" \
  --format edgelist -i far.txt --features feat3.npy -o out.htg
write_npy lab4.npy '<i4' '(4,)' '\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00'
expect_error "lengths disagree" "lab4.npy: label array has 4 rows but feat3.npy has 3" \
  --format edgelist -i good.txt --features feat3.npy --labels lab4.npy -o out.htg
write_npy lab3.npy '<i4' '(3,)' '\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00'
expect_error "label out of range" "lab3.npy (byte 132): label 5 of vertex 1 is out of range (--classes 3)" \
  --format edgelist -i good.txt --labels lab3.npy --classes 3 -o out.htg
# An npz mask holding 2 (a uint8 array, not bool): refused as the .npy masks are
# (the archive zipped by Python's zipfile, no numpy needed).
write_npy nf.npy '<f4' '(3, 2)' '\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f\x00\x00\x80\x3f'
write_npy nl.npy '<i4' '(3,)' '\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00'
write_npy ed.npy '<i4' '(2, 2)' '\x00\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00'
write_npy tm.npy '|u1' '(1, 3)' '\x01\x02\x00'
python3 -c "
import zipfile
with zipfile.ZipFile('mask2.npz', 'w') as z:
    for key, f in [('node_features', 'nf.npy'), ('node_labels', 'nl.npy'), ('edges', 'ed.npy'), ('train_masks', 'tm.npy')]:
        z.write(f, key + '.npy')" || fail "npz: zipfile"
expect_error "npz mask value 2" "split 0: mask value 2 of node 1 is not 0/1" --format npz -i mask2.npz -o out.htg
write_npy feat30.npy '<f4' '(3, 0)' ''
expect_error "zero-column features" "feat30.npy: the feature array (3, 0) has no columns" \
  --format edgelist -i good.txt --features feat30.npy -o out.htg
head -c 134 feat3.npy >trunc.npy
expect_error "truncated npy" "trunc.npy (byte 128): float32 array of shape (3,) needs 12 data bytes, the file has 6" \
  --format edgelist -i good.txt --features trunc.npy -o out.htg
printf '%%%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1\n2 3 1\n' >short.mtx
expect_error "truncated mtx" "announces 3 entries but the file has 2" --format mtx -i short.mtx -o out.htg
# What the banner promises (issue 35): integer values, one triangle of a symmetric matrix.
printf '%%%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 1\n2 3 2.5\n' >frac.mtx
expect_error "mtx integer with a fraction" "the banner says integer but entry 2 (2 3) has the value 2.5" \
  --format mtx -i frac.mtx -o out.htg
printf '%%%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 1\n3 2\n2 3\n' >both.mtx
expect_error "mtx symmetric with both triangles" "entries lie in both triangles (entry 1: 2 1; entry 3: 2 3)" \
  --format mtx -i both.mtx -o out.htg
printf '%%%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n' >lower.mtx
"$BIN" -q --format mtx -i lower.mtx -o out.htg || fail "mtx symmetric with one triangle refused"
rm -f out.htg
expect_error "output dir missing" "cannot write 'no/such/dir/out.htg'" --format edgelist -i good.txt -o no/such/dir/out.htg
if [[ $(id -u) -ne 0 ]]; then
  mkdir ro && chmod 555 ro
  expect_error "read-only output dir" "is not writable" --format edgelist -i good.txt -o ro/out.htg
fi
expect_parse_error "bad enum" "--self-loops: 'maybe' is not one of add, auto, drop, keep" --format edgelist -i good.txt --self-loops maybe -o out.htg
expect_error "option of another generator" "does not apply to --generate rmat" --generate rmat --vertices 10 -o out.htg
# Generators asked for the impossible refuse before writing (issue 35).
expect_error "rmat: more classes than vertices" "option --classes: 20 classes for 16 vertices" \
  --generate rmat --scale 4 --classes 20 -o out.htg
expect_error "random: more classes than vertices" "option --classes: 6 classes for 5 vertices" \
  --generate random --vertices 5 --edges 3 --classes 6 -o out.htg
expect_error "rmat --edges 0" "option --edges: 0 edges: must be >= 1 for --generate rmat" \
  --generate rmat --scale 4 --edges 0 -o out.htg
expect_error "web --edges 0" "option --edges: 0 links: must be >= 1 for --generate web" \
  --generate web --vertices 100 --edges 0 -o out.htg
expect_parse_error "--scale beyond 30" "--scale" --generate rmat --scale 31 -o out.htg
expect_error "rmat beyond memory" "option --edges: a graph of 1048576 vertices and 1000000000000000 edges needs at least" \
  --generate rmat --scale 20 --edges 1000000000000000 -o out.htg
expect_error "random beyond memory" "needs at least .* of memory to generate" \
  --generate random --vertices 1000 --edges 1000000000000000000 -o out.htg
expect_error "features beyond the disk" "option --feature-dim: the graph file of 1000 vertices, .* and 1073741824 feature columns needs at least" \
  --generate community --vertices 1000 --feature-dim 1073741824 -o out.htg
"$BIN" -q --generate random --vertices 5 --edges 0 -o out.htg || fail "random --edges 0 (an edgeless graph) refused"
rm -f out.htg
expect_error "option of another mode" "option --json: does not apply to --format edgelist" --format edgelist -i good.txt --json -o out.htg
expect_error "option of another format" "option --header: does not apply to --format mtx" --format mtx -i short.mtx --header -o out.htg

# --- a good conversion, --inspect, and a corrupted file ----------------------------
printf 'id_1,id_2\n0,1\n1,2\n2,0\n2,2\n' >g.csv
"$BIN" -q --format edgelist -i g.csv --symmetrize --self-loops drop -o good.htg || fail "good conversion failed"
[[ -f good.htg ]] || fail "good.htg not written"
"$BIN" --inspect good.htg >inspect.txt || fail "--inspect exit code"
grep -q "symmetric            yes" inspect.txt || fail "--inspect text: $(cat inspect.txt)"
"$BIN" --inspect good.htg --json >inspect.json || fail "--inspect --json exit code"
if [[ -x $PY ]]; then
  $PY -m json.tool inspect.json >/dev/null || fail "--inspect --json is not valid JSON: $(cat inspect.json)"
  $PY -c 'import json,sys; d=json.load(open("inspect.json")); sys.exit(0 if d["num_vertices"]==3 and d["num_edges"]==6 and d["symmetric"] else 1)' \
    || fail "--inspect --json values: $(cat inspect.json)"
fi
mv good.htg keep.data
head -c 5000 keep.data >cut.data
expect_error "inspect truncated" "cut.data" --inspect cut.data
expect_error "inspect missing" "nothere.htg" --inspect nothere.htg
[[ -f keep.data ]] || fail "input of --inspect disappeared"

finish "all ht-convert CLI checks passed"
