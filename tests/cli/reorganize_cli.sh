#!/usr/bin/env bash
# ht-reorganize at the shell: builds a plan from ht-convert + ht-partition
# outputs, prints the volume/cost table, writes valid stats JSON, --check
# accepts its plan, --no-reorganize keeps the partitioner's volumes, and bad
# inputs give one error line, exit code 1 and no output file.
# Usage: reorganize_cli.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
BIN_DIR="$(cd "$1" 2>/dev/null && pwd)"
for tool in ht-convert ht-partition ht-reorganize; do
  if [[ ! -x "$BIN_DIR/$tool" ]]; then
    echo "skip: $BIN_DIR/$tool not built"
    exit 77
  fi
done
PY="${HT_PYTHON:-/usr/bin/python3}"
REORG="$BIN_DIR/ht-reorganize"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# expect_error NAME PATTERN ARGS...: exit code != 0, one stderr line (at -q)
# matching PATTERN, no plan or temporary file left behind.
expect_error() {
  local name="$1" pattern="$2"
  shift 2
  "$REORG" -q "$@" >stdout.txt 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  if compgen -G "out.htplan*" >/dev/null || compgen -G ".out.htplan*" >/dev/null; then
    fail "$name: output left behind: $(ls -a | grep htplan)"
  fi
  if [[ $failures -eq $before ]]; then echo "ok: $name -> $(cat stderr.txt)"; fi
}

"$BIN_DIR/ht-convert" -q --generate community --vertices 3000 --avg-degree 8 --classes 4 --feature-dim 16 \
  --seed 3 -o g.htg || { echo "FAIL: ht-convert"; exit 1; }
"$BIN_DIR/ht-convert" -q --generate random --vertices 3000 --edges 9000 --feature-dim 16 --seed 4 -o other.htg ||
  { echo "FAIL: ht-convert"; exit 1; }
"$BIN_DIR/ht-partition" -q -g g.htg -o p.htp -m 2 -n 4 >/dev/null || { echo "FAIL: ht-partition"; exit 1; }
"$BIN_DIR/ht-partition" -q -g other.htg -o other.htp -m 2 -n 4 >/dev/null || { echo "FAIL: ht-partition"; exit 1; }

# --- help ----------------------------------------------------------------------
"$REORG" --help >help.txt 2>&1 || fail "--help exit code"
for opt in --no-reorganize --row-bytes --t-hd --t-dd --t-ru --profile --stats-json --no-verify --check; do
  grep -q -- "$opt" help.txt || fail "--help lacks $opt"
done

# --- build, stats, check -----------------------------------------------------
if "$REORG" -q -g g.htg -p p.htp -o plan.htplan --stats-json s.json >table.txt 2>err.txt; then
  for key in V_ori V_p2p V_ru "cost C"; do grep -q "$key" table.txt || fail "table lacks $key"; done
  "$PY" - s.json <<'PYEOF' || fail "stats JSON"
import json, sys
s = json.load(open(sys.argv[1]))
for k in ["V_ori", "V_p2p", "V_ru", "V_ori_before", "V_p2p_before", "V_ru_before", "cost_before", "cost_after",
          "seconds", "row_bytes"]:
    assert k in s, k
assert s["V_ru"] <= s["V_p2p"] <= s["V_ori"], s
assert s["V_ori"] == s["V_ori_before"], s
assert s["cost_after"] <= s["cost_before"], s
assert s["row_bytes"] == 64, s  # 4 bytes x 16 features
assert s["m"] == 2 and s["n"] == 4
PYEOF
  echo "ok: build"
else
  fail "build: $(cat err.txt)"
fi
"$REORG" -q --check plan.htplan -g g.htg -p p.htp >check.txt 2>&1 || fail "--check of a good plan: $(cat check.txt)"
grep -q "is correct" check.txt || fail "--check output: $(cat check.txt)"

"$REORG" -q -g g.htg -p p.htp -o plain.htplan --no-reorganize --row-bytes 100 --stats-json plain.json >/dev/null ||
  fail "--no-reorganize"
"$PY" - plain.json <<'PYEOF' || fail "--no-reorganize volumes"
import json, sys
s = json.load(open(sys.argv[1]))
assert not s["reorganized"] and not s["reorganize_requested"]
for k in ["V_ori", "V_p2p", "V_ru"]:
    assert s[k] == s[k + "_before"], (k, s)
assert s["cost_before"] == s["cost_after"] and s["row_bytes"] == 100
PYEOF

