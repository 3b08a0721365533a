#!/usr/bin/env python3
"""Time to accuracy (issue 36): the baselines bench/tta.sh sets beside hongtu, and its report.

Subcommands:

  env                  what this Python has: torch (and its CUDA), torch_geometric, pyg-lib,
                       torch-sparse; one JSON object. Works without torch.
  baseline GRAPH ...   trains one baseline on a hongtu graph file (.htg: features, labels and the
                       train/val/test split, the same split ht-train uses) and writes one JSON
                       result with its accuracy curve:
                         --method full       full-graph GCN (PyG GCNConv when torch_geometric is
                                             there, else the same normalized product with
                                             torch.sparse), on the GPU;
                         --method minibatch  neighbor-sampling mini-batches, GraphSAGE (mean
                                             aggregator, root weight) or GCN (mean over the
                                             sampled neighbors and the vertex itself), fan-outs
                                             e.g. 15-10-5, batch 1024. --sampler torch samples on
                                             the GPU in plain PyTorch (uniform, with replacement
                                             for vertices whose degree is above the fan-out);
                                             --sampler pyg uses PyG's NeighborLoader (needs
                                             pyg-lib or torch-sparse; samples on the CPU);
                                             --sampler auto = torch (the GPU), recording whether
                                             pyg-lib / torch-sparse were there.
                       Both evaluate every --eval-every epochs on every vertex (mini-batch: exact
                       layer-wise inference over all neighbors, as OGB's examples), stop after
                       --early-stop evaluations without a better validation accuracy or at
                       --epochs, and record (seconds since the start of training, validation and
                       test accuracy) per evaluation. Peak GPU memory = torch.cuda.max_memory_allocated.
  report DIR           reads every result in DIR (baselines' *.json, ht-train's *.jsonl metrics),
                       fixes one target validation accuracy per graph (--target GRAPH=A, else
                       --target-fraction of the best validation accuracy hongtu's first run
                       reached), and writes the table (Markdown: epoch time, time to target, best
                       validation and its test accuracy, time to best, peak GPU memory) and the
                       plot (validation accuracy against wall time, one panel per graph).

Time to target is taken from each run's curve: the first evaluation at or above the target, in
seconds since the start of training (setup and data loading are not in it; they are a column of
their own). Every system evaluates at the same --eval-every and the evaluations count in its time.

Fairness of the mini-batch baseline: it is configured as OGB's ogbn-products GraphSAGE example and
the paper the issue cites (Bajaj et al.) configure theirs: 3 layers of 256 with fan-outs 15-10-5 (or
2 layers, 25-10), batch 1024 (and 4096), dropout 0.5, Adam; its learning rate is the one argument
tta.sh sweeps (--lr-list), as far as the paper tuned; the best of the sweep is what the table keeps.
"""

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# ----------------------------------------------------------------------------------------- env

def environment():
    """What this interpreter can run, without importing more than needed."""
    info = {"python": sys.version.split()[0], "torch": None, "cuda": False, "gpus": 0,
            "torch_geometric": None, "pyg_lib": None, "torch_sparse": None}
    try:
        import torch
        info["torch"] = torch.__version__
        info["cuda"] = bool(torch.cuda.is_available())
        info["gpus"] = torch.cuda.device_count() if info["cuda"] else 0
    except Exception:  # noqa: BLE001 (absent or broken: either way not usable)
        return info
    for mod, key in (("torch_geometric", "torch_geometric"), ("pyg_lib", "pyg_lib"), ("torch_sparse", "torch_sparse")):
        try:
            m = __import__(mod)
            info[key] = getattr(m, "__version__", "present")
        except Exception:  # noqa: BLE001
            pass
    return info


# ------------------------------------------------------------------------------------ baseline

def parse_fanouts(text):
    try:
        f = [int(t) for t in text.split("-")]
    except ValueError:
        f = []
    if not f or min(f) < 1:
        raise argparse.ArgumentTypeError("'%s' is not a list of positive fan-outs like 15-10-5" % text)
    return f


def is_oom(err):
    import torch
    return isinstance(err, torch.cuda.OutOfMemoryError) or "out of memory" in str(err).lower()


