"""Figures from ht-train metrics files (--metrics-out, JSON lines).

Run through scripts/plot_metrics, which picks the Python (HT_PYTHON, default
/usr/bin/python3: Debian's, with python3-matplotlib).

  plot_metrics METRICS.jsonl [-o DIR]
      accuracy.png     loss and train/val/test accuracy per epoch
      epoch_time.png   epoch time per epoch, the exposed times stacked (compute, H2D, D2H, host
                       work, idle: they add up to the epoch; busy times for older files)
      link_bytes.png   bytes moved per epoch on each link, and achieved bandwidth
  plot_metrics --compare RUN.jsonl RUN.jsonl ... [-o DIR] [--labels A,B,...]
      compare_accuracy.png  loss and validation accuracy of every run
      compare_time.png      median epoch time of every run, stacked by phase, with speedups
      compare_bytes.png     bytes per epoch on each link, one bar per run (log axis)
  --format svg|pdf writes the same figures as .svg or .pdf.

Runs are labelled by the summary fields that differ between them (backend,
comm, gpus, chunks), else by file or folder name. Errors are one line on
stderr and exit code 1.
"""
import argparse
import json
import os
import statistics
import sys

PROG = "plot_metrics"

# (key in the metrics file, legend label, colour) of the epoch time phases.
PHASES = [
    ("h2d_ms", "host→device (H2D)", "#4e79a7"),
    ("d2d_ms", "device↔device (D2D)", "#f28e2b"),
    ("compute_ms", "compute", "#59a14f"),
    ("cpu_ms", "CPU accumulation", "#e15759"),
]
# The epoch split by what was exposed (x_*_ms of each epoch line): these add
# up to the epoch, where the busy times above overlap on a GPU. Files written
# before ht-train recorded them are drawn with the busy times.
EXPOSED = [
    ("x_compute_ms", "compute", "#59a14f"),
    ("x_h2d_ms", "host→device exposed", "#4e79a7"),
    ("x_d2h_ms", "device→host exposed", "#76b7b2"),
    ("x_host_ms", "host work exposed", "#e15759"),
    ("x_idle_ms", "idle (waits)", "#edc948"),
]
OTHER_COLOR = "#bab0ac"
# Image format of every figure (--format).
FORMAT = "png"
# (bytes key, rows key, label, colour, time key for bandwidth) per link.
LINKS = [
    ("h2d_bytes", "h2d_rows", "host→device", "#4e79a7", "h2d_ms"),
    ("d2h_bytes", "d2h_rows", "device→host", "#76b7b2", None),
    ("p2p_bytes", "p2p_rows", "device↔device (P2P)", "#f28e2b", "d2d_ms"),
    ("reuse_bytes", "reuse_rows", "reused in place (not moved)", "#59a14f", None),
]
# Runs that train identically draw the same curves: vary the line style too.
LINE_STYLES = ["-", "--", ":", "-."]
LABEL_KEYS = [("backend", "{}"), ("comm", "{}"), ("gpus", "m={}"), ("chunks", "n={}")]


class PlotError(Exception):
    pass


class ArgParser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 1, like every hongtu tool."""

    def error(self, message):
        raise PlotError(f"{message} (see --help)")


class Run:
    """One metrics file: its epoch records and its summary (None if absent)."""

    def __init__(self, path, epochs, summary):
        self.path = path
        self.epochs = epochs
        self.summary = summary
        self.label = None

    def series(self, key):
        """(epochs, values) of the records that have `key`."""
        xs = [e["epoch"] for e in self.epochs if isinstance(e.get(key), (int, float))]
        ys = [e[key] for e in self.epochs if isinstance(e.get(key), (int, float))]
        return xs, ys

    def steady_epochs(self):
        """Epochs after the first (warm-up), unless there is only one."""
        return self.epochs[1:] if len(self.epochs) > 1 else self.epochs

    def median(self, key):
        """Median of a per-epoch value: the summary's when present, else computed."""
        if self.summary and isinstance(self.summary.get(key + "_median"), (int, float)):
            return float(self.summary[key + "_median"])
        vals = [e.get(key, 0.0) for e in self.steady_epochs()]
        return float(statistics.median(vals)) if vals else 0.0

    def per_epoch(self, key):
        """Per-epoch counter: the summary's (steady-state epoch) when present, else the median."""
        if self.summary and isinstance(self.summary.get(key), (int, float)):
            return float(self.summary[key])
        vals = [e.get(key, 0) for e in self.steady_epochs()]
        return float(statistics.median(vals)) if vals else 0.0


