#pragma once
// The graphs of the multilevel partitioner (multilevel_partition.hpp): the
// input level, read straight from the graph's CSC (plus its transpose when
// the graph is not symmetric), and the weighted coarse levels that
// contraction builds. Both offer the same small interface, so that the
// clustering and refinement templates run on either:
//   num_vertices(), vertex_weight(v), degree(v) (an upper bound on the
//   neighbors f sees), for_each_neighbor(v, f(u, w)).
// Neighbors never include v itself. Offsets, edge counts and weights are
// 64-bit throughout; vertex ids are the graph's 32-bit vid_t.
#include <cstdint>
#include <span>
#include <vector>

#include "core/bulk_memory.hpp"
#include "graph/graph.hpp"
#include "partition/partition.hpp"

namespace ht::ml {

using weight_t = int64_t;

// offsets[0] = 0, offsets[i + 1] = offsets[i] + lengths[i], in 64 bits and in
// parallel (the row offsets of the transpose and of coarse rows).
std::vector<int64_t> offsets_from_lengths(std::span<const int64_t> lengths);

// The input graph as an undirected weighted graph without building one: the
// neighbors of v are its in-neighbors (the CSC row) and, unless the graph is
// symmetric, its out-neighbors (the transpose, built once). Every entry has
// weight 1, so the weight between u and v counts the directed edges between
// them both ways, duplicates included: the cut of this graph is the directed
// edge cut that ht-partition reports (for a symmetric graph, which is read
// from its CSC alone, exactly half of it). Self-loops are skipped. Nothing is
// symmetrized or deduplicated, and no 32-bit copy is made.
class FineLevel {
 public:
  // Builds the transpose when !g.flags.symmetric (O(N + E) memory, in
  // parallel). Vertex weights per params.vertex_weights: none -> 1; degree
  // and train -> max(1, round(in_degree + chunk_vertex_weight)) (one
  // constraint: train balances the computation weight, as random/range do).
  FineLevel(const GraphView& g, const PartitionParams& params);

  int64_t num_vertices() const { return g_.num_vertices; }
  // Adjacency entries (in-lists plus out-lists), self-loops included.
  int64_t adjacency_entries() const { return g_.num_edges + static_cast<int64_t>(out_targets_.size()); }
  bool uses_transpose() const { return !out_offsets_.empty(); }

  weight_t vertex_weight(int64_t v) const {
    if (unit_weights_) return 1;
    const double w = static_cast<double>(g_.in_degree(v)) + extra_weight_;
    return w < 1.5 ? 1 : static_cast<weight_t>(w + 0.5);
  }

  int64_t degree(int64_t v) const {
    return g_.in_degree(v) + (out_offsets_.empty() ? 0 : out_offsets_[v + 1] - out_offsets_[v]);
  }

  template <typename F>
  void for_each_neighbor(int64_t v, F&& f) const {
    for (vid_t u : g_.in_neighbors(v))
      if (static_cast<int64_t>(u) != v) f(u, weight_t{1});
    if (out_offsets_.empty()) return;
    for (int64_t i = out_offsets_[v]; i < out_offsets_[v + 1]; ++i)
      if (static_cast<int64_t>(out_targets_[i]) != v) f(out_targets_[i], weight_t{1});
  }

  // The neighbors for_each_neighbor gives, as runs of ids (self-loops
  // included: the caller skips u == v) of weight 1: f(ids, nullptr).
  template <typename F>
  void for_each_neighbor_run(int64_t v, F&& f) const {
    f(g_.in_neighbors(v), static_cast<const weight_t*>(nullptr));
    if (out_offsets_.empty()) return;
    f(std::span<const vid_t>(out_targets_).subspan(static_cast<size_t>(out_offsets_[v]),
                                                   static_cast<size_t>(out_offsets_[v + 1] - out_offsets_[v])),
      static_cast<const weight_t*>(nullptr));
  }

  // Whether pred(u) holds for a neighbor u (as for_each_neighbor gives them),
  // looking no further than the first.
  template <typename Pred>
  bool any_neighbor(int64_t v, Pred&& pred) const {
    for (vid_t u : g_.in_neighbors(v))
      if (static_cast<int64_t>(u) != v && pred(u)) return true;
    if (out_offsets_.empty()) return false;
    for (int64_t i = out_offsets_[v]; i < out_offsets_[v + 1]; ++i)
      if (static_cast<int64_t>(out_targets_[i]) != v && pred(out_targets_[i])) return true;
    return false;
  }

