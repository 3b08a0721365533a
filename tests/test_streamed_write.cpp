// Sections written from a fill function instead of memory (the generators'
// features): the same bytes and checksums as the in-memory writer, across
// piece (4 MiB) and checksum-block (64 MiB) boundaries, errors that do not
// depend on the schedule, and the graph writer's row-by-row features in
// every dtype.
#include <omp.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/file_io.hpp"
#include "core/half.hpp"
#include "graph/feature_rows.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

constexpr char kMagic[9] = "HTSTREAM";

// A byte pattern that differs at every position of a piece and of a block.
std::byte pattern(uint64_t i) { return static_cast<std::byte>((i * 2654435761u) >> 13); }

std::vector<std::byte> pattern_bytes(uint64_t n) {
  std::vector<std::byte> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = pattern(i);
  return v;
}

void fill_pattern(uint64_t offset, std::span<std::byte> out) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = pattern(offset + i);
}

// Synthetic feature rows: distinct values, some that 16-bit types round.
FeatureRows test_rows(int32_t dim) {
  FeatureRows rows;
  rows.dim = dim;
  rows.fill = [dim](int64_t v, std::span<float> row) {
    for (int32_t j = 0; j < dim; ++j) row[j] = static_cast<float>(v) * 0.37f + static_cast<float>(j) * 1.0001f - 3.0f;
  };
  return rows;
}

// Whether two files hold the same bytes (mapped: the files are ~140 MB).
bool same_bytes(const std::string& a, const std::string& b) {
  const MappedFile x(a), y(b);
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size()) == 0;
}

Graph small_topology(int64_t n) {
  Graph g;
  g.num_vertices = n;
  g.offsets.resize(n + 1);
  for (int64_t v = 0; v < n; ++v) {
    g.offsets[v] = static_cast<int64_t>(g.sources.size());
    g.sources.push_back(static_cast<vid_t>((v * 7 + 1) % n));
  }
  g.offsets[n] = static_cast<int64_t>(g.sources.size());
  g.num_classes = 3;
  g.labels.assign(n, 1);
  return g;
}

}  // namespace

TEST(StreamedWrite, FilledSectionsEqualInMemoryOnes) {
  test::TempDir dir;
  // Empty, tiny, one piece and a bit, and more than one 64 MiB checksum
  // block with a partial last piece.
  const std::vector<uint64_t> sizes = {0, 1, ContainerWriter::kFillPiece + 3,
                                       (uint64_t{64} << 20) + ContainerWriter::kFillPiece + 5};
  const char* names[] = {"s0", "s1", "s2", "s3"};
  const int saved = omp_get_max_threads();
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    const std::string a = dir.file("memory.bin"), b = dir.file("filled.bin");
    {
      ContainerWriter w(a, kMagic, 1);
      for (size_t i = 0; i < sizes.size(); ++i) {
        const std::vector<std::byte> bytes = pattern_bytes(sizes[i]);
        w.add_section(names[i], DType::u8, sizes[i], 1, bytes.data());
      }
      w.commit();
    }
    {
      ContainerWriter w(b, kMagic, 1);
      for (size_t i = 0; i < sizes.size(); ++i) w.add_section_filled(names[i], DType::u8, sizes[i], 1, 1, fill_pattern);
      w.commit();
    }
    EXPECT_TRUE(same_bytes(a, b)) << threads << " threads";
    const ContainerReader r(b, kMagic, 1);  // checksums verified
    EXPECT_EQ(r.section("s3").length, sizes[3]);
  }
  omp_set_num_threads(saved);
}

