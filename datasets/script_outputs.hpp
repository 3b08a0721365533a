#pragma once
// The .npy set written by the helper scripts (edges, features, labels, split)
// read back into a RawGraph.
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

RawGraph read_script_outputs(const std::string& dir);

}  // namespace ht::data
