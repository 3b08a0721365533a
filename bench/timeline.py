#!/usr/bin/env python3
"""Draws the per-queue timeline that `ht-train --timeline-out FILE` writes.

usage: bench/timeline.py FILE [--width N] [--from MS] [--to MS]

One row per device queue: '#' where the queue was busy in that column's time
slice ('+' when busy for part of it), then each queue's busy time. Standard
library only.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--from", dest="t0", type=float, default=None, help="start (ms)")
    ap.add_argument("--to", dest="t1", type=float, default=None, help="end (ms)")
    a = ap.parse_args()
    try:
        with open(a.file) as f:
            d = json.load(f)
        iv = d["intervals"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"timeline.py: {a.file}: {e}")
    if not iv:
        sys.exit(f"timeline.py: {a.file}: no intervals")
    t0 = a.t0 if a.t0 is not None else 0.0
    t1 = a.t1 if a.t1 is not None else max(x["end_ms"] for x in iv)
    if t1 <= t0:
        sys.exit("timeline.py: empty time range")
    rows = {}
    for x in iv:
        rows.setdefault((x["device"], x["queue"]), []).append((x["begin_ms"], x["end_ms"]))
    order = {"load": 0, "compute": 1, "store": 2, "host": 3}
    step = (t1 - t0) / a.width
    print(f"{a.file}: {t0:.1f} .. {t1:.1f} ms, one column = {step:.2f} ms"
          f" (median epoch {d.get('median_epoch_ms', 0):.1f} ms)")
    for key in sorted(rows, key=lambda k: (k[0], order.get(k[1], 9))):
        cover = [0.0] * a.width
        busy = 0.0
        for b, e in rows[key]:
            busy += e - b
            b, e = max(b, t0), min(e, t1)
            c = int((b - t0) / step)
            while b < e and c < a.width:
                end = min(e, t0 + (c + 1) * step)
                cover[c] += end - b
                b, c = end, c + 1
        line = "".join("#" if x >= 0.75 * step else "+" if x > 0 else "." for x in cover)
        print(f"gpu{key[0]} {key[1]:<7} |{line}| {busy:8.1f} ms")


if __name__ == "__main__":
    main()
