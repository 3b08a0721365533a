#!/usr/bin/env python3
"""Planetoid raw files (ind.<name>.{x,y,allx,ally,tx,ty,graph,test.index}) -> .npy.

Assembles the graph exactly like Kipf & Welling's gcn/utils.py load_data (and
PyG's read_planetoid_data):
  N = len(allx) + (max(test.index) - min(test.index) + 1)
  node i < len(allx) gets allx[i] / ally[i]; node test.index[k] gets tx[k] / ty[k].
Validation ids never reach past allx (they are labeled by ally).
CiteSeer quirk: test ids span 2312..3326 but only 1000 are listed; the 15
missing ids get zero features, label -1 (unlabeled; PyG's argmax would give
class 0) and no split. Standard split: train = 0..len(y)-1, val = the next 500,
test = the ids in test.index.

Writes into OUT: edges.npy (int64 [E, 2], one row per adjacency-list entry
key -> neighbor, duplicates and self-loops kept as in the file),
features.npy (float32 [N, F]), labels.npy (int64 [N], -1 = none),
split.npy (uint8 [N]: 0 none, 1 train, 2 val, 3 test).

Usage: planetoid_to_npy.py --input DIR --name cora --output OUT
Errors: one line "error: ..." on stderr, exit code 1.
"""
import argparse
import os
import pickle
import sys
import warnings


def fail(message):
    print("error: " + message, file=sys.stderr)
    sys.exit(1)


try:
    import numpy as np
    import scipy.sparse as sp
except ImportError as e:
    fail("{} lacks numpy/scipy ({}); set HT_PYTHON to a Python that has them".format(sys.executable, e))


def load_pickle(path):
    if not os.path.exists(path):
        fail("{}: file not found".format(path))
    try:
        with open(path, "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # scipy.sparse.csr module path in the pickles
            return pickle.load(f, encoding="latin1")  # Python 2 pickles
    except Exception as e:  # corrupt or truncated pickle
        fail("{}: cannot unpickle ({}: {})".format(path, type(e).__name__, e))


def dense(m):
    return np.asarray(m.todense() if sp.issparse(m) else m)


def assemble(directory, name):
    p = lambda ext: os.path.join(directory, "ind.{}.{}".format(name, ext))
    x, y, allx, ally, tx, ty, graph = (load_pickle(p(e)) for e in ("x", "y", "allx", "ally", "tx", "ty", "graph"))
    index_path = p("test.index")
    if not os.path.exists(index_path):
        fail("{}: file not found".format(index_path))
    with open(index_path) as f:
        try:
            test_idx = np.array([int(line) for line in f if line.strip()], dtype=np.int64)
        except ValueError as e:
            fail("{}: {}".format(index_path, e))
    n_allx = allx.shape[0]
    if tx.shape[0] != len(test_idx) or ty.shape[0] != len(test_idx):
        fail("{}: {} test ids but tx has {} rows and ty {}".format(index_path, len(test_idx), tx.shape[0], ty.shape[0]))
    if ally.shape[0] != n_allx or y.shape[0] > n_allx:
        fail("{}: allx has {} rows, ally {}, y {}".format(p("ally"), n_allx, ally.shape[0], y.shape[0]))
    lo, hi = int(test_idx.min()), int(test_idx.max())
    if lo < n_allx:
        fail("{}: test id {} overlaps the allx rows 0..{}".format(index_path, lo, n_allx - 1))
    n = n_allx + (hi - lo + 1)

    features = np.zeros((n, allx.shape[1]), dtype=np.float32)
    features[:n_allx] = dense(allx)
    features[test_idx] = dense(tx)

    onehot = np.zeros((n, ally.shape[1]), dtype=np.float32)
    onehot[:n_allx] = dense(ally)
    onehot[test_idx] = dense(ty)
    labels = np.where(onehot.sum(axis=1) > 0, onehot.argmax(axis=1), -1).astype(np.int64)

    split = np.zeros(n, dtype=np.uint8)
    n_train = y.shape[0]
    split[:n_train] = 1
    split[n_train:min(n_train + 500, n_allx)] = 2  # validation labels come from ally
    split[test_idx] = 3

    src, dst = [], []
    for u, neighbors in graph.items():
        for v in neighbors:
            src.append(int(u))
            dst.append(int(v))
    edges = np.stack([np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)], axis=1) if src \
        else np.zeros((0, 2), dtype=np.int64)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        fail("{}: vertex id {} outside 0..{}".format(p("graph"), int(edges.max()), n - 1))
    return edges, features, labels, split


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True, help="directory with the ind.<name>.* files")
    ap.add_argument("--name", required=True, help="dataset name: cora, citeseer, pubmed")
    ap.add_argument("--output", required=True, help="directory for the .npy files")
    a = ap.parse_args()
    edges, features, labels, split = assemble(a.input, a.name)
    for key, arr in (("edges", edges), ("features", features), ("labels", labels), ("split", split)):
        np.save(os.path.join(a.output, key + ".npy"), arr)
    print("{}: N = {}, {} adjacency entries, F = {}, {} classes".format(
        a.name, features.shape[0], edges.shape[0], features.shape[1], int(labels.max()) + 1))


if __name__ == "__main__":
    main()
