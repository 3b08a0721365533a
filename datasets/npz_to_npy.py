#!/usr/bin/env python3
"""Heterophilous-benchmark .npz (Platonov et al. 2023) -> .npy.

Keys read: node_features float32 [N, F], node_labels int [N], edges int [E, 2],
train_masks / val_masks / test_masks bool [10, N] (the 10 standard splits).
Writes into OUT: edges.npy (int64 [E, 2], as stored: one row per edge; the
non-directed files list each undirected edge once, ht-convert symmetrizes
them), features.npy (float32), labels.npy (int64), split.npy (uint8 codes of
split K: 0 none, 1 train, 2 val, 3 test).

Usage: npz_to_npy.py --input FILE.npz --split-index K --output OUT
Errors: one line "error: ..." on stderr, exit code 1.
"""
import argparse
import os
import sys
import zipfile


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(1)


try:
    import numpy as np
except ImportError as e:
    fail("{} lacks numpy ({}); set HT_PYTHON to a Python that has it".format(sys.executable, e))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--split-index", type=int, default=0)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    if not os.path.exists(a.input):
        fail("{}: file not found".format(a.input))
    try:
        z = np.load(a.input, allow_pickle=False)
        keys = set(z.files)
        for k in ("node_features", "node_labels", "edges"):
            if k not in keys:
                fail("{}: no '{}' array (keys: {})".format(a.input, k, ", ".join(sorted(keys))))
        features = np.ascontiguousarray(z["node_features"], dtype=np.float32)
        labels = np.asarray(z["node_labels"]).astype(np.int64)
        edges = np.ascontiguousarray(z["edges"], dtype=np.int64)
        masks = [z[k] if k in keys else None for k in ("train_masks", "val_masks", "test_masks")]
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        fail("{}: cannot read the archive ({}: {})".format(a.input, type(e).__name__, e))
    n = features.shape[0]
    if features.ndim != 2 or labels.shape != (n,):
        fail("{}: node_features {} and node_labels {} disagree".format(a.input, features.shape, labels.shape))
    if edges.ndim != 2 or edges.shape[1] != 2:
        fail("{}: edges must have shape (E, 2), got {}".format(a.input, edges.shape))
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        fail("{}: edge endpoint {} outside 0..{}".format(a.input, int(edges.max()), n - 1))
    split = np.zeros(n, dtype=np.uint8)
    for code, m in enumerate(masks, start=1):
        if m is None:
            continue
        m = np.asarray(m)
        if m.ndim == 1:
            m = m[None, :]
        if m.shape[1] != n:
            fail("{}: split masks have {} columns for {} nodes".format(a.input, m.shape[1], n))
        if not 0 <= a.split_index < m.shape[0]:
            fail("{}: --split-index {} is outside 0..{}".format(a.input, a.split_index, m.shape[0] - 1))
        row = m[a.split_index].astype(bool)
        if (split[row] != 0).any():
            fail("{}: split {}: node {} is in two masks".format(a.input, a.split_index, int(np.flatnonzero(row & (split != 0))[0])))
        split[row] = code
    for key, arr in (("edges", edges), ("features", features), ("labels", labels), ("split", split)):
        np.save(os.path.join(a.output, key + ".npy"), arr)
    print("{}: N = {}, {} edge rows, F = {}, split {}: {} / {} / {}".format(
        os.path.basename(a.input), n, edges.shape[0], features.shape[1], a.split_index,
        int((split == 1).sum()), int((split == 2).sum()), int((split == 3).sum())))


if __name__ == "__main__":
    main()
