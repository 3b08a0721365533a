#!/usr/bin/env bash
# ht-partition end to end: a run writes the partition and the stats JSON, the
# same seed gives the same bytes, --method auto says what it picked and why,
# --chunking auto keeps per partition the chunks that read fewer rows,
# --method multilevel gives the same bytes with 1 or 2 threads and a partition
# that ht-reorganize and ht-train take like METIS's, and bad inputs or
# impossible parameters exit 1 with one error line naming the option or file,
# leaving no output behind.
# Usage: partition_cli.sh BIN_DIR SOURCE_DIR
set -u
BIN="$1/ht-partition"
PY="${HT_PYTHON:-/usr/bin/python3}"
[ -x "$BIN" ] || { echo "skipped: $BIN not built"; exit 77; }
"$PY" -c 'import json, struct' 2>/dev/null || { echo "skipped: no python at $PY"; exit 77; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A graph file written from docs/FORMATS.md alone (so this test does not need
# ht-convert): N vertices, E random edges (seeded), optional split section.
make_graph() {  # path n e seed with_split
  "$PY" - "$@" <<'EOF'
import random, struct, sys
path, n, e, seed, with_split = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
M = (1 << 64) - 1
P1, P2, P3, P4, P5 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5
def rotl(x, r): return ((x << r) | (x >> (64 - r))) & M
def rnd(acc, v): return (rotl((acc + v * P2) & M, 31) * P1) & M
def xxh64(d, seed=0):
    n, i = len(d), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4): v[k] = rnd(v[k], int.from_bytes(d[i + 8 * k:i + 8 * k + 8], "little"))
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4): h = ((h ^ rnd(0, v[k])) * P1 + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, int.from_bytes(d[i:i + 8], "little")), 27) * P1 + P4) & M; i += 8
    if i + 4 <= n:
        h = (rotl(h ^ ((int.from_bytes(d[i:i + 4], "little") * P1) & M), 23) * P2 + P3) & M; i += 4
    while i < n:
        h = (rotl(h ^ ((d[i] * P5) & M), 11) * P1) & M; i += 1
    h ^= h >> 33; h = (h * P2) & M; h ^= h >> 29; h = (h * P3) & M; h ^= h >> 32
    return h
rng = random.Random(seed)
ins = [[] for _ in range(n)]
for _ in range(e): ins[rng.randrange(n)].append(rng.randrange(n))
offsets, sources = [0], []
for lst in ins:
    sources += sorted(lst); offsets.append(len(sources))
sections = [("csc_offsets", 4, struct.pack(f"<{n + 1}q", *offsets), n + 1),
            ("csc_sources", 3, struct.pack(f"<{e}I", *sources), e)]
if with_split: sections.append(("split", 1, bytes(rng.choice([0, 1, 2, 3]) for _ in range(n)), n))
body, pos, table = b"", 4096, b""
for name, dtype, data, count in sections:
    pad = (-pos) % 4096; body += b"\0" * pad; pos += pad
    table += name.encode().ljust(32, b"\0") + struct.pack("<IIQQQQQ", dtype, 1, count, 1, pos, len(data), xxh64(data)) + b"\0" * 16
    body += data; pos += len(data)
meta = struct.pack("<16Q", n, e, 4, 0, 0, *([0] * 11))
header = bytearray(b"HTGRAPH\0" + struct.pack("<IIIIQQQ", 1, 0x01020304, 4096, len(sections), 4, 0, pos) + b"\0" * 16 + meta + table)
header += b"\0" * (4096 - len(header))
header[32:40] = struct.pack("<Q", xxh64(bytes(header)))
open(path, "wb").write(bytes(header) + body)
EOF
}

make_graph "$TMP/g.htg" 2000 16000 1 0 || { echo "skipped: could not write the test graph"; exit 77; }
make_graph "$TMP/s.htg" 500 3000 2 1