// Sections of more than one checksum block go through shared maps where the
// file system allocates ahead: the same bytes as pwrite, from memory and
// from a fill function, at any thread count.
TEST(StreamedWrite, MappedSectionsEqualPwrittenOnes) {
  test::TempDir dir;
  const uint64_t size = 2 * (uint64_t{64} << 20) + ContainerWriter::kFillPiece + 7;  // three blocks, the last partial
  const std::vector<std::byte> bytes = pattern_bytes(size);
  const int saved = omp_get_max_threads();
  bool any_mapped = false;
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    std::vector<std::string> files;
    for (bool maps : {false, true}) {
      for (bool filled : {false, true}) {
        const std::string path = dir.file(fmt::format("{}-{}-{}.bin", threads, maps, filled));
        ContainerWriter w(path, kMagic, 1);
        w.set_mapped_writes(maps);
        w.add_section("small", DType::u8, 3, 1, bytes.data());
        if (filled)
          w.add_section_filled("big", DType::u8, size, 1, 1, fill_pattern);
        else
          w.add_section("big", DType::u8, size, 1, bytes.data());
        w.add_section("after", DType::u8, 5, 1, bytes.data());
        w.commit();
        ASSERT_EQ(w.write_times().size(), 3u);
        EXPECT_FALSE(w.write_times()[0].mapped);  // one block: pwritten
        if (!maps) {
          EXPECT_FALSE(w.write_times()[1].mapped);
        }
        any_mapped = any_mapped || w.write_times()[1].mapped;
        files.push_back(path);
      }
    }
    for (const std::string& f : files) EXPECT_TRUE(same_bytes(files[0], f)) << f;
    const ContainerReader r(files.back(), kMagic, 1);  // checksums verified
    EXPECT_EQ(r.section("big").length, size);
    EXPECT_EQ(std::memcmp(r.bytes("big", DType::u8).data(), bytes.data(), size), 0);
  }
  omp_set_num_threads(saved);
  if (!any_mapped) GTEST_SKIP() << "the test folder's file system cannot allocate ahead: only pwrite was tested";
}

TEST(StreamedWrite, TheLowestFailingBlockGivesTheError) {
  test::TempDir dir;
  const uint64_t block = uint64_t{64} << 20;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 4}) {
    omp_set_num_threads(threads);
    const std::string path = dir.file("bad.bin");
    try {
      ContainerWriter w(path, kMagic, 1);
      w.add_section_filled("x", DType::u8, 3 * block, 1, 1, [&](uint64_t offset, std::span<std::byte> out) {
        if (offset >= block) throw Error("block " + std::to_string(offset / block));
        std::memset(out.data(), 0, out.size());
      });
      w.commit();
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(), "block 1") << threads << " threads";
    }
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  omp_set_num_threads(saved);
}

TEST(StreamedWrite, GraphWithRowFeaturesEqualsInMemory) {
  test::TempDir dir;
  // 40,000 rows of 37 columns: 5.9 MB of fp32, rows straddle the 4 MiB piece boundary.
  const int64_t n = 40000;
  for (int32_t dim : {1, 37}) {
    const FeatureRows rows = test_rows(dim);
    Graph g = small_topology(n);
    Graph with = small_topology(n);
    with.feature_dim = dim;
    with.features = materialize_features(rows, n);
    for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
      GraphWriteOptions opt;
      opt.feature_dtype = t;
      const std::string a = dir.file("memory.htg"), b = dir.file("rows.htg");
      write_graph(a, with.view(), opt);
      write_graph_streamed(b, g.view(), rows, opt);
      EXPECT_TRUE(same_bytes(a, b)) << "F " << dim << ", " << dtype_name(t);
      const GraphFile f(b);
      EXPECT_EQ(f.view().feature_dim, dim);
      EXPECT_EQ(f.view().feature_dtype, t);
    }
  }
}

TEST(StreamedWrite, Fp16OutOfRangeNamesTheFirstVertex) {
  test::TempDir dir;
  const int64_t n = 300000;  // 1.2 MB of fp16 at F = 2: one piece; 2 MB rows apart
  FeatureRows rows;
  rows.dim = 2;
  rows.fill = [](int64_t v, std::span<float> row) {
    row[0] = 1.0f;
    row[1] = v == 250000 || v == 1234 ? 1e6f : 2.0f;
  };
  const Graph g = small_topology(n);
  GraphWriteOptions opt;
  opt.feature_dtype = StoreDtype::f16;
  const std::string path = dir.file("g.htg");
  try {
    write_graph_streamed(path, g.view(), rows, opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("vertex 1234, column 1"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  opt.feature_dtype = StoreDtype::bf16;  // fp32's range: fine
  write_graph_streamed(path, g.view(), rows, opt);
  EXPECT_EQ(GraphFile(path).view().features16.size(), static_cast<size_t>(2 * n));
}

}  // namespace ht
