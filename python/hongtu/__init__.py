"""hongtu's Python module: read what the tools write, with the standard library and numpy only.

    import sys; sys.path.insert(0, "<repo>/python")   # or PYTHONPATH=<repo>/python
    import hongtu
    g = hongtu.read_htg("cora.htg")                    # graph: offsets, sources, features, labels, split
    p = hongtu.read_partition("cora.m2n2.htp")         # partition: new_to_old, part_offsets, part_of()
    m = hongtu.read_metrics("cora-gcn.jsonl")          # {"epochs": [...], "summary": {...}}
    w = hongtu.load_model_npz("model.npz")             # {name: array}
    hongtu.score_predictions("pred.csv", g, "test")    # {"accuracy", "correct", "count"}

`python3 -m hongtu --help` lists the command-line uses (summary of a file, scoring). docs/USAGE.md
has the details."""

from .htg import (SPLIT_NONE, SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL, HtgError, HtgGraph, read_container,  # noqa: F401
                  read_htg)
from .results import (Partition, load_model_npz, ogb_split_ids, read_metrics, read_partition,  # noqa: F401
                      read_predictions, score_predictions)

__all__ = ["HtgError", "HtgGraph", "Partition", "SPLIT_NONE", "SPLIT_TRAIN", "SPLIT_VAL", "SPLIT_TEST",
           "read_container", "read_htg", "read_partition", "read_metrics", "load_model_npz", "read_predictions",
           "ogb_split_ids", "score_predictions"]
