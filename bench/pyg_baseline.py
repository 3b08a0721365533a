#!/usr/bin/env python3
"""PyG full-graph training on a hongtu graph file, configured as SPEC §9 measures PyG.

Graph, features, labels and split come from the .htg (train = split code 1, test = 3). The
adjacency is the file's in-edge CSC: edge_index = (source, destination), and GCN gets
`to_torch_csr_tensor(edge_index.flip(0), size=(N, N))` (row = destination) on the GPU.

  GCN: GCNConv(cached=True) layers, ReLU between them, no dropout.
  SAGE: SAGEConv (mean aggregator, root weight: PyG's default) on the same CSR adjacency (the mean as
       a sparse product), self-loops dropped (ht-train's SAGE gives them weight 0), ReLU between
       layers, no dropout: timed as GCN is (issue 38: ht-train --model sage against it).
  GAT: GATConv on edge_index; hidden layers have H heads concatenated (--layers gives the width
       per head, as ht-train's --layers does), the output layer 1 head; ELU between layers (as
       ht-train's GAT); no dropout.
  Adam lr 0.01; cross-entropy on the training vertices; --warmup epochs, then the median of the
  timed epochs (forward, backward, optimizer step, torch.cuda.synchronize()); peak GPU memory =
  torch.cuda.max_memory_allocated(). CUDA out-of-memory (anywhere: adjacency, model, training) is
  caught and reported as "oom": true with the stage it happened in.

Prints one result line; --json OUT writes one JSON object (keys in bench/README.md).
torch and torch_geometric are imported only when training, so --help and --load-only (reads the
file and prints what PyG would get, as JSON) work without them.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import htg  # noqa: E402  (the numpy reader beside this script)


def parse_layers(text):
    try:
        dims = [int(t) for t in text.split("-")]
    except ValueError:
        dims = []
    if len(dims) < 2 or min(dims) < 1:
        raise argparse.ArgumentTypeError("'%s' is not a list of positive widths like 602-256-41" % text)
    return dims


def build_parser():
    p = argparse.ArgumentParser(
        description="PyG full-graph GCN/GAT/SAGE training on a .htg graph, as SPEC §9 configures the PyG baseline.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("graph", help="graph file (.htg, from ht-convert)")
    p.add_argument("--model", choices=("gcn", "gat", "sage"), default="gcn", help="model")
    p.add_argument("--layers", type=parse_layers, default=None,
                   help="layer widths, e.g. 602-256-41 (GAT: hidden widths per head); default F-256-C")
    p.add_argument("--heads", type=int, default=4, help="GAT heads in hidden layers (concatenated); output: 1 head")
    p.add_argument("--epochs", type=int, default=13, help="epochs in all, warm-up included")
    p.add_argument("--warmup", type=int, default=3, help="epochs left out of the median")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    p.add_argument("--seed", type=int, default=1, help="torch.manual_seed for the weights")
    p.add_argument("--device", default="cuda", help="torch device (cpu only for trying the script out)")
    p.add_argument("--json", metavar="OUT", help="also write the result as one JSON object to this file")
    p.add_argument("--load-only", action="store_true",
                   help="read the graph as training would, print its shapes as JSON and stop (no torch needed)")
    return p


def load_arrays(path):
    """The numpy arrays PyG training needs, from the .htg (features/labels/split required)."""
    g = htg.read_htg(path)
    for name in ("features", "labels", "split"):
        if getattr(g, name) is None:
            raise htg.HtgError("%s: has no '%s' section; the PyG baseline needs features, labels and a split"
                               % (path, name))
    return g


def load_summary(g, dims):
    import numpy as np
    split = np.asarray(g.split)
    dst = g.destinations()
    return {"graph": g.path, "num_vertices": int(g.num_vertices), "num_edges": int(g.num_edges),
            "feature_dim": int(g.feature_dim), "num_classes": int(g.num_classes),
            "train": int(np.count_nonzero(split == htg.SPLIT_TRAIN)),
            "test": int(np.count_nonzero(split == htg.SPLIT_TEST)),
            "edge_index_shape": [2, int(dst.shape[0])],
            "max_source": int(np.asarray(g.sources).max()) if g.num_edges else None,
            "max_destination": int(dst.max()) if g.num_edges else None,
            "layers": dims}


def is_oom(err):
    import torch
    if isinstance(err, torch.cuda.OutOfMemoryError):
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("out of memory" in text or "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES" in text
                                              or "CUBLAS_STATUS_ALLOC_FAILED" in text)


def build_model(kind, dims, heads):
    import torch
    from torch_geometric.nn import GATConv, GCNConv, SAGEConv

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList()
            last = len(dims) - 2
            for i in range(len(dims) - 1):
                if kind == "gcn":
                    self.convs.append(GCNConv(dims[i], dims[i + 1], cached=True))
                elif kind == "sage":
                    self.convs.append(SAGEConv(dims[i], dims[i + 1]))
                else:
                    fan_in = dims[i] * (heads if i > 0 else 1)
                    self.convs.append(GATConv(fan_in, dims[i + 1], heads=1 if i == last else heads,
                                              concat=i != last))
            self.act = torch.nn.functional.elu if kind == "gat" else torch.relu

        def forward(self, x, adj):
            for i, conv in enumerate(self.convs):
                x = conv(x, adj)
                if i + 1 < len(self.convs):
                    x = self.act(x)
            return x

    return Net()


def train(args, g, dims, result):
    """Fills `result`; raises on errors other than out-of-memory."""
    import numpy as np
    import torch
    from torch_geometric.utils import to_torch_csr_tensor
    import torch_geometric

    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    result["torch"] = torch.__version__
    result["torch_geometric"] = torch_geometric.__version__
    result["device"] = torch.cuda.get_device_name(dev) if cuda else str(dev)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(args.seed)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)

    result["stage"] = "load"
    t0 = time.perf_counter()
    x = torch.from_numpy(np.array(g.features_f32())).to(dev)  # a copy (the memmap is read-only); 16-bit widened
    y = torch.from_numpy(np.asarray(g.labels, dtype=np.int64)).to(dev)
    split = torch.from_numpy(np.asarray(g.split)).to(dev)
    train_mask = split == htg.SPLIT_TRAIN
    test_mask = split == htg.SPLIT_TEST
    src = torch.from_numpy(np.asarray(g.sources).astype(np.int64)).to(dev)
    counts = torch.from_numpy(np.diff(np.asarray(g.offsets))).to(dev)
    dst = torch.repeat_interleave(torch.arange(g.num_vertices, device=dev), counts)
    edge_index = torch.stack([src, dst])
    del src, dst, counts
    result["stage"] = "adjacency"
    if args.model == "sage":  # the mean over in-neighbors without the vertex itself, as ht-train's SAGE
        edge_index = edge_index[:, edge_index[0] != edge_index[1]]
    if args.model in ("gcn", "sage"):
        adj = to_torch_csr_tensor(edge_index.flip(0), size=(g.num_vertices, g.num_vertices))
        del edge_index
    else:
        adj = edge_index
    sync()
    result["setup_seconds"] = time.perf_counter() - t0

    result["stage"] = "model"
    model = build_model(args.model, dims, args.heads).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    times, losses = [], []
    result["stage"] = "train"
    for epoch in range(args.epochs):
        sync()
        t = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(x, adj)
        loss = torch.nn.functional.cross_entropy(out[train_mask], y[train_mask])
        loss.backward()
        opt.step()
        sync()
        ms = (time.perf_counter() - t) * 1e3
        losses.append(float(loss))
        if epoch >= min(args.warmup, args.epochs - 1):
            times.append(ms)
        print("epoch %3d | loss %.4f | %.1f ms" % (epoch, losses[-1], ms), file=sys.stderr, flush=True)
        del out, loss
    result["epoch_ms"] = times
    result["epoch_ms_median"] = statistics.median(times)
    result["final_loss"] = losses[-1]
    result["stage"] = "eval"
    model.eval()
    with torch.no_grad():
        pred = model(x, adj).argmax(dim=1)
        result["test_acc"] = float((pred[test_mask] == y[test_mask]).float().mean()) if bool(test_mask.any()) else None
    result["stage"] = "done"
    if cuda:
        result["peak_gpu_bytes"] = int(torch.cuda.max_memory_allocated(dev))


def run(args, g, dims):
    result = {"tool": "pyg_baseline", "graph": args.graph, "model": args.model, "layers": "-".join(map(str, dims)),
              "heads": args.heads if args.model == "gat" else 1, "num_vertices": int(g.num_vertices),
              "num_edges": int(g.num_edges), "epochs": args.epochs, "warmup": args.warmup, "lr": args.lr,
              "oom": False, "error": None, "stage": "setup", "epoch_ms_median": None, "peak_gpu_bytes": None, "test_acc": None}
    try:
        train(args, g, dims, result)
    except Exception as err:  # noqa: BLE001  (every failure is reported, OOM is a result)
        if not is_oom(err):
            raise
        import torch
        result["oom"] = True
        result["error"] = "%s: %s" % (type(err).__name__, str(err).splitlines()[0] if str(err) else "")
        if torch.cuda.is_available():
            result["peak_gpu_bytes"] = int(torch.cuda.max_memory_allocated())
            torch.cuda.empty_cache()
    return result


def result_line(r):
    head = "pyg %s %s on %s (N = %d, E = %d)" % (r["model"], r["layers"], r["graph"], r["num_vertices"], r["num_edges"])
    if r["oom"]:
        return "%s: OUT OF MEMORY during %s (%s)" % (head, r["stage"], r["error"])
    peak = r["peak_gpu_bytes"]
    return "%s: median epoch %.2f ms over %d epochs after %d warm-up; peak GPU %s; test accuracy %s" % (
        head, r["epoch_ms_median"], len(r["epoch_ms"]), r["warmup"],
        "%.2f GiB" % (peak / 2**30) if peak is not None else "n/a",
        "%.4f" % r["test_acc"] if r["test_acc"] is not None else "n/a")


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.epochs < 1 or args.warmup < 0 or args.heads < 1:
        print("pyg_baseline.py: error: --epochs must be >= 1, --warmup >= 0, --heads >= 1", file=sys.stderr)
        return 2
    try:
        g = load_arrays(args.graph)
    except (htg.HtgError, OSError) as err:
        print("pyg_baseline.py: error: %s" % err, file=sys.stderr)
        return 1
    dims = args.layers or [int(g.feature_dim), 256, int(g.num_classes)]
    if dims[0] != g.feature_dim or dims[-1] != g.num_classes:
        print("pyg_baseline.py: error: --layers %s: the graph has F = %d features and C = %d classes"
              % ("-".join(map(str, dims)), g.feature_dim, g.num_classes), file=sys.stderr)
        return 2
    if args.load_only:
        print(json.dumps(load_summary(g, dims)))
        return 0
    try:
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError as err:
        print("pyg_baseline.py: error: training needs torch and torch_geometric (%s); --help and --load-only "
              "work without them" % err, file=sys.stderr)
        return 1
    result = run(args, g, dims)
    print(result_line(result), flush=True)
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
            f.write("\n")
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