def load_run(path):
    if not os.path.exists(path):
        raise PlotError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PlotError(f"{path}: is a folder, expected a metrics file (ht-train --metrics-out)")
    epochs, summary = [], None
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise PlotError(f"{path}:{n}: not valid JSON ({e.msg} at column {e.colno})") from None
                if not isinstance(obj, dict):
                    raise PlotError(f"{path}:{n}: expected a JSON object per line")
                kind = obj.get("type")
                if kind == "epoch":
                    for key in ("epoch", "loss", "epoch_ms"):
                        if not isinstance(obj.get(key), (int, float)):
                            raise PlotError(f"{path}:{n}: epoch record without a numeric '{key}'")
                    epochs.append(obj)
                elif kind == "summary":
                    summary = obj
    except UnicodeDecodeError:
        raise PlotError(f"{path}: not a text file (expected JSON lines from ht-train --metrics-out)") from None
    except OSError as e:
        raise PlotError(f"{path}: cannot read ({e.strerror})") from None
    if not epochs:
        raise PlotError(f"{path}: no epoch records (expected JSON lines from ht-train --metrics-out)")
    epochs.sort(key=lambda e: e["epoch"])
    return Run(path, epochs, summary)


def human_bytes(b):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024.0
    return f"{b:.2f} TiB"


def byte_scale(max_bytes):
    """(divisor, unit) so that the largest value reads between 1 and 1024."""
    for i, unit in enumerate(("B", "KiB", "MiB", "GiB", "TiB")):
        if max_bytes < 1024 ** (i + 1) or unit == "TiB":
            return 1024.0 ** i, unit
    return 1.0, "B"


def describe(run):
    s = run.summary or {}
    parts = [fmt.format(s[k]) for k, fmt in LABEL_KEYS if k in s]
    return ", ".join(parts)


def phases_of(run):
    """The exposed split when the file has it, else the busy times (older files)."""
    if run.epochs and all(k in run.epochs[0] for k, _, _ in EXPOSED):
        return EXPOSED, "exposed"
    return PHASES, "busy"


def save(fig, out_dir, name, written):
    """Writes the figure atomically (temporary file, then rename), in --format."""
    name = name[: -len(".png")] + "." + FORMAT if name.endswith(".png") else name
    path = os.path.join(out_dir, name)
    tmp = os.path.join(out_dir, f".{name}.tmp.{FORMAT}")
    try:
        fig.savefig(tmp, dpi=120, format=FORMAT)
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise PlotError(f"{path}: cannot write ({e.strerror})") from None
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)
    written.append(path)


# ---------------------------------------------------------------- one run ---


def plot_accuracy(plt, run, out_dir, written):
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs, ys = run.series("loss")
    ax_loss.plot(xs, ys, color="#4e79a7", lw=1.5)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title("Loss")
    if ys and min(ys) > 0 and max(ys) / min(ys) > 20:
        ax_loss.set_yscale("log")
    ax_loss.grid(alpha=0.3)
    have_acc = False
    for key, label, color in (("train_acc", "train", "#59a14f"), ("val_acc", "validation", "#f28e2b"),
                              ("test_acc", "test", "#e15759")):
        ax, ay = run.series(key)
        if ax:
            have_acc = True
            ax_acc.plot(ax, ay, label=label, color=color, lw=1.5, marker="o" if len(ax) <= 30 else None, ms=3)
    s = run.summary or {}
    if "best_epoch" in s and s.get("best_epoch", -1) >= 0:
        ax_acc.axvline(s["best_epoch"], color="grey", ls="--", lw=1, label=f"best val (epoch {s['best_epoch']})")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy")
    ax_acc.set_ylim(0, 1.0)
    ax_acc.set_title("Accuracy")
    ax_acc.grid(alpha=0.3)
    if have_acc:
        ax_acc.legend(loc="lower right")
    else:
        ax_acc.text(0.5, 0.5, "no evaluation epochs", ha="center", va="center", transform=ax_acc.transAxes)
    title = os.path.basename(run.path)
    if "test_acc_at_best_val" in s:
        title += (f" — best val {s['best_val_acc']:.4f} at epoch {s['best_epoch']}, "
                  f"test there {s['test_acc_at_best_val']:.4f}")
    if describe(run):
        title += f"  [{describe(run)}]"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "accuracy.png", written)


