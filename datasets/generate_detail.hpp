#pragma once
// Private machinery shared by the synthetic generators (not a public API).
//
// Determinism: every random draw is a pure function of (seed, domain tag,
// block or vertex id, ...) through the counter-based RNG of core/rng.hpp, and
// work is cut into blocks of a fixed size, so the output depends on the seed
// only, never on the thread count or the schedule.
//
// CSC in two passes: the edges of each block are generated twice. Pass 1
// counts in-degrees into the offsets array (atomic increments), pass 2
// regenerates the same blocks and scatters each source to its destination's
// next free slot (atomic cursor). The scatter order within one destination
// depends on the schedule, but each destination's sources are sorted right
// after, and a sorted multiset has exactly one arrangement: the arrays are
// identical for any thread count. Extra memory beyond the output: none (the
// cursors live in the offsets array itself).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/bulk_memory.hpp"
#include "core/log.hpp"
#include "core/progress.hpp"
#include "core/rng.hpp"
#include "core/timer.hpp"
#include "datasets/generators.hpp"
#include "graph/feature_rows.hpp"
#include "graph/graph.hpp"

namespace ht::gen::detail {

// Edges generated per RNG block. Fixed: changing it changes the graphs.
inline constexpr int64_t kEdgeBlock = int64_t{1} << 16;
// Vertices per block of deterministic reductions.
inline constexpr int64_t kVertexBlock = int64_t{1} << 14;
// Loops over fewer items than this run on one thread: a parallel region
// costs more than it saves (far more on an oversubscribed machine, where a
// barrier can wait for a descheduled thread).
inline constexpr int64_t kParallelMin = int64_t{1} << 15;

// Domain tags: independent random streams drawn from one user seed.
enum Tag : uint64_t {
  kTagEdges = 0x45444745,  // "EDGE"
  kTagFeatures,
  kTagLabels,
  kTagSplit,
  kTagDegree,
  kTagClassMean,
  kTagScramble,
  kTagOutDegree,
  kTagHostSize,
  kTagHostClass,
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The RNG stream of one edge block.
inline rng::Stream block_stream(uint64_t seed, int64_t block) {
  return rng::Stream(rng::hash(seed, kTagEdges), static_cast<uint64_t>(block));
}

// Sum of f(i) for i in [0, n), added in a fixed order (per-block partial sums
// in parallel, then the partials in block order) so that the floating-point
// result does not depend on the thread count.
template <typename F>
double deterministic_sum(int64_t n, F f) {
  const int64_t nb = ceil_div(n, kVertexBlock);
  std::vector<double> part(nb, 0.0);
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t b = 0; b < nb; ++b) {
    double s = 0;
    const int64_t end = std::min(n, (b + 1) * kVertexBlock);
    for (int64_t i = b * kVertexBlock; i < end; ++i) s += f(i);
    part[b] = s;
  }
  double total = 0;
  for (double s : part) total += s;
  return total;
}

// What the sort pass learned about the topology.
struct TopologyScan {
  bool has_self_loops = false;
  bool has_duplicates = false;
};

// Sorts ids below 2^bits: LSD radix sort (passes of at most 11 bits) for
// long lists, std::sort for short ones. Random neighbor lists of a few
// hundred ids sort 5x faster by radix (std::sort mispredicts every other
// comparison); below ~256 ids the histograms cost more than they save.
inline void sort_ids(std::span<vid_t> ids, int bits, std::vector<vid_t>& tmp) {
  const size_t n = ids.size();
  if (n < 256) {
    std::sort(ids.begin(), ids.end());
    return;
  }
  const int passes = std::max(1, (bits + 10) / 11), width = (bits + passes - 1) / passes;
  const uint32_t mask = (uint32_t{1} << width) - 1;
  tmp.resize(n);
  vid_t *from = ids.data(), *to = tmp.data();
  std::array<size_t, (size_t{1} << 11) + 1> count;
  for (int shift = 0; shift < passes * width; shift += width) {
    std::fill(count.begin(), count.begin() + mask + 2, 0);
    for (size_t i = 0; i < n; ++i) ++count[((from[i] >> shift) & mask) + 1];
    for (uint32_t d = 0; d <= mask; ++d) count[d + 1] += count[d];
    for (size_t i = 0; i < n; ++i) to[count[(from[i] >> shift) & mask]++] = from[i];
    std::swap(from, to);
  }
  if (from != ids.data()) std::copy(from, from + n, ids.data());
}

// Bits needed for ids below n.
inline int id_bits(int64_t n) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

// Sorts each destination's sources ascending and notes self-loops and
// adjacent duplicates on the way (no extra pass over the edges). Works on
// any offsets into `sources` (ranges [offsets[v], offsets[v + 1]) of a
// larger array too: tests/test_offsets_64bit.cpp).
inline TopologyScan sort_and_scan(std::span<const int64_t> offsets, std::span<vid_t> sources) {
  const Timer timer;
  bool loops = false, dups = false;
  const auto n = static_cast<int64_t>(offsets.size()) - 1;
  const int bits = id_bits(n);
#pragma omp parallel reduction(|| : loops, dups) if (offsets.back() - offsets.front() > kParallelMin)
  {
    std::vector<vid_t> tmp;
#pragma omp for schedule(dynamic, 1024)
    for (int64_t v = 0; v < n; ++v) {
      const std::span<vid_t> ids = sources.subspan(offsets[v], offsets[v + 1] - offsets[v]);
      sort_ids(ids, bits, tmp);
      if (std::binary_search(ids.begin(), ids.end(), static_cast<vid_t>(v))) loops = true;
      if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) dups = true;
    }
  }
  log::debug("sorting {} in-lists: {:.2f} s", n, timer.seconds());
  return {loops, dups};
}

