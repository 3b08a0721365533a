#!/usr/bin/env bash
# Docs that cannot drift (issue 35): every option docs/USAGE.md and
# docs/CONVERT.md name exists in a tool's --help. The option tables of USAGE's
# command reference (### ht-convert, ht-partition, ht-reorganize, ht-train,
# scripts/plot_metrics) are checked against that tool's own --help; every
# other option the two documents name must exist in one of the tools' --help,
# unless it is one of the launchers' and schedulers' listed below (mpirun,
# srun, sbatch, the bench scripts), which are not ours to check.
# Usage: doc_options.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert ht-partition ht-reorganize ht-train

for tool in ht-convert ht-partition ht-reorganize ht-train; do
  "$BIN/$tool" --help >"help-$tool.txt" 2>&1 || fail "$tool --help failed"
done
# plot_metrics needs matplotlib only to plot: its --help is argparse's.
mkdir -p help-scripts
bash "$SRC/scripts/plot_metrics" --help >help-scripts/plot_metrics.txt 2>&1 ||
  { echo "note: scripts/plot_metrics --help failed; its table is not checked"; : >help-scripts/plot_metrics.txt; }

python3 - "$SRC" <<'PY'
import os, re, sys
src = sys.argv[1]
opt = re.compile(r"(?<![\w-])(--[a-z](?:[a-z0-9-]*[a-z0-9])?)(?![\w-])")
def help_options(tool):
    path = f"help-{tool}.txt"
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    return set(opt.findall(open(path).read()))
tools = ["ht-convert", "ht-partition", "ht-reorganize", "ht-train", "scripts/plot_metrics"]
helps = {t: help_options(t) for t in tools}
union = set().union(*(h for h in helps.values() if h))
# Options of other programs the documents show (launchers, schedulers, scripts).
external = {"--allow-run-as-root", "--oversubscribe", "--mca", "--bind-to", "--map-by", "--mpi", "--nodes",
            "--ntasks-per-node", "--cpus-per-task", "--gpus-per-node", "--gpus-per-task", "--gres", "--mem",
            "--export", "--dependency", "--kill-on-invalid-dep", "--parsable", "--requeue", "--open-mode",
            "--label", "--compare", "--dry-run", "--signal", "--time", "--job-name", "--output", "--error",
            "--check", "--prefix"}  # (--check, --prefix: scripts/install_deps.sh, cmake --install)
failures = 0
def fail(msg):
    global failures
    failures += 1
    print("FAIL:", msg)
checked = 0
# 1. The command reference's option tables, each against its own tool.
section = None
for no, line in enumerate(open(os.path.join(src, "docs/USAGE.md")), 1):
    m = re.match(r"^#{2,4} (.*)", line)
    if m:
        title = m.group(1).strip().strip("`")
        section = title if title in tools else (section if line.startswith("####") else None)
        continue
    if section and line.startswith("| `-"):
        first = line.split("|")[1]
        for o in opt.findall(first):
            checked += 1
            h = helps[section]
            if h is None:
                continue
            if o not in h:
                fail(f"docs/USAGE.md:{no}: {o} in the {section} table is not in `{section} --help`")
# 2. Every option either document names: some tool's, or another program's.
for doc in ["docs/USAGE.md", "docs/CONVERT.md"]:
    for no, line in enumerate(open(os.path.join(src, doc)), 1):
        for o in opt.findall(line):
            checked += 1
            if o not in union and o not in external:
                fail(f"{doc}:{no}: {o} is no tool's option (not in any --help)")
print(f"{checked} option mentions checked")
sys.exit(1 if failures else 0)
PY
[[ $? -eq 0 ]] || fail "options the docs name are missing from --help (above)"
finish "docs name only options the tools have: ok"
