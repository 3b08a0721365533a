#!/usr/bin/env python3
"""The table of a bench/run.sh output folder: reads OUT/runs.tsv (one line per run), the runs'
ht-train metrics (JSON lines, the final "summary" object) and PyG results (JSON), the
ht-partition / ht-reorganize statistics, OUT/steps.tsv and OUT/env.txt; prints markdown and
writes it to OUT/summary.md (atomically). Standard library only.

Usage: report.py OUT_DIR [--quiet]   (--quiet: only write summary.md)
"""

import json
import os
import sys
from collections import OrderedDict

FIELDS = ("name", "kind", "workload", "graph", "model", "layers", "heads", "m", "n", "comm", "status", "log",
          "result", "part_stats", "plan_stats")
COMM_ORDER = ("baseline", "p2p", "full")

# SPEC §9 targets.
TARGET_IN_MEMORY = 0.8      # in-memory GCN epoch <= 0.8x PyG's
TARGET_OUT_OF_CORE = 1.3    # out-of-core GCN (>= 4 chunks) <= 1.3x PyG's in-GPU time
TARGET_COMM = 1.5           # --comm full >= 1.5x faster than baseline on 4 GPUs
TARGET_SCALING = 3.2        # 4-GPU speedup over 1 GPU >= 3.2x


def read_runs(out):
    runs = []
    path = os.path.join(out, "runs.tsv")
    if not os.path.exists(path):
        return runs
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != len(FIELDS):
                continue
            r = dict(zip(FIELDS, parts))
            r["m"], r["n"], r["heads"] = int(r["m"]), int(r["n"]), int(r["heads"])
            runs.append(r)
    return runs


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_summary(path):
    """The last "summary" object of an ht-train metrics file, or None."""
    found = None
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if obj.get("type") == "summary":
                    found = obj
    except OSError:
        return None
    return found


def read_kv(path):
    kv = OrderedDict()
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    kv[k] = v
    except OSError:
        pass
    return kv


def last_error_line(path):
    """The most telling line of a failed step's log: the last line mentioning an error, else the last line."""
    try:
        with open(path, errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("exit code ")]
    except OSError:
        return ""
    for ln in reversed(lines):
        if "error" in ln.lower() or "Error" in ln:
            return ln[:200]
    return lines[-1][:200] if lines else ""


# --- formatting --------------------------------------------------------------------------------
def f_ms(x):
    return "—" if x is None else "%.1f" % x


def f_count(x):
    if x is None:
        return "—"
    for unit, div in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(x) >= div:
            return "%.2f%s" % (x / div, unit)
    return "%d" % x


def f_bytes(x):
    """Decimal units (link volumes, compare with GB/s)."""
    if x is None:
        return "—"
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= div:
            return "%.2f %s" % (x / div, unit)
    return "%d B" % x


def f_mem(x):
    if x is None:
        return "—"
    return "%.2f GiB" % (x / 2**30) if x >= 2**30 else "%.1f MiB" % (x / 2**20)


def f_acc(x):
    return "—" if x is None else "%.4f" % x


def rel(out, path):
    if not path or path == "-" or not os.path.isabs(path):
        return path
    try:
        return os.path.relpath(path, out)
    except ValueError:
        return path


# --- loading -----------------------------------------------------------------------------------
def load(out):
    runs = read_runs(out)
    for r in runs:
        r["data"] = None
        if r["status"] != "ok":
            continue
        if r["kind"] == "ht":
            r["data"] = read_summary(r["result"])
            if r["data"] is None:
                r["status"] = "FAILED"
                r["why"] = "no summary line in %s" % rel(out, r["result"])
        else:
            r["data"] = read_json(r["result"])
            if r["data"] is None:
                r["status"] = "FAILED"
                r["why"] = "no result in %s" % rel(out, r["result"])
    return runs


def pyg_of(runs):
    """workload -> the PyG run of that workload."""
    return {r["workload"]: r for r in runs if r["kind"] == "pyg"}


def pyg_ms(p):
    if p is None or p["status"] != "ok" or p["data"].get("oom"):
        return None
    return p["data"].get("epoch_ms_median")


def status_cell(out, r):
    if r["status"] == "ok":
        return "ok"
    log = r["log"]
    if log and os.path.isabs(log):
        return "%s (%s)" % (r["status"], rel(out, log))
    return "%s (%s)" % (r["status"], r.get("why") or log or "?")


