#pragma once
// MUSAE datasets (Facebook Page-Page, Twitch): in directory DIR with prefix
// NAME, the files NAME_edges.csv (header + "id_1,id_2" rows),
// NAME_features.json ({"<vertex>": [feature ids]}, binary features) and
// NAME_target.csv (a header naming an id column and a label column).
// Class ids are the label strings sorted by byte value (Facebook: company 0,
// government 1, politician 2, tvshow 3). N = max target id + 1. F = max
// feature id + 1 unless a width is given. No standard split exists, so a
// seeded stratified random split is made (datasets/stratified_split.hpp).
#include <cstdint>
#include <string>

#include "datasets/raw_graph.hpp"

namespace ht::data {

struct MusaeOptions {
  std::string dir;
  std::string name = "facebook";
  std::string id_column = "id";
  std::string label_column = "page_type";
  int32_t feature_dim = 0;  // 0 = max feature id + 1
  double train_fraction = 0.1, val_fraction = 0.1;
  uint64_t seed = 1;
};

RawGraph read_musae(const MusaeOptions& opt);

}  // namespace ht::data
