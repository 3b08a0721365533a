#!/usr/bin/env python3
"""PyG full-graph training of GCN or GraphSAGE on a hongtu graph file with ht-train's hyperparameters,
over several seeds: the accuracy side of issue 38 (bench/sage_vs_pyg.sh runs it beside ht-train --runs).

The graph, features, labels and split come from the .htg (bench/tta.py's loader: train = split code 1,
validation 2, test 3, unlabeled vertices (label < 0) in no mask). The model is what ht-train trains
with the same options:

  --model sage  PyG SAGEConv(aggr='mean', root_weight=True): h' = W_r h_v + W_n mean_{u in N(v)} h_u + b.
                The mean is over the in-neighbors without the vertex itself: self-loops in the file are
                dropped, as ht-train's SAGE gives them weight 0.
  --model gcn   PyG GCNConv (symmetric normalization with self-loops), bench/tta.py's full-graph model.
  Dropout (--dropout) on every layer's input, ReLU between layers, none after the last (ht-train's
  --dropout is "on every layer's input"). Adam with --lr and --weight-decay (L2 added to the gradients
  of every parameter, as ht-train's). Cross-entropy over the training vertices. --normalize-features:
  each feature row divided by its sum where the sum is not 0 (ht-train's --normalize-features).

Each run (seeds --seed, --seed + 1, ..., as ht-train --runs) trains --epochs epochs, evaluates every
--eval-every epochs (dropout off) and keeps the test accuracy of the first epoch with the best
validation accuracy; --early-stop P stops after P evaluations without a better one. Prints one line
per run and the mean ± sample standard deviation of those test accuracies (ht-train --runs's
report); --json OUT writes them as one JSON object, rewritten after every run (runs_done).

Without torch_geometric (or with --impl torch) the same models run in plain PyTorch: the mean (SAGE)
and the normalized sum (GCN) as a torch.sparse CSR product; the result names the implementation.
--help and --load-only (the graph's shapes as PyG would get them, as JSON) work without torch.
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
    if text == "auto":
        return None
    try:
        dims = [int(t) for t in text.split("-")]
    except ValueError:
        dims = []
    if len(dims) < 2 or min(dims) < 1:
        raise argparse.ArgumentTypeError("'%s' is not 'auto' or a list of positive widths like 1433-16-7" % text)
    return dims


def build_parser():
    p = argparse.ArgumentParser(
        description="PyG full-graph GCN/GraphSAGE training on a .htg with ht-train's hyperparameters, "
                    "test accuracy at the best validation epoch over several seeds.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("graph", help="graph file (.htg, from ht-convert)")
    p.add_argument("--model", choices=("sage", "gcn"), default="sage")
    p.add_argument("--layers", type=parse_layers, default=None,
                   help="layer widths like 1433-16-7, or auto = F-hidden-C (ht-train's --layers)")
    p.add_argument("--hidden", type=int, default=16, help="hidden width for --layers auto (ht-train's default)")
    p.add_argument("--num-layers", type=int, default=2, help="layers for --layers auto")
    p.add_argument("--dropout", type=float, default=0.0, help="dropout on every layer's input")
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    p.add_argument("--weight-decay", type=float, default=0.0, help="L2 weight decay added to the gradients")
    p.add_argument("--epochs", type=int, default=200, help="epochs per run at most")
    p.add_argument("--eval-every", type=int, default=1, help="evaluate every k epochs (and after the last)")
    p.add_argument("--early-stop", type=int, default=0,
                   help="stop after this many evaluations without a better validation accuracy (0 = off)")
    p.add_argument("--warmup", type=int, default=3, help="epochs left out of the median epoch time")
    p.add_argument("--runs", type=int, default=5, help="runs, with seeds --seed, --seed + 1, ...")
    p.add_argument("--seed", type=int, default=1, help="the first run's seed (torch.manual_seed)")
    p.add_argument("--normalize-features", action="store_true", help="row-normalize features to sum 1")
    p.add_argument("--impl", choices=("auto", "pyg", "torch"), default="auto",
                   help="pyg: torch_geometric's SAGEConv/GCNConv; torch: plain PyTorch; auto: pyg when installed")
    p.add_argument("--device", default="cuda", help="torch device (cpu to try the script out)")
    p.add_argument("--json", metavar="OUT", help="write the result as one JSON object to this file")
    p.add_argument("--load-only", action="store_true",
                   help="read the graph, print its shapes and the layer widths as JSON and stop (no torch needed)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-epoch lines on stderr")
    return p


def layer_dims(args, g):
    if args.layers:
        return args.layers
    return [int(g.feature_dim)] + [args.hidden] * (args.num_layers - 1) + [int(g.num_classes)]


def load_summary(path, dims):
    import numpy as np
    g = htg.read_htg(path)
    for name in ("features", "labels", "split"):
        if getattr(g, name) is None:
            raise htg.HtgError("%s: has no '%s' section; accuracy needs features, labels and a split" % (path, name))
    split, labels = np.asarray(g.split), np.asarray(g.labels)
    dst = g.destinations()
    src = np.asarray(g.sources)
    count = {name: int(np.count_nonzero((split == code) & (labels >= 0)))
             for name, code in (("train", htg.SPLIT_TRAIN), ("val", htg.SPLIT_VAL), ("test", htg.SPLIT_TEST))}
    return dict({"graph": path, "num_vertices": int(g.num_vertices), "num_edges": int(g.num_edges),
                 "self_loops": int(np.count_nonzero(src == dst)), "feature_dim": int(g.feature_dim),
                 "num_classes": int(g.num_classes), "layers": dims}, **count)


def sage_model(g, dims, dropout, use_pyg):
    """GraphSAGE (mean, root weight) over the in-neighbors without self-loops; (model, implementation)."""
    import torch
    dev = g.x.device
    dst = torch.repeat_interleave(torch.arange(g.n, device=dev), g.deg)
    keep = g.indices != dst  # ht-train's SAGE gives a self-loop weight 0
    rows, cols = dst[keep], g.indices[keep]
    if use_pyg:
        from torch_geometric.nn import SAGEConv
        from torch_geometric.utils import to_torch_csr_tensor
        adj = to_torch_csr_tensor(torch.stack([rows, cols]), size=(g.n, g.n))  # row = destination
        convs = torch.nn.ModuleList(SAGEConv(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
        impl = "PyG SAGEConv (mean, root weight)"
    else:
        deg = torch.zeros(g.n, device=dev).index_add_(0, rows, torch.ones_like(rows, dtype=torch.float32))
        inv = torch.where(deg > 0, 1.0 / deg.clamp(min=1), torch.zeros_like(deg))
        adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), inv[rows], (g.n, g.n)).coalesce().to_sparse_csr()
        convs = None
        impl = "plain PyTorch SAGE (torch.sparse mean; torch_geometric not used)"

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if convs is not None:
                self.convs = convs
            else:  # lin_l on the mean (with bias), lin_r on the root (none): SAGEConv's parameters
                self.lin_l = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
                self.lin_r = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1], bias=False)
                                                 for i in range(len(dims) - 1))

        def forward(self, x):
            h = x
            layers = len(dims) - 1
            for l in range(layers):
                h = torch.nn.functional.dropout(h, dropout, self.training)
                if convs is not None:
                    h = self.convs[l](h, adj)
                else:
                    h = self.lin_l[l](torch.sparse.mm(adj, h)) + self.lin_r[l](h)
                if l < layers - 1:
                    h = torch.relu(h)
            return h

    return Net(), impl


def one_run(args, g, dims, seed, use_pyg, tta):
    import torch
    dev = g.x.device
    cuda = dev.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    torch.manual_seed(seed)
    if args.model == "sage":
        model, impl = sage_model(g, dims, args.dropout, use_pyg)
    else:
        env = {"torch_geometric": "present" if use_pyg else None}
        model, impl = tta.full_graph_model(g, dims, args.dropout, env)
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    best = {"val": -1.0, "test": 0.0, "epoch": -1}
    since_best, times, stop = 0, [], "epochs"
    epoch = -1
    for epoch in range(args.epochs):
        sync()
        t = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(g.x)
        loss = torch.nn.functional.cross_entropy(out[g.train], g.y[g.train])
        loss.backward()
        opt.step()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
        del out
        if (epoch + 1) % args.eval_every == 0 or epoch + 1 == args.epochs:
            model.eval()
            with torch.no_grad():
                val, test = tta.accuracy(model(g.x), g)
            if val > best["val"]:  # the first best, as ht-train
                best = {"val": val, "test": test, "epoch": epoch}
                since_best = 0
            else:
                since_best += 1
            if not args.quiet:
                print("seed %d epoch %4d | loss %.4f | val %.4f test %.4f" % (seed, epoch, float(loss), val, test),
                      file=sys.stderr)
            if args.early_stop and since_best >= args.early_stop:
                stop = "early stop (patience %d)" % args.early_stop
                break
    timed = times[min(args.warmup, len(times) - 1):]
    return impl, {"seed": seed, "epochs": epoch + 1, "stop_reason": stop, "best_epoch": best["epoch"],
                  "best_val_acc": best["val"], "test_acc_at_best_val": best["test"],
                  "epoch_ms_median": statistics.median(timed), "final_loss": float(loss)}


def normalize_rows(x):
    """ht-train's --normalize-features: each row over its sum, rows summing to 0 as they are."""
    import torch
    s = x.sum(dim=1, keepdim=True, dtype=torch.float64)
    return torch.where(s != 0, (x.double() / torch.where(s != 0, s, torch.ones_like(s))).float(), x)


