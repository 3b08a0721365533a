#!/usr/bin/env bash
# ht-convert's inputs as a new user has them on disk, made here with numpy and
# scipy: gzip-compressed text (detected by content, not name), OGB folders
# (csv.gz and papers100M's npz layout, NaN labels, several split folders),
# PyG arrays in an .npz (masks or id arrays), SciPy save_npz adjacencies
# (csr, coo), cora_ml's CSR archive, .npy edge arrays (E, 2) and (2, E); the
# target: Planetoid Cora written as OGB csv.gz files converts to the same
# graph file bytes as --format planetoid (skipped, saying so, without Cora);
# and one-line errors naming the file and the problem.
# Usage: convert_inputs.sh BIN_DIR SOURCE_DIR   (exit 77 = skipped)
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../cli_lib/common.sh"
SRC="$(cd "$2" && pwd)"
cli_test_start "$1" ht-convert
PY="${HT_PYTHON:-/usr/bin/python3}"
"$PY" -c 'import numpy, scipy' 2>/dev/null || { echo "skip: $PY lacks numpy/scipy (set HT_PYTHON)"; exit 77; }
export PYTHONPATH="$SRC/python" PYTHONDONTWRITEBYTECODE=1
CONVERT="$BIN/ht-convert"
DATA="${HT_DATASETS:-$SRC/../shared/datasets}"

# same NAME A B: the two files are byte for byte equal.
same() { cmp -s "$2" "$3" && echo "ok: $1" || fail "$1: $2 and $3 differ"; }
# run_ok NAME ARGS...: ht-convert succeeds.
run_ok() {
  local name=$1; shift
  "$CONVERT" -q "$@" 2>stderr.txt && echo "ok: $name" || { fail "$name: $(cat stderr.txt)"; }
}
# expect_error NAME PATTERN ARGS...: fails with one stderr line matching PATTERN.
expect_error() {
  local name=$1 pattern=$2; shift 2
  "$CONVERT" -q "$@" >/dev/null 2>stderr.txt
  local rc=$? before=$failures
  check_one_error_line "$name" "$pattern" $rc
  [[ $failures -eq $before ]] && echo "ok: $name -> $(cat stderr.txt)"
}
# pycheck NAME SCRIPT ARGS...: a Python check (the hongtu module) exits 0.
pycheck() {
  local name=$1 script=$2; shift 2
  "$PY" -c "$script" "$@" >py.txt 2>&1 && echo "ok: $name" || { fail "$name:"; cat py.txt; }
}

"$PY" - <<'EOF' || { echo "FAIL: making the inputs"; exit 1; }
import gzip, os
import numpy as np, scipy.sparse as sp
rng = np.random.default_rng(5)
n, f = 12, 4
src = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 5])
dst = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 6, 11])
x = rng.standard_normal((n, f)).astype(np.float32)
y = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
train, val, test = np.arange(0, 4), np.arange(4, 8), np.arange(8, 12)
np.save("x.npy", x)
np.save("y.npy", y)
# Text edge list, plain and gzip (the compressed copy under a name without .gz).
with open("e.txt", "w") as out:
    out.writelines("%d %d\n" % (s, d) for s, d in zip(src, dst))
with open("e.txt", "rb") as a, open("e_gz.txt", "wb") as b:
    b.write(gzip.compress(a.read()))
