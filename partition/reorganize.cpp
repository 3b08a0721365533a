// Algorithm 4 with overlaps counted through an inverted index.
//
// Notation: U_b = the transition set (union of N) of batch b under
// construction; L_v = the batches whose U holds vertex v; S = Σ |N_ic| over
// all chunks (= V_ori); P = Σ_b |U_b| (= V_p2p <= S).
//
// Phase 1 (partition by partition, i = 1..m-1): while partition i is being
// placed, batch b's U_b only changes when b receives its chunk, after which b
// is not looked at again in this pass. So the whole overlap matrix
// |N_ic ∩ U_b| (n x n) can be counted up front, from an index v -> L_v:
// Σ_c Σ_{v∈N_ic} |L_v| increments; then the greedy choice is O(n^2).
// Phase 2: the batch overlap matrix |U_a ∩ U_b| costs Σ_v |L_v|^2
// increments (<= n * P); the greedy path is tried from every start batch and
// the best one kept, O(n^3) comparisons (n is at most a few thousand).
// Total: O(m (N + P) + m Σ_v r_v |L_v| + Σ_v |L_v|^2 + m n^2 + n^3) time with
// r_v = number of chunks of a partition holding v, O(N + P + n^2) memory.
// Counting loops are OpenMP-parallel; results do not depend on the thread
// count (integer sums; ties broken by lowest index).
#include "partition/reorganize.hpp"

#include <omp.h>

#include <algorithm>
#include <iterator>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"
#include "partition/sorted_sets.hpp"

namespace ht {

BatchOrder BatchOrder::identity(int m, int n) {
  BatchOrder o;
  o.m = m;
  o.n = n;
  o.chunk.resize(static_cast<size_t>(m) * n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) o.chunk[static_cast<size_t>(j) * m + i] = j;
  return o;
}

bool BatchOrder::valid() const {
  if (m < 1 || n < 1 || chunk.size() != static_cast<size_t>(m) * n) return false;
  for (int i = 0; i < m; ++i) {
    std::vector<char> seen(n, 0);
    for (int j = 0; j < n; ++j) {
      const int32_t c = at(j, i);
      if (c < 0 || c >= n || seen[c]) return false;
      seen[c] = 1;
    }
  }
  return true;
}

namespace {

using VertexSet = std::vector<vid_t>;

// Below this many vertices of work a parallel region costs more than it saves.
constexpr int64_t kParallelMin = int64_t{1} << 15;

int64_t total_size(const std::vector<VertexSet>& sets) {
  int64_t t = 0;
  for (const auto& s : sets) t += static_cast<int64_t>(s.size());
  return t;
}

// Vertex -> batches whose transition set holds it (CSR; each list unordered,
// which does not matter for counting).
struct Membership {
  std::vector<int64_t> offsets;
  std::vector<int32_t> batches;
  std::span<const int32_t> of(vid_t v) const {
    return {batches.data() + offsets[v], static_cast<size_t>(offsets[v + 1] - offsets[v])};
  }
};

// Items [begin, end) of set `set`: the unit of the parallel loops below (a
// friendster-like graph has n = 8 sets of tens of millions of ids: one set
// per thread left most of 64 cores idle).
struct Block {
  size_t set;
  int64_t begin, end;
};

template <typename Sets>
std::vector<Block> blocks_of(const Sets& sets) {
  const int64_t g = kParallelMin;
  std::vector<Block> blocks;
  for (size_t k = 0; k < sets.size(); ++k) {
    const auto size = static_cast<int64_t>(sets[k].size());
    for (int64_t b = 0; b < size; b += g) blocks.push_back({k, b, std::min(size, b + g)});
  }
  return blocks;
}

Membership build_membership(const std::vector<VertexSet>& sets, int64_t num_vertices) {
  Membership mb;
  // Classic two-pass CSR: counts at v + 2, prefix sums, then filling with
  // offsets[v + 1]++ leaves offsets[v] = start of v.
  const bool parallel = total_size(sets) >= kParallelMin;
  resize_for_overwrite(mb.offsets, static_cast<size_t>(num_vertices) + 2);
  int64_t* off = mb.offsets.data();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t v = 0; v < num_vertices + 2; ++v) off[v] = 0;
  const std::vector<Block> blocks = blocks_of(sets);
  const auto nblocks = static_cast<int64_t>(blocks.size());
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t t = 0; t < nblocks; ++t) {
    const Block& b = blocks[t];
    for (int64_t x = b.begin; x < b.end; ++x) {
#pragma omp atomic
      ++off[sets[b.set][x] + 2];
    }
  }
  // offsets[1] = 0: the inclusive scan from there is the serial loop
  // offsets[v] += offsets[v - 1] for v >= 2.
  if (parallel) parallel_inclusive_scan(std::span<int64_t>(mb.offsets).subspan(1));
  else
    for (int64_t v = 2; v < num_vertices + 2; ++v) off[v] += off[v - 1];
  // Every entry is written below: fresh pages faulted by all threads, not
  // zeroed by one (P ids: hundreds of millions on a friendster-like graph).
  resize_for_overwrite(mb.batches, static_cast<size_t>(off[num_vertices + 1]));
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
  for (int64_t t = 0; t < nblocks; ++t) {
    const Block& b = blocks[t];
    for (int64_t x = b.begin; x < b.end; ++x) {
      int64_t k;
#pragma omp atomic capture
      k = off[sets[b.set][x] + 1]++;
      mb.batches[k] = static_cast<int32_t>(b.set);
    }
  }
  mb.offsets.pop_back();
  return mb;
}