  // u is a neighbor of v exactly when v is one of u: true by construction
  // with the transpose; a graph read as symmetric is only as symmetric as its
  // file says (ActiveSet relies on this).
  bool symmetric_neighbors() const { return uses_transpose(); }

 private:
  GraphView g_;
  bool unit_weights_ = false;
  double extra_weight_ = 0;
  std::vector<int64_t> out_offsets_;  // N + 1, or empty (symmetric input)
  // The out-lists (E ids, or none) in pages of their own, faulted in by all
  // threads: a vector was then zero-filled by one thread (friendster-like:
  // 10 GB, about a second on the transpose's critical path).
  HostBlock out_storage_;
  std::span<const vid_t> out_targets_;
};

// A coarse level: weighted, symmetric, no self-loops, each row sorted by
// neighbor. Rows are stored in blocks of kBlockRows consecutive vertices,
// each block with its own exactly sized arrays, so that contraction writes
// every row once, in parallel, without a second copy of the whole level.
class CoarseLevel {
 public:
  static constexpr int kBlockBits = 10;  // 1024 rows: enough blocks to spread over many threads
  static constexpr int64_t kBlockRows = int64_t{1} << kBlockBits;

  struct Block {
    std::vector<int64_t> offsets;  // rows + 1, from 0
    std::vector<vid_t> targets;
    std::vector<weight_t> weights;
  };

  CoarseLevel() = default;
  // symmetric_neighbors: contracted from a level whose neighbor relation is
  // symmetric by construction (contraction keeps it).
  CoarseLevel(std::vector<Block> blocks, std::vector<weight_t> vertex_weights, bool symmetric_neighbors = false);

  int64_t num_vertices() const { return static_cast<int64_t>(vertex_weights_.size()); }
  int64_t adjacency_entries() const { return entries_; }
  weight_t vertex_weight(int64_t v) const { return vertex_weights_[v]; }
  const std::vector<weight_t>& vertex_weights() const { return vertex_weights_; }

  // Row v as two spans (neighbors ascending, their weights).
  std::span<const vid_t> neighbors(int64_t v) const {
    const Block& b = blocks_[v >> kBlockBits];
    const int64_t r = v & (kBlockRows - 1);
    return std::span<const vid_t>(b.targets).subspan(b.offsets[r], b.offsets[r + 1] - b.offsets[r]);
  }
  std::span<const weight_t> weights(int64_t v) const {
    const Block& b = blocks_[v >> kBlockBits];
    const int64_t r = v & (kBlockRows - 1);
    return std::span<const weight_t>(b.weights).subspan(b.offsets[r], b.offsets[r + 1] - b.offsets[r]);
  }

  int64_t degree(int64_t v) const {
    const Block& b = blocks_[v >> kBlockBits];
    const int64_t r = v & (kBlockRows - 1);
    return b.offsets[r + 1] - b.offsets[r];
  }

  template <typename F>
  void for_each_neighbor(int64_t v, F&& f) const {
    const Block& b = blocks_[v >> kBlockBits];
    const int64_t r = v & (kBlockRows - 1);
    for (int64_t i = b.offsets[r]; i < b.offsets[r + 1]; ++i) f(b.targets[i], b.weights[i]);
  }

  // Row v as one run (FineLevel::for_each_neighbor_run): f(ids, weights).
  template <typename F>
  void for_each_neighbor_run(int64_t v, F&& f) const {
    f(neighbors(v), weights(v).data());
  }

  template <typename Pred>
  bool any_neighbor(int64_t v, Pred&& pred) const {
    for (vid_t u : neighbors(v))
      if (pred(u)) return true;
    return false;
  }

  bool symmetric_neighbors() const { return symmetric_neighbors_; }

 private:
  std::vector<Block> blocks_;
  std::vector<weight_t> vertex_weights_;
  int64_t entries_ = 0;
  bool symmetric_neighbors_ = false;
};

// Sum of vertex weights and the largest one, in parallel.
template <typename G>
void total_and_max_weight(const G& g, weight_t& total, weight_t& max_weight) {
  weight_t sum = 0, mx = 0;
  const int64_t n = g.num_vertices();
#pragma omp parallel for schedule(static) reduction(+ : sum) reduction(max : mx)
  for (int64_t v = 0; v < n; ++v) {
    const weight_t w = g.vertex_weight(v);
    sum += w;
    mx = w > mx ? w : mx;
  }
  total = sum;
  max_weight = mx;
}

}  // namespace ht::ml