class Graph:
    """The .htg's arrays on the device: CSC by destination (offsets, sources), x, y, split."""

    def __init__(self, path, dev):
        import numpy as np
        import torch
        import htg
        g = htg.read_htg(path)
        for name in ("features", "labels", "split"):
            if getattr(g, name) is None:
                raise htg.HtgError("%s: has no '%s' section; time to accuracy needs features, labels and a split"
                                   % (path, name))
        self.n = g.num_vertices
        self.indptr = torch.from_numpy(np.asarray(g.offsets, dtype=np.int64)).to(dev)
        self.indices = torch.from_numpy(np.asarray(g.sources, dtype=np.int64)).to(dev)
        self.x = torch.from_numpy(np.array(g.features_f32())).to(dev)
        self.y = torch.from_numpy(np.asarray(g.labels, dtype=np.int64)).to(dev)
        split = torch.from_numpy(np.asarray(g.split)).to(dev)
        self.train = torch.nonzero((split == htg.SPLIT_TRAIN) & (self.y >= 0)).flatten()
        self.val_mask = (split == htg.SPLIT_VAL) & (self.y >= 0)
        self.test_mask = (split == htg.SPLIT_TEST) & (self.y >= 0)
        self.classes = int(self.y.max().item()) + 1
        self.deg = (self.indptr[1:] - self.indptr[:-1])


def accuracy(logits, g):
    pred = logits.argmax(1)
    out = []
    for mask in (g.val_mask, g.test_mask):
        n = int(mask.sum().item())
        out.append(float((pred[mask] == g.y[mask]).sum().item()) / n if n else 0.0)
    return out


def dst_chunks(g, edges_per_chunk):
    """Destination ranges [v, w) with their edge ranges [e0, e1), each at most edges_per_chunk
    in-edges (at least one vertex)."""
    import torch
    v = 0
    while v < g.n:
        e0 = int(g.indptr[v].item())
        # the last destination whose edges end within the budget (at least one vertex)
        lim = torch.searchsorted(g.indptr, torch.tensor([e0 + edges_per_chunk], device=g.indptr.device), right=True)
        w = max(v + 1, min(g.n, int(lim.item()) - 1))
        yield v, w, e0, int(g.indptr[w].item())
        v = w


