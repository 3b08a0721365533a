#pragma once
// Deterministic parallel rounds of the multilevel partitioner's label
// propagation (clustering and refinement alike). A round visits every vertex
// once, in sub-rounds: within a sub-round all vertices decide from the state
// at its start (in parallel, read-only), then the moves that respect the
// weight limit are applied together. Which vertex is in which sub-round is a
// hash of (seed, round key, vertex), and the moves a target takes when it
// cannot take them all are chosen by a total order; so the result does not
// depend on the thread count or on timing.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "graph/types.hpp"
#include "partition/ml_graph.hpp"

namespace ht::ml {

inline constexpr vid_t kNoTarget = ~vid_t{0};

// Steps of a sub-round with less work than this (moves, vertices or adjacency
// entries) run on the calling thread alone. A sub-round has up to ten
// parallel steps; on coarse levels most of them have a few thousand items,
// and their fork and barrier (all threads, each a chance to wait for a
// preempted one) cost more than the work at any thread count. Every step
// gives the same result on one thread as on many.
inline constexpr int64_t kSerialBelow = int64_t{1} << 14;

// Threads for a step over `count` items of work_of(i) each (at least 1): one
// per kWorkPerThread (adjacency entries: a few hundred microseconds, far more
// than a fork and barrier), at most omp_get_max_threads(), counted only as
// far as that needs (a bounded serial scan). A sub-round of a coarse level
// has a few thousand rows; all threads for it meant a fork and barrier of all
// of them for a millisecond of work, and a wait for any one thread preempted
// (2 threads on 2 busy cores: 10-20 ms per sub-round on levels of 2-8 k
// vertices, against 0.3-1 ms on one thread).
inline constexpr int64_t kWorkPerThread = int64_t{1} << 16;
template <typename Work>
int threads_for(int64_t count, Work work_of) {
  const int most = omp_get_max_threads();
  const int64_t enough = kWorkPerThread * most;
  int64_t work = 0;
  for (int64_t i = 0; i < count && work < enough; ++i) work += work_of(i);
  return static_cast<int>(std::clamp<int64_t>(work / kWorkPerThread, 1, most));
}

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

// The moves of a sub-round, moves[0, count), in storage kept across the
// sub-rounds of a call: each vector only grows. Fresh vectors per sub-round
// (friendster-like: 8 M moves of 32 B, three times) were mapped, faulted in,
// zero-filled serially and unmapped again every sub-round, which made
// "select" as slow as "mark" on 64 cores. The storage never changes a move.
struct MoveBuffers {
  std::vector<Move> moves, kept, contested;  // kept, contested: accept_moves' scratch
  int64_t count = 0;
  std::span<const Move> selected() const { return std::span<const Move>(moves.data(), static_cast<size_t>(count)); }
};

// The proposals with a target, in their order (parallel, fixed blocks), into
// b.moves[0, b.count).
void compact_moves(std::span<const Move> proposals, MoveBuffers& b);
std::vector<Move> compact_moves(std::span<const Move> proposals);

// Keeps the moves that fit, in place (moves not kept are removed): a target t
// takes all of its moves when load[t] + their weight <= limit; otherwise it
// takes them in order of (gain descending, tie, v) while each still fits.
// Departures are not counted as freeing room (conservative: the limit holds
// whatever else moves). `incoming` has one zero per target and is left zero.
void accept_moves(MoveBuffers& b, std::span<const weight_t> load, weight_t limit, std::vector<weight_t>& incoming);
void accept_moves(std::vector<Move>& moves, std::span<const weight_t> load, weight_t limit,
                  std::vector<weight_t>& incoming);

// One T per thread of the calling team, each on cache lines of its own, kept
// across the sub-rounds and rounds of a call: the per-thread scratch of the
// proposal steps (rating tables sized for the largest row seen, label
// buffers). Built per sub-round inside the parallel region, a hub row's table
// of megabytes was allocated, page-faulted and zeroed again by every thread
// in every sub-round, whatever the level's size. The scratch never changes
// a proposal.
template <typename T>
class PerThread {
 public:
  template <typename... Args>
  explicit PerThread(const Args&... args) {
    const size_t threads = static_cast<size_t>(omp_get_max_threads());
    slots_.reserve(threads);
    for (size_t t = 0; t < threads; ++t) slots_.push_back(Slot{T(args...)});
  }
  // The calling thread's T (inside a parallel region of at most
  // omp_get_max_threads() threads, as seen when this was built).
  T& local() { return slots_[static_cast<size_t>(omp_get_thread_num())].value; }

