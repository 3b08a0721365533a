#include "partition/ml_graph.hpp"

#include <algorithm>

#include <omp.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"

namespace ht::ml {
namespace {

// The transpose is built by destination buckets of this many rows: a
// bucket's counters and row starts (16 k of each) stay in a core's cache.
constexpr int kBucketBits = 14;
constexpr int64_t kBucketRows = int64_t{1} << kBucketBits;

// Out-lists of every vertex (the transpose of the CSC) with 64-bit offsets,
// each sorted: the same for every thread count. A two-pass bucket sort
// instead of atomic row cursors and a sort of every row (8.5 s for 152 M
// edges on one thread, 11.4 s for 2.5 G on 64 cores with the cursors, hot
// rows contended): tasks (contiguous ranges of CSC rows, in order) count and
// then scatter their entries into buckets of destination rows; inside a
// bucket the entries are then in ascending source order (task by task, each
// task ascending), so one stable counting pass per bucket writes the rows
// sorted.
void build_transpose(const GraphView& g, std::vector<int64_t>& off, std::span<vid_t> targets) {
  const int64_t n = g.num_vertices, m = g.num_edges;
  Progress progress("multilevel: transpose", 2 * m, "edges");
  const int64_t buckets = (n + kBucketRows - 1) >> kBucketBits;
  // Any task count gives the same result; about 4 per thread, 64 k edges at least.
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(m >> 16, int64_t{4} * omp_get_max_threads()));
  std::vector<int64_t> task_begin(static_cast<size_t>(tasks) + 1, n);
  for (int64_t t = 0; t < tasks; ++t)
    task_begin[t] = std::lower_bound(g.offsets.begin(), g.offsets.begin() + n, t * (m / tasks)) - g.offsets.begin();
  task_begin[0] = 0;
  // at[t * buckets + b]: task t's entries in bucket b, then where they go.
  std::vector<int64_t> at(static_cast<size_t>(tasks * buckets), 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t* count = at.data() + t * buckets;
    for (int64_t i = g.offsets[task_begin[t]]; i < g.offsets[task_begin[t + 1]]; ++i)
      ++count[g.sources[i] >> kBucketBits];
  }
  std::vector<int64_t> bucket_begin(static_cast<size_t>(buckets) + 1);
  int64_t sum = 0;
  for (int64_t b = 0; b < buckets; ++b) {
    bucket_begin[b] = sum;
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t k = at[t * buckets + b];
      at[t * buckets + b] = sum;
      sum += k;
    }
  }
  bucket_begin[buckets] = sum;
  // The scatter writes each entry's source (the transpose's target) into
  // `targets` at its place in the bucket, and its row inside the bucket
  // beside it; then each bucket's entries are copied out (one thread's buffer)
  // and written back row by row. Temporary: 2 bytes per edge, in pages
  // faulted in by all threads (no serial zero-fill after, as a vector's).
  static_assert(kBucketBits <= 16);
  HT_ASSERT(static_cast<int64_t>(targets.size()) == m);
  const HostBlock row_storage(static_cast<size_t>(m) * sizeof(uint16_t));
  prefault_pages(row_storage.data(), row_storage.size());
  auto* row = reinterpret_cast<uint16_t*>(row_storage.data());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t* next = at.data() + t * buckets;
    for (int64_t v = task_begin[t]; v < task_begin[t + 1]; ++v)
      for (vid_t u : g.in_neighbors(v)) {
        const int64_t i = next[u >> kBucketBits]++;
        targets[i] = static_cast<vid_t>(v);
        row[i] = static_cast<uint16_t>(u & (kBucketRows - 1));
      }
    progress.add(g.offsets[task_begin[t + 1]] - g.offsets[task_begin[t]]);
  }
  resize_for_overwrite(off, static_cast<size_t>(n) + 1);
#pragma omp parallel
  {
    std::vector<int64_t> cursor(static_cast<size_t>(kBucketRows));
    std::vector<vid_t> sources;
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < buckets; ++b) {
      const int64_t first = b * kBucketRows;
      const int64_t rows = std::min(n, first + kBucketRows) - first;
      std::fill(cursor.begin(), cursor.begin() + rows, 0);
      const int64_t e0 = bucket_begin[b], e1 = bucket_begin[b + 1];
      for (int64_t i = e0; i < e1; ++i) ++cursor[row[i]];
      int64_t start = e0;
      for (int64_t r = 0; r < rows; ++r) {
        off[first + r] = start;
        const int64_t k = cursor[r];
        cursor[r] = start;
        start += k;
      }
      sources.assign(targets.begin() + e0, targets.begin() + e1);
      for (int64_t i = e0; i < e1; ++i) targets[cursor[row[i]]++] = sources[i - e0];
      progress.add(e1 - e0);
    }
  }
  off[n] = m;
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
      extra_weight_(params.chunk_vertex_weight),
      out_storage_(g.flags.symmetric ? 0 : static_cast<size_t>(g.num_edges) * sizeof(vid_t)) {
  HT_CHECK(g.num_vertices <= kMaxVertices32, "graph has {} vertices; the multilevel partitioner takes at most {}",
           g.num_vertices, kMaxVertices32);
  if (g.flags.symmetric) return;
  prefault_pages(out_storage_.data(), out_storage_.size());
  const std::span<vid_t> targets(reinterpret_cast<vid_t*>(out_storage_.data()), static_cast<size_t>(g.num_edges));
  build_transpose(g, out_offsets_, targets);
  out_targets_ = targets;
}

CoarseLevel::CoarseLevel(std::vector<Block> blocks, std::vector<weight_t> vertex_weights, bool symmetric_neighbors)
    : blocks_(std::move(blocks)), vertex_weights_(std::move(vertex_weights)), symmetric_neighbors_(symmetric_neighbors) {
  HT_ASSERT(static_cast<int64_t>(blocks_.size()) == (num_vertices() + kBlockRows - 1) / kBlockRows);
  for (const Block& b : blocks_) entries_ += static_cast<int64_t>(b.targets.size());
}

}  // namespace ht::ml
