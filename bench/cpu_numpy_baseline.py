#!/usr/bin/env python3
"""The dense and sparse products of full-graph GCN / GAT training, done by numpy + scipy.

The yardstick for ht-train's CPU backend (issue 18): the same graph file, the same layer widths and
the same schedule as `ht-train --backend cpu --eval-every 1` (one training epoch and one evaluation
forward per epoch), with every product the CPU executor computes done by numpy (dense, on the BLAS
numpy links: OpenBLAS on Debian) and scipy.sparse (CSR SpMM).

  GCN (each layer transform-first, as ht-train's --gcn-order auto runs Kipf's widths):
    forward    T = X W (GEMM), Z = Â T (SpMM);  backward  ∂T = Âᵀ ∂Z (SpMM), ∂W = Xᵀ ∂T,
    ∂X = ∂T Wᵀ (not for the first layer);      evaluation forward again.
    Â = D^-1/2 (A + I) D^-1/2 (an existing self-loop replaced by one of weight 1, as ht).
  GAT (heads H, width F per head; the first layer's heads concatenated, the last layer's averaged):
    forward    G = X W (GEMM), per edge and head: score = LeakyReLU(a_src·g_src + a_dst·g_dst)
    (row-wise products of the gathered rows), softmax per destination and head, out = Σ α g_src
    (one CSR SpMM per head with the α as values);  backward  the transposes of each of these
    (∂α per edge, softmax backward, ∂G by SpMM of Aᵀ per head, ∂a, ∂W = Xᵀ ∂G, ∂X = ∂G Wᵀ).

"products" times only those products; "full" adds what one epoch also needs (dropout masks from
numpy's generator, ReLU/ELU, softmax cross-entropy, Adam), for context. Each is the total over
--epochs epochs (training + evaluation), after one untimed warm-up epoch.

Prints one JSON object: dataset, model, epochs, products_s, full_s, numpy/scipy versions, threads.
"""

import argparse
import json
import os
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from htg import read_htg  # noqa: E402


class Clock:
    """Adds up the time of the products (`with clock:` blocks)."""

    def __init__(self):
        self.products = 0.0

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        self.products += time.perf_counter() - self.t0


def load(path, normalize):
    g = read_htg(path)
    n = g.num_vertices
    off = np.asarray(g.offsets)
    src = np.asarray(g.sources).astype(np.int64)
    dst = np.repeat(np.arange(n), np.diff(off))
    x = np.array(g.features_f32(), dtype=np.float32)  # 16-bit features widened
    if normalize:
        s = x.sum(axis=1, keepdims=True)
        x = np.divide(x, s, out=np.zeros_like(x), where=s != 0)
    labels = np.asarray(g.labels)
    train = np.asarray(g.split) == 1
    return n, src, dst, x, labels, train, g.num_classes


def gcn_adjacency(n, src, dst):
    keep = src != dst
    src, dst = np.concatenate([src[keep], np.arange(n)]), np.concatenate([dst[keep], np.arange(n)])
    deg = np.bincount(dst, minlength=n).astype(np.float64)
    w = (1 / np.sqrt(deg[src] * deg[dst])).astype(np.float32)
    a = sp.csr_matrix((w, (dst, src)), shape=(n, n))  # row = destination
    return a, a.T.tocsr()


def glorot(rng, fan_in, fan_out):
    lim = np.sqrt(6 / (fan_in + fan_out))
    return rng.uniform(-lim, lim, (fan_in, fan_out)).astype(np.float32)


def dropout(rng, x, rate):
    if rate == 0:
        return x, None
    mask = (rng.random(x.shape, dtype=np.float32) >= rate).astype(np.float32) / (1 - rate)
    return x * mask, mask


def xent_grad(z, labels, train):
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    g = np.zeros_like(p)
    g[train] = p[train]
    g[train, labels[train]] -= 1
    return g / max(int(train.sum()), 1)


class Adam:
    def __init__(self, params, lr):
        self.lr, self.t = lr, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, params, grads):
        self.t += 1
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= self.lr * (m / (1 - 0.9 ** self.t)) / (np.sqrt(v / (1 - 0.999 ** self.t)) + 1e-8)