# OGB folder, csv.gz layout, two split folders (b_extra sorts after a_main).
def gz(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write("".join(rows))
def ogb_csv(root, edges, labels):
    gz(root + "/raw/edge.csv.gz", ["%d,%d\n" % e for e in edges])
    gz(root + "/raw/num-node-list.csv.gz", ["%d\n" % n])
    gz(root + "/raw/node-feat.csv.gz", [",".join("%.9g" % v for v in row) + "\n" for row in x])
    gz(root + "/raw/node-label.csv.gz", labels)
    for name, parts in (("a_main", (train, val, test)), ("b_extra", (test, train, val))):
        for part, ids in zip(("train", "valid", "test"), parts):
            gz("%s/split/%s/%s.csv.gz" % (root, name, part), ["%d\n" % i for i in ids])
ogb_csv("ogb", zip(src, dst), ["%d\n" % v for v in y])
ogb_csv("ogb_bad_edge", [(0, 1), (1, 12)], ["%d\n" % v for v in y])
ogb_csv("ogb_bad_label", zip(src, dst), ["%d\n" % v for v in y[:-1]] + ["1.5\n"])
# papers100M's layout: data.npz + node-label.npz with NaN labels, float16 features.
os.makedirs("ogb_npz/raw", exist_ok=True)
np.savez_compressed("ogb_npz/raw/data.npz", edge_index=np.stack([src, dst]), node_feat=x.astype(np.float16),
                    num_nodes_list=np.array([n]), num_edges_list=np.array([len(src)]))
lab = y.astype(np.float64).reshape(-1, 1)
lab[[3, 7]] = np.nan
np.savez_compressed("ogb_npz/raw/node-label.npz", node_label=lab)
for part, ids in zip(("train", "valid", "test"), (train, val, test)):
    gz("ogb_npz/split/time/%s.csv.gz" % part, ["%d\n" % i for i in ids])
# PyG arrays: masks, and id arrays.
masks = {k: np.isin(np.arange(n), ids) for k, ids in (("train_mask", train), ("val_mask", val), ("test_mask", test))}
np.savez("pyg_masks.npz", edge_index=np.stack([src, dst]), x=x, y=y, **masks)
np.savez_compressed("pyg_idx.npz", edge_index=np.stack([src, dst]), x=x, y=y.reshape(-1, 1), train_idx=train,
                    val_idx=val, test_idx=test)
np.savez("pyg_multilabel.npz", edge_index=np.stack([src, dst]), x=x, y=np.zeros((n, 3)))
np.savez("pyg_bad_split.npz", edge_index=np.stack([src, dst]), x=x, y=y, train_idx=np.array([0, 12]))
# SciPy save_npz: the adjacency alone, csr and coo.
adj = sp.csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n))
sp.save_npz("adj_csr.npz", adj)
sp.save_npz("adj_coo.npz", adj.tocoo())
sp.save_npz("adj_rect.npz", sp.csr_matrix((n, n + 1), dtype=np.float32))
# cora_ml style: CSR parts under prefixes, attributes as CSR.
attr = sp.csr_matrix(x)
np.savez("attributed.npz", **{"adj_matrix.data": adj.data, "adj_matrix.indices": adj.indices,
                              "adj_matrix.indptr": adj.indptr, "adj_matrix.shape": np.array(adj.shape),
                              "attr_matrix.data": attr.data, "attr_matrix.indices": attr.indices,
                              "attr_matrix.indptr": attr.indptr, "attr_matrix.shape": np.array(attr.shape),
                              "labels": y})
np.savez("unknown.npz", foo=np.zeros(3))
# .npy edge arrays.
np.save("e_pairs.npy", np.stack([src, dst], axis=1))
np.save("e_index.npy", np.stack([src, dst]).astype(np.int32))
np.save("e_float.npy", np.stack([src, dst], axis=1).astype(np.float32))
with open("corrupt.gz", "wb") as out:
    out.write(gzip.compress(b"0 1\n1 2\n")[:-12] + b"garbage-garbage")
EOF

# --- gzip text ---------------------------------------------------------------------------------
run_ok "plain edge list" --format edgelist -i e.txt --features x.npy -o plain.htg
run_ok "gzip edge list named .txt" --format edgelist -i e_gz.txt --features x.npy -o gz.htg
same "gzip and plain text give the same graph" plain.htg gz.htg
expect_error "corrupt gzip" "corrupt.gz (byte [0-9]*): .*gzip" --format edgelist -i corrupt.gz -o out.htg

