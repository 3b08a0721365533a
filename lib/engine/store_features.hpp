#pragma once
// Where the graph's features enter the vertex store (h^0), for every pair of
// feature dtype (graph file) and store dtype (--host-dtype): the bytes as
// they are when the two agree, else converted row by row (a 16-bit file into
// an fp32 store widens, exactly; fp32 into a 16-bit store rounds once to
// nearest even; bf16 into fp16 or fp16 into bf16 widens and rounds again).
//
// The rows can come straight from the graph file in its own ids (the
// training job): no renumbered copy of the features is ever made, and the
// file's pages can be given back behind the rows read.
#include <functional>
#include <span>

#include "engine/executor.hpp"
#include "graph/graph.hpp"

namespace ht {

// Store row v = row new_to_old[v] of graph's features (the same row when
// new_to_old is empty), scaled to sum 1 when `normalize` (16-bit rows widened
// first, exactly; a row summing to 0 is left as it is; the store rounds the
// result once to its dtype).
struct FeatureSource {
  GraphView graph;
  std::span<const vid_t> new_to_old;  // store row -> graph row; empty: the same
  std::span<const vid_t> old_to_new;  // its inverse (given with new_to_old)
  bool normalize = false;
  // Called behind each block [begin, end) of graph rows read, from any
  // thread (e.g. GraphFile::drop_feature_rows); may be empty.
  std::function<void(int64_t, int64_t)> rows_read;

  // g's own features, in g's ids.
  static FeatureSource of(const GraphView& g) {
    FeatureSource s;
    s.graph = g;
    return s;
  }
  int64_t rows() const { return graph.num_vertices; }
  int64_t cols() const { return graph.feature_dim; }
};

// Throws when a feature is beyond fp16's range or not finite (the check of
// --host-dtype fp16, for features of any dtype, after normalization). The
// first bad element is named by its graph row.
void check_f16_range(const FeatureSource& src);
inline void check_f16_range(const GraphView& g) { check_f16_range(FeatureSource::of(g)); }

// h^0 = the source's rows in dst's dtype (dst: N x F, on the host or a device).
void fill_feature_store(Executor& exec, const HostMat& dst, const FeatureSource& src);
inline void fill_feature_store(Executor& exec, const HostMat& dst, const GraphView& g) {
  fill_feature_store(exec, dst, FeatureSource::of(g));
}

}  // namespace ht
