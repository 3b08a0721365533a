#pragma once
// Heterophilous-benchmark .npz archives (Platonov et al. 2023), read in C++
// (datasets/npz.hpp: libzip + NpyArray): node_features, node_labels, edges and
// the split with index `split_index` (0..9) of the train/val/test masks.
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

RawGraph read_npz(const std::string& path, int split_index);

// The "*_directed*" files keep edge direction; the others list each
// undirected edge once and are symmetrized by default.
bool npz_is_directed(const std::string& path);

}  // namespace ht::data
