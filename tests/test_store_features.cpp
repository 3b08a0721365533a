// h^0's rows taken straight from the graph in its own ids (FeatureSource:
// renumbering, row normalization, dtype conversion on the way) equal the rows
// of the old path — renumber the whole graph, normalize its features, fill
// the store from the copy — byte for byte, for every pair of file and store
// dtype; and a graph file whose pages were given back reads the same.
#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "engine/cpu_executor.hpp"
#include "engine/store_features.hpp"
#include "graph/build.hpp"
#include "graph/features.hpp"
#include "graph/graph_file.hpp"
#include "partition/partition.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

constexpr int64_t kN = 3000;
constexpr int kF = 7;

Graph make_graph(uint64_t seed) {
  rng::Stream r(seed, 0);
  EdgeList el;
  el.num_vertices = kN;
  for (int64_t e = 0; e < 4 * kN; ++e) {
    el.src.push_back(static_cast<vid_t>(r.below(kN)));
    el.dst.push_back(static_cast<vid_t>(r.below(kN)));
  }
  Graph g = csc_from_edges(std::move(el));
  g.feature_dim = kF;
  g.features.resize(kN * kF);
  for (auto& x : g.features) x = static_cast<float>(r.uniform() * 3 - 1);
  for (int c = 0; c < kF; ++c) g.features[5 * kF + c] = 0;  // a row summing to 0 stays as it is
  g.num_classes = 3;
  g.labels.assign(kN, 1);
  g.split.assign(kN, 1);
  g.flags = detect_flags(g.view());
  return g;
}

Partition shuffled(const Graph& g, uint64_t seed) {
  Partition p;
  p.num_vertices = g.num_vertices;
  p.num_edges = g.num_edges();
  p.params.parts = p.params.chunks = 1;
  p.new_to_old.resize(kN);
  std::iota(p.new_to_old.begin(), p.new_to_old.end(), 0u);
  rng::Stream r(seed, 1);
  for (int64_t i = kN - 1; i > 0; --i) std::swap(p.new_to_old[i], p.new_to_old[r.below(i + 1)]);
  p.old_to_new.resize(kN);
  for (int64_t v = 0; v < kN; ++v) p.old_to_new[p.new_to_old[v]] = static_cast<vid_t>(v);
  p.part_offsets = {0, kN};
  p.chunk_offsets = {0, kN};
  return p;
}

// The training job's old normalization of a renumbered copy: 16-bit rows
// widened, then each row divided by its (double) sum.
void normalize_copy(Graph& g) {
  convert_features(g, StoreDtype::f32);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    float* row = g.features.data() + v * g.feature_dim;
    double s = 0;
    for (int32_t j = 0; j < g.feature_dim; ++j) s += row[j];
    if (s != 0)
      for (int32_t j = 0; j < g.feature_dim; ++j) row[j] = static_cast<float>(row[j] / s);
  }
}

std::vector<std::byte> bytes_of(const HostMat& m) {
  const auto* b = static_cast<const std::byte*>(m.data);
  return {b, b + m.bytes()};
}

TEST(StoreFeatures, FromTheFileEqualsFromARenumberedCopy) {
  const Graph base = make_graph(3);
  const Partition p = shuffled(base, 4);
  CpuExecutor exec(1);
  for (StoreDtype file : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
    Graph g = base;
    convert_features(g, file);
    for (StoreDtype store : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
      for (bool normalize : {false, true}) {
        for (bool permute : {false, true}) {
          SCOPED_TRACE(::testing::Message() << dtype_name(file) << " -> " << dtype_name(store) << " normalize "
                                            << normalize << " permute " << permute);
          Graph copy = permute ? renumber(g.view(), p) : g;
          if (normalize) normalize_copy(copy);
          const HostMat want = exec.alloc_host(kN, kF, store);
          fill_feature_store(exec, want, copy.view());

          FeatureSource src = FeatureSource::of(g.view());
          if (permute) {
            src.new_to_old = p.new_to_old;
            src.old_to_new = p.old_to_new;
          }
          src.normalize = normalize;
          std::vector<std::atomic<int>> seen(kN);
          src.rows_read = [&](int64_t b, int64_t e) {
            for (int64_t o = b; o < e; ++o) seen[o]++;
          };
          const HostMat got = exec.alloc_host(kN, kF, store);
          fill_feature_store(exec, got, src);
          EXPECT_EQ(bytes_of(got), bytes_of(want));
          for (int64_t o = 0; o < kN; ++o) ASSERT_EQ(seen[o].load(), 1) << "graph row " << o;
        }
      }
    }
  }
}

TEST(StoreFeatures, Fp16RangeIsCheckedAfterNormalizationAndNamesTheFileRow) {
  Graph g = make_graph(5);
  for (int c = 0; c < kF; ++c) g.features[11 * kF + c] = 1e6f;  // beyond fp16; 1/7 once normalized
  const Partition p = shuffled(g, 6);
  FeatureSource src = FeatureSource::of(g.view());
  src.new_to_old = p.new_to_old;
  src.old_to_new = p.old_to_new;
  try {
    check_f16_range(src);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("feature 0 of vertex 11 is 1000000"), std::string::npos) << m;
    EXPECT_NE(m.find("outside fp16's range"), std::string::npos) << m;
  }
  src.normalize = true;
  EXPECT_NO_THROW(check_f16_range(src));
}

TEST(StoreFeatures, GraphFileReadsTheSameAfterItsPagesAreGivenBack) {
  test::TempDir dir;
  Graph g = make_graph(7);
  const std::string path = dir.file("g.htg");
  write_graph(path, g.view());
  GraphFile gf(path);
  const GraphView& v = gf.view();
  const std::vector<float> before(v.features.begin(), v.features.end());
  const std::vector<vid_t> sources(v.sources.begin(), v.sources.end());
  gf.drop_feature_rows(100, 2000);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), v.features.begin()));
  gf.drop_pages();
  EXPECT_TRUE(std::equal(before.begin(), before.end(), v.features.begin()));
  EXPECT_TRUE(std::equal(sources.begin(), sources.end(), v.sources.begin()));
  gf.drop_feature_rows(5, 4);  // empty range: nothing
  EXPECT_EQ(before, g.features);
}

}  // namespace
}  // namespace ht