def make_model(arch, dims, dropout):
    import torch

    class Net(torch.nn.Module):
        """Layer l: h_dst = act(W_self h_dst + W_nbr mean(h_src)) (sage) or
        act(W mean(h_src ∪ h_dst)) (gcn); the first n_dst rows of h are the destinations."""

        def __init__(self):
            super().__init__()
            self.arch = arch
            self.lin = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))
            self.root = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1], bias=False)
                                            for i in range(len(dims) - 1)) if arch == "sage" else None
            self.dropout = dropout

        def layer(self, l, h, n_dst, agg_sum, count):
            if self.arch == "sage":
                out = self.lin[l](agg_sum / count.clamp(min=1).unsqueeze(1)) + self.root[l](h[:n_dst])
            else:
                out = self.lin[l]((agg_sum + h[:n_dst]) / (count + 1).unsqueeze(1))
            if l < len(self.lin) - 1:
                out = torch.relu(out)
                out = torch.nn.functional.dropout(out, self.dropout, self.training)
            return out

        def forward(self, x, blocks):
            """blocks: per layer (n_dst, edge_dst, edge_src) over the previous layer's rows."""
            h = torch.nn.functional.dropout(x, self.dropout, self.training)
            for l, (n_dst, e_dst, e_src) in enumerate(blocks):
                s = torch.zeros(n_dst, h.shape[1], device=h.device, dtype=h.dtype).index_add_(0, e_dst, h[e_src])
                c = torch.zeros(n_dst, device=h.device, dtype=h.dtype).index_add_(
                    0, e_dst, torch.ones_like(e_dst, dtype=h.dtype))
                h = self.layer(l, h, n_dst, s, c)
            return h

        @torch.no_grad()
        def inference(self, g, chunk_values=1 << 27):
            """Every vertex, layer by layer over all its neighbors (no sampling, no dropout), in
            destination ranges whose gathered rows stay under chunk_values floats: only the layer's
            input and output are whole (a 12 M-vertex graph's 256-wide temporaries are not)."""
            h = g.x
            for l in range(len(self.lin)):
                out = None
                for v, w, e0, e1 in dst_chunks(g, max(1, chunk_values // max(1, h.shape[1]))):
                    s = torch.zeros(w - v, h.shape[1], device=h.device, dtype=h.dtype)
                    if e1 > e0:
                        dst = torch.repeat_interleave(torch.arange(w - v, device=h.device), g.deg[v:w])
                        s.index_add_(0, dst, h[g.indices[e0:e1]])
                    o = self.layer(l, h[v:w], w - v, s, g.deg[v:w].to(h.dtype))
                    if out is None:
                        out = torch.empty(g.n, o.shape[1], device=h.device, dtype=o.dtype)
                    out[v:w] = o
                h = out
            return h

    return Net()


class GpuSampler:
    """Uniform neighbor sampling on the device in plain PyTorch. Vertices of degree <= fan-out keep
    every in-neighbor; above it, `fan-out` draws with replacement (DGL's replace=True)."""

    def __init__(self, g, fanouts):
        import torch
        self.g = g
        self.fanouts = fanouts
        self.pos = torch.full((g.n,), -1, dtype=torch.int64, device=g.x.device)

    def blocks(self, seeds):
        import torch
        g, dev = self.g, self.g.x.device
        frontier = seeds
        layers = []
        for k in self.fanouts:  # hop 1 from the seeds first (PyG's num_neighbors order)
            deg = g.deg[frontier]
            take = deg.clamp(max=k)
            total = int(take.sum().item())
            rep = torch.repeat_interleave(torch.arange(frontier.numel(), device=dev), take)
            start = torch.cumsum(take, 0) - take
            local = torch.arange(total, device=dev) - start[rep]
            d = deg[rep]
            rnd = torch.minimum((torch.rand(total, device=dev) * d).long(), (d - 1).clamp(min=0))
            off = torch.where(d <= k, local, rnd)
            nbr = g.indices[g.indptr[frontier][rep] + off]
            self.pos[frontier] = torch.arange(frontier.numel(), device=dev)
            new = torch.unique(nbr[self.pos[nbr] < 0])
            self.pos[new] = torch.arange(frontier.numel(), frontier.numel() + new.numel(), device=dev)
            src = self.pos[nbr]
            nodes = torch.cat([frontier, new])
            self.pos[nodes] = -1
            layers.append((frontier.numel(), rep, src))
            frontier = nodes
        layers.reverse()
        return frontier, layers  # input vertices, then per layer (n_dst, edge_dst, edge_src)


def pyg_batches(g, fanouts, batch, env, seed):
    """PyG's NeighborLoader on the CPU copy of the graph; yields what GpuSampler.blocks yields (every
    layer over the whole sampled subgraph, as PyG's examples run it)."""
    import torch
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    dev = g.x.device
    dst = torch.repeat_interleave(torch.arange(g.n), g.deg.cpu())
    data = Data(edge_index=torch.stack([g.indices.cpu(), dst]), num_nodes=g.n)
    data.n_id = torch.arange(g.n)
    loader = NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch, input_nodes=g.train.cpu(),
                            shuffle=True, num_workers=min(8, os.cpu_count() or 1), persistent_workers=True,
                            generator=torch.Generator().manual_seed(seed))
    layers = len(fanouts)

    def epoch():
        for sub in loader:
            ei = sub.edge_index.to(dev, non_blocking=True)
            nodes = sub.n_id.to(dev, non_blocking=True)
            n = nodes.numel()
            blocks = [(n, ei[1], ei[0])] * layers
            yield nodes, blocks, sub.batch_size
    return epoch


def full_graph_model(g, dims, dropout, env):
    """Full-graph GCN (symmetric normalization with self-loops): PyG GCNConv when there, else the
    same product with a torch.sparse CSR matrix."""
    import torch
    dev = g.x.device
    if env["torch_geometric"]:
        from torch_geometric.nn import GCNConv
        from torch_geometric.utils import to_torch_csr_tensor
        dst = torch.repeat_interleave(torch.arange(g.n, device=dev), g.deg)
        adj = to_torch_csr_tensor(torch.stack([dst, g.indices]), size=(g.n, g.n))
        convs = [GCNConv(dims[i], dims[i + 1], cached=True) for i in range(len(dims) - 1)]
        impl = "PyG GCNConv"
    else:
        ones = torch.ones(g.n, device=dev)
        deg = (g.deg.to(torch.float32) + 1)
        dinv = deg.pow(-0.5)
        dst = torch.repeat_interleave(torch.arange(g.n, device=dev), g.deg)
        rows = torch.cat([dst, torch.arange(g.n, device=dev)])
        cols = torch.cat([g.indices, torch.arange(g.n, device=dev)])
        vals = torch.cat([dinv[dst] * dinv[g.indices], ones / deg])
        adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), vals, (g.n, g.n)).coalesce().to_sparse_csr()
        convs = None
        impl = "torch.sparse (PyG absent)"

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            if convs is not None:
                self.convs = torch.nn.ModuleList(convs)
            else:
                self.lins = torch.nn.ModuleList(torch.nn.Linear(dims[i], dims[i + 1]) for i in range(len(dims) - 1))

        def forward(self, x):
            h = x
            layers = self.convs if convs is not None else self.lins
            for l, m in enumerate(layers):
                h = torch.nn.functional.dropout(h, dropout, self.training)
                h = m(h, adj) if convs is not None else torch.sparse.mm(adj, m(h))
                if l < len(layers) - 1:
                    h = torch.relu(h)
            return h

    return Net(), impl