# expect_error NAME EXPECTED_TEXT ARGS...: non-zero exit, the text on stderr;
# errors found by the tool itself (not by CLI11's parser, names "cli: ...")
# are exactly one line "ht-partition: error: ...".
expect_error() {
  local name="$1" text="$2"; shift 2
  "$BIN" -q "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
  local rc=$?
  [ $rc -ne 0 ] || fail "$name: exit code 0"
  grep -q -- "$text" "$TMP/err.txt" || fail "$name: error text '$text' missing: $(cat "$TMP/err.txt")"
  case "$name" in
    cli:*) ;;
    *) [ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q '^ht-partition: error: ' "$TMP/err.txt" \
         || fail "$name: not one error line: $(cat "$TMP/err.txt")" ;;
  esac
}

# --- success, stats JSON, reproducibility -----------------------------------
"$BIN" --graph "$TMP/g.htg" --parts 4 --chunks 3 --seed 5 --stats-json "$TMP/s.json" -o "$TMP/p.htp" \
  >"$TMP/table.txt" 2>"$TMP/log.txt" || fail "run: exit code $?: $(cat "$TMP/log.txt")"
[ "$(head -c 6 "$TMP/p.htp" 2>/dev/null)" = "HTPART" ] || fail "run: no partition file"
grep -q "replication factor alpha" "$TMP/table.txt" || fail "run: no stats table on stdout"
grep -q "metis" "$TMP/log.txt" || fail "run: no per-phase timing for metis"
grep -q "peak memory" "$TMP/log.txt" || fail "run: no peak memory line"
"$PY" - "$TMP/s.json" <<'EOF' || fail "run: stats JSON"
import json, sys
s = json.load(open(sys.argv[1]))
for k in ("alpha", "edge_cut", "imbalance", "seconds", "chunk_imbalance", "metis_seconds", "metis_peak_bytes"):
    assert k in s, k
assert len(s["chunks"]) == 12 and len(s["parts"]) == 4
assert sum(c["vertices"] for c in s["chunks"]) == 2000
assert sum(c["in_edges"] for c in s["chunks"]) == 16000
assert abs(s["alpha"] - sum(c["in_neighbors"] for c in s["chunks"]) / 2000) < 1e-9
assert 1.0 <= s["imbalance"] <= 1.035, s["imbalance"]
assert s["params"]["parts"] == 4 and s["params"]["seed"] == 5
# --chunking auto (the default) with METIS: each partition by locality where it reads fewer rows.
assert s["params"]["chunking_requested"] == "auto" and s["params"]["chunking"] in ("balanced", "locality"), s["params"]
c = s["chunking"]
assert c["requested"] == "auto" and c["ran"] == s["params"]["chunking"] and len(c["parts"]) == 4, c
for q in c["parts"]:
    assert q["method"] == "metis" and q["neighbor_rows_balanced"] > 0 and q["neighbor_rows_locality"] > 0, q
    kept = q["neighbor_rows_locality"] if q["chunking"] == "locality" else q["neighbor_rows_balanced"]
    assert kept == min(q["neighbor_rows_locality"], q["neighbor_rows_balanced"]), q
assert sum(k["in_neighbors"] for k in s["chunks"]) == sum(q["neighbor_rows_" + q["chunking"]] for q in c["parts"])
EOF
"$BIN" -q --graph "$TMP/g.htg" --parts 4 --chunks 3 --seed 5 -o "$TMP/p2.htp" >/dev/null || fail "rerun"
cmp -s "$TMP/p.htp" "$TMP/p2.htp" || fail "same seed gave different partition files"
for method in random range; do
  "$BIN" -q --graph "$TMP/g.htg" --parts 3 --chunks 2 --method "$method" -o "$TMP/$method.htp" >/dev/null \
    || fail "--method $method"
