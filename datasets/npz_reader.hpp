#pragma once
// `--format npz`: graphs in NumPy .npz archives, read in C++ (datasets/npz.hpp:
// libzip + NpyArray). The layout is told by the keys:
//  - PyG's convention: edge_index (2, E) (or (E, 2)), optional x (N, F),
//    y (N,) or (N, 1) (NaN or -1 = unlabeled), and the split as
//    train_mask/val_mask/test_mask ((N,) bool; (N, S) or (S, N) pick split
//    `split_index`) or as id arrays train_idx/val_idx (or valid_idx)/test_idx;
//  - an attributed graph as SciPy CSR parts (the cora_ml / citeseer files of
//    Shchur et al.): adj_matrix.{data,indices,indptr,shape} (or adj_data,
//    adj_indices, ...), attr_matrix.* (or attr_*) as features, labels;
//  - SciPy's save_npz of the adjacency alone (format csr/csc/coo, shape, ...);
//    vertex data then comes from --features/--labels/--split;
//  - the heterophilous benchmark (Platonov et al. 2023): node_features,
//    node_labels, edges (E, 2) and split `split_index` (0..9) of the
//    [10, N] train/val/test masks.
// Entry (i, j) of an adjacency matrix is the edge i -> j; its values become
// edge weights unless all are 1. A labeled graph without a split gets a
// stratified random split (train/val fractions, seed), as MUSAE does.
#include <cstdint>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct NpzOptions {
  int split_index = 0;
  double train_fraction = 0.1, val_fraction = 0.1;  // for a labeled graph without a split
  uint64_t seed = 1;
};

RawGraph read_npz(const std::string& path, const NpzOptions& o);

// The "*_directed*" files keep edge direction; the others list each
// undirected edge once and are symmetrized by default.
bool npz_is_directed(const std::string& path);

}  // namespace ht::data