def plot_epoch_time(plt, run, out_dir, written):
    fig, ax = plt.subplots(figsize=(12, 4.5))
    xs = [e["epoch"] for e in run.epochs]
    bottom = [0.0] * len(xs)
    width = 0.8 if len(xs) <= 100 else 1.0
    phases, kind = phases_of(run)
    for key, label, color in phases:
        vals = [float(e.get(key, 0.0)) for e in run.epochs]
        ax.bar(xs, vals, width, bottom=bottom, label=label, color=color, linewidth=0)
        bottom = [b + v for b, v in zip(bottom, vals)]
    other = [max(float(e["epoch_ms"]) - b, 0.0) for e, b in zip(run.epochs, bottom)]
    ax.bar(xs, other, width, bottom=bottom, label="other (not accounted)" if kind == "exposed" else
           "other (sync, bookkeeping)", color=OTHER_COLOR, linewidth=0)
    ax.set_xlabel("epoch")
    ax.set_ylabel("time (ms)")
    med = run.median("epoch_ms")
    ax.axhline(med, color="black", ls="--", lw=1, label=f"median epoch {med:.1f} ms")
    parts = ", ".join(f"{label.split(' (')[0]} {run.median(key):.1f}" for key, label, _ in phases)
    ax.set_title(f"Epoch time, {kind} times stacked — medians (ms): {parts}", fontsize=10)
    # Below the axes: tall epochs (warm-up, contention) would hide behind a legend inside.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, ncol=6, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{os.path.basename(run.path)}  [{describe(run)}]" if describe(run) else os.path.basename(run.path),
                 fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "epoch_time.png", written)


def plot_link_bytes(plt, run, out_dir, written):
    fig, (ax_b, ax_bw) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    vals = [run.per_epoch(k) for k, *_ in LINKS]
    div, unit = byte_scale(max(vals + [1.0]))
    names = [label for _, _, label, _, _ in LINKS]
    bars = ax_b.bar(range(len(LINKS)), [v / div for v in vals], color=[c for _, _, _, c, _ in LINKS])
    for bar, (_, rkey, *_), v in zip(bars, LINKS, vals):
        rows = run.per_epoch(rkey)
        ax_b.annotate(f"{human_bytes(v)}\n{rows:,.0f} rows", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                      ha="center", va="bottom", fontsize=8)
    ax_b.set_xticks(range(len(LINKS)))
    ax_b.set_xticklabels(names, fontsize=8)
    ax_b.set_ylabel(f"per epoch ({unit})")
    ax_b.set_ylim(0, max(v / div for v in vals + [1.0]) * 1.25)
    ax_b.set_title("Data moved per epoch, by link")
    ax_b.grid(axis="y", alpha=0.3)
    # Achieved bandwidth where both bytes and time are known.
    bw_names, bw_vals = [], []
    for key, _, label, color, tkey in LINKS:
        if tkey:
            ms = run.median(tkey)
            b = run.per_epoch(key)
            if ms > 0 and b > 0:
                bw_names.append(label)
                bw_vals.append(b / (ms / 1e3) / 1e9)
    if bw_vals:
        bars = ax_bw.bar(range(len(bw_vals)), bw_vals, color=["#4e79a7", "#f28e2b"][: len(bw_vals)])
        for bar, v in zip(bars, bw_vals):
            ax_bw.annotate(f"{v:.2f} GB/s", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                           va="bottom", fontsize=8)
        ax_bw.set_xticks(range(len(bw_vals)))
        ax_bw.set_xticklabels(bw_names, fontsize=8)
        ax_bw.set_ylim(0, max(bw_vals) * 1.25)
    else:
        ax_bw.text(0.5, 0.5, "no link time recorded", ha="center", va="center", transform=ax_bw.transAxes)
        ax_bw.set_xticks([])
    ax_bw.set_ylabel("GB/s (bytes / median phase time)")
    emulated = (run.summary or {}).get("backend") == "cpu"
    ax_bw.set_title("Achieved bandwidth" + (" (cpu backend: emulated links)" if emulated else ""))
    ax_bw.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{os.path.basename(run.path)}  [{describe(run)}]" if describe(run) else os.path.basename(run.path),
                 fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "link_bytes.png", written)