// overlap[s][b] = |{v in sets[s] : b in L_v}| = |sets[s] ∩ U_b|. Blocks of
// a set count on their own and add into the set's row (integer sums: the
// same whatever the schedule).
template <typename Sets>
std::vector<std::vector<int64_t>> overlap_matrix(const Sets& sets, const Membership& mb, int n) {
  std::vector<std::vector<int64_t>> overlap(sets.size(), std::vector<int64_t>(n, 0));
  int64_t work = 0;
  for (const auto& s : sets) work += static_cast<int64_t>(s.size());
  const std::vector<Block> blocks = blocks_of(sets);
  const auto nblocks = static_cast<int64_t>(blocks.size());
#pragma omp parallel if (work >= kParallelMin)
  {
    std::vector<int64_t> c(n);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < nblocks; ++t) {
      const Block& b = blocks[t];
      std::fill(c.begin(), c.end(), 0);
      for (int64_t x = b.begin; x < b.end; ++x)
        for (int32_t u : mb.of(sets[b.set][x])) ++c[u];
      int64_t* row = overlap[b.set].data();
      for (int u = 0; u < n; ++u)
        if (c[u] != 0) {
#pragma omp atomic
          row[u] += c[u];
        }
    }
  }
  return overlap;
}

// U = U ∪ add (by all threads when large, sorted_sets.hpp).
void unite(VertexSet& u, std::span<const vid_t> add) {
  const std::span<const vid_t> lists[] = {u, add};
  VertexSet out = sorted_sets::unite(lists);
  u.swap(out);
}

