#pragma once
// SNAP-style and CSV edge lists: one "src dst [weight]" per line, separated by
// whitespace or commas; '#' and '%' start comment lines; an optional header
// line; 64-bit ids (relabeled later when they are not dense).
#include <cstdint>
#include <limits>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

enum class HeaderMode { detect, yes, no };

struct EdgeListOptions {
  // detect: a first data line with a non-numeric first token is skipped only
  // for .csv files; yes: the first non-comment line is always skipped.
  HeaderMode header = HeaderMode::detect;
  bool keep_weights = true;  // false: a third column is ignored
  uint64_t id_limit = std::numeric_limits<uint64_t>::max();
  std::string limit_note;    // e.g. "N = 100 from features.npy"
};

RawEdges read_edge_list(const std::string& path, const EdgeListOptions& opt = {});

}  // namespace ht::data
