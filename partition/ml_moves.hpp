#pragma once
// Deterministic parallel rounds of the multilevel partitioner's label
// propagation (clustering and refinement alike). A round visits every vertex
// once, in sub-rounds: within a sub-round all vertices decide from the state
// at its start (in parallel, read-only), then the moves that respect the
// weight limit are applied together. Which vertex is in which sub-round is a
// hash of (seed, round key, vertex), and the moves a target takes when it
// cannot take them all are chosen by a total order; so the result does not
// depend on the thread count or on timing.
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "graph/types.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

inline constexpr vid_t kNoTarget = ~vid_t{0};

// Vertices 0..n-1 split into `count` sub-rounds: order[begin[s] ..
// begin[s + 1]) are those of sub-round s, ascending.
struct SubRounds {
  std::vector<vid_t> order;
  std::vector<int64_t> begin;  // count + 1
};
SubRounds make_sub_rounds(int64_t n, int count, uint64_t seed, uint64_t key);

// Vertex v (weight w) wants to move to `target` (kNoTarget: stays), gaining
// `gain` (higher is better); `tie` orders equal gains (a hash of v).
struct Move {
  vid_t v = 0;
  vid_t target = kNoTarget;
  weight_t w = 0;
  weight_t gain = 0;
  uint64_t tie = 0;
};

// Vertices of a sub-round handed to a thread at a time while proposing moves:
// up to 1024, fewer when the sub-round is small, so that every thread gets
// several tasks. Coarse levels have few vertices of thousands of neighbors
// each; 1024-vertex tasks left most of 64 threads idle there (friendster-like:
// 2.5 s for a level of 13 k vertices, 2 tasks per sub-round). Proposals are
// computed independently, so any grain gives the same ones.
int64_t proposal_grain(int64_t count);

// The proposals with a target, in their order (parallel, fixed blocks).
std::vector<Move> compact_moves(std::span<const Move> proposals);

// Keeps the moves that fit, in place (moves not kept are removed): a target t
// takes all of its moves when load[t] + their weight <= limit; otherwise it
// takes them in order of (gain descending, tie, v) while each still fits.
// Departures are not counted as freeing room (conservative: the limit holds
// whatever else moves). `incoming` has one zero per target and is left zero.
void accept_moves(std::vector<Move>& moves, std::span<const weight_t> load, weight_t limit,
                  std::vector<weight_t>& incoming);

// Which vertices a round looks at: every vertex in the first round, then
// those next to a vertex that moved (nothing else changed around the
// others). A move marks its neighbors both for the rest of the current round
// and for the next one.
class ActiveSet {
 public:
  explicit ActiveSet(int64_t n);
  bool active(int64_t v) const { return now_[v] != 0; }
  // After the moves of a sub-round are applied (in parallel).
  template <typename G>
  void mark_neighbors(const G& g, std::span<const Move> moves);
  void next_round();  // the marks for the next round become current

 private:
  std::vector<uint8_t> now_, next_;
};

template <typename G>
void ActiveSet::mark_neighbors(const G& g, std::span<const Move> moves) {
  // Idempotent byte stores: the result does not depend on the order. A mark
  // already set is only read: on a coarse level (10^4 vertices, 10^6 marks
  // per sub-round) every store was a cache line taken from another core.
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < static_cast<int64_t>(moves.size()); ++i)
    g.for_each_neighbor(moves[i].v, [&](vid_t u, weight_t) {
      std::atomic_ref<uint8_t> now(now_[u]), next(next_[u]);
      if (now.load(std::memory_order_relaxed) == 0) now.store(1, std::memory_order_relaxed);
      if (next.load(std::memory_order_relaxed) == 0) next.store(1, std::memory_order_relaxed);
    });
}

}  // namespace ht::ml
