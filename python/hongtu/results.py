"""Readers of what the hongtu tools write besides graph files, with the standard library and numpy
only: partition files (.htp, docs/PARTITION.md), metrics JSON lines (ht-train --metrics-out), models
saved as .npz (every named array, whatever the layout), predictions CSV (ht-train --predict-out),
OGB split id lists; and the accuracy of a predictions file against a graph's labels and split."""

import csv
import gzip
import json
import os

import numpy as np

from .htg import SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL, HtgError, _map, read_container, read_htg

PART_MAGIC = b"HTPART\0\0"
PART_VERSION = 1
PART_METHODS = {0: "metis", 1: "random", 2: "range", 3: "multilevel"}
SPLIT_CODES = {"train": SPLIT_TRAIN, "val": SPLIT_VAL, "valid": SPLIT_VAL, "test": SPLIT_TEST}


class Partition:
    """A partition file: m partitions of n chunks over renumbered ids (arrays are read-only memmaps)."""

    def __init__(self, path, meta, sections):
        self.path = path
        self.m, self.n, self.num_vertices, self.num_edges = (int(v) for v in meta[0:4])
        self.method = PART_METHODS.get(int(meta[4]), "unknown(%d)" % meta[4])
        self.seed = int(meta[5])
        self.graph_bytes, self.graph_checksum = int(meta[11]), int(meta[12])
        self.new_to_old = _map(path, sections["new_to_old"])
        self.part_offsets = _map(path, sections["part_offsets"])
        self.chunk_offsets = _map(path, sections["chunk_offsets"])

    def part_of(self):
        """Partition of every vertex in the graph file's ids (int32 [N])."""
        part = np.empty(self.num_vertices, dtype=np.int32)
        sizes = np.diff(np.asarray(self.part_offsets))
        part[np.asarray(self.new_to_old)] = np.repeat(np.arange(self.m, dtype=np.int32), sizes)
        return part

    def matches(self, graph):
        """True when `graph` (an HtgGraph) is the graph file this partition was made from."""
        return (graph.file_bytes, graph.header_checksum) == (self.graph_bytes, self.graph_checksum)


def read_partition(path):
    """Opens a .htp file (container checks as for graphs, then the section shapes and offsets)."""
    _, meta, sections, _ = read_container(path, PART_MAGIC, PART_VERSION)
    m, n, nv = int(meta[0]), int(meta[1]), int(meta[2])
    want = {"new_to_old": (nv,), "part_offsets": (m + 1,), "chunk_offsets": (m * n + 1,)}
    for name, shape in want.items():
        sec = sections.get(name)
        if sec is None or sec.shape != shape:
            raise HtgError("%s (section '%s'): missing or shape %s, expected %s"
                           % (path, name, None if sec is None else list(sec.shape), list(shape)))
    p = Partition(path, meta, sections)
    for name in ("part_offsets", "chunk_offsets"):
        off = np.asarray(getattr(p, name))
        if off[0] != 0 or off[-1] != nv or np.any(np.diff(off) < 0):
            raise HtgError("%s (section '%s'): offsets must run from 0 to N = %d without decreasing"
                           % (path, name, nv))
    return p


def read_metrics(path):
    """ht-train's metrics JSON lines: {"epochs": [epoch objects], "summary": the summary object or None,
    "other": objects of any other type}. A bad line raises ValueError naming the file and line."""
    out = {"epochs": [], "summary": None, "other": []}
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError("%s:%d: not a JSON object (%s)" % (path, no, err.msg)) from None
            kind = obj.get("type") if isinstance(obj, dict) else None
            if kind == "epoch":
                out["epochs"].append(obj)
            elif kind == "summary":
                out["summary"] = obj
            else:
                out["other"].append(obj)
    return out


def load_model_npz(path):
    """Every array of a model saved as .npz, by name ({name: numpy array}); no pickled objects."""
    with np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