def run_gcn(a, at, x, labels, train, dims, dropout_rate, epochs, rng, clock):
    ws = [glorot(rng, dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    bs = [np.zeros(d, np.float32) for d in dims[1:]]
    opt = Adam(ws + bs, 0.01)
    layers = len(ws)

    def forward(train_mode):
        h, saved = x, []
        for l in range(layers):
            hd, mask = dropout(rng, h, dropout_rate) if train_mode else (h, None)
            with clock:
                t = hd @ ws[l]
                z = a @ t
            z += bs[l]
            saved.append((hd, mask, z))
            h = np.maximum(z, 0) if l + 1 < layers else z
        return h, saved

    for _ in range(epochs):
        logits, saved = forward(True)
        dz = xent_grad(logits, labels, train)
        gw, gb = [None] * layers, [None] * layers
        for l in reversed(range(layers)):
            hd, mask, z = saved[l]
            gb[l] = dz.sum(axis=0)
            with clock:
                dt = at @ dz
                gw[l] = hd.T @ dt
                dh = dt @ ws[l].T if l > 0 else None
            if l > 0:
                pmask = saved[l - 1][2] > 0
                dz = dh * pmask
                if saved[l][1] is not None:
                    dz = dz * saved[l][1]
        opt.step(ws + bs, gw + gb)
        forward(False)  # evaluation


def run_gat(a_csr, x, labels, train, dims, heads, dropout_rate, epochs, rng, clock):
    n = x.shape[0]
    indptr, indices = a_csr.indptr, a_csr.indices  # rows = destinations, with self-loops
    dst = np.repeat(np.arange(n), np.diff(indptr))
    src = indices
    nnz = len(src)
    order = np.argsort(src, kind="stable")  # edges grouped by source (the transpose)
    layer_heads = [heads] * (len(dims) - 2) + [1]
    ws, att_s, att_d = [], [], []
    fan_in = dims[0]
    for l, h in enumerate(layer_heads):
        ws.append(glorot(rng, fan_in, h * dims[l + 1]))
        att_s.append(glorot(rng, h, dims[l + 1]))
        att_d.append(glorot(rng, h, dims[l + 1]))
        fan_in = h * dims[l + 1]

    def spmm(values, mat, transpose=False):
        m = sp.csr_matrix((values, indices, indptr), shape=(n, n))
        return (m.T.tocsr() if transpose else m) @ mat

    def epoch(train_mode):
        h = x
        grads = []
        for l, hh in enumerate(layer_heads):
            f = dims[l + 1]
            hd, _ = dropout(rng, h, dropout_rate) if train_mode else (h, None)
            with clock:
                g = (hd @ ws[l]).reshape(n, hh, f)
                es = (g * att_s[l]).sum(-1)  # [n, heads]
                ed = (g * att_d[l]).sum(-1)
                s = es[src] + ed[dst]  # [nnz, heads]
                s = np.where(s > 0, s, 0.2 * s)
                smax = np.maximum.reduceat(s, indptr[:-1], axis=0)
                e = np.exp(s - smax[dst])
                alpha = e / np.add.reduceat(e, indptr[:-1], axis=0)[dst]
                out = np.stack([spmm(alpha[:, k], g[:, k, :]) for k in range(hh)], axis=1)
            out = out.reshape(n, hh * f) if l + 1 < len(layer_heads) else out.mean(axis=1)
            h = np.where(out > 0, out, np.expm1(np.minimum(out, 0))) if l + 1 < len(layer_heads) else out
            grads.append((hd, g, alpha))
        if not train_mode:
            return
        dz = xent_grad(h, labels, train)
        for l in reversed(range(len(layer_heads))):
            hh, f = layer_heads[l], dims[l + 1]
            hd, g, alpha = grads[l]
            dout = dz.reshape(n, hh, f) if hh > 1 else dz[:, None, :]
            with clock:
                dg = np.stack([spmm(alpha[:, k], dout[:, k, :], transpose=True) for k in range(hh)], axis=1)
                dalpha = (dout[dst] * g[src]).sum(-1)  # [nnz, heads]
                ds = alpha * (dalpha - np.add.reduceat(alpha * dalpha, indptr[:-1], axis=0)[dst])
                des = np.add.reduceat(ds[order], np.searchsorted(src[order], np.arange(n)).clip(0, nnz - 1), axis=0)
                ded = np.add.reduceat(ds, indptr[:-1], axis=0)
                dg += des[:, :, None] * att_s[l] + ded[:, :, None] * att_d[l]
                dw = hd.T @ dg.reshape(n, hh * f)
                dh = dg.reshape(n, hh * f) @ ws[l].T if l > 0 else None
            del dw
            if l > 0:
                dz = dh

    for _ in range(epochs):
        epoch(True)
        epoch(False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph", help=".htg file")
    ap.add_argument("--model", choices=("gcn", "gat"), default="gcn")
    ap.add_argument("--hidden", type=int, default=0, help="hidden width (per head for GAT); default 16 / 8")
    ap.add_argument("--heads", type=int, default=8, help="GAT heads in the hidden layer")
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--normalize-features", action="store_true")
    args = ap.parse_args()
    n, src, dst, x, labels, train, classes = load(args.graph, args.normalize_features)
    a, at = gcn_adjacency(n, src, dst)
    hidden = args.hidden or (16 if args.model == "gcn" else 8)
    dims = [x.shape[1], hidden, classes]
    rng = np.random.default_rng(1)
    results = {}
    for what, epochs in (("warmup", 1), ("timed", args.epochs)):
        clock = Clock()
        t0 = time.perf_counter()
        if args.model == "gcn":
            run_gcn(a, at, x, labels, train, dims, args.dropout, epochs, rng, clock)
        else:
            run_gat(a, x, labels, train, dims, args.heads, args.dropout, epochs, rng, clock)
        results[what] = (clock.products, time.perf_counter() - t0)
    print(json.dumps({
        "graph": os.path.basename(args.graph), "model": args.model, "dims": dims, "epochs": args.epochs,
        "products_s": round(results["timed"][0], 4), "full_s": round(results["timed"][1], 4),
        "numpy": np.__version__, "scipy": scipy.__version__,
        "threads": os.environ.get("OPENBLAS_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "default")),
    }))


if __name__ == "__main__":
    main()