# --- OGB ---------------------------------------------------------------------------------------
run_ok "ogb csv.gz" --format ogb -i ogb -o ogb.htg
run_ok "ogb: the same arrays as edge list + .npy" --format edgelist -i e.txt --keep-ids --features x.npy \
  --labels y.npy -o ref.htg
pycheck "ogb csv.gz: graph, features, labels, split a_main" '
import sys, numpy as np, hongtu
g, r = hongtu.read_htg("ogb.htg"), hongtu.read_htg("ref.htg")
assert g.num_vertices == 12 and g.num_edges == 14, (g.num_vertices, g.num_edges)
assert np.array_equal(g.offsets, r.offsets) and np.array_equal(g.sources, r.sources)
assert np.array_equal(g.features, np.load("x.npy")) and np.array_equal(g.labels, np.load("y.npy"))
assert list(np.bincount(g.split, minlength=4)) == [0, 4, 4, 4] and list(g.split[:4]) == [1] * 4
'
run_ok "ogb --split-name b_extra" --format ogb -i ogb --split-name b_extra -o ogb_b.htg
pycheck "ogb --split-name picks the folder" '
import numpy as np, hongtu
assert list(hongtu.read_htg("ogb_b.htg").split) == [2] * 4 + [3] * 4 + [1] * 4
'
run_ok "ogb npz layout (papers100M)" --format ogb -i ogb_npz -o ogb_npz.htg
pycheck "ogb npz: NaN labels unlabeled, float16 features widened" '
import numpy as np, hongtu
g = hongtu.read_htg("ogb_npz.htg")
y = np.load("y.npy"); y[[3, 7]] = -1
assert np.array_equal(g.labels, y), g.labels[:]
assert np.array_equal(g.features, np.load("x.npy").astype(np.float16).astype(np.float32))
assert g.num_edges == 14
'
expect_error "ogb: unknown split name" "--split-name: 'nope' is not a folder of .*(there: a_main, b_extra)" \
  --format ogb -i ogb --split-name nope -o out.htg
expect_error "ogb: edge id beyond N" "edge.csv.gz:2: edge 1 -> 12 has an id outside 0..11" \
  --format ogb -i ogb_bad_edge -o out.htg
expect_error "ogb: non-integral label" "node-label.csv.gz: line 12: label 1.5 of vertex 11 is not a class id" \
  --format ogb -i ogb_bad_label -o out.htg
expect_error "ogb: not an OGB folder" "no raw/ folder" --format ogb -i . -o out.htg

# --- npz: PyG, SciPy, cora_ml style ------------------------------------------------------------
run_ok "pyg masks" --format npz -i pyg_masks.npz --no-symmetrize -o pyg_m.htg
run_ok "pyg id arrays, y (N, 1)" --format npz -i pyg_idx.npz --no-symmetrize -o pyg_i.htg
same "pyg: masks and id arrays give the same graph" pyg_m.htg pyg_i.htg
same "pyg: the same graph as OGB's files" pyg_m.htg ogb.htg
expect_error "pyg: multi-label y" "pyg_multilabel.npz:y.npy: labels must have shape (N,) or (N, 1), got (12, 3)" \
  --format npz -i pyg_multilabel.npz -o out.htg
expect_error "pyg: split id out of range" "pyg_bad_split.npz:train_idx.npy: index 1 (byte [0-9]*): vertex id 12 is outside 0..11" \
  --format npz -i pyg_bad_split.npz -o out.htg
run_ok "scipy save_npz csr + --features" --format npz -i adj_csr.npz --features x.npy --no-symmetrize -o csr.htg
run_ok "scipy save_npz coo + --features" --format npz -i adj_coo.npz --features x.npy --no-symmetrize -o coo.htg
same "scipy csr and coo give the same graph" csr.htg coo.htg
same "scipy csr: the edges and features of the edge list" csr.htg plain.htg
expect_error "scipy: non-square adjacency" "adjacency matrix is 12 x 13; it must be square" \
  --format npz -i adj_rect.npz -o out.htg
