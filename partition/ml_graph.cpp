#include "partition/ml_graph.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"

namespace ht::ml {
namespace {

// Rows of the CSC, processed in parallel in groups of this many vertices.
constexpr int64_t kRowGrain = 4096;

// Out-lists of every vertex (the transpose of the CSC) with 64-bit offsets.
// Rows are filled with atomic cursors (in whatever order the threads reach
// them) and then sorted, so the result is the same for every thread count.
void build_transpose(const GraphView& g, std::vector<int64_t>& off, std::vector<vid_t>& targets) {
  const int64_t n = g.num_vertices;
  Progress progress("multilevel: transpose", 2 * g.num_edges, "edges");
  resize_for_overwrite(off, static_cast<size_t>(n) + 1);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < n; b += kRowGrain) {
    const int64_t e = std::min(n, b + kRowGrain);
    for (int64_t v = b; v < e; ++v)
      for (vid_t u : g.in_neighbors(v)) std::atomic_ref<int64_t>(off[u + 1]).fetch_add(1, std::memory_order_relaxed);
    progress.add(g.offsets[e] - g.offsets[b]);
  }
  parallel_inclusive_scan(off);  // off[u + 1] = end of row u
  resize_for_overwrite(targets, static_cast<size_t>(g.num_edges));
  // Each entry takes the slot just below its row's end; afterwards off[u + 1]
  // is the start of row u, and one shift gives the usual offsets.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < n; b += kRowGrain) {
    const int64_t e = std::min(n, b + kRowGrain);
    for (int64_t v = b; v < e; ++v)
      for (vid_t u : g.in_neighbors(v)) {
        const int64_t at = std::atomic_ref<int64_t>(off[u + 1]).fetch_sub(1, std::memory_order_relaxed) - 1;
        targets[at] = static_cast<vid_t>(v);
      }
    progress.add(g.offsets[e] - g.offsets[b]);
  }
  std::memmove(off.data(), off.data() + 1, static_cast<size_t>(n) * sizeof(int64_t));
  off[n] = g.num_edges;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t b = 0; b < n; b += kRowGrain)
    for (int64_t u = b; u < std::min(n, b + kRowGrain); ++u)
      std::sort(targets.begin() + off[u], targets.begin() + off[u + 1]);
  progress.finish();
}

}  // namespace

std::vector<int64_t> offsets_from_lengths(std::span<const int64_t> lengths) {
  std::vector<int64_t> off;
  resize_for_overwrite(off, lengths.size() + 1);
  const int64_t n = static_cast<int64_t>(lengths.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) off[i + 1] = lengths[i];
  off[0] = 0;
  parallel_inclusive_scan(off);
  return off;
}

FineLevel::FineLevel(const GraphView& g, const PartitionParams& params)
    : g_(g),
      unit_weights_(params.vertex_weights == VertexWeights::none),
      extra_weight_(params.chunk_vertex_weight) {
  HT_CHECK(g.num_vertices <= kMaxVertices32, "graph has {} vertices; the multilevel partitioner takes at most {}",
           g.num_vertices, kMaxVertices32);
  if (!g.flags.symmetric) build_transpose(g, out_offsets_, out_targets_);
}

CoarseLevel::CoarseLevel(std::vector<Block> blocks, std::vector<weight_t> vertex_weights)
    : blocks_(std::move(blocks)), vertex_weights_(std::move(vertex_weights)) {
  HT_ASSERT(static_cast<int64_t>(blocks_.size()) == (num_vertices() + kBlockRows - 1) / kBlockRows);
  for (const Block& b : blocks_) entries_ += static_cast<int64_t>(b.targets.size());
}

}  // namespace ht::ml
