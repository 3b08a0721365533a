// Graph file: round trip of every section, and corruption (truncation, byte
// flips, lies in the header) always gives an ht::Error, never a crash.
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/rng.hpp"
#include "graph/build.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

Graph small_graph(bool weighted) {
  EdgeList el;
  el.num_vertices = 7;
  const int pairs[][2] = {{0, 1}, {1, 0}, {2, 1}, {3, 4}, {4, 3}, {5, 6}, {6, 6}, {1, 2}, {0, 6}};
  for (auto& p : pairs) {
    el.src.push_back(p[0]);
    el.dst.push_back(p[1]);
    if (weighted) el.weight.push_back(0.5f + p[0]);
  }
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = 3;
  for (int i = 0; i < 21; ++i) g.features.push_back(static_cast<float>(i) * 0.25f);
  g.num_classes = 3;
  g.labels = {0, 1, 2, -1, 0, 1, 2};
  g.split = {1, 1, 2, 0, 3, 3, 2};
  g.orig_ids = {10, 11, 12, 13, 14, 15, 16};
  g.flags = detect_flags(g.view());
  return g;
}

}  // namespace

TEST(GraphFile, RoundTripEverySection) {
  for (bool weighted : {false, true}) {
    for (int id_bytes : {4, 8}) {
      test::TempDir dir;
      Graph g = small_graph(weighted);
      write_graph(dir.file("g.htg"), g.view(), {id_bytes});
      GraphFile f(dir.file("g.htg"));
      const GraphView& v = f.view();
      EXPECT_EQ(f.id_bytes(), id_bytes);
      EXPECT_EQ(v.num_vertices, 7);
      EXPECT_EQ(v.num_edges, 9);
      EXPECT_TRUE(std::equal(v.offsets.begin(), v.offsets.end(), g.offsets.begin()));
      EXPECT_TRUE(std::equal(v.sources.begin(), v.sources.end(), g.sources.begin()));
      EXPECT_EQ(v.weights.size(), weighted ? 9u : 0u);
      EXPECT_TRUE(std::equal(v.weights.begin(), v.weights.end(), g.weights.begin()));
      EXPECT_TRUE(std::equal(v.features.begin(), v.features.end(), g.features.begin()));
      EXPECT_TRUE(std::equal(v.labels.begin(), v.labels.end(), g.labels.begin()));
      EXPECT_TRUE(std::equal(v.split.begin(), v.split.end(), g.split.begin()));
      EXPECT_TRUE(std::equal(v.orig_ids.begin(), v.orig_ids.end(), g.orig_ids.begin()));
      EXPECT_EQ(v.feature_dim, 3);
      EXPECT_EQ(v.num_classes, 3);
      EXPECT_EQ(v.flags.has_self_loops, g.flags.has_self_loops);
      EXPECT_EQ(v.flags.sorted_neighbors, true);
    }
  }
}

TEST(GraphFile, TruncationAtManyOffsetsIsAnError) {
  test::TempDir dir;
  Graph g = small_graph(true);
  write_graph(dir.file("g.htg"), g.view());
  const auto bytes = test::read_bytes(dir.file("g.htg"));
  for (size_t cut = 0; cut < bytes.size(); cut += 97) {
    test::write_bytes(dir.file("t.htg"), std::vector<char>(bytes.begin(), bytes.begin() + static_cast<long>(cut)));
    EXPECT_THROW(GraphFile(dir.file("t.htg")), Error) << "cut at " << cut;
  }
}

TEST(GraphFile, ByteFlipsAreDetected) {
  test::TempDir dir;
  Graph g = small_graph(false);
  write_graph(dir.file("g.htg"), g.view());
  const auto bytes = test::read_bytes(dir.file("g.htg"));
  rng::Stream r(1, 2);
  int detected = 0, trials = 0;
  for (size_t pos = 0; pos < bytes.size(); pos += 13) {
    auto b = bytes;
    b[pos] = static_cast<char>(b[pos] ^ (1 + r.below(255)));
    test::write_bytes(dir.file("c.htg"), b);
    ++trials;
    try {
      GraphFile f(dir.file("c.htg"));
      // A flip in padding is harmless; it must not change the data.
      EXPECT_TRUE(std::equal(f.view().sources.begin(), f.view().sources.end(), g.sources.begin()));
    } catch (const Error&) {
      ++detected;
    }
  }
  EXPECT_GT(detected, 0);
  EXPECT_GT(trials, detected / 2);
}

