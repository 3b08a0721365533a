"""python3 -m hongtu: summaries of hongtu files and the score of a predictions file.

    python3 -m hongtu graph G.htg                     JSON summary of a graph file
    python3 -m hongtu partition P.htp                 JSON summary of a partition file
    python3 -m hongtu metrics M.jsonl                 the summary record of a metrics file
    python3 -m hongtu score PRED.csv G.htg [PART]     accuracy on PART (train, val, test, all; default test)
"""

import json
import sys

import numpy as np

from . import read_htg, read_metrics, read_partition, score_predictions
from .htg import HtgError


def main(argv):
    if argv[1:2] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(argv) < 3 or argv[1] not in ("graph", "partition", "metrics", "score"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cmd, path = argv[1], argv[2]
    try:
        if cmd == "graph":
            out = read_htg(path).summary()
        elif cmd == "partition":
            p = read_partition(path)
            out = {"file": path, "m": p.m, "n": p.n, "num_vertices": p.num_vertices, "num_edges": p.num_edges,
                   "method": p.method, "part_sizes": np.diff(np.asarray(p.part_offsets)).tolist()}
        elif cmd == "metrics":
            out = read_metrics(path)["summary"]
        else:
            if len(argv) < 4:
                print("usage: python3 -m hongtu score PRED.csv G.htg [PART]", file=sys.stderr)
                return 2
            out = score_predictions(path, argv[3], argv[4] if len(argv) > 4 else "test")
    except (HtgError, OSError, ValueError, KeyError) as err:
        print("hongtu: error: %s" % err, file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
