#!/usr/bin/env python3
"""Paper estimates for multi-node hongtu training (docs/SCALING.md).

Prints the tables of docs/SCALING.md: host memory per node, and per-epoch
lower bounds per link (host link per GPU, NVLink within a node, network
between nodes) for friendster- and ogbn-papers100M-scale graphs on nodes of
four GPUs, plus what hierarchical partitioning would change on the network.
Every number is a MODEL ESTIMATE from the formulas and inputs of
docs/SCALING.md, not a measurement. Standard library only.

    python3 scripts/scaling_model.py                  # every table, Markdown
    python3 scripts/scaling_model.py --graph friendster --nodes 2 4
    python3 scripts/scaling_model.py --vru-floor      # host rows at their floor (V_ru = N)
    python3 scripts/scaling_model.py --json           # the same figures as JSON
"""
import argparse
import json
import math
import sys

GB = 1e9
GIB = 2**30

# --- Inputs (docs/SCALING.md, "Inputs", says where each one comes from) -------

# HongTu paper (SIGMOD 2023): Table 4 (sizes), Table 1 and Section 7.1 (models:
# 3-layer GCN, hidden 128), Table 3 (neighbor replication factor alpha for k
# METIS partitions of the real graphs), Table 8 (V_ori, V_ori - V_p2p,
# V_p2p - V_ru in units of |V|, measured with m = 4 GPUs x n = 32 chunks).
GRAPHS = {
    "friendster": {
        "vertices": 65.6e6,
        "edges": 2.5e9,
        "layers": [256, 128, 128, 64],
        "alpha": {1: 1.0, 2: 1.32, 4: 1.77, 8: 2.68, 16: 3.86, 32: 5.48, 64: 7.70, 128: 10.70,
                  256: 14.4, 512: 18.1},
        "table8": {"subgraphs": 128, "gpus": 4, "v_ori": 10.7, "p2p_saved": 2.50, "ru_saved": 5.09},
    },
    "papers100M": {
        "vertices": 111e6,
        "edges": 1.6e9,
        # Features 128 (ogbn-papers100M; the paper's Table 1 lists 200), 172 classes.
        "layers": [128, 128, 128, 172],
        "alpha": {1: 1.0, 2: 1.25, 4: 1.52, 8: 2.13, 16: 3.02, 32: 4.46, 64: 6.34, 128: 8.50,
                  256: 10.6, 512: 12.3},
        "table8": {"subgraphs": 128, "gpus": 4, "v_ori": 8.5, "p2p_saved": 0.77, "ru_saved": 4.1},
    },
}

# Link speeds, bytes/s per direction.
T_HOST = 55e9       # host<->GPU per GPU: ht-train's link probe, H100 PCIe gen5: H2D 55.1-55.4, D2H 55.2 GB/s
T_NVLINK = 374e9    # GPU<->GPU P2P gather of 128-float rows, 4xH200 NVLink (SPEC 9; ht-reorganize's t_dd)
T_NET = {"200G": 25e9, "400G": 50e9}  # per node, InfiniBand/RoCE line rate (assumed, not measured)

# Measured host-memory items (docs/USAGE.md section 4, lib/engine/host_memory_plan.cpp).
PLAN_FILE_RATIO = (0.20, 0.23)  # plan file / graph file (bench/RESULTS.md: 20 M graph 0.20, it-2004-like 0.23)
PROCESS_FIXED = 1 * GIB         # process, libraries, staging ring: about 1 GiB per process (assumed)


# --- The engine's vertex store and layer widths -------------------------------

def transform_first(layers, l, order):
    """lib/engine/layer_order.cpp: auto = transform-first where the output is narrower."""
    if order == "aggregate":
        return False
    if order == "transform":
        return True
    return layers[l + 1] < layers[l]


def gather_width(layers, l, order):
    return layers[l + 1] if transform_first(layers, l, order) else layers[l]


def store_columns(layers, order="auto", fuse=True):
    """Columns of the host vertex store, as lib/engine/store_layout.cpp counts them."""
    L = len(layers) - 1

    def fuses(l):
        return fuse and l > 0 and transform_first(layers, l, order)

    def stores_h(k):
        return k == L or not fuses(k) or transform_first(layers, k - 1, order)

    def stores_grad(k):
        return k == L or not fuses(k)

    cols = layers[0]
    for l in range(L):
        if stores_h(l + 1):
            cols += layers[l + 1]
        if stores_grad(l + 1):
            cols += layers[l + 1]
        cols += gather_width(layers, l, order)  # cached aggregate or transform
    return cols