def load_graph(args, result):
    """The graph on the device, once for every learning rate of the sweep; its load time is part of
    each run's setup."""
    import torch
    dev = torch.device(args.device)
    if dev.type == "cuda":
        result["device"] = torch.cuda.get_device_name(dev)
    t = time.perf_counter()
    g = Graph(args.graph, dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return g, time.perf_counter() - t


def run_baseline(args, g, load_seconds, lr, result, save):
    """One training run at learning rate `lr`; `save(result)` after every evaluation, so that a run
    killed from outside still leaves its curve."""
    import torch
    env = environment()
    result["env"] = env
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(args.seed)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    t_setup = time.perf_counter()
    layers = len(args.fanouts) if args.method == "minibatch" else args.num_layers
    dims = [g.x.shape[1]] + [args.hidden] * (layers - 1) + [g.classes]
    result["dims"] = dims
    result["stage"] = "model"
    if args.method == "full":
        model, impl = full_graph_model(g, dims, args.dropout, env)
        result["implementation"] = impl
    else:
        model = make_model(args.arch, dims, args.dropout)
        sampler = args.sampler
        if sampler == "auto":
            sampler = "torch"
        if sampler == "pyg" and not (env["torch_geometric"] and (env["pyg_lib"] or env["torch_sparse"])):
            raise RuntimeError("--sampler pyg needs torch_geometric with pyg-lib or torch-sparse; this Python has "
                               "pyg-lib %s, torch-sparse %s" % (env["pyg_lib"], env["torch_sparse"]))
        result["sampler"] = sampler
        result["sampler_note"] = (
            "PyG NeighborLoader (CPU sampling)" if sampler == "pyg" else
            "plain PyTorch on the GPU (pyg-lib %s, torch-sparse %s)" % (
                "present" if env["pyg_lib"] else "absent", "present" if env["torch_sparse"] else "absent"))
    model = model.to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=args.weight_decay)
    sync()
    result["setup_seconds"] = load_seconds + time.perf_counter() - t_setup
    result["stage"] = "train"

    curve, epoch_times = [], []
    best = {"val": -1.0, "test": 0.0, "epoch": -1, "t": 0.0}
    since_best = 0
    limit = args.time_limit if args.time_limit > 0 else float("inf")
    stop = "epochs"
    gpu_sampler = GpuSampler(g, args.fanouts) if args.method == "minibatch" and sampler == "torch" else None
    pyg_epoch = pyg_batches(g, args.fanouts, args.batch, env, args.seed) if (
        args.method == "minibatch" and sampler == "pyg") else None

    def record(epoch):
        result["epochs"] = epoch + 1
        timed = epoch_times[args.warmup:] or epoch_times
        result["epoch_s_median"] = statistics.median(timed)
        result["best_val_acc"] = best["val"]
        result["test_acc_at_best_val"] = best["test"]
        result["best_epoch"] = best["epoch"]
        result["best_seconds"] = best["t"]
        result["train_seconds"] = time.perf_counter() - t0
        result["curve"] = curve
        result["stop_reason"] = stop
        if cuda:
            result["peak_gpu_bytes"] = int(torch.cuda.max_memory_allocated(dev))

    sync()
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        te = time.perf_counter()
        model.train()
        partial = False  # the time limit came within the epoch's batches (mini-batch): it ends there
        if args.method == "full":
            opt.zero_grad()
            out = model(g.x)
            loss = torch.nn.functional.cross_entropy(out[g.train], g.y[g.train])
            loss.backward()
            opt.step()
        elif gpu_sampler is not None:
            perm = g.train[torch.randperm(g.train.numel(), device=dev)]
            for b in range(0, perm.numel(), args.batch):
                seeds = perm[b:b + args.batch]
                nodes, blocks = gpu_sampler.blocks(seeds)
                opt.zero_grad()
                out = model(g.x[nodes], blocks)
                loss = torch.nn.functional.cross_entropy(out, g.y[seeds])
                loss.backward()
                opt.step()
                if time.perf_counter() - t0 >= limit and b + args.batch < perm.numel():
                    partial = True
                    break
        else:
            for nodes, blocks, bs in pyg_epoch():
                opt.zero_grad()
                out = model(g.x[nodes], blocks)[:bs]
                loss = torch.nn.functional.cross_entropy(out, g.y[nodes[:bs]])
                loss.backward()
                opt.step()
                if time.perf_counter() - t0 >= limit:
                    partial = True
                    break
        sync()
        epoch_times.append(time.perf_counter() - te)
        if (epoch + 1) % args.eval_every == 0 or epoch + 1 == args.epochs or partial:
            model.eval()
            with torch.no_grad():
                logits = model(g.x) if args.method == "full" else model.inference(g)
            val, test = accuracy(logits, g)
            del logits
            sync()
            t = time.perf_counter() - t0
            curve.append([round(t, 6), val, test, epoch])
            if val > best["val"]:
                best = {"val": val, "test": test, "epoch": epoch, "t": t}
                since_best = 0
            else:
                since_best += 1
            if not args.quiet:
                print("lr %g epoch %4d | loss %.4f | val %.4f test %.4f | %.3f s" % (lr, epoch, float(loss), val, test,
                                                                                     t), file=sys.stderr)
            if args.early_stop and since_best >= args.early_stop:
                stop = "early stop (patience %d)" % args.early_stop
            elif t >= limit:
                stop = "time limit %g s" % args.time_limit
            record(epoch)
            save(result)
            if stop != "epochs":
                break
    record(epoch)
    result["stage"] = "done"
    result["status"] = "ok"