def save(result, path):
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
            f.write("\n")
        os.replace(tmp, path)


def summarize(result):
    """Mean ± sample standard deviation (ht-train --runs's) of the runs done so far."""
    accs = [r["test_acc_at_best_val"] for r in result["per_run"]]
    result["runs_done"] = len(accs)
    result["test_acc_at_best_val_mean"] = statistics.mean(accs)
    result["test_acc_at_best_val_std"] = statistics.stdev(accs) if len(accs) > 1 else 0.0
    result["epoch_ms_median"] = statistics.median(r["epoch_ms_median"] for r in result["per_run"])


def run(args, dims):
    import torch
    import tta
    env = tta.environment()
    use_pyg = args.impl == "pyg" or (args.impl == "auto" and env["torch_geometric"] is not None)
    if args.impl == "pyg" and env["torch_geometric"] is None:
        raise RuntimeError("--impl pyg: torch_geometric is not installed in %s" % sys.executable)
    dev = torch.device(args.device)
    g = tta.Graph(args.graph, dev)
    if args.normalize_features:
        g.x = normalize_rows(g.x)
    result = {"tool": "pyg_accuracy", "graph": args.graph, "model": args.model, "layers": "-".join(map(str, dims)),
              "dropout": args.dropout, "lr": args.lr, "weight_decay": args.weight_decay, "epochs": args.epochs,
              "eval_every": args.eval_every, "early_stop": args.early_stop, "normalize_features": args.normalize_features,
              "runs": args.runs, "torch": torch.__version__, "torch_geometric": env["torch_geometric"],
              "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev), "per_run": []}
    for k in range(args.runs):
        impl, r = one_run(args, g, dims, args.seed + k, use_pyg, tta)
        result["implementation"] = impl
        result["per_run"].append(r)
        print("run %d (seed %d): best validation %.4f at epoch %d, test %.4f; %d epochs, median epoch %.2f ms, "
              "stopped: %s" % (k, r["seed"], r["best_val_acc"], r["best_epoch"], r["test_acc_at_best_val"],
                               r["epochs"], r["epoch_ms_median"], r["stop_reason"]), flush=True)
        summarize(result)
        save(result, args.json)  # after every run: a run stopped from outside leaves the ones done
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return result


def main(argv=None):
    args = build_parser().parse_args(argv)
    for name in ("hidden", "num_layers", "epochs", "eval_every", "runs"):
        if getattr(args, name) < 1:
            print("pyg_accuracy.py: error: --%s must be >= 1" % name.replace("_", "-"), file=sys.stderr)
            return 2
    if not 0 <= args.dropout < 1 or args.lr <= 0 or args.weight_decay < 0 or args.early_stop < 0 or args.warmup < 0:
        print("pyg_accuracy.py: error: --dropout must be in [0, 1), --lr > 0, --weight-decay, --early-stop and "
              "--warmup >= 0", file=sys.stderr)
        return 2
    try:
        g = htg.read_htg(args.graph)
    except (htg.HtgError, OSError) as err:
        print("pyg_accuracy.py: error: %s" % err, file=sys.stderr)
        return 1
    dims = layer_dims(args, g)
    if dims[0] != g.feature_dim or dims[-1] != g.num_classes:
        print("pyg_accuracy.py: error: --layers %s: the graph has F = %d features and C = %d classes"
              % ("-".join(map(str, dims)), g.feature_dim, g.num_classes), file=sys.stderr)
        return 2
    del g
    if args.load_only:
        try:
            print(json.dumps(load_summary(args.graph, dims)))
        except htg.HtgError as err:
            print("pyg_accuracy.py: error: %s" % err, file=sys.stderr)
            return 1
        return 0
    try:
        import torch  # noqa: F401
    except ImportError as err:
        print("pyg_accuracy.py: error: training needs torch (%s); --help and --load-only work without it" % err,
              file=sys.stderr)
        return 1
    try:
        result = run(args, dims)
    except htg.HtgError as err:
        print("pyg_accuracy.py: error: %s" % err, file=sys.stderr)
        return 1
    print("pyg %s %s on %s (%s, %s): %d runs: test accuracy at best validation %.4f ± %.4f; median epoch %.2f ms"
          % (args.model, result["layers"], args.graph, result["implementation"], result["device"], args.runs,
             result["test_acc_at_best_val_mean"], result["test_acc_at_best_val_std"], result["epoch_ms_median"]),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
