#pragma once
// The sizes of a graph without its arrays: what memory planners need to know
// before the graph is read. From a graph file's header (one page) or from a
// view.
#include <cstdint>
#include <string>

#include "core/half.hpp"
#include "graph/graph.hpp"

namespace ht {

struct GraphShape {
  int64_t vertices = 0, edges = 0;
  int32_t feature_dim = 0, num_classes = 0;
  StoreDtype feature_dtype = StoreDtype::f32;
  int id_bytes = 4;  // of the file's source ids (8: read into a narrowed copy)
  bool weights = false, labels = false, split = false, orig_ids = false;
  bool features_normalized = false;
  int64_t file_bytes = 0;  // the graph file's size (0: not from a file)
};

// From the header and section table (the header checksum is verified, the
// sections' are not: GraphFile does that when it opens the file).
GraphShape read_graph_shape(const std::string& path);

GraphShape shape_of(const GraphView& g, int64_t file_bytes = 0, int id_bytes = 4);

}  // namespace ht