# --------------------------------------------------------------- compare ---


def assign_labels(runs, labels):
    if labels:
        if len(labels) != len(runs):
            raise PlotError(f"--labels: {len(labels)} labels for {len(runs)} runs")
        for r, l in zip(runs, labels):
            r.label = l
        return ""
    summaries = [r.summary or {} for r in runs]
    varying = [(k, f) for k, f in LABEL_KEYS if len({str(s.get(k)) for s in summaries}) > 1]
    common = [(k, f) for k, f in LABEL_KEYS if (k, f) not in varying and all(k in s for s in summaries)]
    if varying:
        for r, s in zip(runs, summaries):
            r.label = ", ".join(f.format(s.get(k, "?")) for k, f in varying)
    if not varying or len({r.label for r in runs}) < len(runs):
        stems = [os.path.splitext(os.path.basename(r.path))[0] for r in runs]
        if len(set(stems)) < len(stems):  # e.g. runs/a/metrics.jsonl, runs/b/metrics.jsonl
            stems = [os.path.basename(os.path.dirname(os.path.abspath(r.path))) or r.path for r in runs]
        if len(set(stems)) < len(stems):
            stems = [f"run {i + 1}" for i in range(len(runs))]
        for r, st in zip(runs, stems):
            r.label = f"{st} ({r.label})" if r.label else st
    return ", ".join(f.format(summaries[0][k]) for k, f in common)


def compare_accuracy(plt, runs, common, out_dir, written):
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, r in enumerate(runs):
        c = colors[i % len(colors)]
        ls = LINE_STYLES[i % len(LINE_STYLES)]
        xs, ys = r.series("loss")
        ax_loss.plot(xs, ys, color=c, ls=ls, lw=1.5, label=r.label)
        ax, ay = r.series("val_acc")
        s = r.summary or {}
        extra = f" (test at best val {s['test_acc_at_best_val']:.3f})" if "test_acc_at_best_val" in s else ""
        if ax:
            ax_acc.plot(ax, ay, color=c, ls=ls, lw=1.5, label=r.label + extra, marker="o" if len(ax) <= 30 else None,
                        ms=3)
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("training loss")
    ax_loss.set_title("Loss")
    ax_loss.grid(alpha=0.3)
    ax_loss.legend(fontsize=8)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("validation accuracy")
    ax_acc.set_ylim(0, 1.0)
    ax_acc.set_title("Validation accuracy")
    ax_acc.grid(alpha=0.3)
    ax_acc.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"{len(runs)} runs" + (f" — common: {common}" if common else ""), fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "compare_accuracy.png", written)