# --- sections ----------------------------------------------------------------------------------
MAIN_HEADER = ("| workload | model | GPUs | chunks | comm | epoch ms | h2d / d2d / compute / cpu ms | host link rows · bytes "
               "| p2p rows · bytes | reuse rows · bytes | d2h bytes | host GB/s (est.) | peak GPU | pinned host "
               "| test acc | PyG ms | ht/PyG | status |")


def main_table(out, runs):
    pyg = pyg_of(runs)
    lines = [MAIN_HEADER, "|" + "---|" * MAIN_HEADER.count(" | ") + "---|"]
    for r in runs:
        d = r["data"] if r["status"] == "ok" else None
        model = "%s %s%s" % (r["model"].upper(), r["layers"], " ×%d heads" % r["heads"] if r["model"] == "gat" else "")
        if r["kind"] == "pyg":
            if d is None:
                cells = ["—"] * 12
            else:
                oom = bool(d.get("oom"))
                ms = "OOM" if oom else f_ms(d.get("epoch_ms_median"))
                cells = [ms] + ["—"] * 6 + [f_mem(d.get("peak_gpu_bytes")), "—", f_acc(d.get("test_acc")), ms,
                                            "—" if oom else "1.00"]
            row = [r["workload"], model, "1", "—", "PyG"] + cells
        else:
            if d is None:
                cells = ["—"] * 12
            else:
                h2d_ms = d.get("h2d_ms_median")
                bw = (d["h2d_bytes"] / (h2d_ms * 1e-3) / 1e9) if h2d_ms and d.get("h2d_bytes") else None
                p = pyg.get(r["workload"])
                pm = pyg_ms(p)
                if p is not None and p["status"] == "ok" and p["data"].get("oom"):
                    ratio = "PyG OOM"
                else:
                    ratio = "%.2f" % (d["epoch_ms_median"] / pm) if pm else "—"
                cells = [f_ms(d.get("epoch_ms_median")),
                         "%s / %s / %s / %s" % (f_ms(h2d_ms), f_ms(d.get("d2d_ms_median")),
                                                f_ms(d.get("compute_ms_median")), f_ms(d.get("cpu_ms_median"))),
                         "%s · %s" % (f_count(d.get("h2d_rows")), f_bytes(d.get("h2d_bytes"))),
                         "%s · %s" % (f_count(d.get("p2p_rows")), f_bytes(d.get("p2p_bytes"))),
                         "%s · %s" % (f_count(d.get("reuse_rows")), f_bytes(d.get("reuse_bytes"))),
                         f_bytes(d.get("d2h_bytes")),
                         "—" if bw is None else "%.1f" % bw,
                         f_mem(d.get("peak_device_bytes")), f_mem(d.get("host_buffer_bytes")),
                         f_acc(d.get("test_acc_at_best_val")), f_ms(pm), ratio]
            row = [r["workload"], model, str(r["m"]), str(r["n"]), r["comm"]] + cells
        row.append(status_cell(out, r))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def time_section(runs):
    """Where each hongtu epoch goes: the link-bound lower bound (cuda runs: measured host link), the
    exposed-time split, evaluation and setup."""
    rows = []
    for r in ok_ht(runs):
        d = r["data"]
        if "x_compute_ms_median" not in d:  # a metrics file from before these fields
            continue
        if d.get("link_measured"):
            bound = f_ms(d.get("link_bound_ms"))
            ratio = "—" if d.get("epoch_over_link_bound") is None else "%.2f×" % d["epoch_over_link_bound"]
            link = "%.1f / %.1f" % (d["link_h2d_bytes_per_s"] / 1e9, d["link_d2h_bytes_per_s"] / 1e9)
        else:
            bound, ratio, link = "not measured", "—", "—"
        exposed = " / ".join(f_ms(d.get("x_%s_ms_median" % k)) for k in ("compute", "h2d", "d2h", "host", "idle"))
        setup = d.get("setup_seconds")
        setup_cell = "—" if setup is None else "%.2f (%.0f epochs)" % (setup, d.get("setup_over_epoch") or 0)
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], f_ms(d.get("epoch_ms_median")), link, bound, ratio, exposed, f_ms(d.get("eval_ms_median")),
            setup_cell))
    if not rows:
        return []
    return ["| run (workload.mGPUs.nchunks.comm) | epoch ms | link H2D / D2H GB/s | link bound ms | epoch / bound "
            "| exposed compute / h2d / d2h / host / idle ms | eval ms | setup s |",
            "|---|---|---|---|---|---|---|---|"] + rows + [
            "", "Link bound = max(H2D bytes / H2D bandwidth, D2H bytes / D2H bandwidth) per epoch, divided by "
            "the GPUs (each has its own host link), with the bandwidth of pinned copies measured on GPU 0 at "
            "start-up; not measured on the CPU backend. Exposed times split the epoch's wall time by what ran "
            "(compute first, then h2d, d2h, host accumulation, else idle); their medians need not add up to "
            "the median epoch. eval = the evaluation forward, not in the epoch time. setup = everything before "
            "the first epoch (loading, plan, link probe, buffers), also in median epochs."]