printf '# PCIe 4 machine\nt_hd = 25e9\nt_dd = 25e9\n' >prof.txt
"$REORG" -q -g g.htg -p p.htp -o prof.htplan --profile prof.txt --t-ru 1e12 --stats-json prof.json >/dev/null ||
  fail "--profile"
"$PY" -c "import json,sys; s=json.load(open('prof.json')); assert (s['t_hd'], s['t_dd'], s['t_ru']) == (25e9, 25e9, 1e12), s" ||
  fail "profile values"

# --- errors ----------------------------------------------------------------------
expect_error "no output" "--output" -g g.htg -p p.htp
expect_error "partition of another graph" "not the one the partition was made from" -g other.htg -p p.htp -o out.htplan
expect_error "check against another graph" "plan was made for another graph" --check plan.htplan -g other.htg -p other.htp
expect_error "check against another partition" "plan was made for another partition" --check plan.htplan -g g.htg -p other.htp
printf 't_hd = fast\n' >bad_prof.txt
expect_error "bad profile value" "bad_prof.txt:1" -g g.htg -p p.htp -o out.htplan --profile bad_prof.txt
printf 't_hd = 1e9\nspeed = 3\n' >bad_prof.txt
expect_error "bad profile key" "bad_prof.txt:2: unknown key 'speed'" -g g.htg -p p.htp -o out.htplan --profile bad_prof.txt
expect_error "negative throughput" "--t-dd" -g g.htg -p p.htp -o out.htplan --t-dd -3
expect_error "output directory missing" "does not exist" -g g.htg -p p.htp -o nodir/out.htplan
expect_error "plan is not a plan" "wrong magic" --check g.htg -g g.htg -p p.htp
cp plan.htplan broken.htplan
size=$(stat -c %s broken.htplan)
printf '\x55' | dd of=broken.htplan bs=1 seek=$((size - 5)) conv=notrunc status=none
expect_error "corrupted plan" "checksum mismatch" --check broken.htplan -g g.htg -p p.htp
# --- section checksums: the features (never read by plans) are not verified,
# the topology is; the plan's bytes (past the header, which records the build
# time) do not depend on the thread count -----------------------------------
section_span() {  # FILE NAME: "offset length" of a section, from the header's table
  "$PY" - "$1" "$2" <<'PYEOF'
import struct, sys
h = open(sys.argv[1], "rb").read(4096)
for i in range(struct.unpack_from("<I", h, 20)[0]):
    e = 192 + 96 * i
    if h[e:e + 32].rstrip(b"\0").decode() == sys.argv[2]:
        print(*struct.unpack_from("<QQ", h, e + 56))
PYEOF
}
body() { tail -c +4097 "$1" | sha256sum | cut -d' ' -f1; }
read -r f_off f_len <<<"$(section_span g.htg features)"
[[ -n ${f_len:-} && $f_len -gt 16 ]] || fail "no features section in g.htg"
cp g.htg spoiled_features.htg
printf '\x55\xaa' | dd of=spoiled_features.htg bs=1 seek=$((f_off + f_len / 2)) conv=notrunc status=none
OMP_NUM_THREADS=1 "$REORG" -q -g g.htg -p p.htp -o t1.htplan >/dev/null || fail "1 thread"
OMP_NUM_THREADS=3 "$REORG" -q -g g.htg -p p.htp -o t3.htplan >/dev/null || fail "3 threads"
[[ $(body t1.htplan) == "$(body t3.htplan)" ]] || fail "plan bytes differ between 1 and 3 threads"
"$REORG" -q -g spoiled_features.htg -p p.htp -o sf.htplan >/dev/null 2>err.txt ||
  fail "corrupted features (never read) refused: $(cat err.txt)"
[[ $(body sf.htplan) == "$(body t1.htplan)" ]] || fail "plan from the graph with corrupted features differs"
echo "ok: features not verified, same plan bytes at 1 and 3 threads"
read -r s_off s_len <<<"$(section_span g.htg csc_sources)"
cp g.htg spoiled_sources.htg
printf '\x01' | dd of=spoiled_sources.htg bs=1 seek=$((s_off + s_len - 3)) conv=notrunc status=none
expect_error "corrupted topology" "checksum mismatch in section 'csc_sources'" -g spoiled_sources.htg -p p.htp \
  -o out.htplan
head -c 5000 plan.htplan >short.htplan
expect_error "truncated plan" "truncated" --check short.htplan -g g.htg -p p.htp

finish "all ok"