run_ok "cora_ml-style CSR archive" --format npz -i attributed.npz --no-symmetrize --train-fraction 0.5 \
  --val-fraction 0.25 -o attr.htg
pycheck "cora_ml-style: CSR attributes densified, labels, a stratified split" '
import numpy as np, hongtu
g = hongtu.read_htg("attr.htg")
assert np.array_equal(g.features, np.load("x.npy")) and np.array_equal(g.labels, np.load("y.npy"))
assert list(np.bincount(g.split, minlength=4)) == [0, 6, 3, 3], g.split[:]
'
expect_error "npz: unknown layout" "unknown.npz: no known .npz layout in keys foo" --format npz -i unknown.npz -o out.htg
if [[ -f "$DATA/cora_ml/raw/cora_ml.npz" ]]; then
  run_ok "shared cora_ml.npz converts" --format npz -i "$DATA/cora_ml/raw/cora_ml.npz" -o cora_ml.htg
  pycheck "cora_ml: 2995 vertices, 16316 edges, 2879 features, 7 classes" '
import hongtu
g = hongtu.read_htg("cora_ml.htg")
assert (g.num_vertices, g.num_edges, g.feature_dim, g.num_classes) == (2995, 16316, 2879, 7), g.summary()
'
else
  echo "skipped: cora_ml.npz not found under $DATA"
fi

# --- .npy edge arrays --------------------------------------------------------------------------
run_ok "npy-edges (E, 2)" --format npy-edges -i e_pairs.npy --features x.npy -o np_pairs.htg
run_ok "npy-edges (2, E) int32" --format npy-edges -i e_index.npy --features x.npy -o np_index.htg
same "npy-edges: both shapes give the same graph" np_pairs.htg np_index.htg
same "npy-edges: the graph of the text edge list" np_pairs.htg plain.htg
expect_error "npy-edges: float array" "e_float.npy: edges must be an integer array of shape (E, 2) or (2, E), got float32 (14, 2)" \
  --format npy-edges -i e_float.npy -o out.htg

# --- target: Planetoid Cora as OGB csv.gz files -------------------------------------------------
if [[ -f "$DATA/cora/raw/ind.cora.graph" ]]; then
  run_ok "planetoid cora" --format planetoid -i "$DATA/cora/raw" -o cora_planetoid.htg
  "$PY" - <<'EOF' || fail "writing Cora as OGB files"
import gzip, os
import numpy as np, hongtu
g = hongtu.read_htg("cora_planetoid.htg")
root = "cora_ogb"
def gz(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write(text)
def lines(a, fmt):
    return "".join(fmt % tuple(r) + "\n" for r in a)
src, dst = np.asarray(g.sources, dtype=np.int64), g.destinations()
gz(root + "/raw/edge.csv.gz", lines(np.stack([src, dst], axis=1), "%d,%d"))
gz(root + "/raw/num-node-list.csv.gz", "%d\n" % g.num_vertices)
gz(root + "/raw/node-feat.csv.gz", "".join(",".join("%.9g" % v for v in row) + "\n" for row in g.features_f32()))
gz(root + "/raw/node-label.csv.gz", "".join("%d\n" % v for v in g.labels))
split = np.asarray(g.split)
for part, code in (("train", 1), ("valid", 2), ("test", 3)):
    gz(root + "/split/planetoid/%s.csv.gz" % part, "".join("%d\n" % v for v in np.flatnonzero(split == code)))
EOF
  run_ok "cora from OGB csv.gz" --format ogb -i cora_ogb -o cora_ogb.htg
  same "Cora: OGB csv.gz files give the graph file bytes of --format planetoid" cora_planetoid.htg cora_ogb.htg
else
  echo "skipped: Planetoid Cora not found under $DATA (the OGB-vs-Planetoid bytes check did not run)"
fi

finish "convert inputs: all checks passed"