// Phase 1: batch_chunk[b * m + i] = chunk of partition i in (phase-1) batch
// b; `unions` receives U_b.
std::vector<int32_t> group_chunks(const ChunkNeighbors& nbr, int m, int n, int64_t num_vertices,
                                  std::vector<VertexSet>& unions) {
  std::vector<int32_t> batch_chunk(static_cast<size_t>(m) * n);
  unions.assign(n, {});
  // Partition 0's sets, each copied by all threads into pages they fault in
  // (one thread copied and faulted V_ori / m ids).
  for (int b = 0; b < n; ++b) {
    batch_chunk[static_cast<size_t>(b) * m] = b;
    unions[b] = copy_to_vector(nbr[b]);
  }
  for (int i = 1; i < m; ++i) {
    const ChunkNeighbors mine(nbr.begin() + static_cast<int64_t>(i) * n, nbr.begin() + static_cast<int64_t>(i + 1) * n);
    const auto overlap = overlap_matrix(mine, build_membership(unions, num_vertices), n);  // [chunk][batch]
    std::vector<char> taken(n, 0);
    for (int b = 0; b < n; ++b) {
      int best = -1;
      for (int c = 0; c < n; ++c)
        if (!taken[c] && (best < 0 || overlap[c][b] > overlap[best][b])) best = c;
      taken[best] = 1;
      batch_chunk[static_cast<size_t>(b) * m + i] = best;
    }
    // U_b only matters to later partitions, so the unions can wait for all
    // of this partition's choices.
    // Batches side by side when there are enough for the threads; else one
    // after another, each union by all threads.
#pragma omp parallel for schedule(dynamic, 1) if (total_size(unions) >= kParallelMin && n >= omp_get_max_threads())
    for (int b = 0; b < n; ++b) unite(unions[b], mine[batch_chunk[static_cast<size_t>(b) * m + i]]);
  }
  return batch_chunk;
}

// Greedy path through the batches from `start`, each step to the unvisited
// batch sharing most transition vertices with the current one. Returns the
// path; `total` receives the sum of its consecutive overlaps.
std::vector<int> greedy_path(const std::vector<std::vector<int64_t>>& overlap, int start, int64_t& total) {
  const int n = static_cast<int>(overlap.size());
  std::vector<int> path{start};
  std::vector<char> visited(n, 0);
  visited[start] = 1;
  total = 0;
  for (int step = 1; step < n; ++step) {
    const auto& row = overlap[path.back()];
    int best = -1;
    for (int b = 0; b < n; ++b)
      if (!visited[b] && (best < 0 || row[b] > row[best])) best = b;
    visited[best] = 1;
    total += row[best];
    path.push_back(best);
  }
  return path;
}

// Phase 2: the order of the phase-1 batches. The paper starts from batch 0;
// we try every start and keep the path with the largest total overlap
// (= smallest V_ru for the fixed batch contents), ties to the lowest start.
std::vector<int> order_batches(const std::vector<VertexSet>& unions, int64_t num_vertices) {
  const int n = static_cast<int>(unions.size());
  const auto overlap = overlap_matrix(unions, build_membership(unions, num_vertices), n);
  std::vector<int64_t> totals(n, 0);
#pragma omp parallel for schedule(dynamic, 1) if (n >= 64)
  for (int s = 0; s < n; ++s) greedy_path(overlap, s, totals[s]);
  const int start = static_cast<int>(std::max_element(totals.begin(), totals.end()) - totals.begin());
  int64_t total = 0;
  return greedy_path(overlap, start, total);
}

}  // namespace

BatchOrder reorganize(const ChunkNeighbors& chunk_nbr, int m, int n, int64_t num_vertices,
                      std::vector<std::vector<vid_t>>* unions_out) {
  HT_CHECK(m >= 1 && n >= 1 && chunk_nbr.size() == static_cast<size_t>(m) * n,
           "reorganize: {} neighbor sets for m = {}, n = {}", chunk_nbr.size(), m, n);
  Timer timer;
  std::vector<VertexSet> unions;
  const std::vector<int32_t> batch_chunk = group_chunks(chunk_nbr, m, n, num_vertices, unions);
  const double phase1 = timer.seconds();
  const std::vector<int> path = order_batches(unions, num_vertices);
  BatchOrder order;
  order.m = m;
  order.n = n;
  order.chunk.resize(batch_chunk.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      order.chunk[static_cast<size_t>(j) * m + i] = batch_chunk[static_cast<size_t>(path[j]) * m + i];
  if (unions_out) {
    unions_out->resize(n);
    for (int j = 0; j < n; ++j) (*unions_out)[j] = std::move(unions[path[j]]);
  }
  log::debug("reorganize: phase 1 {:.3f} s, phase 2 {:.3f} s", phase1, timer.seconds() - phase1);
  HT_ASSERT(order.valid());
  return order;
}

}  // namespace ht