def lr_text(lr):
    return "%g" % lr


def cmd_baseline(args):
    lrs = args.lr
    base = {"system": args.label or ("pyg-full" if args.method == "full" else "minibatch-%s" % args.arch),
            "graph": os.path.basename(args.graph).rsplit(".", 1)[0], "method": args.method,
            "arch": args.arch if args.method == "minibatch" else "gcn",
            "fanouts": "-".join(map(str, args.fanouts)) if args.method == "minibatch" else None,
            "batch": args.batch if args.method == "minibatch" else None, "seed": args.seed,
            "time_limit": args.time_limit or None, "status": "error"}
    runs = []
    for lr in lrs:
        r = dict(base, lr=lr)
        path = args.json
        if len(lrs) > 1:  # one result per learning rate: SYSTEM-lrX, GRAPH__SYSTEM-lrX.json
            r["system"] = "%s-lr%s" % (base["system"], lr_text(lr))
            if path:
                path = (path[:-len(".json")] if path.endswith(".json") else path) + "-lr%s.json" % lr_text(lr)
        runs.append((lr, r, path))

    def save(result, path):
        if path:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps(result) + "\n")
            os.replace(tmp, path)

    g = load_seconds = None
    try:
        import torch
    except ImportError:
        torch = None
        for _lr, r, _path in runs:
            r["status"] = "skipped"
            r["note"] = "torch is not installed in %s" % sys.executable
    rc = 0
    for lr, r, path in runs:
        if torch is not None:
            try:
                if g is None:
                    r["stage"] = "load"
                    g, load_seconds = load_graph(args, r)
                else:
                    r["device"] = runs[0][1].get("device")
                run_baseline(args, g, load_seconds, lr, r, lambda res, p=path: save(res, p))
            except Exception as err:  # noqa: BLE001 (recorded: one failed configuration must not end the bench)
                if is_oom(err):
                    r["status"] = "oom"
                    r["note"] = "CUDA out of memory at stage %s" % r.get("stage")
                else:
                    r["status"] = "error"
                    r["note"] = "%s: %s" % (type(err).__name__, err)
                if r.get("stage") == "load":  # the graph did not load: the other rates cannot run either
                    for _lr, other, other_path in runs:
                        if other is not r:
                            other.update(status=r["status"], note=r["note"], stage="load")
                            save(other, other_path)
                    save(r, path)
                    print("%s %s: %s (%s)" % (r["system"], r["graph"], r["status"], r["note"]))
                    return 0 if r["status"] == "oom" else 1
            finally:
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
        save(r, path)
        print("%s %s: %s%s" % (r["system"], r["graph"], r["status"],
                               (" (%s)" % r["note"]) if r.get("note") else
                               " best val %.4f test %.4f at %.2f s (%s)" % (
                                   r["best_val_acc"], r["test_acc_at_best_val"], r["best_seconds"], r["stop_reason"])))
        if r["status"] not in ("ok", "oom", "skipped"):
            rc = 1
    return rc