def ok_ht(runs):
    return [r for r in runs if r["kind"] == "ht" and r["status"] == "ok"]


def comm_section(runs):
    groups = OrderedDict()
    for r in ok_ht(runs):
        groups.setdefault((r["workload"], r["m"], r["n"]), {})[r["comm"]] = r["data"]
    lines = []
    for (w, m, n), modes in groups.items():
        if len(modes) < 2:
            continue
        parts = ["%s %s ms (host %s)" % (c, f_ms(modes[c]["epoch_ms_median"]), f_bytes(modes[c].get("h2d_bytes")))
                 for c in COMM_ORDER if c in modes]
        line = "- %s, %d GPU%s × %d chunks: %s" % (w, m, "s" if m > 1 else "", n, ", ".join(parts))
        if "baseline" in modes and "full" in modes and modes["full"]["epoch_ms_median"]:
            s = modes["baseline"]["epoch_ms_median"] / modes["full"]["epoch_ms_median"]
            line += " → speedup of full over baseline %.2f×" % s
            if m == 4:
                line += " (target ≥ %.1f×: %s)" % (TARGET_COMM, "met" if s >= TARGET_COMM else "MISSED")
            else:
                line += " (target ≥ %.1f× is for 4 GPUs)" % TARGET_COMM
        lines.append(line)
    return lines


def scaling_section(runs):
    by = OrderedDict()
    for r in ok_ht(runs):
        by.setdefault((r["workload"], r["n"], r["comm"]), {})[r["m"]] = r["data"]["epoch_ms_median"]
    lines = []
    for (w, n, c), ms in by.items():
        if 1 not in ms or len(ms) < 2:
            continue
        for m in sorted(k for k in ms if k > 1):
            s = ms[1] / ms[m] if ms[m] else 0
            line = "- %s, %d chunks per GPU, %s: 1 GPU %s ms, %d GPUs %s ms → %.2f×" % (
                w, n, c, f_ms(ms[1]), m, f_ms(ms[m]), s)
            if m == 4:
                line += " (target ≥ %.1f×: %s)" % (TARGET_SCALING, "met" if s >= TARGET_SCALING else "MISSED")
            lines.append(line)
    return lines


def targets_section(runs):
    pyg = pyg_of(runs)
    lines = []
    for r in ok_ht(runs):
        if r["m"] != 1 or r["comm"] != "full":
            continue
        p = pyg.get(r["workload"])
        if p is None or p["status"] != "ok":
            continue
        d, pd = r["data"], p["data"]
        ht_ms = d["epoch_ms_median"]
        if pd.get("oom"):
            if r["model"] == "gat":
                lines.append("- %s, 1 GPU × %d chunks: GAT trains (%s ms/epoch) where PyG runs out of memory: met"
                             % (r["workload"], r["n"], f_ms(ht_ms)))
            continue
        ratio = ht_ms / pd["epoch_ms_median"]
        if r["model"] == "gcn" and r["n"] == 1:
            lines.append("- %s in-memory (1 GPU, n = 1): %.2f× PyG (target ≤ %.1f×: %s)"
                         % (r["workload"], ratio, TARGET_IN_MEMORY, "met" if ratio <= TARGET_IN_MEMORY else "MISSED"))
        elif r["model"] == "gcn" and r["n"] >= 4:
            lines.append("- %s out-of-core (1 GPU, n = %d): %.2f× PyG's in-GPU time (target ≤ %.1f×: %s)"
                         % (r["workload"], r["n"], ratio, TARGET_OUT_OF_CORE,
                            "met" if ratio <= TARGET_OUT_OF_CORE else "MISSED"))
        elif r["model"] == "gat":
            lines.append("- %s, 1 GPU × %d chunks: PyG GAT did not run out of memory here; ht/PyG = %.2f"
                         % (r["workload"], r["n"], ratio))
    return lines