 private:
  struct alignas(64) Slot {
    T value;
  };
  std::vector<Slot> slots_;
};

// Seconds of a call's label-propagation steps, summed over its sub-rounds,
// for the log line of each level: what a level costs beyond its size shows as
// a step that does not shrink with it.
struct StepTimes {
  double setup = 0;    // sub-round orders, the active set's next round
  double propose = 0;  // the parallel proposals
  double select = 0;   // compact_moves and accept_moves
  double apply = 0;    // weights and labels updated
  double mark = 0;     // ActiveSet::mark_neighbors
  int rounds = 0;
  int sub_rounds = 0;
  std::string summary() const;  // "R rounds / S sub-rounds: propose x s, ..."
};

// Which vertices a round looks at: every vertex in the first round, then
// those next to a vertex that moved (nothing else changed around the
// others). A move marks its neighbors both for the rest of the current round
// and for the next one. Both marks of a vertex share its byte (kNow, kNext):
// one cache miss per neighbor instead of two.
//
// In the first round every vertex is active anyway, so a move's marks only
// matter for the next round: they are made when the round ends, from the
// vertices that moved (flagged kMoved meanwhile). Where most vertices moved
// (the first clustering round of an input level: 98 %), the next round's set
// is pulled: v is active when any neighbor moved, found after one or two
// looks, instead of every moved vertex marking its whole row (friendster-
// like's input level on 64 cores: "mark" 3.8 s of 20.8 s clustering). The
// pull finds the same set where the neighbor relation is symmetric (u sees v
// whenever v sees u), which G::symmetric_neighbors() guarantees by
// construction; a file that only claims to be symmetric is pushed as before.
class ActiveSet {
 public:
  explicit ActiveSet(int64_t n);
  bool active(int64_t v) const { return (state_[v] & kNow) != 0; }
  // Threads for proposing moves of `vertices` (threads_for): an inactive
  // vertex costs a byte load, an active one its row.
  template <typename G>
  int proposal_threads(const G& g, std::span<const vid_t> vertices) const {
    return threads_for(static_cast<int64_t>(vertices.size()), [&](int64_t i) {
      const vid_t v = vertices[static_cast<size_t>(i)];
      return active(v) ? 1 + g.degree(v) : int64_t{1};
    });
  }
  // After the moves of a sub-round are applied (in parallel).
  template <typename G>
  void mark_neighbors(const G& g, std::span<const Move> moves);
  // The marks for the next round become current.
  template <typename G>
  void next_round(const G& g);

 private:
  static constexpr uint8_t kNow = 1, kNext = 2;
  static constexpr uint8_t kMoved = 2;  // first round: v moved (kNext's bit: no next marks then)
  static constexpr uint8_t kFound = 4;  // first round's end: v is active in the next round

  // Sets `bits` in u's byte where some are missing. Every writer of a phase
  // sets the same bits into a byte no one else changes then, so plain
  // (relaxed) stores of the same value race harmlessly, and a byte already
  // marked is only read: on a coarse level (10^4 vertices, 10^6 marks per
  // sub-round) every store was a cache line taken from another core.
  void set_bits(vid_t u, uint8_t bits) {
    std::atomic_ref<uint8_t> s(state_[u]);
    const uint8_t old = s.load(std::memory_order_relaxed);
    if ((old & bits) != bits) s.store(old | bits, std::memory_order_relaxed);
  }
  // state = f(state) for every vertex, in parallel.
  template <typename F>
  void transform(F f) {
    const int64_t n = static_cast<int64_t>(state_.size());
#pragma omp parallel for schedule(static) if (n >= kSerialBelow)
    for (int64_t v = 0; v < n; ++v) state_[v] = f(state_[v]);
  }

  std::vector<uint8_t> state_;
  bool first_round_ = true;  // every vertex active; kMoved flags the vertices that moved
  int64_t moved_ = 0;        // in the first round
};

template <typename G>
void ActiveSet::mark_neighbors(const G& g, std::span<const Move> moves) {
  const int64_t count = static_cast<int64_t>(moves.size());
  if (first_round_) {
    // Distinct vertices, each byte written by one thread.
#pragma omp parallel for schedule(static) if (count >= kSerialBelow)
    for (int64_t i = 0; i < count; ++i) state_[moves[i].v] |= kMoved;
    moved_ += count;
    return;
  }
  // Idempotent byte stores: the result does not depend on the order.
  const int threads = threads_for(count, [&](int64_t i) { return 1 + g.degree(moves[i].v); });
#pragma omp parallel for schedule(dynamic, 64) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < count; ++i)
    g.for_each_neighbor(moves[i].v, [&](vid_t u, weight_t) { set_bits(u, kNow | kNext); });
}

template <typename G>
void ActiveSet::next_round(const G& g) {
  if (!first_round_) {
    transform([](uint8_t s) { return static_cast<uint8_t>((s & kNext) != 0 ? kNow : 0); });
    return;
  }
  first_round_ = false;
  const int64_t n = static_cast<int64_t>(state_.size());
  // Pulled when at least a quarter of the vertices moved: then most vertices
  // find a moved neighbor at once, while pushing costs the rows of all of
  // them. Either way kFound marks the next round's set; kMoved is only read.
  constexpr int64_t kGrain = 4096;
  if (g.symmetric_neighbors() && 4 * moved_ >= n) {
#pragma omp parallel for schedule(dynamic, kGrain) if (n >= kSerialBelow)
    for (int64_t v = 0; v < n; ++v) {
      const bool found = g.any_neighbor(v, [&](vid_t u) {
        return (std::atomic_ref<uint8_t>(state_[u]).load(std::memory_order_relaxed) & kMoved) != 0;
      });
      if (found) set_bits(static_cast<vid_t>(v), kFound);
    }
  } else {
#pragma omp parallel for schedule(dynamic, kGrain) if (n >= kSerialBelow && moved_ > 0)
    for (int64_t v = 0; v < n; ++v) {
      if ((std::atomic_ref<uint8_t>(state_[v]).load(std::memory_order_relaxed) & kMoved) == 0) continue;
      g.for_each_neighbor(v, [&](vid_t u, weight_t) { set_bits(u, kFound); });
    }
  }
  transform([](uint8_t s) { return static_cast<uint8_t>((s & kFound) != 0 ? kNow : 0); });
}

}  // namespace ht::ml