# -------------------------------------------------------------------------------------- report

def read_hongtu(path):
    """One run of ht-train's metrics file as a result like the baselines' (the first run's when
    the file holds several: --runs)."""
    epochs, summary = [], None
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "epoch" and r.get("run", 0) == 0 and "val_acc" in r:
                epochs.append(r)
            elif r.get("type") == "summary" and r.get("run", 0) == 0 and summary is None:
                summary = r
    if summary is None:
        raise ValueError("%s: no summary line (the run did not complete)" % path)
    name = os.path.basename(path)[:-len(".jsonl")]
    graph, _, system = name.partition("__")
    options = summary.get("options") or {}
    lr = options.get("--lr")
    return {"system": system or "hongtu", "graph": graph, "status": "ok", "stop_reason": summary.get("stop_reason"),
            "lr": float(lr) if lr else None,
            "epochs": summary["epochs"], "epoch_s_median": summary["epoch_ms_median"] / 1e3,
            "best_val_acc": summary["best_val_acc"], "test_acc_at_best_val": summary["test_acc_at_best_val"],
            "best_epoch": summary["best_epoch"], "best_seconds": summary.get("best_train_seconds"),
            "setup_seconds": summary["setup_seconds"], "peak_gpu_bytes": summary["peak_device_bytes"],
            "gpus": summary["gpus"], "device": summary["backend"],
            "note": "%s backend, %d GPU(s), n = %s, store %s" % (summary["backend"], summary["gpus"],
                                                              summary.get("chunks"), summary.get("store")),
            "curve": [[e["train_seconds"], e["val_acc"], e["test_acc"], e["epoch"]] for e in epochs]}


def read_results(folder):
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.jsonl"))):
        try:
            out.append(read_hongtu(path))
        except (ValueError, KeyError) as err:
            name = os.path.basename(path)[:-len(".jsonl")]
            graph, _, system = name.partition("__")
            out.append({"system": system, "graph": graph, "status": "error", "note": str(err)})
    for path in sorted(glob.glob(os.path.join(folder, "*__*.json"))):  # GRAPH__SYSTEM.json (not env.json)
        with open(path) as f:
            r = json.load(f)
        name = os.path.basename(path)[:-len(".json")]
        graph, _, system = name.partition("__")
        r["system"], r["graph"] = system or r.get("system"), graph or r.get("graph")
        out.append(r)
    return out


def time_to(curve, target):
    for t, val, _test, _epoch in curve:
        if val >= target:
            return t
    return None


LR_SUFFIX = re.compile(r"-lr[0-9.eE+-]+$")


def base_system(system):
    """The system without the learning rate of a sweep (tta.sh --lr-list names runs SYSTEM-lrX)."""
    return LR_SUFFIX.sub("", system)


def targets_for(results, given, fraction):
    """Per graph: the given target, else `fraction` of the best validation accuracy of the graph's
    hongtu in-memory run (the best of its learning rates when swept), else of its first hongtu
    system's (the best of that one's learning rates)."""
    targets = {}
    ok = [r for r in results if r.get("status") == "ok" and r["system"].startswith("hongtu")]
    for graph in sorted({r["graph"] for r in ok}):
        runs = [r for r in ok if r["graph"] == graph]
        bases = sorted({base_system(r["system"]) for r in runs}, key=lambda b: (b != "hongtu-inmem-1gpu", b))
        best = max(r["best_val_acc"] for r in runs if base_system(r["system"]) == bases[0])
        targets[graph] = math.floor(fraction * best * 1000) / 1000
    targets.update(given)
    return targets


def fmt_s(v):
    return "—" if v is None else ("%.2f" % v if v < 100 else "%.0f" % v)


def fmt_epoch(v):
    """The median epoch time; none (—) when every epoch was a warm-up one (a run cut short)."""
    return "%.4f" % v if v else "—"


def fmt_bytes(v):
    return "—" if not v else "%.2f GiB" % (v / 2 ** 30)


