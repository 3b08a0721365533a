#include "partition/ml_coarse_metis.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/error.hpp"
#include "core/log.hpp"
#include "partition/metis_graph.hpp"

namespace ht::ml {
namespace {

// A weighted undirected graph in METIS's arrays.
struct MetisInput {
  MetisGraph graph;
  std::vector<idx_t> adjwgt;
};

bool is_symmetric(const CoarseLevel& c) {
  const int64_t n = c.num_vertices();
  bool ok = true;
  // Few vertices of many entries each (the coarsest level): small tasks.
#pragma omp parallel for schedule(dynamic, 16) reduction(&& : ok)
  for (int64_t v = 0; v < n; ++v) {
    const auto nb = c.neighbors(v);
    const auto w = c.weights(v);
    for (size_t i = 0; i < nb.size() && ok; ++i) {
      const auto back = c.neighbors(nb[i]);
      const auto it = std::lower_bound(back.begin(), back.end(), static_cast<vid_t>(v));
      ok = it != back.end() && *it == static_cast<vid_t>(v) && c.weights(nb[i])[it - back.begin()] == w[i];
    }
  }
  return ok;
}

// Weight of a METIS entry: w scaled by `scale`, at least 1. A function of w
// alone, so that the two entries of an edge stay equal.
idx_t scaled(weight_t w, double scale) {
  return static_cast<idx_t>(std::max(1.0, std::round(static_cast<double>(w) * scale)));
}

double scale_for(double total) {
  const double limit = static_cast<double>(metis_index_limit()) / 2;
  return total > limit ? limit / total : 1.0;
}

// Rows as they are (the level is symmetric).
MetisInput copy_rows(const CoarseLevel& c) {
  const int64_t n = c.num_vertices();
  MetisInput in;
  in.graph.xadj.resize(static_cast<size_t>(n) + 1);
  in.graph.xadj[0] = 0;
  for (int64_t v = 0; v < n; ++v) in.graph.xadj[v + 1] = static_cast<idx_t>(in.graph.xadj[v] + c.degree(v));
  in.graph.adjncy.resize(static_cast<size_t>(c.adjacency_entries()));
  std::vector<weight_t> w(static_cast<size_t>(c.adjacency_entries()));
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < n; ++v) {
    const auto nb = c.neighbors(v);
    const auto wt = c.weights(v);
    std::copy(nb.begin(), nb.end(), in.graph.adjncy.begin() + in.graph.xadj[v]);
    std::copy(wt.begin(), wt.end(), w.begin() + in.graph.xadj[v]);
  }
  double total = 0;
  for (weight_t x : w) total += static_cast<double>(x);
  const double scale = scale_for(total);
  in.adjwgt.resize(w.size());
  for (size_t i = 0; i < w.size(); ++i) in.adjwgt[i] = scaled(w[i], scale);
  return in;
}

// Rows of the level plus their mirror images, parallel entries merged (their
// weights summed): undirected whatever the level was.
MetisInput symmetrized_rows(const CoarseLevel& c) {
  const int64_t n = c.num_vertices();
  std::vector<std::tuple<vid_t, vid_t, weight_t>> e;
  e.reserve(2 * static_cast<size_t>(c.adjacency_entries()));
  for (int64_t v = 0; v < n; ++v) {
    const auto nb = c.neighbors(v);
    const auto wt = c.weights(v);
    for (size_t i = 0; i < nb.size(); ++i) {
      e.emplace_back(static_cast<vid_t>(v), nb[i], wt[i]);
      e.emplace_back(nb[i], static_cast<vid_t>(v), wt[i]);
    }
  }
  std::sort(e.begin(), e.end());
  std::vector<std::tuple<vid_t, vid_t, weight_t>> merged;
  for (const auto& t : e) {
    if (!merged.empty() && std::get<0>(merged.back()) == std::get<0>(t) && std::get<1>(merged.back()) == std::get<1>(t))
      std::get<2>(merged.back()) += std::get<2>(t);
    else
      merged.push_back(t);
  }
  HT_CHECK(static_cast<int64_t>(merged.size()) <= metis_index_limit(),
           "multilevel: the symmetrized coarsest level has {} adjacency entries, beyond METIS's idx_t (at most {})",
           merged.size(), metis_index_limit());
  MetisInput in;
  in.graph.xadj.assign(static_cast<size_t>(n) + 1, 0);
  double total = 0;
  for (const auto& [a, b, w] : merged) {
    ++in.graph.xadj[a + 1];
    total += static_cast<double>(w);
  }
  for (int64_t v = 0; v < n; ++v) in.graph.xadj[v + 1] += in.graph.xadj[v];
  const double scale = scale_for(total);
  for (const auto& [a, b, w] : merged) {
    in.graph.adjncy.push_back(static_cast<idx_t>(b));
    in.adjwgt.push_back(scaled(w, scale));
  }
  return in;
}

}  // namespace

MetisResult partition_coarsest(const CoarseLevel& level, const PartitionParams& params) {
  const int64_t biggest = std::max(level.num_vertices(), level.adjacency_entries());
  HT_CHECK(biggest <= metis_index_limit(),
           "multilevel: the coarsest level still has {} vertices and {} adjacency entries, beyond METIS's {}-bit "
           "idx_t (at most {}): coarsening stopped shrinking the graph; use --method range or --method random",
           level.num_vertices(), level.adjacency_entries(), 8 * sizeof(idx_t), metis_index_limit());
  MetisInput in;
  if (is_symmetric(level)) {
    in = copy_rows(level);
  } else {
    log::warn("the graph is not symmetric although its file says so; symmetrizing the coarsest level for METIS");
    in = symmetrized_rows(level);
  }
  double total = 0;
  for (weight_t w : level.vertex_weights()) total += static_cast<double>(w);
  const double scale = scale_for(total);
  std::vector<idx_t> vwgt(level.vertex_weights().size());
  for (size_t v = 0; v < vwgt.size(); ++v) vwgt[v] = scaled(level.vertex_weights()[v], scale);
  return run_metis(in.graph, vwgt, 1, params, in.adjwgt);
}

}  // namespace ht::ml