TEST(GraphFile, CorruptDataWithoutChecksumStillValidated) {
  // With checksum verification off, structural validation still catches
  // out-of-range ids and bad offsets.
  test::TempDir dir;
  Graph g = small_graph(false);
  g.sources[3] = 99;  // out of range
  write_graph(dir.file("g.htg"), g.view());
  EXPECT_THROW(GraphFile(dir.file("g.htg"), ReadOptions{false}), Error);
  Graph h = small_graph(false);
  h.labels[2] = 7;  // outside [-1, C)
  write_graph(dir.file("h.htg"), h.view());
  EXPECT_THROW(GraphFile(dir.file("h.htg"), ReadOptions{false}), Error);
}

TEST(GraphFile, WrongKindOfFile) {
  test::TempDir dir;
  write_text_file_atomic(dir.file("x.htg"), std::string(5000, 'a'));
  try {
    GraphFile f(dir.file("x.htg"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos) << e.what();
  }
  EXPECT_THROW(GraphFile(dir.file("missing.htg")), Error);
}

TEST(GraphBuild, TransformsAndFlags) {
  Graph g = small_graph(false);
  EXPECT_TRUE(g.flags.has_self_loops);
  EXPECT_FALSE(g.flags.symmetric);
  Graph s = symmetrize(std::move(g));
  GraphFlags f = detect_flags(s.view());
  EXPECT_TRUE(f.symmetric);
  EXPECT_TRUE(f.no_duplicates);
  Graph n = drop_self_loops(std::move(s));
  EXPECT_FALSE(detect_flags(n.view()).has_self_loops);
  const int64_t e = n.num_edges();
  Graph l = add_self_loops(std::move(n));
  EXPECT_EQ(l.num_edges(), e + 7);
  GraphFlags lf = detect_flags(l.view());
  EXPECT_TRUE(lf.has_self_loops);
  EXPECT_TRUE(lf.sorted_neighbors);
  EXPECT_TRUE(lf.symmetric);
}

// The symmetry check probes a few thousand vertices spread over the ids
// before its passes over all edges: an asymmetry that the probe finds, one
// that only the degree pass finds and one that only the full pass finds
// (the degrees agree and no probed vertex touches it) all give false, and
// the symmetric graph around them true.
TEST(GraphBuild, SymmetryFoundWhereverTheAsymmetryIs) {
  const int64_t n = 10000;  // probes at every second id (4096 of them)
  const auto graph = [&](const std::vector<std::pair<vid_t, vid_t>>& extra) {
    EdgeList el;
    el.num_vertices = n;
    for (int64_t v = 0; v + 2 < n; v += 2) {  // a symmetric path over the even ids
      for (auto [a, b] : {std::pair{v, v + 2}, std::pair{v + 2, v}}) {
        el.src.push_back(static_cast<vid_t>(a));
        el.dst.push_back(static_cast<vid_t>(b));
      }
    }
    for (auto [a, b] : extra) {
      el.src.push_back(a);
      el.dst.push_back(b);
    }
    return csc_from_edges(std::move(el));
  };
  EXPECT_TRUE(detect_flags(graph({}).view()).symmetric);
  EXPECT_TRUE(detect_flags(graph({{1, 9001}, {9001, 1}}).view()).symmetric);
  EXPECT_FALSE(detect_flags(graph({{4, 4000}}).view()).symmetric);      // probed vertex 4000
  EXPECT_FALSE(detect_flags(graph({{1, 9001}}).view()).symmetric);      // degrees differ
  EXPECT_FALSE(detect_flags(graph({{1, 3}, {3, 5}, {5, 1}}).view()).symmetric);  // a directed cycle on odd ids
}

}  // namespace ht