def table(results, targets):
    lines = ["| graph | system | target val | epoch (s) | time to target (s) | best val | test at best val | "
             "time to best (s) | epochs | setup (s) | peak GPU memory | note |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted(results, key=lambda r: (r["graph"], r["system"])):
        target = targets.get(r["graph"])
        if r.get("status") != "ok":
            lines.append("| %s | %s | %s | | | | | | | | | %s: %s |" % (
                r["graph"], r["system"], "" if target is None else target, r.get("status"), r.get("note", "")))
            continue
        tt = time_to(r.get("curve", []), target) if target is not None else None
        note = r.get("sampler_note") or r.get("implementation") or r.get("note") or ""
        if (r.get("stop_reason") or "").startswith("time limit"):
            note = "; ".join(x for x in (note, "stopped by the %s" % r["stop_reason"]) if x)
        lines.append("| %s | %s | %s | %s | %s | %.4f | %.4f | %s | %d | %s | %s | %s |" % (
            r["graph"], r["system"], "—" if target is None else target, fmt_epoch(r["epoch_s_median"]),
            fmt_s(tt) if target is not None else "—", r["best_val_acc"], r["test_acc_at_best_val"],
            fmt_s(r.get("best_seconds")), r["epochs"], fmt_s(r.get("setup_seconds")),
            fmt_bytes(r.get("peak_gpu_bytes")), note or ("not reached" if target is not None and tt is None else "")))
    return "\n".join(lines) + "\n"


def best_lr_table(results, targets):
    """Per graph and system (learning rates of a sweep together): every rate's time to target, and
    the rate kept: the fastest to the target, else (none reached it) the best validation accuracy."""
    groups = {}
    for r in results:
        groups.setdefault((r["graph"], base_system(r["system"])), []).append(r)
    lines = ["| graph | system | target val | time to target (s) per lr | best lr | time to target (s) | "
             "epoch (s) | best val | test at best val | peak GPU memory |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for (graph, system), runs in sorted(groups.items()):
        target = targets.get(graph)
        per_lr, scored = [], []
        for r in sorted(runs, key=lambda r: (r.get("lr") is None, r.get("lr") or 0)):
            lr = "%g" % r["lr"] if r.get("lr") is not None else "?"
            if r.get("status") != "ok":
                per_lr.append("%s: %s" % (lr, r.get("status")))
                continue
            tt = time_to(r.get("curve", []), target) if target is not None else None
            capped = (r.get("stop_reason") or "").startswith("time limit")
            per_lr.append("%s: %s" % (lr, fmt_s(tt) if tt is not None else ("capped" if capped else "not reached")))
            scored.append((tt is None, tt if tt is not None else -r["best_val_acc"], lr, tt, r))
        if not scored:
            lines.append("| %s | %s | %s | %s | | | | | | |" % (graph, system, "—" if target is None else target,
                                                                "; ".join(per_lr)))
            continue
        _miss, _key, lr, tt, r = min(scored, key=lambda x: (x[0], x[1]))
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %.4f | %.4f | %s |" % (
            graph, system, "—" if target is None else target, "; ".join(per_lr), lr,
            fmt_s(tt) if tt is not None else "not reached", fmt_epoch(r["epoch_s_median"]), r["best_val_acc"],
            r["test_acc_at_best_val"], fmt_bytes(r.get("peak_gpu_bytes"))))
    return "\n".join(lines) + "\n"


