#!/usr/bin/env python3
"""Checks that #include lines point one way through the layers (docs/ARCHITECTURE.md, "Layers").

Each source folder is a layer with a rank; a file may include headers of its own layer and of
layers of lower rank only. Layers of equal rank may not include each other. A layer folder inside
another (apps/cli in apps) is its own layer: its files belong to it alone.

The CMake dependencies must say what the includes say: a library layer that includes another
layer's header links that layer's library (directly or through the libraries it links, as the
CMakeLists files' ht_module and target_link_libraries lines state), unless the header is
header-only (no source file of its own name, no include of the project's headers). Without the
link, a use of the header's functions fails only at link time, in some tool.

Prints every wrong-way or unlinked include as FILE:LINE and exits 1 when there is one, 0 otherwise.

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
    # The CUDA executor, the job's processes (launcher, MPI) and the training job: side by side,
    # none includes another. ht-train wires them: it gives the job the executor (engine/executor.hpp),
    # the transport (engine/transport.hpp) and the link probe (a function returning
    # engine/link_bandwidth.hpp's struct).
    "lib/cuda": ("cuda", 4),
    "lib/dist": ("dist", 4),
    "lib/train": ("train", 4),
    "apps/cli": ("cli", 6),  # the tools' option helpers (CLI11): no library may include them
    "apps": ("apps", 7),
}
RANK = {name: rank for name, rank in LAYERS.values()}
FOLDER = {name: folder for folder, (name, rank) in LAYERS.items()}
# The library target of each library layer (apps: one target per tool, not checked for links).
TARGET = {"core": "ht_core", "graph": "ht_graph", "plan": "ht_plan", "models": "ht_models",
          "datasets": "ht_datasets", "partition": "ht_partition", "engine": "ht_engine", "cuda": "ht_cuda",
          "dist": "ht_dist", "train": "ht_train", "cli": "ht_cli"}
CMAKE_FILES = ("CMakeLists.txt", "lib/CMakeLists.txt", "partition/CMakeLists.txt", "datasets/CMakeLists.txt",
               "apps/CMakeLists.txt")
INCLUDE = re.compile(r'\s*#\s*include\s+"([A-Za-z_]+)/([^"]+)"')
PROJECT_INCLUDE = re.compile(r'\s*#\s*include\s+"', re.M)
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
LINK_COMMAND = re.compile(r"\b(ht_module|target_link_libraries)\s*\(([^)]*)\)", re.S)


def link_graph(root):
    """target -> the ht_* libraries it links directly, from the CMakeLists files (any visibility,
    any branch of an if: what some configuration links)."""
    links = {}
    for rel in CMAKE_FILES:
        path = os.path.join(root, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = re.sub(r"#[^\n]*", "", fh.read())
        for command, args in LINK_COMMAND.findall(text):
            words = args.split()
            if not words or not words[0].startswith("ht_"):
                continue
            deps = words[2:] if command == "ht_module" else words[1:]
            links.setdefault(words[0], set()).update(d for d in deps if d.startswith("ht_"))
    return links


def linked(links, target):
    """Every library `target` links, directly or through others."""
    seen, todo = set(), [target]
    while todo:
        for d in links.get(todo.pop(), ()):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def header_only(root, layer, header):
    """Whether a layer's header needs nothing linked: no source file of its name in the layer's
    folder, and no include of another project header."""
    path = os.path.join(root, FOLDER[layer], header)
    stem = os.path.splitext(path)[0]
    if any(os.path.isfile(stem + ext) for ext in (".cpp", ".cu")):
        return False
    if not os.path.isfile(path):
        return False
    with open(path, encoding="utf-8", errors="replace") as fh:
        return PROJECT_INCLUDE.search(fh.read()) is None


def check(root):
    wrong = []
    links = link_graph(root)
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
                        rel = os.path.relpath(file, root)
                        if RANK[target] >= rank:
                            wrong.append(f"{rel}:{n}: layer {name} (rank {rank}) includes {target}/ "
                                         f"(rank {RANK[target]}): includes must point to lower layers")
                            continue
                        # Link check where CMake defines the layer's library (a tree without
                        # CMakeLists files is checked for directions only).
                        lib, dep = TARGET.get(name), TARGET.get(target)
                        if lib in links and dep and dep not in linked(links, lib) and \
                                not header_only(root, target, m.group(2)):
                            wrong.append(f"{rel}:{n}: layer {name} includes {target}/{m.group(2)} but its library "
                                         f"{lib} does not link {dep} (CMakeLists): link it, or move what is "
                                         f"needed down")
    return wrong


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    wrong = check(root)
    for w in wrong:
        print(w)
    if wrong:
        print(f"check_layers: {len(wrong)} wrong-way or unlinked include(s)")
        return 1
    print("check_layers: every include points to a lower layer whose library is linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