def prep_section(out, runs):
    seen = OrderedDict()
    for r in runs:
        if r["kind"] == "ht" and r["plan_stats"] not in ("-", ""):
            seen.setdefault((r["graph"], r["m"], r["n"]), (r["part_stats"], r["plan_stats"]))
    lines = []
    for (g, m, n), (ps, qs) in seen.items():
        part, plan = read_json(ps), read_json(qs)
        if part is None and plan is None:
            continue
        part, plan = part or {}, plan or {}
        nv = plan.get("num_vertices") or part.get("num_vertices")

        def per_v(key):
            v = plan.get(key)
            return "—" if v is None else ("%s (%.2f N)" % (f_count(v), v / nv) if nv else f_count(v))
        cost = ("%.1f → %.1f" % (plan["cost_before"] * 1e3, plan["cost_after"] * 1e3)
                if plan.get("cost_before") is not None and plan.get("cost_after") is not None else "—")
        lines.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            g, m, n, "—" if part.get("seconds") is None else "%.1f" % part["seconds"],
            "—" if plan.get("seconds") is None else "%.1f" % plan["seconds"],
            "—" if part.get("alpha") is None else "%.2f" % part["alpha"],
            per_v("V_ori"), per_v("V_p2p"), per_v("V_ru"), cost))
    if lines:
        lines = ["| graph | m | n | partition s | reorganize s | α | V_ori rows | V_p2p rows | V_ru rows | Eq. 4 cost ms before → after |",
                 "|---|---|---|---|---|---|---|---|---|---|"] + lines
    return lines


def steps_section(out):
    """Wall seconds of the preparation steps (generation, partitioning, reorganization) of this run."""
    lines = []
    try:
        with open(os.path.join(out, "steps.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4 and not parts[0].startswith(("train ", "pyg ")):
                    lines.append("- %s: %s s%s" % (parts[0], parts[2], "" if parts[1] == "0" else
                                                   " (FAILED, exit code %s, log %s)" % (parts[1], rel(out, parts[3]))))
    except OSError:
        pass
    return lines


def problems_section(out, runs):
    lines = []
    for r in runs:
        if r["status"] == "ok":
            continue
        log = r["log"]
        why = r.get("why") or (last_error_line(log) if log and os.path.isabs(log) else log)
        lines.append("- %s: %s%s%s" % (r["name"], r["status"],
                                      " — log %s" % rel(out, log) if log and os.path.isabs(log) else "",
                                      ": `%s`" % why.replace("`", "'") if why else ""))
    return lines


def render(out):
    runs = load(out)
    env = read_kv(os.path.join(out, "env.txt"))
    md = ["# hongtu benchmark (bench/run.sh)", ""]
    for k, v in env.items():
        md.append("- %s: %s" % (k, v))
    md += ["", "## Runs", ""] + main_table(out, runs)
    md += ["", "Per-epoch figures are medians over the timed epochs (after warm-up); rows and bytes per link are "
           "those of the last timed epoch. host GB/s (est.) = h2d_bytes / h2d_ms: an estimate, because h2d_ms "
           "is the timed host-gather phase (the contiguous loads of the backward pass are counted under "
           "compute). Peak GPU is per device; pinned host = the host vertex buffers. ht/PyG compares with the "
           "PyG run of the same workload on the same GPU."]
    for title, body in (("Where the epoch goes", time_section(runs)), ("Communication modes", comm_section(runs)), ("Scaling from 1 GPU", scaling_section(runs)),
                        ("SPEC §9 targets against PyG", targets_section(runs)),
                        ("Preprocessing", prep_section(out, runs)),
                        ("Preparation steps run (wall seconds; cached ones are not listed)", steps_section(out)),
                        ("Failed or skipped", problems_section(out, runs))):
        if body:
            md += ["", "## " + title, ""] + body
    return "\n".join(md) + "\n"


def main(argv):
    args = [a for a in argv[1:] if a != "--quiet"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args and args[0] in ("-h", "--help") else 2
    out = args[0]
    if not os.path.isdir(out):
        print("report.py: error: %s is not a folder" % out, file=sys.stderr)
        return 1
    text = render(out)
    tmp = os.path.join(out, "summary.md.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, "summary.md"))
    if "--quiet" not in argv:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
