// Partition file (.htp): round trip, the graph-identity check, and every kind
// of corruption or inconsistent content gives an ht::Error naming the file.
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/error.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition_file.hpp"
#include "partition/partition_run.hpp"
#include "test_partition_graphs.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

Partition sample_partition(const GraphFile& f) {
  PartitionParams q;
  q.parts = 3;
  q.chunks = 4;
  q.seed = 99;
  q.imbalance = 50;
  q.objective = MetisObjective::vol;
  q.vertex_weights = VertexWeights::none;
  q.chunk_vertex_weight = 2.5;
  PartitionRunInfo info;
  return make_partition(f.view(), f.identity(), q, info);
}


std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A container with the partition magic and hand-made (possibly bad) sections.
void write_raw(const std::string& path, const std::vector<vid_t>& new_to_old, const std::vector<int64_t>& parts,
               const std::vector<int64_t>& chunks, int m, int n) {
  ContainerWriter w(path, kPartitionMagic, kPartitionVersion);
  w.set_meta(kPartMetaParts, m);
  w.set_meta(kPartMetaChunks, n);
  w.set_meta(kPartMetaVertices, new_to_old.size());
  w.add<vid_t>("new_to_old", new_to_old);
  w.add<int64_t>("part_offsets", parts);
  w.add<int64_t>("chunk_offsets", chunks);
  w.commit();
}

}  // namespace

TEST(PartitionFile, RoundTripKeepsEverything) {
  test::TempDir dir;
  const Graph g = test::random_graph(120, 800, 4);
  write_graph(dir.file("g.htg"), g.view());
  const GraphFile f(dir.file("g.htg"));
  const Partition p = sample_partition(f);
  write_partition(dir.file("p.htp"), p);
  const Partition r = read_partition(dir.file("p.htp"));
  EXPECT_EQ(r.new_to_old, p.new_to_old);
  EXPECT_EQ(r.old_to_new, p.old_to_new);
  EXPECT_EQ(r.part_offsets, p.part_offsets);
  EXPECT_EQ(r.chunk_offsets, p.chunk_offsets);
  EXPECT_EQ(r.num_vertices, 120);
  EXPECT_EQ(r.num_edges, 800);
  EXPECT_EQ(r.graph_identity, f.identity());
  EXPECT_EQ(r.params.parts, 3);
  EXPECT_EQ(r.params.chunks, 4);
  EXPECT_EQ(r.params.seed, 99u);
  EXPECT_EQ(r.params.imbalance, 50);
  EXPECT_EQ(r.params.method, PartitionMethod::metis);
  EXPECT_EQ(r.params.objective, MetisObjective::vol);
  EXPECT_EQ(r.params.vertex_weights, VertexWeights::none);
  EXPECT_EQ(r.params.chunk_vertex_weight, 2.5);
  EXPECT_NO_THROW(check_partition_matches(r, f));
}

TEST(PartitionFile, RefusesAnotherGraph) {
  test::TempDir dir;
  const Graph g = test::random_graph(120, 800, 4);
  write_graph(dir.file("g.htg"), g.view());
  const Graph h = test::random_graph(120, 800, 5);  // same sizes, other edges
  write_graph(dir.file("h.htg"), h.view());
  const GraphFile fg(dir.file("g.htg")), fh(dir.file("h.htg"));
  const Partition p = sample_partition(fg);
  const std::string msg = error_of([&] { check_partition_matches(p, fh); });
  EXPECT_NE(msg.find("h.htg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("re-run ht-partition"), std::string::npos) << msg;
}

TEST(PartitionFile, CorruptionIsDetected) {
  test::TempDir dir;
  const Graph g = test::random_graph(120, 800, 4);
  write_graph(dir.file("g.htg"), g.view());
  const GraphFile f(dir.file("g.htg"));
  write_partition(dir.file("p.htp"), sample_partition(f));
  const std::vector<char> good = test::read_bytes(dir.file("p.htp"));
  // Truncation.
  test::write_bytes(dir.file("t.htp"), std::vector<char>(good.begin(), good.end() - 100));
  EXPECT_NE(error_of([&] { read_partition(dir.file("t.htp")); }).find("t.htp"), std::string::npos);
  // A flipped byte in the first section (new_to_old at 4096).
  std::vector<char> bad = good;
  bad[4096 + 5] ^= 0x10;
  test::write_bytes(dir.file("b.htp"), bad);
  EXPECT_NE(error_of([&] { read_partition(dir.file("b.htp")); }).find("checksum"), std::string::npos);
  // A graph file is not a partition file.
  EXPECT_NE(error_of([&] { read_partition(dir.file("g.htg")); }).find("magic"), std::string::npos);
  EXPECT_NE(error_of([&] { read_partition(dir.file("missing.htp")); }).find("missing.htp"), std::string::npos);
}

TEST(PartitionFile, InconsistentContentIsRejected) {
  test::TempDir dir;
  const std::string path = dir.file("x.htp");
  // Not a permutation.
  write_raw(path, {0, 1, 1, 3}, {0, 2, 4}, {0, 2, 4}, 2, 1);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("new_to_old"), std::string::npos);
  // Id out of range.
  write_raw(path, {0, 1, 9, 3}, {0, 2, 4}, {0, 2, 4}, 2, 1);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("new_to_old"), std::string::npos);
  // Partition offsets not ending at N.
  write_raw(path, {0, 1, 2, 3}, {0, 2, 3}, {0, 2, 3}, 2, 1);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("part_offsets"), std::string::npos);
  // Chunks not starting their partition.
  write_raw(path, {0, 1, 2, 3}, {0, 2, 4}, {0, 1, 3, 4}, 1, 3);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("part_offsets"), std::string::npos);
  write_raw(path, {0, 1, 2, 3}, {0, 2, 4}, {0, 1, 3, 4, 4}, 2, 2);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("chunk_offsets"), std::string::npos);
  // Wrong number of chunk offsets for m·n.
  write_raw(path, {0, 1, 2, 3}, {0, 2, 4}, {0, 4}, 2, 2);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("chunk_offsets"), std::string::npos);
  // m = 0.
  write_raw(path, {0, 1, 2, 3}, {0}, {0}, 0, 1);
  EXPECT_NE(error_of([&] { read_partition(path); }).find("m = 0"), std::string::npos);
  // A valid hand-made one reads back.
  write_raw(path, {3, 2, 1, 0}, {0, 2, 4}, {0, 1, 2, 3, 4}, 2, 2);
  const Partition p = read_partition(path);
  EXPECT_EQ(p.old_to_new, (std::vector<vid_t>{3, 2, 1, 0}));
  EXPECT_EQ(p.owner(2), 1);
}

TEST(PartitionFile, WriterRefusesAnInvalidPartition) {
  test::TempDir dir;
  Partition p;
  p.params.parts = 1;
  p.num_vertices = 2;
  p.new_to_old = {0, 0};
  p.part_offsets = {0, 2};
  p.chunk_offsets = {0, 2};
  EXPECT_THROW(write_partition(dir.file("p.htp"), p), Error);
  EXPECT_FALSE(file_exists(dir.file("p.htp")));
}

}  // namespace ht
