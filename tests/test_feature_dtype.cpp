// Features stored 16-bit in the graph file (issue 15, `ht-convert
// --feature-dtype`): the file round trip per dtype (the bits are
// core/half.hpp's rounding of the fp32 input), fp32 files byte for byte as
// before, renumbering carrying 16-bit rows unchanged, statistics and the
// reference model on 16-bit files, fp16's range refused, corrupt and
// truncated 16-bit files refused, and training on a 16-bit file with the same
// --host-dtype giving the same bits as training on the fp32 file.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/container.hpp"
#include "core/file_io.hpp"
#include "core/hash.hpp"
#include "datasets/convert_generate.hpp"
#include "datasets/generators.hpp"
#include "datasets/graph_stats.hpp"
#include "engine/cpu_executor.hpp"
#include "graph/features.hpp"
#include "graph/graph_file.hpp"
#include "models/reference.hpp"
#include "partition/partition.hpp"
#include "test_util.hpp"
#include "train/train_job.hpp"

namespace ht {
namespace {

constexpr StoreDtype kSixteen[] = {StoreDtype::bf16, StoreDtype::f16};

// A small graph whose features probe the rounding: ties, values just off a
// tie, subnormal fp16 values, signs and zeros (all within fp16's range).
Graph small_graph() {
  Graph g;
  g.num_vertices = 5;
  g.offsets = {0, 2, 3, 5, 6, 7};
  g.sources = {1, 4, 0, 3, 4, 2, 0};
  g.feature_dim = 4;
  const float probes[] = {1.0f + 0x1p-8f,  1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -2.5f,   0.0f,
                          -0.0f,           3e-6f,           -7e-8f,              65504.f, -65000.f,
                          0.1f,            1.0f / 3,        1e-3f,               123.456f, -1.0f + 0x1p-9f,
                          1.0f + 0x1p-12f, 2.0f,            -0.3f,               0.7f,    5e-5f};
  g.features.assign(std::begin(probes), std::end(probes));
  g.num_classes = 2;
  g.labels = {0, 1, -1, 1, 0};
  g.split = {1, 2, 3, 1, 0};
  return g;
}

std::vector<char> bytes_of(const std::string& path) { return test::read_bytes(path); }

// --- the file -------------------------------------------------------------------------------

TEST(FeatureDtype, RoundTripPerDtype) {
  test::TempDir dir;
  const Graph g = small_graph();
  for (StoreDtype t : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const std::string path = dir.file(std::string(dtype_name(t)) + ".htg");
    write_graph(path, g.view(), {4, t});
    const GraphFile f(path);
    const GraphView& v = f.view();
    ASSERT_EQ(v.feature_dtype, t);
    ASSERT_TRUE(v.has_features());
    ASSERT_EQ(v.feature_bytes().size(), g.features.size() * static_cast<size_t>(dtype_bytes(t)));
    if (t == StoreDtype::f32) {
      EXPECT_TRUE(v.features16.empty());
      EXPECT_EQ(std::memcmp(v.features.data(), g.features.data(), g.features.size() * 4), 0);
    } else {
      EXPECT_TRUE(v.features.empty());
      for (size_t i = 0; i < g.features.size(); ++i)
        ASSERT_EQ(v.features16[i], narrow16(g.features[i], t)) << "value " << i;
    }
    // Rows widened: exactly the rounded values.
    std::vector<float> row(4);
    for (int64_t r = 0; r < v.num_vertices; ++r) {
      v.load_feature_row(r, row);
      for (int c = 0; c < 4; ++c) {
        const float want = round_to(g.features[r * 4 + c], t);
        ASSERT_EQ(std::memcmp(&row[c], &want, 4), 0) << "row " << r << " col " << c;
      }
    }
    // The section carries the dtype; the rest of the file is as for fp32.
    const ContainerReader c(path, kGraphMagic, kGraphVersion);
    const SectionInfo& s = c.section("features");
    EXPECT_EQ(s.dtype, t == StoreDtype::f32 ? DType::f32 : (t == StoreDtype::bf16 ? DType::bf16 : DType::f16));
    EXPECT_EQ(s.shape[0], 5u);
    EXPECT_EQ(s.shape[1], 4u);
    EXPECT_EQ(s.length, 20u * static_cast<uint64_t>(dtype_bytes(t)));
    EXPECT_TRUE(std::equal(v.labels.begin(), v.labels.end(), g.labels.begin()));
    // A 16-bit view written again (default: its own dtype) gives the same file.
    const std::string again = dir.file("again.htg");
    write_graph(again, v);
    EXPECT_EQ(bytes_of(again), bytes_of(path));
    // And converted back to fp32: the widened values.
    write_graph(again, v, {4, StoreDtype::f32});
    const GraphFile w(again);
    ASSERT_EQ(w.view().feature_dtype, StoreDtype::f32);
    for (size_t i = 0; i < g.features.size(); ++i) ASSERT_EQ(w.view().features[i], round_to(g.features[i], t));
  }
}

// The writer of fp32 features is unchanged: the identity (size, header
// checksum) of this file was recorded with the writer before 16-bit features
// existed (commit 3b3bf25), so every fp32 file written now is the file it was.
TEST(FeatureDtype, Fp32FilesUnchanged) {
  test::TempDir dir;
  Graph g;
  g.num_vertices = 5;
  g.offsets = {0, 2, 3, 5, 6, 7};
  g.sources = {1, 4, 0, 3, 4, 2, 0};
  g.feature_dim = 3;
  for (int i = 0; i < 15; ++i) g.features.push_back(static_cast<float>(i) * 0.37f - 2.0f);
  g.num_classes = 2;
  g.labels = {0, 1, -1, 1, 0};
  g.split = {1, 2, 3, 1, 0};
  const FileIdentity golden{20485, 0x9b32b35e42c1a65dull};
  write_graph(dir.file("a.htg"), g.view());
  EXPECT_EQ(read_identity(dir.file("a.htg")), golden);
  write_graph(dir.file("b.htg"), g.view(), {4, StoreDtype::f32});
  EXPECT_EQ(read_identity(dir.file("b.htg")), golden);
  const GraphFile f(dir.file("a.htg"));
  EXPECT_EQ(f.view().feature_dtype, StoreDtype::f32);
  EXPECT_TRUE(std::equal(f.view().features.begin(), f.view().features.end(), g.features.begin()));
  EXPECT_EQ(f.view().feature_row(2)[1], g.features[7]);
}

TEST(FeatureDtype, OutOfRangeRefusedNamingVertexAndColumn) {
  test::TempDir dir;
  Graph g = small_graph();
  g.features[2 * 4 + 1] = 1e5f;
  g.orig_ids = {10, 11, 12, 13, 14};
  try {
    write_graph(dir.file("g.htg"), g.view(), {4, StoreDtype::f16});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("vertex 2 (input id 12), column 1 is 100000"), std::string::npos) << m;
    EXPECT_NE(m.find("fp16"), std::string::npos) << m;
    EXPECT_NE(m.find("65504"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("g.htg")));
  // 65504 is fp16's largest value; 65519.99 would still round to it, but it
  // is refused as ht-train's fp16 store refuses it (one boundary, ±65504).
  g.features[2 * 4 + 1] = -65504.f;
  EXPECT_NO_THROW(write_graph(dir.file("g.htg"), g.view(), {4, StoreDtype::f16}));
  for (const float x : {65504.01f, 65519.99f, -65510.f, 65520.f}) {
    g.features[2 * 4 + 1] = x;
    EXPECT_THROW(write_graph(dir.file("g.htg"), g.view(), {4, StoreDtype::f16}), Error) << x;
  }
  // bf16 has fp32's exponent range but rounds the largest floats to Inf.
  EXPECT_NO_THROW(write_graph(dir.file("g.htg"), g.view(), {4, StoreDtype::bf16}));
  g.features[2 * 4 + 1] = std::numeric_limits<float>::max();
  EXPECT_THROW(write_graph(dir.file("g.htg"), g.view(), {4, StoreDtype::bf16}), Error);
  // Non-finite values (kept by ht-convert --allow-nonfinite) stay what they are.
  g.features[2 * 4 + 1] = std::numeric_limits<float>::infinity();
  g.features[3 * 4 + 2] = std::numeric_limits<float>::quiet_NaN();
  for (StoreDtype t : kSixteen) {
    write_graph(dir.file("g.htg"), g.view(), {4, t});
    const GraphFile f(dir.file("g.htg"));
    std::vector<float> row(4);
    f.view().load_feature_row(2, row);
    EXPECT_EQ(row[1], std::numeric_limits<float>::infinity());
    f.view().load_feature_row(3, row);
    EXPECT_TRUE(std::isnan(row[2]));
  }
}

// ht-convert --generate --feature-dtype fp16: the option named, no file.
TEST(FeatureDtype, ConvertRefusesFp16OutOfRange) {
  test::TempDir dir;
  data::GenerateOptions o;
  o.kind = data::GeneratorKind::community;
  o.vertices = 200;
  o.feature_dim = 4;
  o.signal = 1e6;  // class means far beyond fp16's range
  o.output = dir.file("g.htg");
  o.feature_dtype = StoreDtype::f16;
  try {
    data::run_generate(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--feature-dtype"), std::string::npos) << m;
    EXPECT_NE(m.find("column"), std::string::npos) << m;
    EXPECT_NE(m.find("vertex"), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(o.output));
  o.feature_dtype = StoreDtype::bf16;
  data::run_generate(o);
  EXPECT_EQ(GraphFile(o.output).view().feature_dtype, StoreDtype::bf16);
}

// --generate with --feature-dtype: the generator's fp32 features rounded once.
TEST(FeatureDtype, GenerateRoundsOnce) {
  test::TempDir dir;
  data::GenerateOptions o;
  o.kind = data::GeneratorKind::community;
  o.vertices = 300;
  o.feature_dim = 5;
  o.output = dir.file("f32.htg");
  data::run_generate(o);
  const GraphFile f32(o.output);
  for (StoreDtype t : kSixteen) {
    o.output = dir.file(std::string(dtype_name(t)) + ".htg");
    o.feature_dtype = t;
    data::run_generate(o);
    const GraphFile f(o.output);
    ASSERT_EQ(f.view().feature_dtype, t);
    ASSERT_EQ(f.view().features16.size(), f32.view().features.size());
    for (size_t i = 0; i < f.view().features16.size(); ++i)
      ASSERT_EQ(f.view().features16[i], narrow16(f32.view().features[i], t));
    EXPECT_TRUE(std::equal(f.view().sources.begin(), f.view().sources.end(), f32.view().sources.begin()));
  }
}

// Errors of a damaged 16-bit file: truncated, a flipped feature byte, an
// unknown dtype code in the section table, and a feature section of another
// element type.
TEST(FeatureDtype, CorruptOrTruncated16BitFile) {
  test::TempDir dir;
  const std::string path = dir.file("g.htg");
  write_graph(path, small_graph().view(), {4, StoreDtype::bf16});
  const std::vector<char> good = bytes_of(path);
  const ContainerReader c(path, kGraphMagic, kGraphVersion);
  const SectionInfo s = c.section("features");
  auto expect_error = [&](const std::vector<char>& bytes, const std::string& what, const char* name) {
    SCOPED_TRACE(name);
    const std::string bad = dir.file("bad.htg");
    test::write_bytes(bad, bytes);
    try {
      GraphFile f(bad);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  // Cut 8 bytes into the features (labels and split follow them).
  std::vector<char> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(s.offset + 8));
  expect_error(cut, "truncated", "truncated");
  std::vector<char> flipped = good;
  flipped[s.offset + 3] ^= 0x10;
  expect_error(flipped, "checksum mismatch in section 'features'", "flipped byte");
  // The entry's dtype field (entry at 192 + 96 i, dtype at +32), header checksum redone.
  int index = 0;
  for (const SectionInfo& x : c.sections()) {
    if (x.name == "features") break;
    ++index;
  }
  auto with_dtype = [&](uint32_t code) {
    std::vector<char> b = good;
    std::memcpy(b.data() + 192 + 96 * index + 32, &code, 4);
    std::memset(b.data() + 32, 0, 8);
    const uint64_t sum = xxh64(b.data(), 4096);
    std::memcpy(b.data() + 32, &sum, 8);
    return b;
  };
  expect_error(with_dtype(9), "bad section dtype", "unknown dtype code");
  // f16 is a valid dtype: the bytes are read as fp16 (same size, checksum kept).
  test::write_bytes(dir.file("f16.htg"), with_dtype(8));
  EXPECT_EQ(GraphFile(dir.file("f16.htg")).view().feature_dtype, StoreDtype::f16);
  // A 1-byte dtype: the recorded length no longer matches the shape.
  expect_error(with_dtype(1), "length does not match its shape", "u8 dtype");
}

// --- consumers ------------------------------------------------------------------------------

// Renumbering (ht-partition / ht-reorganize / ht-train's in-memory
// pipeline) moves 16-bit rows as they are and keeps the dtype.
TEST(FeatureDtype, RenumberKeepsBytes) {
  test::TempDir dir;
  gen::CommunityParams p;
  p.num_vertices = 200;
  p.feature_dim = 6;
  const Graph g = gen::community_graph(p);
  Partition part;
  part.num_vertices = g.num_vertices;
  part.num_edges = g.num_edges();
  part.params.parts = 1;
  part.params.chunks = 1;
  for (int64_t v = 0; v < g.num_vertices; ++v) part.new_to_old.push_back(static_cast<vid_t>((v * 37) % 200));
  part.old_to_new.resize(200);
  for (int64_t v = 0; v < 200; ++v) part.old_to_new[part.new_to_old[v]] = static_cast<vid_t>(v);
  part.chunk_offsets = {0, 200};
  part.part_offsets = {0, 200};
  for (StoreDtype t : kSixteen) {
    const std::string path = dir.file("g.htg");
    write_graph(path, g.view(), {4, t});
    const GraphFile f(path);
    const Graph r = renumber(f.view(), part);
    ASSERT_EQ(r.feature_dtype, t);
    ASSERT_TRUE(r.features.empty());
    ASSERT_EQ(r.features16.size(), f.view().features16.size());
    for (int64_t v = 0; v < 200; ++v)
      ASSERT_EQ(std::memcmp(r.features16.data() + v * 6, f.view().features16.data() + part.new_to_old[v] * 6, 12), 0);
    write_graph(dir.file("r.htg"), r.view());
    EXPECT_EQ(GraphFile(dir.file("r.htg")).view().feature_dtype, t);
  }
}

// Statistics (ht-convert --inspect) and the reference model read 16-bit
// features through their widened values.
TEST(FeatureDtype, StatsAndReferenceModel) {
  test::TempDir dir;
  Graph g = small_graph();
  for (StoreDtype t : kSixteen) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    write_graph(dir.file("g.htg"), g.view(), {4, t});
    const GraphFile f(dir.file("g.htg"));
    Graph rounded = g;
    for (float& x : rounded.features) x = round_to(x, t);
    const data::GraphStats a = data::compute_stats(f.view()), b = data::compute_stats(rounded.view());
    EXPECT_EQ(a.feature_dtype, t);
    EXPECT_EQ(a.feature_nonzeros, b.feature_nonzeros);
    EXPECT_NE(data::stats_text(a).find(std::string(dtype_name(t))), std::string::npos);
    ModelConfig cfg;
    cfg.dims = {4, 3, 2};
    ReferenceTrainer x(f.view(), cfg, OptimizerConfig{}), y(rounded.view(), cfg, OptimizerConfig{});
    const double lx = x.forward_backward(0, true), ly = y.forward_backward(0, true);
    EXPECT_EQ(lx, ly);
  }
}

// --- training -------------------------------------------------------------------------------

class FeatureDtypeTraining : public ::testing::Test {
 public:
  void SetUp() override {
    gen::CommunityParams p;
    p.num_vertices = 300;
    p.num_classes = 3;
    p.feature_dim = 6;
    p.avg_degree = 6;
    p.seed = 5;
    graph = gen::community_graph(p);
    write_graph(file(StoreDtype::f32), graph.view());
    for (StoreDtype t : kSixteen) write_graph(file(t), graph.view(), {4, t});
  }
  std::string file(StoreDtype t) const { return dir.file(std::string(dtype_name(t)) + ".htg"); }

  // Two emulated GPUs, two chunks, dropout on.
  TrainJob job(const std::string& graph_path, StoreDtype host, ModelKind kind, const std::string& tag) const {
    TrainJob j;
    j.graph_path = graph_path;
    j.parts = 2;
    j.chunks = 2;
    j.epochs = 3;
    j.warmup = 0;
    j.store = StoreChoice::host;
    j.trainer.host_dtype = host;
    j.trainer.model.kind = kind;
    j.trainer.model.dropout = 0.3f;
    if (kind == ModelKind::gat) j.trainer.model.heads = 2;
    j.logits_out = dir.file(tag + ".npy");
    j.metrics_out = dir.file(tag + ".jsonl");
    return j;
  }
  // What both runs must agree on: the logits' bytes and the epoch losses.
  struct Outcome {
    std::vector<char> logits;
    std::string losses;
    double final_loss = 0;
  };
  Outcome run(const TrainJob& j) const {
    const TrainSummary s = run_train_job(j, [](int m) { return std::make_unique<CpuExecutor>(m); });
    Outcome o;
    o.logits = bytes_of(j.logits_out);
    const std::string text = read_text_file(j.metrics_out);
    size_t at = 0;
    while ((at = text.find("\"loss\":", at)) != std::string::npos) {
      const size_t end = text.find(',', at);
      o.losses += text.substr(at, end - at) + "\n";
      at = end;
    }
    o.final_loss = s.final_loss;
    return o;
  }

  test::TempDir dir;
  Graph graph;
};

// The equivalence: a bf16 (fp16) file trained with --host-dtype bf16 (fp16)
// gives bit for bit the logits and losses of the fp32 file with the same
// --host-dtype (the store holds the same bits either way).
TEST_F(FeatureDtypeTraining, SameDtypeFileEqualsFp32File) {
  for (ModelKind kind : {ModelKind::gcn, ModelKind::gat})
    for (StoreDtype t : kSixteen) {
      SCOPED_TRACE(std::string(dtype_name(t)) + (kind == ModelKind::gcn ? " gcn" : " gat"));
      const Outcome from32 = run(job(file(StoreDtype::f32), t, kind, "a"));
      const Outcome from16 = run(job(file(t), t, kind, "b"));
      ASSERT_FALSE(from32.logits.empty());
      EXPECT_FALSE(from32.losses.empty());
      EXPECT_EQ(from16.logits, from32.logits);
      EXPECT_EQ(from16.losses, from32.losses);
      EXPECT_EQ(from16.final_loss, from32.final_loss);
    }
}

// Mixed dtypes convert: a 16-bit file into an fp32 store widens (exactly:
// the same bits as an fp32 file of the rounded values), and bf16 into fp16
// (or fp16 into bf16) widens and rounds again.
TEST_F(FeatureDtypeTraining, OtherStoreDtypeConverts) {
  for (StoreDtype file_t : kSixteen) {
    Graph rounded = graph;
    for (float& x : rounded.features) x = round_to(x, file_t);
    const std::string rounded_path = dir.file("rounded.htg");
    write_graph(rounded_path, rounded.view());
    for (StoreDtype host : {StoreDtype::f32, StoreDtype::bf16, StoreDtype::f16}) {
      if (host == file_t) continue;
      SCOPED_TRACE(std::string(dtype_name(file_t)) + " file, " + std::string(dtype_name(host)) + " store");
      const Outcome want = run(job(rounded_path, host, ModelKind::gcn, "a"));
      const Outcome got = run(job(file(file_t), host, ModelKind::gcn, "b"));
      EXPECT_EQ(got.logits, want.logits);
      EXPECT_EQ(got.losses, want.losses);
    }
  }
}

// --normalize-features on a 16-bit file: the rows are widened, normalized in
// fp32 and rounded by the store: as for an fp32 file of the rounded values.
TEST_F(FeatureDtypeTraining, NormalizeWidensFirst) {
  Graph rounded = graph;
  for (float& x : rounded.features) x = round_to(x, StoreDtype::bf16);
  write_graph(dir.file("rounded.htg"), rounded.view());
  TrainJob a = job(dir.file("rounded.htg"), StoreDtype::bf16, ModelKind::gcn, "a");
  TrainJob b = job(file(StoreDtype::bf16), StoreDtype::bf16, ModelKind::gcn, "b");
  a.normalize_features = b.normalize_features = true;
  EXPECT_EQ(run(a).logits, run(b).logits);
}

// --host-dtype fp16 checks the range of features of every file dtype: a bf16
// file can hold values fp16 cannot.
TEST_F(FeatureDtypeTraining, Fp16StoreRefusesBf16FeaturesOutOfRange) {
  Graph big = graph;
  big.features[7 * 6 + 2] = 1e6f;
  write_graph(dir.file("big.htg"), big.view(), {4, StoreDtype::bf16});
  try {
    run(job(dir.file("big.htg"), StoreDtype::f16, ModelKind::gcn, "a"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("outside fp16's range"), std::string::npos) << m;
    EXPECT_NE(m.find("bf16 in the graph file"), std::string::npos) << m;
  }
  EXPECT_NO_THROW(run(job(dir.file("big.htg"), StoreDtype::bf16, ModelKind::gcn, "b")));
}

}  // namespace
}  // namespace ht