inline TopologyScan sort_and_scan(Graph& g) {
  const TopologyScan scan = sort_and_scan(g.offsets, g.sources);
  g.flags.sorted_neighbors = true;
  return scan;
}

// Edges of one block are handled in batches: on x86 every atomic increment
// is a full fence that waits for all earlier stores, so interleaving
// "increment cursor, store source" serializes the cache misses of the
// random stores (2x the CPU time on 10^8 edges). Per batch: prefetch the
// counters, do all increments, then all stores, which overlap.
class EdgeBatch {
 public:
  static constexpr int kSize = 256;
  // Pass 1 (sources == nullptr): counts in-degrees into counters[dst].
  // Pass 2: counters[dst] is dst's cursor; stores src at the claimed slot.
  EdgeBatch(int64_t* counters, vid_t* sources) : counters_(counters), sources_(sources) {}
  void add(vid_t src, vid_t dst) {
    src_[size_] = src;
    dst_[size_] = dst;
    if (++size_ == kSize) flush();
  }
  void flush() {
    for (int i = 0; i < size_; ++i) __builtin_prefetch(counters_ + dst_[i], 1);
    if (sources_ == nullptr) {
      for (int i = 0; i < size_; ++i)
        std::atomic_ref<int64_t>(counters_[dst_[i]]).fetch_add(1, std::memory_order_relaxed);
    } else {
      for (int i = 0; i < size_; ++i)
        slot_[i] = std::atomic_ref<int64_t>(counters_[dst_[i]]).fetch_add(1, std::memory_order_relaxed);
      for (int i = 0; i < size_; ++i) sources_[slot_[i]] = src_[i];
    }
    size_ = 0;
  }

 private:
  int64_t* counters_;
  vid_t* sources_;
  int size_ = 0;
  vid_t src_[kSize], dst_[kSize];
  int64_t slot_[kSize];
};

// Builds the CSC of the directed edges emitted by `gen_block(b, emit)` for
// blocks b in [0, num_blocks); `emit(src, dst)` must be called with the same
// sequence every time gen_block is called with the same b. The caller sorts
// each destination's sources afterwards (sort_and_scan), which is what makes
// the arrays independent of the schedule. `what` names the work for progress.
template <typename GenBlock>
Graph csc_from_edge_blocks(int64_t num_vertices, int64_t num_blocks, GenBlock gen_block,
                           int64_t expected_edges, const std::string& what) {
  Graph g;
  g.num_vertices = num_vertices;
  // Both arrays are first touched by all threads (core/bulk_memory.hpp): a
  // serial zero-fill of E ids costs more than drawing them on a VM.
  resize_for_overwrite(g.offsets, static_cast<size_t>(num_vertices + 1));
  int64_t* off = g.offsets.data();
  // Pass 1 counts the in-degree of v in off[v]; pass 2 uses off[v] as v's
  // cursor (it ends at v's end = the start of v + 1).
  auto pass = [&](vid_t* sources, const std::string& name, int64_t total) {
    Progress progress(name, total, "edges");
#pragma omp parallel for schedule(dynamic, 1) if (num_blocks > 1)
    for (int64_t b = 0; b < num_blocks; ++b) {
      EdgeBatch batch(off, sources);
      int64_t count = 0;
      gen_block(b, [&](vid_t src, vid_t dst) {
        batch.add(src, dst);
        ++count;
      });
      batch.flush();
      progress.add(count);
    }
  };
  Timer timer;
  pass(nullptr, what + " (pass 1/2: degrees)", expected_edges);
  log::debug("{}: pass 1/2 (draw, count) {:.2f} s", what, timer.seconds());
  // Exclusive prefix sum: off[v] = first slot of v, off[N] = E.
  int64_t total = 0;
  for (int64_t v = 0; v <= num_vertices; ++v) {
    const int64_t d = off[v];
    off[v] = total;
    total += d;
  }
  timer.reset();
  resize_for_overwrite(g.sources, static_cast<size_t>(total));
  pass(g.sources.data(), what + " (pass 2/2: scatter)", total);
  log::debug("{}: pass 2/2 (draw, scatter) {:.2f} s", what, timer.seconds());
  // Cursors now hold the ends: shift right by one to get the offsets back.
  if (num_vertices > 0) std::copy_backward(off, off + num_vertices, off + num_vertices + 1);
  off[0] = 0;
  return g;
}

