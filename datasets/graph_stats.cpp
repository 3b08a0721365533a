#include "datasets/graph_stats.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "graph/build.hpp"

namespace ht::data {
namespace {

DegreeStats degree_stats(const std::vector<int64_t>& deg) {
  DegreeStats d;
  if (deg.empty()) return d;
  d.min = *std::min_element(deg.begin(), deg.end());
  d.max = *std::max_element(deg.begin(), deg.end());
  int64_t sum = 0;
  for (int64_t x : deg) sum += x;
  d.mean = static_cast<double>(sum) / static_cast<double>(deg.size());
  return d;
}

bool in_lists_sorted(const GraphView& g) {
  bool sorted = true;
#pragma omp parallel for schedule(dynamic, 1024) reduction(&& : sorted)
  for (int64_t u = 0; u < g.num_vertices; ++u)
    for (int64_t i = g.offsets[u] + 1; i < g.offsets[u + 1]; ++i)
      if (g.sources[i] < g.sources[i - 1]) sorted = false;
  return sorted;
}

// Topology counts that need each in-list sorted; unsorted lists are sorted
// in a copy (the view may point into a read-only map). Sortedness is checked,
// not taken from the header, so a header that claims it wrongly cannot skew
// the counts.
void topology_counts(const GraphView& g, GraphStats& s) {
  Graph sorted;
  const GraphView* v = &g;
  GraphView sorted_view;
  s.sorted_neighbors = in_lists_sorted(g);
  if (!s.sorted_neighbors) {
    sorted.num_vertices = g.num_vertices;
    sorted.offsets.assign(g.offsets.begin(), g.offsets.end());
    sorted.sources.assign(g.sources.begin(), g.sources.end());
    sort_neighbors(sorted);
    sorted_view = sorted.view();
    v = &sorted_view;
  }
  int64_t loops = 0, dups = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : loops, dups)
  for (int64_t u = 0; u < v->num_vertices; ++u) {
    for (int64_t i = v->offsets[u]; i < v->offsets[u + 1]; ++i) {
      if (static_cast<int64_t>(v->sources[i]) == u) ++loops;
      if (i > v->offsets[u] && v->sources[i] == v->sources[i - 1]) ++dups;
    }
  }
  s.self_loops = loops;
  s.duplicate_edges = dups;
  s.symmetric = detect_flags(*v).symmetric;
}

}  // namespace

GraphStats compute_stats(const GraphView& g) {
  GraphStats s;
  s.num_vertices = g.num_vertices;
  s.num_edges = g.num_edges;
  std::vector<int64_t> in(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) in[v] = g.in_degree(v);
  const std::vector<int64_t> out = out_degrees(g);
  s.in_degree = degree_stats(in);
  s.out_degree = degree_stats(out);
  topology_counts(g, s);
  // Isolated: no edge except self-loops, in either direction.
  std::vector<int64_t> loops(g.num_vertices, 0);
  for (int64_t v = 0; v < g.num_vertices; ++v)
    for (vid_t u : g.in_neighbors(v)) loops[v] += static_cast<int64_t>(u) == v;
  for (int64_t v = 0; v < g.num_vertices; ++v) s.isolated_vertices += in[v] == loops[v] && out[v] == loops[v];
  s.weighted = !g.weights.empty();
  s.feature_dim = g.feature_dim;
  s.feature_dtype = g.feature_dtype;
  int64_t nnz = 0;
  const int64_t nf = static_cast<int64_t>(g.features.size()), nh = static_cast<int64_t>(g.features16.size());
#pragma omp parallel for reduction(+ : nnz)
  for (int64_t i = 0; i < nf; ++i) nnz += g.features[i] != 0.0f;
  // 16-bit: every pattern but ±0 is a nonzero value (NaN included, as above).
#pragma omp parallel for reduction(+ : nnz)
  for (int64_t i = 0; i < nh; ++i) nnz += (g.features16[i] & 0x7fffu) != 0;
  s.feature_nonzeros = nnz;
  s.num_classes = g.num_classes;
  s.has_labels = !g.labels.empty();
  s.class_counts.assign(std::max(g.num_classes, 0), 0);
  for (int32_t l : g.labels) {
    if (l < 0) ++s.unlabeled;
    else if (l < g.num_classes) ++s.class_counts[l];
  }
  s.has_split = !g.split.empty();
  for (uint8_t c : g.split) ++s.split_counts[std::min<uint8_t>(c, 3)];
  s.has_orig_ids = !g.orig_ids.empty();
  return s;
}

std::string stats_text(const GraphStats& s) {
  std::string t;
  auto line = [&t](const std::string& key, const std::string& value) { t += fmt::format("  {:<20} {}\n", key, value); };
  line("vertices", fmt::format("{}", s.num_vertices));
  line("edges", fmt::format("{} (directed){}", s.num_edges, s.weighted ? ", weighted" : ""));
  line("in-degree", fmt::format("min {} / mean {:.2f} / max {}", s.in_degree.min, s.in_degree.mean, s.in_degree.max));
  line("out-degree", fmt::format("min {} / mean {:.2f} / max {}", s.out_degree.min, s.out_degree.mean, s.out_degree.max));
  line("self-loops", fmt::format("{}", s.self_loops));
  line("symmetric", s.symmetric ? "yes" : "no");
  line("duplicate edges", fmt::format("{}", s.duplicate_edges));
  line("isolated vertices", fmt::format("{}", s.isolated_vertices));
  line("features", s.feature_dim ? fmt::format("{} columns {}, {} nonzeros", s.feature_dim, dtype_name(s.feature_dtype),
                                                s.feature_nonzeros)
                                  : "none");
  if (s.has_labels) {
    std::string counts;
    for (size_t c = 0; c < s.class_counts.size(); ++c) counts += fmt::format("{}{}", c ? ", " : "", s.class_counts[c]);
    line("classes", fmt::format("{} ({}){}", s.num_classes, counts,
                                s.unlabeled ? fmt::format(", {} unlabeled", s.unlabeled) : ""));
  } else {
    line("classes", "no labels");
  }
  line("split", s.has_split ? fmt::format("train {} / val {} / test {} / none {}", s.split_counts[1], s.split_counts[2],
                                          s.split_counts[3], s.split_counts[0])
                            : "none");
  line("original ids", s.has_orig_ids ? "kept (relabeled input)" : "none (ids as in the input)");
  return t;
}

}  // namespace ht::data