def pass_widths(layers, order="auto"):
    """(forward gather widths, backward return widths) of the neighbor passes.

    Forward: every layer gathers its neighbors' rows. Backward: a layer returns
    gradient rows to their owners when its input gradient is needed, i.e. every
    layer but an aggregate-first layer 0 (which uses its cached aggregate).
    """
    L = len(layers) - 1
    fwd = [gather_width(layers, l, order) for l in range(L)]
    bwd = [gather_width(layers, l, order) for l in range(L) if l > 0 or transform_first(layers, 0, order)]
    return fwd, bwd


# --- The model ----------------------------------------------------------------

def alpha(g, k):
    a = g["alpha"]
    if k not in a:
        raise SystemExit(f"scaling_model: no replication factor for {k} partitions (have {sorted(a)})")
    return a[k]


def estimate(name, nodes, gpn=4, subgraphs=128, order="auto", vru_floor=False, imbalance=1.05,
             wire_bytes=4, procs_per_node=(1, 4)):
    g = GRAPHS[name]
    N, E, layers = g["vertices"], g["edges"], g["layers"]
    t8 = g["table8"]
    m = nodes * gpn
    n = max(1, subgraphs // m)
    K = m * n
    a_m, a_K, a_G, a_H = alpha(g, m), alpha(g, K), alpha(g, gpn), alpha(g, nodes)

    # Host rows per layer pass (Eq. 4 volumes), from Table 8 at m = 4, n = 32.
    v_ori = a_K * N
    vru_ratio = t8["v_ori"] - t8["p2p_saved"] - t8["ru_saved"]
    vp2p_ratio = t8["v_ori"] - t8["p2p_saved"]
    # Held at the measured ratios, within what n batches allow: V_p2p <= n N
    # (each batch's union is at most N rows) and N <= V_ru <= V_p2p.
    v_p2p = min(vp2p_ratio * N, n * N)
    v_ru = N if vru_floor else min(vru_ratio * N, v_p2p)

    # Rows pulled from other GPUs per layer pass: (alpha_m - 1) N remote
    # (partition, vertex) pairs, each pulled in rho of the partition's batches,
    # 1 <= rho <= rbar = min(alpha_K / alpha_m, n); rho = rbar^theta with theta
    # fitted so that m = 4 gives Table 8's V_ori - V_p2p.
    a4 = alpha(g, t8["gpus"])
    rbar4 = t8["v_ori"] / a4
    theta = math.log(t8["p2p_saved"] / (a4 - 1)) / math.log(rbar4)
    rbar = min(a_K / a_m, n) if m > 1 else 1.0
    rho = rbar**theta
    remote = (a_m - 1) * rho * N
    remote_low, remote_high = (a_m - 1) * N, (a_m - 1) * rbar * N

    # Cross-node rows per layer pass.
    if nodes == 1:
        x_flat = x_hier = x_node = 0.0
    else:
        x_flat = remote * (m - gpn) / (m - 1)                 # parts placed on nodes regardless of locality
        x_hier = rho * max(a_m - a_G, a_H - 1) * N            # nodes first, then GPUs; per-GPU pulls
        x_node = rho * (a_H - 1) * N                          # + one copy per node, fanned out over NVLink
    intra_flat = remote - x_flat

    fwd, bwd = pass_widths(layers, order)
    wf, wb = sum(fwd), sum(bwd)
    cols = store_columns(layers, order)
    F0 = layers[0]

    out = {
        "graph": name, "nodes": nodes, "gpus_per_node": gpn, "m": m, "n": n, "subgraphs": K,
        "layers": "-".join(str(x) for x in layers), "order": order,
        "alpha_m": a_m, "alpha_K": a_K, "alpha_G": a_G, "alpha_H": a_H,
        "rows_per_vertex": {"V_ori": v_ori / N, "V_p2p": v_p2p / N, "V_ru": v_ru / N,
                            "remote": remote / N, "remote_low": remote_low / N, "remote_high": remote_high / N,
                            "rho": rho, "rbar": rbar, "theta": theta,
                            "cross_flat": x_flat / N, "cross_hier": x_hier / N, "cross_node_dedup": x_node / N},
        "widths": {"forward": fwd, "backward": bwd, "store_columns": cols},
    }

    # Host link per GPU, per epoch (fp32 and bf16 store).
    host = {}
    for dt, s in (("fp32", 4), ("bf16", 2)):
        h2d = s * (v_ru * wf + N * cols)
        d2h = s * (v_ru * wb + N * (cols - F0))
        per_gpu = max(h2d, d2h) / m
        host[dt] = {"h2d_bytes": h2d, "d2h_bytes": d2h, "per_gpu_bytes": per_gpu, "seconds": per_gpu / T_HOST}
    out["host_link"] = host

    # NVLink per GPU and network per node (rows stay fp32 on the devices).
    row_epoch = (wf + wb) * wire_bytes  # bytes per row over one epoch's passes
    out["nvlink"] = {"per_gpu_bytes": intra_flat * row_epoch / m,
                     "seconds": intra_flat * row_epoch / m / T_NVLINK}
    net = {}
    for part, x in (("flat", x_flat), ("hierarchical", x_hier), ("node_dedup", x_node)):
        per_node = x * row_epoch / nodes
        net[part] = {"rows_per_pass": x, "per_node_bytes": per_node,
                     "seconds": {k: per_node / v for k, v in T_NET.items()}}
    out["network"] = net

    # Host memory per node.
    imb = imbalance if nodes > 1 else 1.0
    buffer_rows = (v_p2p + remote) / K
    dev_plans = (16 * (E + N) + 12 * N + 16 * v_ru + 4 * remote) / nodes * imb + 8 * (buffer_rows + 1) * n * gpn
    per_proc_fixed = 20 * N + PROCESS_FIXED                  # partition, vertex ids, degrees; process
    renumbered = 21 * N + 4 * E                               # topology in new ids, labels, split
    plan_mem = 12 * (E + N) + 4 * v_ori + 8 * (N + K) + 9 * v_p2p + 12 * remote + 8 * v_ru
    graph_file = {dt: 8 * (N + 1) + 4 * E + N * F0 * s + 5 * N for dt, s in (("fp32", 4), ("bf16", 2))}
    mem = {"device_plans": dev_plans, "topology_per_process": renumbered, "plan_per_process": plan_mem,
           "graph_file": graph_file,
           "plan_file": [r * graph_file["fp32"] for r in PLAN_FILE_RATIO],
           "store": {}, "peak": {}}
    for dt, s in (("fp32", 4), ("bf16", 2)):
        store = N * cols * s / nodes * imb
        mem["store"][dt] = store
        for ppn in procs_per_node:
            train = store + dev_plans + ppn * per_proc_fixed
            pack = dev_plans + ppn * (per_proc_fixed + renumbered + plan_mem)
            mem["peak"][f"{dt}_ppn{ppn}"] = {"training": train, "packing": pack, "peak": max(train, pack)}
    out["memory"] = mem

    # Which link bounds the epoch (fp32 store, both network speeds, flat partition).
    bound = {}
    for k in T_NET:
        times = {"host link": host["fp32"]["seconds"], "NVLink": out["nvlink"]["seconds"],
                 "network": net["flat"]["seconds"][k]}
        worst = max(times, key=times.get)
        bound[k] = {"link": worst, "seconds": times[worst]}
    out["bound"] = bound
    return out


# --- Output -------------------------------------------------------------------

def gib(b):
    return f"{b / GIB:.0f}" if b >= 100 * GIB else f"{b / GIB:.1f}"


def sec(s):
    return f"{s:.2f}" if s < 10 else f"{s:.1f}"


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def markdown(results, args):
    out = []
    note = ("MODEL ESTIMATES (scripts/scaling_model.py, docs/SCALING.md), not measurements. "
            f"Nodes of {args.gpus_per_node} GPUs, K = m x n = {args.subgraphs} subgraphs, GCN order {args.order}"
            + (", host rows at their floor (V_ru = N)" if args.vru_floor else "") + ".")
    out.append(note)
    names = sorted({r["graph"] for r in results}, key=list(GRAPHS).index)
    for name in names:
        rs = [r for r in results if r["graph"] == name]
        r0 = rs[0]
        w = r0["widths"]
        out.append(f"\n### {name}: N {GRAPHS[name]['vertices'] / 1e6:.1f} M, E {GRAPHS[name]['edges'] / 1e9:.1f} B, "
                   f"GCN {r0['layers']} (store {w['store_columns']} columns; neighbor passes: forward widths "
                   f"{'+'.join(map(str, w['forward']))}, backward {'+'.join(map(str, w['backward'])) or '-'})")
        out.append("\nRows per layer pass, in units of N (V_ori, V_ru: Table 8 at m = 4; remote: pulled from "
                   "other GPUs, estimate [bracket]; cross-node: flat / hierarchical / hierarchical + one copy per node):\n")
        rows = []
        for r in rs:
            v = r["rows_per_vertex"]
            rows.append([r["nodes"], f"{r['m']} x {r['n']}", f"{r['alpha_m']:.2f}", f"{v['V_ori']:.2f}",
                         f"{v['V_ru']:.2f}", f"{v['remote']:.2f} [{v['remote_low']:.2f}-{v['remote_high']:.2f}]",
                         f"{v['cross_flat']:.2f} / {v['cross_hier']:.2f} / {v['cross_node_dedup']:.2f}"])
        out.append(table(["nodes", "m x n", "alpha_m", "V_ori", "V_ru", "remote", "cross-node"], rows))

        out.append("\nHost memory per node, GiB (store = own partitions' vertex data; peak = max(training, "
                   "packing) with 1 or 4 processes per node):\n")
        rows = []
        for r in rs:
            mm = r["memory"]
            rows.append([r["nodes"], gib(mm["store"]["fp32"]), gib(mm["store"]["bf16"]), gib(mm["device_plans"]),
                         gib(mm["peak"]["fp32_ppn1"]["peak"]), gib(mm["peak"]["fp32_ppn4"]["peak"]),
                         gib(mm["peak"]["bf16_ppn1"]["peak"]), gib(mm["peak"]["bf16_ppn4"]["peak"])])
        out.append(table(["nodes", "store fp32", "store bf16", "device plans", "peak fp32, 1 proc", "peak fp32, 4 procs",
                          "peak bf16, 1 proc", "peak bf16, 4 procs"], rows))
        mm = r0["memory"]
        out.append(f"\nPer process while loading: topology {gib(mm['topology_per_process'])} GiB, plan "
                   f"{gib(mm['plan_per_process'])} GiB (whole plan). Shared files: graph "
                   f"{mm['graph_file']['fp32'] / GB:.1f} GB (fp32 features; {mm['graph_file']['bf16'] / GB:.1f} GB bf16), "
                   f"plan {mm['plan_file'][0] / GB:.1f}-{mm['plan_file'][1] / GB:.1f} GB.")

        out.append("\nEpoch lower bound per link, seconds (flat partition; fp32 rows on NVLink and network):\n")
        rows = []
        for r in rs:
            h, nv, net = r["host_link"], r["nvlink"], r["network"]["flat"]
            b25, b50 = r["bound"]["200G"], r["bound"]["400G"]
            netcol = ("-" if r["nodes"] == 1 else
                      f"{net['per_node_bytes'] / GB:.0f} GB: {sec(net['seconds']['200G'])} / {sec(net['seconds']['400G'])}")
            rows.append([r["nodes"], f"{h['fp32']['per_gpu_bytes'] / GB:.0f} GB: {sec(h['fp32']['seconds'])}",
                         sec(h["bf16"]["seconds"]), f"{nv['per_gpu_bytes'] / GB:.1f} GB: {sec(nv['seconds'])}",
                         netcol, f"{b25['link']} {sec(b25['seconds'])} / {b50['link']} {sec(b50['seconds'])}"])
        out.append(table(["nodes", "host link per GPU (fp32)", "same, bf16", "NVLink per GPU",
                          "network per node, 200G / 400G", "bound, 200G / 400G"], rows))

        out.append("\nNetwork per node per epoch and its time at 200G / 400G, by partitioning:\n")
        rows = []
        for r in rs:
            if r["nodes"] == 1:
                continue
            cells = [r["nodes"]]
            for part in ("flat", "hierarchical", "node_dedup"):
                x = r["network"][part]
                cells.append(f"{x['per_node_bytes'] / GB:.0f} GB: {sec(x['seconds']['200G'])} / {sec(x['seconds']['400G'])}")
            f, hh = r["network"]["flat"]["per_node_bytes"], r["network"]["hierarchical"]["per_node_bytes"]
            nd = r["network"]["node_dedup"]["per_node_bytes"]
            cells.append(f"{100 * (1 - hh / f):.0f}% / {100 * (1 - nd / f):.0f}%")
            rows.append(cells)
        out.append(table(["nodes", "flat (GPU-level parts)", "hierarchical, per-GPU pulls",
                          "hierarchical, one copy per node", "saved vs flat"], rows))
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graph", choices=list(GRAPHS), action="append", help="graph(s) (default: both)")
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8], help="node counts (default 1 2 4 8)")
    p.add_argument("--gpus-per-node", type=int, default=4)
    p.add_argument("--subgraphs", type=int, default=128,
                   help="K = m x n subgraphs, fixed by GPU memory (default 128: the paper's 4 x 32)")
    p.add_argument("--order", choices=["auto", "aggregate", "transform"], default="auto",
                   help="GCN layer order (ht-train --gcn-order; default auto)")
    p.add_argument("--hidden", type=int, help="override the hidden width of both models")
    p.add_argument("--vru-floor", action="store_true", help="host rows at their floor, V_ru = N")
    p.add_argument("--imbalance", type=float, default=1.05, help="vertices of the fullest node / mean (default 1.05)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = p.parse_args(argv)
    if args.hidden:
        for g in GRAPHS.values():
            g["layers"] = [g["layers"][0]] + [args.hidden] * (len(g["layers"]) - 2) + [g["layers"][-1]]
    results = []
    for name in args.graph or list(GRAPHS):
        for h in args.nodes:
            if h < 1:
                p.error("--nodes: counts must be >= 1")
            results.append(estimate(name, h, args.gpus_per_node, args.subgraphs, args.order, args.vru_floor,
                                    args.imbalance))
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
    else:
        print(markdown(results, args))


if __name__ == "__main__":
    main()
