#!/usr/bin/env python3
"""Checks that #include lines point one way through the layers (docs/ARCHITECTURE.md, "Layers").

Each source folder is a layer with a rank; a file may include headers of its own layer and of
layers of lower rank only. Layers of equal rank may not include each other. A layer folder inside
another (apps/cli in apps) is its own layer: its files belong to it alone. Prints every wrong-way
include as FILE:LINE and exits 1 when there is one, 0 otherwise.

Usage: scripts/check_layers.py [REPO_ROOT]
"""
import os
import re
import sys

# folder -> (layer name, rank). The include prefix of a layer is its name ("engine/...").
LAYERS = {
    "lib/core": ("core", 0),
    "lib/graph": ("graph", 1),
    "lib/plan": ("plan", 2),
    "lib/models": ("models", 2),
    "datasets": ("datasets", 2),
    "partition": ("partition", 3),
    "lib/engine": ("engine", 3),
    "lib/cuda": ("cuda", 4),
    "lib/dist": ("dist", 4),  # the job's processes (launcher, MPI): beside cuda, neither includes the other
    "lib/train": ("train", 5),
    "apps/cli": ("cli", 6),  # the tools' option helpers (CLI11): no library may include them
    "apps": ("apps", 7),
}
RANK = {name: rank for name, rank in LAYERS.values()}
INCLUDE = re.compile(r'\s*#\s*include\s+"([A-Za-z_]+)/')
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")


def check(root):
    wrong = []
    for folder, (name, rank) in sorted(LAYERS.items()):
        path = os.path.join(root, folder)
        if not os.path.isdir(path):
            wrong.append(f"{folder}: layer folder missing")
            continue
        for dirpath, dirs, files in os.walk(path):
            # a nested layer folder is checked as its own layer
            dirs[:] = [d for d in dirs
                       if os.path.relpath(os.path.join(dirpath, d), root).replace(os.sep, "/") not in LAYERS]
            for f in sorted(files):
                if not f.endswith(SOURCES):
                    continue
                file = os.path.join(dirpath, f)
                with open(file, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) not in RANK or m.group(1) == name:
                            continue
                        target = m.group(1)
                        if RANK[target] >= rank:
                            rel = os.path.relpath(file, root)
                            wrong.append(f"{rel}:{n}: layer {name} (rank {rank}) includes {target}/ "
                                         f"(rank {RANK[target]}): includes must point to lower layers")
    return wrong


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    wrong = check(root)
    for w in wrong:
        print(w)
    if wrong:
        print(f"check_layers: {len(wrong)} wrong-way include(s)")
        return 1
    print("check_layers: every include points to a lower layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
