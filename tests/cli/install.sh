#!/usr/bin/env bash
# make install without root (issue 35): `cmake --install` of this build into
# a prefix of one's own puts the tools, plot_metrics, ht-convert's Python
# helper and the htg.py reader there, and the installed tools run from
# another folder (a graph generated, trained, plotted); install_deps.sh
# --check lists what is missing (or says all is present) without installing.
# Usage: install.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train
BUILD="$(cd "$BIN/.." && pwd)"
[[ -f "$BUILD/cmake_install.cmake" ]] || { echo "skip: no cmake_install.cmake in $BUILD"; exit 77; }
PREFIX="$WORK/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >install.txt 2>&1 || { fail "cmake --install failed"; cat install.txt; }
for f in bin/ht-convert bin/ht-partition bin/ht-reorganize bin/ht-train bin/plot_metrics bin/plot_metrics.py \
  share/hongtu/datasets/planetoid_to_npy.py share/hongtu/python/htg.py; do
  [[ -e "$PREFIX/$f" ]] || fail "not installed: $f"
done
[[ -x "$PREFIX/bin/plot_metrics" ]] || fail "plot_metrics installed without its execute bit"

# From another folder, with only the prefix on PATH besides the system's.
mkdir elsewhere && cd elsewhere || exit 1
export PATH="$PREFIX/bin:/usr/bin:/bin" OMP_NUM_THREADS=1
[[ "$(command -v ht-train)" == "$PREFIX/bin/ht-train" ]] || fail "ht-train on PATH is not the installed one"
ht-convert -q --generate community --vertices 300 --classes 3 --feature-dim 8 --seed 2 -o g.htg ||
  fail "installed ht-convert"
ht-partition -q --graph g.htg --parts 2 --chunks 2 -o p.htp >/dev/null || fail "installed ht-partition"
ht-reorganize -q --graph g.htg --partition p.htp -o p.htplan >/dev/null 2>&1 || fail "installed ht-reorganize"
ht-train -q -g g.htg -p p.htp --plan p.htplan --backend cpu --epochs 2 --metrics-out m.jsonl >/dev/null ||
  fail "installed ht-train"
[[ -s m.jsonl ]] || fail "installed ht-train wrote no metrics"
if python3 -c "import matplotlib" 2>/dev/null; then
  plot_metrics m.jsonl -o plots >/dev/null 2>plot.txt || { fail "installed plot_metrics"; cat plot.txt; }
  [[ -s plots/accuracy.png ]] || fail "installed plot_metrics drew no accuracy.png"
else
  plot_metrics --help >/dev/null || fail "installed plot_metrics --help"
fi
if python3 -c "import numpy" 2>/dev/null; then
  PYTHONPATH="$PREFIX/share/hongtu/python" python3 -c "import htg" || fail "the installed htg.py does not import"
  PYTHONPATH="$PREFIX/share/hongtu/python" python3 -m hongtu graph g.htg >/dev/null || fail "the installed Python module does not read a graph"
fi

# install_deps.sh --check installs nothing: all present (0), or the missing packages and the apt line (1).
bash "$SRC/scripts/install_deps.sh" --check >deps.txt 2>&1
rc=$?
if [[ $rc -eq 0 ]]; then
  grep -q "all present" deps.txt || fail "install_deps --check: exit 0 without 'all present'"
elif [[ $rc -eq 1 ]]; then
  grep -q "apt-get install" deps.txt || fail "install_deps --check: no apt line: $(cat deps.txt)"
else
  fail "install_deps --check: exit code $rc"
fi
bash "$SRC/scripts/install_deps.sh" --bogus >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "install_deps.sh --bogus: exit code not 2"
finish "make install into a prefix of one's own: ok"
