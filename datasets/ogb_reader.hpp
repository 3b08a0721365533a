#pragma once
// `--format ogb`: an OGB node-property dataset folder as the ogb package
// downloads it (ogbn-arxiv, -products, -mag's homogeneous part, ...):
//   raw/edge.csv.gz         "src,dst" per line (edges as given: OGB lists
//                           undirected graphs once per edge, --symmetrize adds
//                           the other direction as PyG's to_undirected does)
//   raw/num-node-list.csv.gz N (optional; else from the features, labels, ids)
//   raw/node-feat.csv.gz    F comma-separated values per vertex (optional)
//   raw/node-label.csv.gz   one class per vertex, NaN = unlabeled (optional)
//   split/<name>/{train,valid,test}.csv.gz  vertex ids, one per line
// or papers100M's binary layout: raw/data.npz (edge_index (2, E), node_feat
// (N, F), num_nodes_list) and raw/node-label.npz (node_label (N, 1), NaN for
// unlabeled vertices). Plain .csv files (not gzipped) are read too.
// Every split folder is read by name: `split_name` picks one (default: the
// first in sorted order, the only one in most datasets).
#include <string>
#include <vector>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct OgbOptions {
  std::string dir;         // the dataset folder (holding raw/ and split/)
  std::string split_name;  // empty = the first split folder
};

RawGraph read_ogb(const OgbOptions& o);

// The split folders under dir/split, sorted.
std::vector<std::string> ogb_split_names(const std::string& dir);

}  // namespace ht::data