done
"$BIN" --graph "$TMP/g.htg" --parts 1 --chunks 4 -o "$TMP/one.htp" >/dev/null 2>"$TMP/one.log" || fail "--parts 1"
grep -q -- "--method auto: metis (m = 1, chunks by locality (n = 4)" "$TMP/one.log" \
  || fail "--parts 1: auto does not pick the chunks' partitioner: $(cat "$TMP/one.log")"
"$BIN" --graph "$TMP/g.htg" --parts 1 --chunks 4 --chunking balanced --stats-json "$TMP/one_b.json" \
  -o "$TMP/one_b.htp" >/dev/null 2>"$TMP/one_b.log" || fail "--chunking balanced"
grep -q "nothing to partition" "$TMP/one_b.log" || fail "--chunking balanced, m = 1: $(cat "$TMP/one_b.log")"
"$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["params"]["chunking"] == "balanced" and s["chunking"]["parts"] == [] and s["metis_seconds"] is None, s["params"]' \
  "$TMP/one_b.json" || fail "--chunking balanced: stats JSON"
"$BIN" -q --graph "$TMP/s.htg" --parts 2 --vertex-weights train --algorithm kway -o "$TMP/t.htp" >/dev/null \
  || fail "--vertex-weights train"
"$BIN" --help | grep -q -- "--imbalance" || fail "--help"
"$BIN" --help | grep -q -- "multilevel" || fail "--help does not list multilevel"
"$BIN" --help | grep -q -- "--chunking" || fail "--help does not list --chunking"

# --- --method auto (the default) and --method multilevel --------------------
grep -q -- "--method auto: metis (" "$TMP/log.txt" || fail "auto: no line naming the method and why: $(cat "$TMP/log.txt")"
"$PY" -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["params"]["method"] == "metis" and s["params"]["method_requested"] == "auto" and s["method_reason"], s["params"]' \
  "$TMP/s.json" || fail "auto: stats JSON does not record the pick"
OMP_NUM_THREADS=1 "$BIN" --graph "$TMP/g.htg" --parts 4 --chunks 3 --method multilevel --stats-json "$TMP/ml.json" \
  -o "$TMP/ml1.htp" >/dev/null 2>"$TMP/ml.log" || fail "--method multilevel: exit code: $(cat "$TMP/ml.log")"
grep -q "multilevel: .* levels" "$TMP/ml.log" || fail "multilevel: no summary line: $(cat "$TMP/ml.log")"
"$PY" - "$TMP/ml.json" <<'EOF2' || fail "multilevel: stats JSON"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["params"]["method"] == "multilevel" and s["method_reason"] is None, s["params"]
assert s["multilevel"]["levels"] >= 1 and s["metis_seconds"] is None, s["multilevel"]
assert sum(c["vertices"] for c in s["chunks"]) == 2000
assert 1.0 <= s["imbalance"] <= 1.03 + 1e-9, s["imbalance"]
EOF2
OMP_NUM_THREADS=2 "$BIN" -q --graph "$TMP/g.htg" --parts 4 --chunks 3 --method multilevel -o "$TMP/ml2.htp" >/dev/null \
  || fail "--method multilevel with 2 threads"
cmp -s "$TMP/ml1.htp" "$TMP/ml2.htp" || fail "multilevel: 1 and 2 threads gave different partition files"

# Both methods' partitions go through ht-reorganize and a CPU training epoch
# (a graph with features and labels, from ht-convert when it was built).
if [ -x "$1/ht-convert" ] && [ -x "$1/ht-reorganize" ] && [ -x "$1/ht-train" ]; then
  "$1/ht-convert" -q --generate community --vertices 1200 --avg-degree 8 --classes 4 --feature-dim 8 --seed 3 \
    -o "$TMP/c.htg" || fail "ht-convert --generate community"
  for method in metis multilevel; do
    "$BIN" -q --graph "$TMP/c.htg" --parts 2 --chunks 2 --method "$method" -o "$TMP/c.$method.htp" >/dev/null \
      || { fail "$method: ht-partition"; continue; }
    "$1/ht-reorganize" -q --graph "$TMP/c.htg" --partition "$TMP/c.$method.htp" -o "$TMP/c.$method.htplan" \
      >/dev/null 2>"$TMP/err.txt" || { fail "$method: ht-reorganize: $(cat "$TMP/err.txt")"; continue; }
    "$1/ht-train" -q --graph "$TMP/c.htg" --partition "$TMP/c.$method.htp" --plan "$TMP/c.$method.htplan" \
      --backend cpu --epochs 1 >/dev/null 2>"$TMP/err.txt" || fail "$method: ht-train: $(cat "$TMP/err.txt")"
  done