def compare_time(plt, runs, common, out_dir, written):
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(runs) + 3), 5))
    xs = list(range(len(runs)))
    bottom = [0.0] * len(runs)
    # Every run's exposed split when each has one (they add up to the epoch), else the busy times.
    phases = EXPOSED if all(phases_of(r)[1] == "exposed" for r in runs) else PHASES
    for key, label, color in phases:
        vals = [r.median(key) for r in runs]
        ax.bar(xs, vals, 0.6, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    totals = [r.median("epoch_ms") for r in runs]
    other = [max(t - b, 0.0) for t, b in zip(totals, bottom)]
    ax.bar(xs, other, 0.6, bottom=bottom, label="other", color=OTHER_COLOR)
    base = totals[0]
    tops = [b + o for b, o in zip(bottom, other)]  # medians of phases need not add up to the median epoch
    for x, t, top in zip(xs, totals, tops):
        speed = f"\n{base / t:.2f}× vs {runs[0].label}" if t > 0 and x > 0 else ""
        ax.annotate(f"{t:.1f} ms{speed}", (x, max(t, top)), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels([r.label for r in runs], fontsize=8, rotation=15 if len(runs) > 4 else 0)
    ax.set_ylabel("median epoch time (ms)")
    ax.set_ylim(0, max(totals + tops + [1e-9]) * 1.3)
    ax.set_title("Median epoch time by phase" + (f" — {common}" if common else ""), fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1 if len(runs) <= 4 else -0.16), fontsize=8, ncol=5,
              frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save(fig, out_dir, "compare_time.png", written)


def compare_bytes(plt, runs, common, out_dir, written):
    fig, ax = plt.subplots(figsize=(12, 4.5))
    allv = [r.per_epoch(k) for r in runs for k, *_ in LINKS]
    div, unit = byte_scale(max(allv + [1.0]))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / len(runs)
    for i, r in enumerate(runs):
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(LINKS))]
        vals = [r.per_epoch(k) for k, *_ in LINKS]
        bars = ax.bar(xs, [v / div for v in vals], width, label=r.label, color=colors[i % len(colors)])
        if len(runs) <= 6:
            for bar, v in zip(bars, vals):
                ax.annotate(human_bytes(v), (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                            va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(LINKS)))
    ax.set_xticklabels([label for _, _, label, _, _ in LINKS], fontsize=9)
    ax.set_ylabel(f"per epoch ({unit}, log scale)")
    # A log axis: a link that moves 1000 times less than another still shows.
    positive = [v / div for v in allv if v > 0]
    if positive:
        ax.set_yscale("log")
        ax.set_ylim(min(positive) / 3, max(positive) * 8)
    ax.set_title("Data moved per epoch, by link" + (f" — {common}" if common else ""), fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    save(fig, out_dir, "compare_bytes.png", written)


# ------------------------------------------------------------------ main ---


def import_pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotError(f"{sys.executable} has no matplotlib (Debian: apt-get install python3-matplotlib, "
                        "or point HT_PYTHON at a Python that has it)") from None
    return plt


def make_out_dir(path):
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise PlotError(f"{path}: cannot create the output folder ({e.strerror})") from None
    if not os.path.isdir(path):
        raise PlotError(f"{path}: exists and is not a folder")


def main(argv):
    ap = ArgParser(
        prog=PROG, description="Figures (PNG, or --format svg|pdf) from ht-train metrics files (--metrics-out JSON lines).",
        epilog="One run: accuracy.png, epoch_time.png, link_bytes.png. --compare: compare_accuracy.png, "
               "compare_time.png, compare_bytes.png.")
    ap.add_argument("metrics", nargs="+", help="metrics file(s); one, or several with --compare")
    ap.add_argument("--compare", action="store_true", help="compare several runs (e.g. comm modes, GPU counts)")
    ap.add_argument("-o", "--output", help="output folder (default: plots/ beside the metrics file; "
                                           "with --compare: ./compare-plots)")
    ap.add_argument("--labels", help="comma-separated run labels for --compare (default: from the summaries)")
    ap.add_argument("--format", choices=["png", "svg", "pdf"], default="png",
                    help="image format of the figures (default: png)")
    args = ap.parse_args(argv)
    global FORMAT
    FORMAT = args.format
    if not args.compare and len(args.metrics) != 1:
        raise PlotError("several metrics files given: plot one at a time, or add --compare")
    if args.labels and not args.compare:
        raise PlotError("--labels needs --compare")
    labels = [l.strip() for l in args.labels.split(",")] if args.labels else None
    if labels and len(labels) != len(args.metrics):
        raise PlotError(f"--labels: {len(labels)} labels for {len(args.metrics)} runs")
    runs = [load_run(p) for p in args.metrics]
    plt = import_pyplot()
    written = []
    if args.compare:
        out = args.output or "compare-plots"
        make_out_dir(out)
        common = assign_labels(runs, labels)
        compare_accuracy(plt, runs, common, out, written)
        compare_time(plt, runs, common, out, written)
        compare_bytes(plt, runs, common, out, written)
    else:
        out = args.output or os.path.join(os.path.dirname(os.path.abspath(args.metrics[0])), "plots")
        make_out_dir(out)
        plot_accuracy(plt, runs[0], out, written)
        plot_epoch_time(plt, runs[0], out, written)
        plot_link_bytes(plt, runs[0], out, written)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except PlotError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