def read_predictions(path):
    """A predictions CSV `id,prediction` (ht-train --predict-out): (ids int64 [K], predictions int64 [K])."""
    ids, preds = [], []
    with open(path, newline="", encoding="utf-8") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if header is None or [h.strip() for h in header[:2]] != ["id", "prediction"]:
            raise ValueError("%s:1: expected the header 'id,prediction', got %r" % (path, header))
        for no, row in enumerate(rows, 2):
            try:
                ids.append(int(row[0]))
                preds.append(int(row[1]))
            except (IndexError, ValueError):
                raise ValueError("%s:%d: expected 'id,prediction' integers, got %r" % (path, no, row)) from None
    return np.asarray(ids, dtype=np.int64), np.asarray(preds, dtype=np.int64)


def ogb_split_ids(folder, part, name=None):
    """Vertex ids of one part ("train", "valid" or "test") of an OGB dataset folder's split/<name>/
    (name None: the first split folder in sorted order, as ht-convert --format ogb picks)."""
    split_dir = os.path.join(folder, "split")
    if name is None:
        names = sorted(d for d in os.listdir(split_dir) if os.path.isdir(os.path.join(split_dir, d)))
        if not names:
            raise ValueError("%s: no split folder" % split_dir)
        name = names[0]
    base = os.path.join(split_dir, name, part + ".csv")
    path = base + ".gz" if os.path.exists(base + ".gz") else base
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return np.array([int(t) for t in data.split()], dtype=np.int64)


def _positions(graph, ids):
    """Rows of `ids` (the predictions' ids: the input's ids, i.e. orig_ids where the graph has them)."""
    if graph.orig_ids is None:
        pos = ids
    else:
        orig = np.asarray(graph.orig_ids)
        order = np.argsort(orig, kind="stable")
        at = np.searchsorted(orig, ids, sorter=order)
        at = np.minimum(at, len(orig) - 1)
        pos = order[at]
        if np.any(orig[pos] != ids):
            raise ValueError("%s: a prediction's id is not an original id of the graph" % graph.path)
    if pos.size and (pos.min() < 0 or pos.max() >= graph.num_vertices):
        raise ValueError("%s: a prediction's id is outside 0..%d" % (graph.path, graph.num_vertices - 1))
    return pos


def score_predictions(predictions, graph, part="test", ids=None):
    """Accuracy of a predictions file (path, or (ids, predictions) arrays) on the labeled vertices of
    one part of the split ("train", "val"/"valid", "test", or "all"); `graph` is a .htg path or an
    HtgGraph. With `ids` (e.g. ogb_split_ids(...)), those vertices are scored instead of the part.
    Returns {"accuracy", "correct", "count"}."""
    g = read_htg(graph) if isinstance(graph, str) else graph
    if g.labels is None:
        raise ValueError("%s: the graph has no labels to score against" % g.path)
    pid, pred = read_predictions(predictions) if isinstance(predictions, str) else predictions
    full = np.full(g.num_vertices, -1, dtype=np.int64)
    full[_positions(g, np.asarray(pid, dtype=np.int64))] = pred
    labels = np.asarray(g.labels)
    if ids is not None:
        chosen = np.zeros(g.num_vertices, dtype=bool)
        chosen[_positions(g, np.asarray(ids, dtype=np.int64))] = True
    elif part == "all":
        chosen = np.ones(g.num_vertices, dtype=bool)
    else:
        if part not in SPLIT_CODES:
            raise ValueError("part must be train, val, test or all, got %r" % part)
        if g.split is None:
            raise ValueError("%s: the graph has no split" % g.path)
        chosen = np.asarray(g.split) == SPLIT_CODES[part]
    chosen &= labels >= 0
    count = int(np.count_nonzero(chosen))
    correct = int(np.count_nonzero(full[chosen] == labels[chosen]))
    return {"accuracy": correct / count if count else float("nan"), "correct": correct, "count": count}