// Parameter checks; each throws ht::Error naming the offending field.
void validate_vertex_data(const VertexDataParams& p);
void validate_split_fractions(double train, double val);

// One standard normal per (seed, row, column), from a Box-Muller pair keyed
// by (seed, row, column / 2): parallel, deterministic, any evaluation order.
void fill_normal_row(uint64_t seed, int64_t row, std::span<float> out, float scale);

// Uniform labels in [0, C) keyed by (seed, vertex).
int32_t uniform_label(uint64_t seed, int64_t v, int32_t num_classes);

// Split code of vertex v: train with probability `train`, validation with
// probability `val`, test otherwise (keyed by (seed, vertex)).
std::vector<uint8_t> make_split(int64_t n, double train, double val, uint64_t seed);

// Labels and split of the random/R-MAT generators: uniform labels, split
// from fractions (none without classes).
void attach_random_labels(Graph& g, const VertexDataParams& p, uint64_t seed);

// N(0, 1) feature rows of the random/R-MAT generators (none for dim 0).
FeatureRows normal_feature_rows(uint64_t seed, int32_t dim);

// Class-correlated feature rows of the community and web generators: class k
// has a fixed random sign vector s_k in {-1, +1}^F; row v is
// signal * s_{label_of(v)} / sqrt(F) + noise * N(0, 1)^F.
FeatureRows class_feature_rows(uint64_t seed, int32_t dim, int32_t num_classes, double signal, double noise,
                               std::function<int32_t(int64_t)> label_of);

// A seeded bijection of [0, 2^bits): two rounds of odd multiply-add mod 2^bits
// followed by an xor-shift (each step invertible). Spreads the R-MAT hubs
// (which otherwise all sit at low ids) over the id range.
class IdScramble {
 public:
  IdScramble(uint64_t seed, int bits);
  uint64_t operator()(uint64_t x) const {
    x = (x * mul_[0] + add_[0]) & mask_;
    x ^= x >> shift_;
    x = (x * mul_[1] + add_[1]) & mask_;
    x ^= x >> shift_;
    return x;
  }
  // The inverse bijection: each step undone in reverse order (the xor-shift
  // is its own inverse because 2 * shift >= bits).
  uint64_t inverse(uint64_t x) const {
    x ^= x >> shift_;
    x = ((x - add_[1]) * inv_[1]) & mask_;
    x ^= x >> shift_;
    x = ((x - add_[0]) * inv_[0]) & mask_;
    return x;
  }

 private:
  uint64_t mask_;
  int shift_;
  uint64_t mul_[2], add_[2], inv_[2];  // inv_[i] * mul_[i] = 1 mod 2^64
};

// A seeded bijection of [0, n) for any n: IdScramble on the smallest power
// of two >= n, applied again while the result is >= n ("cycle walking": the
// walk stays on x's cycle, so it ends at the cycle's next element below n;
// fewer than 2 steps on average since 2^bits < 2n). Shuffles vertex ids so
// that the order a generator builds in (hosts contiguous) is not given away.
class IdPermutation {
 public:
  IdPermutation(uint64_t seed, int64_t n) : n_(static_cast<uint64_t>(n)), f_(seed, id_bits(n)) {}
  uint64_t operator()(uint64_t x) const {
    do x = f_(x);
    while (x >= n_);
    return x;
  }
  uint64_t inverse(uint64_t y) const {
    do y = f_.inverse(y);
    while (y >= n_);
    return y;
  }

 private:
  uint64_t n_;
  IdScramble f_;
};

}  // namespace ht::gen::detail