def plot(results, targets, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    graphs = sorted({r["graph"] for r in results if r.get("status") == "ok" and r.get("curve")})
    if not graphs:
        return False
    cols = min(3, len(graphs))
    rows = (len(graphs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4 * rows), squeeze=False)
    for ax, graph in zip(axes.flat, graphs):
        for r in sorted((r for r in results if r["graph"] == graph and r.get("status") == "ok"),
                        key=lambda r: r["system"]):
            c = r.get("curve") or []
            if c:
                ax.plot([p[0] for p in c], [p[1] for p in c], label=r["system"], lw=1.2)
        if graph in targets:
            ax.axhline(targets[graph], color="k", ls=":", lw=0.8, label="target %.3f" % targets[graph])
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_title(graph)
        ax.set_xlabel("seconds since the start of training")
        ax.set_ylabel("validation accuracy")
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(graphs):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def cmd_report(args):
    results = read_results(args.folder)
    if not results:
        print("tta.py report: no results in %s (*.jsonl from ht-train, *.json from tta.py baseline)" % args.folder,
              file=sys.stderr)
        return 1
    given = {}
    for t in args.target or []:
        graph, _, value = t.partition("=")
        try:
            given[graph] = float(value)
        except ValueError:
            print("tta.py report: --target %s is not GRAPH=ACCURACY" % t, file=sys.stderr)
            return 2
    targets = targets_for(results, given, args.target_fraction)
    text = table(results, targets)
    with open(args.table, "w") as f:
        f.write(text)
    print(text, end="")
    if args.best_table:
        best = best_lr_table(results, targets)
        with open(args.best_table, "w") as f:
            f.write(best)
        print("\nbest learning rate of each system:\n" + best, end="")
    if args.plot:
        try:
            if plot(results, targets, args.plot):
                print("plot: %s" % args.plot)
        except ImportError:
            print("no plot: matplotlib is not installed in %s" % sys.executable, file=sys.stderr)
    return 0


def main(argv):
    p = argparse.ArgumentParser(description="Time to accuracy: baselines beside hongtu, and the report.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("env", help="what this Python has (torch, CUDA, PyG, pyg-lib, torch-sparse), as JSON")
    b = sub.add_parser("baseline", help="train one baseline on a .htg graph",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    b.add_argument("graph", help="graph file (.htg)")
    b.add_argument("--method", choices=("full", "minibatch"), default="minibatch")
    b.add_argument("--arch", choices=("sage", "gcn"), default="sage", help="mini-batch model")
    b.add_argument("--fanouts", type=parse_fanouts, default=parse_fanouts("15-10-5"),
                   help="mini-batch fan-out per hop, the seeds' neighbors first (PyG's num_neighbors order; "
                        "its length is the layer count)")
    b.add_argument("--num-layers", type=int, default=3, help="full-graph GCN layers")
    b.add_argument("--batch", type=int, default=1024, help="mini-batch size (training vertices)")
    b.add_argument("--sampler", choices=("auto", "torch", "pyg"), default="auto")
    b.add_argument("--hidden", type=int, default=256)
    b.add_argument("--dropout", type=float, default=0.5)
    b.add_argument("--lr", type=float, nargs="+", default=[0.003],
                   help="learning rate; several: one run each on the graph loaded once (a sweep), system names and "
                        "result files get -lrX")
    b.add_argument("--weight-decay", type=float, default=0.0)
    b.add_argument("--epochs", type=int, default=200, help="at most")
    b.add_argument("--eval-every", type=int, default=1)
    b.add_argument("--early-stop", type=int, default=20, help="evaluations without a better validation accuracy")
    b.add_argument("--time-limit", type=float, default=0,
                   help="seconds of training per run (0 = off): stop at the first evaluation past it; a mini-batch "
                        "epoch ends early there and is evaluated (as ht-train --time-limit)")
    b.add_argument("--warmup", type=int, default=1, help="epochs left out of the median epoch time")
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--device", default="cuda", help="torch device (cpu only to try the script out)")
    b.add_argument("--label", help="system name in the report (default from the method)")
    b.add_argument("--json", metavar="OUT", help="write the result (one JSON object) here")
    b.add_argument("-q", "--quiet", action="store_true")
    r = sub.add_parser("report", help="table and plot from a results folder",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    r.add_argument("folder")
    r.add_argument("--table", required=True, help="Markdown table to write")
    r.add_argument("--plot", help="PNG: validation accuracy against wall time")
    r.add_argument("--best-table", help="Markdown table to write: each system's best learning rate (of a sweep)")
    r.add_argument("--target", action="append", metavar="GRAPH=ACC", help="target validation accuracy of a graph")
    r.add_argument("--target-fraction", type=float, default=0.98,
                   help="without --target: this fraction of the best validation accuracy of hongtu's run")
    args = p.parse_args(argv)
    if args.cmd == "env":
        print(json.dumps(environment()))
        return 0
    if args.cmd == "baseline":
        for name in ("epochs", "eval_every", "batch", "hidden", "num_layers"):
            if getattr(args, name) < 1:
                p.error("--%s must be >= 1" % name.replace("_", "-"))
        if min(args.lr) <= 0 or args.time_limit < 0:
            p.error("--lr must be > 0 and --time-limit >= 0")
        if len(set(map(lr_text, args.lr))) != len(args.lr):
            p.error("--lr: a learning rate is given twice")
        return cmd_baseline(args)
    return cmd_report(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
