// The multilevel partitioner's active set (partition/ml_moves.hpp): the
// first round's marks are made at its end, pulled (each vertex looks for a
// moved neighbor) where most vertices moved and the neighbor relation is
// symmetric by construction, pushed (each moved vertex marks its row)
// otherwise. Both must give exactly the set the per-sub-round push gave:
// the vertices next to a vertex that moved.
#include <omp.h>

#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "core/progress.hpp"
#include "core/rng.hpp"
#include "partition/ml_contract.hpp"
#include "partition/ml_graph.hpp"
#include "partition/ml_moves.hpp"
#include "test_partition_graphs.hpp"

namespace ht {
namespace {

using test::random_graph;

// G as it is, except that it never claims a symmetric neighbor relation:
// the active set then pushes, as it did for every round before.
template <typename G>
struct Pushed {
  const G& g;
  int64_t num_vertices() const { return g.num_vertices(); }
  int64_t degree(int64_t v) const { return g.degree(v); }
  template <typename F>
  void for_each_neighbor(int64_t v, F&& f) const {
    g.for_each_neighbor(v, f);
  }
  template <typename P>
  bool any_neighbor(int64_t v, P&& p) const {
    return g.any_neighbor(v, p);
  }
  bool symmetric_neighbors() const { return false; }
};

// The vertices next to a vertex in `moved`, by for_each_neighbor.
template <typename G>
std::vector<uint8_t> next_to(const G& g, const std::vector<ml::Move>& moved) {
  std::vector<uint8_t> near(static_cast<size_t>(g.num_vertices()), 0);
  for (const ml::Move& m : moved) g.for_each_neighbor(m.v, [&](vid_t u, ml::weight_t) { near[u] = 1; });
  return near;
}

std::vector<uint8_t> active_of(const ml::ActiveSet& a, int64_t n) {
  std::vector<uint8_t> s(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) s[v] = a.active(v) ? 1 : 0;
  return s;
}

// Two rounds of moves of a `fraction` of the vertices (each round in three
// sub-rounds), checked against the definition after every step, for the
// graph as it is and pushed.
template <typename G>
void check_rounds(const G& g, double fraction, uint64_t seed) {
  const int64_t n = g.num_vertices();
  ASSERT_TRUE(g.symmetric_neighbors());
  rng::Stream rs(seed, 1);
  std::vector<std::vector<ml::Move>> rounds(2, std::vector<ml::Move>());
  for (auto& moves : rounds)
    for (int64_t v = 0; v < n; ++v)
      if (rs.uniform() < fraction) {
        ml::Move m;
        m.v = static_cast<vid_t>(v);
        m.target = 0;
        moves.push_back(m);
      }
  const Pushed<G> pushed{g};
  for (int threads : {1, 3}) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    ml::ActiveSet a(n), b(n);
    const std::span<const ml::Move> first(rounds[0]);
    for (size_t s = 0; s < 3; ++s) {
      const auto part = first.subspan(first.size() * s / 3, first.size() * (s + 1) / 3 - first.size() * s / 3);
      a.mark_neighbors(g, part);
      b.mark_neighbors(pushed, part);
      EXPECT_EQ(active_of(a, n), std::vector<uint8_t>(static_cast<size_t>(n), 1));  // all, all round
    }
    a.next_round(g);
    b.next_round(pushed);
    const std::vector<uint8_t> expect = next_to(g, rounds[0]);
    EXPECT_EQ(active_of(a, n), expect) << "pulled or pushed at the round's end, " << threads << " threads";
    EXPECT_EQ(active_of(b, n), expect) << "pushed, " << threads << " threads";
    // The second round: marks for the rest of it and for the next one.
    a.mark_neighbors(g, std::span<const ml::Move>(rounds[1]));
    b.mark_neighbors(pushed, std::span<const ml::Move>(rounds[1]));
    std::vector<uint8_t> now = next_to(g, rounds[1]);
    for (int64_t v = 0; v < n; ++v) now[v] |= expect[v];
    EXPECT_EQ(active_of(a, n), now);
    EXPECT_EQ(active_of(b, n), now);
    a.next_round(g);
    b.next_round(pushed);
    EXPECT_EQ(active_of(a, n), next_to(g, rounds[1]));
    EXPECT_EQ(active_of(b, n), next_to(g, rounds[1]));
    omp_set_num_threads(saved);
  }
}

TEST(MultilevelActiveSet, PulledMarksAreThePushedOnesOnTheInputLevel) {
  // Directed, with duplicates and self-loops (which mark nothing): the
  // transpose makes the neighbor relation symmetric. Enough vertices for the
  // parallel paths (2^14 and more).
  const Graph g = random_graph(40000, 200000, 31);
  const ml::FineLevel fine(g.view(), PartitionParams{});
  ASSERT_TRUE(fine.uses_transpose());
  for (double fraction : {0.02, 0.3, 0.9}) check_rounds(fine, fraction, 7);
}

TEST(MultilevelActiveSet, PulledMarksAreThePushedOnesOnACoarseLevel) {
  const Graph g = random_graph(60000, 240000, 32);
  const ml::FineLevel fine(g.view(), PartitionParams{});
  std::vector<vid_t> label(60000);
  for (int64_t v = 0; v < 60000; ++v) label[v] = static_cast<vid_t>(v / 3);  // 20000 coarse vertices
  Progress progress("test", 0);
  const ml::CoarseLevel coarse = ml::contract(fine, label, progress);
  ASSERT_EQ(coarse.num_vertices(), 20000);
  for (double fraction : {0.05, 0.8}) check_rounds(coarse, fraction, 8);
}

TEST(MultilevelActiveSet, AGraphOnlyMarkedSymmetricIsPushed) {
  // A lying header: the in-lists alone are read, and v's in-neighbor u does
  // not see v. Pulling would find other vertices; nothing pulls here.
  Graph g = random_graph(20000, 80000, 33);
  g.flags.symmetric = true;
  const ml::FineLevel fine(g.view(), PartitionParams{});
  ASSERT_FALSE(fine.symmetric_neighbors());
  const ml::CoarseLevel coarse = [&] {
    std::vector<vid_t> label(20000);
    for (int64_t v = 0; v < 20000; ++v) label[v] = static_cast<vid_t>(v / 2);
    Progress progress("test", 0);
    return ml::contract(fine, label, progress);
  }();
  EXPECT_FALSE(coarse.symmetric_neighbors());
  std::vector<ml::Move> moves;
  for (int64_t v = 0; v < 20000; v += 2) {  // half the vertices: enough to pull, were it allowed
    ml::Move m;
    m.v = static_cast<vid_t>(v);
    m.target = 0;
    moves.push_back(m);
  }
  ml::ActiveSet a(20000);
  a.mark_neighbors(fine, std::span<const ml::Move>(moves));
  a.next_round(fine);
  EXPECT_EQ(active_of(a, 20000), next_to(fine, moves));
}

}  // namespace
}  // namespace ht