else
  echo "note: ht-convert, ht-reorganize or ht-train not built; the training part is skipped"
fi

# --- errors -----------------------------------------------------------------
mkdir "$TMP/out"
expect_error "parts 0" "--parts" --graph "$TMP/g.htg" --parts 0 -o "$TMP/out/x.htp"
expect_error "chunks 0" "--chunks" --graph "$TMP/g.htg" --chunks 0 -o "$TMP/out/x.htp"
expect_error "m*n > N" "more than the graph's 2000 vertices" --graph "$TMP/g.htg" --parts 40 --chunks 51 -o "$TMP/out/x.htp"
expect_error "imbalance" "--imbalance" --graph "$TMP/g.htg" --parts 2 --imbalance 0 -o "$TMP/out/x.htp"
expect_error "cli: bad method" "--method" --graph "$TMP/g.htg" --method spectral -o "$TMP/out/x.htp"
expect_error "cli: bad chunking" "--chunking" --graph "$TMP/g.htg" --chunking spectral -o "$TMP/out/x.htp"
expect_error "multilevel m*n > N" "more than the graph's 2000 vertices" --graph "$TMP/g.htg" --method multilevel \
  --parts 40 --chunks 51 -o "$TMP/out/x.htp"
expect_error "recursive vol" "--objective" --graph "$TMP/g.htg" --parts 2 --algorithm recursive --objective vol -o "$TMP/out/x.htp"
expect_error "train no split" "split section" --graph "$TMP/g.htg" --parts 2 --vertex-weights train -o "$TMP/out/x.htp"
expect_error "missing graph" "nope.htg" --graph "$TMP/nope.htg" -o "$TMP/out/x.htp"
echo "not a graph" >"$TMP/text.htg"
expect_error "not a graph" "text.htg" --graph "$TMP/text.htg" -o "$TMP/out/x.htp"
cp "$TMP/g.htg" "$TMP/bad.htg"
printf '\xff' | dd of="$TMP/bad.htg" bs=1 seek=$((4096 + 100)) conv=notrunc status=none
expect_error "corrupt graph" "checksum" --graph "$TMP/bad.htg" -o "$TMP/out/x.htp"
# Bit 0 of a source id flipped: ids stay < N, only the checksum can tell.
cp "$TMP/g.htg" "$TMP/flip.htg"
"$PY" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(20480 + 40); b = f.read(1); f.seek(20480 + 40); f.write(bytes([b[0] ^ 1]))' "$TMP/flip.htg"
expect_error "flipped source" "checksum" --graph "$TMP/flip.htg" -o "$TMP/out/x.htp"
"$BIN" -q --no-verify --graph "$TMP/flip.htg" -o "$TMP/nv.htp" >/dev/null 2>&1 || fail "--no-verify did not skip checksums"
expect_error "no output dir" "does not exist" --graph "$TMP/g.htg" -o "$TMP/nodir/x.htp"
expect_error "output is input" "is an input of this run" --graph "$TMP/g.htg" -o "$TMP/g.htg"
expect_error "cli: missing -o" "output" --graph "$TMP/g.htg"
[ -z "$(ls -A "$TMP/out")" ] || fail "failed runs left files behind: $(ls -A "$TMP/out")"

[ $fails -eq 0 ] && echo "partition_cli: all checks passed"
exit $((fails > 0))
