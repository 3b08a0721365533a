#pragma once
// Planetoid datasets (Cora, CiteSeer, PubMed) from the raw ind.<name>.*
// pickles, decoded by datasets/planetoid_to_npy.py (Kipf & Welling's
// load_data; see that script for the assembly and the CiteSeer quirk). The
// graph comes out as the adjacency-list entries of ind.<name>.graph, so
// duplicates and self-loops are still there; ht-convert's defaults for this
// format symmetrize and drop them.
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

// `name` empty = the single ind.*.graph of `dir`.
RawGraph read_planetoid(const std::string& dir, std::string name);

}  // namespace ht::data
