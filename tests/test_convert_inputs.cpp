// The input helpers behind ht-convert's OGB, PyG and gzip inputs, on files
// written here (no Python): gzip detection by content, concatenated members,
// truncated and corrupt streams; headerless numeric CSV (gzip or plain) with
// exact error lines; labels with NaN and split id lists; .npy float16 and
// (2, E) edge arrays; an OGB folder end to end through run_convert.
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zlib.h>

#include "core/error.hpp"
#include "core/npy_header.hpp"
#include "datasets/convert.hpp"
#include "datasets/label_split.hpp"
#include "datasets/npy.hpp"
#include "datasets/npy_edges.hpp"
#include "datasets/numeric_csv.hpp"
#include "datasets/text_input.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"

namespace ht::data {
namespace {

using test::error_of;
using test::write_file;

// One gzip member of `text` (zlib's deflate with the gzip wrapper).
std::string gzip_bytes(const std::string& text) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, text.size()) + 32, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  s.avail_in = static_cast<uInt>(text.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

TEST(TextInput, GzipDetectedByContentNotName) {
  test::TempDir dir;
  const std::string text = "0 1\n1 2\n";
  write_file(dir.file("plain.gz"), text);           // a .gz name holding plain text
  write_file(dir.file("packed.txt"), gzip_bytes(text));  // gzip under a plain name
  const TextInput plain(dir.file("plain.gz")), packed(dir.file("packed.txt"));
  EXPECT_FALSE(plain.was_gzip());
  EXPECT_TRUE(packed.was_gzip());
  EXPECT_EQ(plain.text(), text);
  EXPECT_EQ(packed.text(), text);
}

TEST(TextInput, ConcatenatedMembersAndLargeText) {
  test::TempDir dir;
  std::string big;
  for (int i = 0; i < 200000; ++i) big += std::to_string(i) + "," + std::to_string(i + 1) + "\n";
  write_file(dir.file("two.gz"), gzip_bytes("a\n") + gzip_bytes(big));
  EXPECT_EQ(TextInput(dir.file("two.gz")).text(), "a\n" + big);
}

TEST(TextInput, DamagedStreamsAreOneLineErrorsWithTheByte) {
  test::TempDir dir;
  const std::string gz = gzip_bytes("0 1\n1 2\n2 3\n");
  write_file(dir.file("cut.gz"), gz.substr(0, gz.size() - 9));
  EXPECT_NE(error_of([&] { TextInput t(dir.file("cut.gz")); }).find("cut.gz (byte "), std::string::npos);
  EXPECT_NE(error_of([&] { TextInput t(dir.file("cut.gz")); }).find("truncated gzip data"), std::string::npos);
  std::string bad = gz;
  bad[12] = static_cast<char>(bad[12] ^ 0xff);  // inside the deflate data
  bad[13] = static_cast<char>(bad[13] ^ 0xff);
  write_file(dir.file("bad.gz"), bad);
  const std::string msg = error_of([&] { TextInput t(dir.file("bad.gz")); });
  EXPECT_NE(msg.find("bad.gz (byte "), std::string::npos) << msg;
  EXPECT_NE(msg.find("gzip data"), std::string::npos) << msg;
  write_file(dir.file("tail.gz"), gz + "not gzip");
  EXPECT_NE(error_of([&] { TextInput t(dir.file("tail.gz")); }).find("is not another gzip member"), std::string::npos);
  EXPECT_EQ(without_gz_suffix("a/edge.csv.GZ"), "a/edge.csv");
  EXPECT_EQ(without_gz_suffix("edge.csv"), "edge.csv");
}

TEST(NumericCsv, RowsColumnsAndExactErrors) {
  test::TempDir dir;
  write_file(dir.file("x.csv.gz"), gzip_bytes("1.5,2,-3e2\r\n0,nan,7\n\n"));
  const CsvNumbers<float> x = read_csv_floats(dir.file("x.csv.gz"), "node features");
  ASSERT_EQ(x.rows, 2);
  ASSERT_EQ(x.cols, 3);
  EXPECT_EQ(x.values[0], 1.5f);
  EXPECT_EQ(x.values[2], -300.0f);
  EXPECT_TRUE(std::isnan(x.values[4]));
  write_file(dir.file("ids.csv"), "3\n1\n");
  EXPECT_EQ(read_csv_integers(dir.file("ids.csv"), "ids").values, (std::vector<int64_t>{3, 1}));

  write_file(dir.file("cols.csv"), "1,2\n3,4\n5\n");
  const std::string cols = error_of([&] { read_csv_floats(dir.file("cols.csv"), "node features"); });
  EXPECT_NE(cols.find("cols.csv:3: 1 columns, line 1 has 2"), std::string::npos) << cols;
  write_file(dir.file("tok.csv"), "1,2\n3,x4\n");
  const std::string tok = error_of([&] { read_csv_integers(dir.file("tok.csv"), "edges"); });
  EXPECT_NE(tok.find("tok.csv:2: column 2: 'x4' is not an integer (edges)"), std::string::npos) << tok;
  write_file(dir.file("frac.csv"), "1.5\n");
  EXPECT_NE(error_of([&] { read_csv_integers(dir.file("frac.csv"), "ids"); }).find("'1.5' is not an integer"),
            std::string::npos);
}

TEST(LabelSplit, NaNUnlabeledAndSplitIdChecks) {
  VertexData d;
  const auto where = [](int64_t i) { return "line " + std::to_string(i + 1); };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  set_labels(std::vector<double>{2, nan, 0, -1}, "y", where, d);
  EXPECT_EQ(d.labels, (std::vector<int32_t>{2, -1, 0, -1}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_NE(error_of([&] { set_labels(std::vector<double>{0, 2.5}, "y", where, d); })
                .find("y: line 2: label 2.5 of vertex 1 is not a class id"),
            std::string::npos);
  EXPECT_NE(error_of([&] { set_labels(std::vector<double>{-2}, "y", where, d); }).find("label -2"), std::string::npos);

  std::vector<uint8_t> split(4, 0);
  add_split_ids(std::vector<int64_t>{0, 3}, Split::train, "train.csv", where, split);
  EXPECT_EQ(split, (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_NE(error_of([&] { add_split_ids(std::vector<int64_t>{1, 3}, Split::test, "test.csv", where, split); })
                .find("test.csv: line 2: vertex 3 is already in the train set"),
            std::string::npos);
  EXPECT_NE(error_of([&] { add_split_ids(std::vector<int64_t>{4}, Split::val, "valid.csv", where, split); })
                .find("valid.csv: line 1: vertex id 4 is outside 0..3"),
            std::string::npos);
}

// A .npy file: the header NumPy writes (core/npy_header.hpp), then the data.
std::string npy(const std::string& descr, const std::string& shape, const void* data, size_t bytes) {
  return npy_header(descr, shape) + std::string(static_cast<const char*>(data), bytes);
}

TEST(NpyInputs, Float16AndEdgeIndexShape) {
  test::TempDir dir;
  const uint16_t h[3] = {0x3c00, 0xc000, 0x3555};  // 1, -2, 0.333251953125
  write_file(dir.file("h.npy"), npy("<f2", "(3,)", h, sizeof h));
  const NpyArray a(dir.file("h.npy"));
  EXPECT_EQ(a.to_float32(), (std::vector<float>{1.0f, -2.0f, 0.333251953125f}));
  EXPECT_FALSE(a.is_integral());

  const int64_t index[6] = {0, 1, 2, 1, 2, 0};  // (2, 3): sources 0 1 2, destinations 1 2 0
  write_file(dir.file("ei.npy"), npy("<i8", "(2, 3)", index, sizeof index));
  const RawEdges e = read_npy_edges(dir.file("ei.npy"), 3, EdgeArrayShape::either);
  EXPECT_EQ(e.src, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(e.dst, (std::vector<uint64_t>{1, 2, 0}));
  EXPECT_EQ(npy_edges_vertex_count(NpyArray(dir.file("ei.npy")), EdgeArrayShape::either), 3);
  const std::string pairs_only = error_of([&] { read_npy_edges(dir.file("ei.npy"), 3); });
  EXPECT_NE(pairs_only.find("edges must be an integer array of shape (E, 2), got int64 (2, 3)"), std::string::npos)
      << pairs_only;
  EXPECT_NE(error_of([&] { read_npy_edges(dir.file("ei.npy"), 2, EdgeArrayShape::index); })
                .find("edge 1 (1 -> 2) has an id outside 0..1"),
            std::string::npos);
}

TEST(OgbFolder, CsvGzConvertsWithTheChosenSplit) {
  test::TempDir dir;
  const std::filesystem::path root = dir.path() / "ogbn_tiny";
  std::filesystem::create_directories(root / "raw");
  for (const char* s : {"a", "b"}) std::filesystem::create_directories(root / "split" / s);
  auto gz = [&](const std::filesystem::path& p, const std::string& text) { write_file(p.string(), gzip_bytes(text)); };
  gz(root / "raw/edge.csv.gz", "0,1\n1,2\n2,0\n");
  gz(root / "raw/node-feat.csv.gz", "0.5,1\n2,3\n4,5\n");
  gz(root / "raw/node-label.csv.gz", "1\nnan\n0\n");
  gz(root / "split/a/train.csv.gz", "0\n");
  gz(root / "split/a/valid.csv.gz", "1\n");
  gz(root / "split/a/test.csv.gz", "2\n");
  write_file((root / "split/b/train.csv").string(), "2\n");  // plain csv is read too
  gz(root / "split/b/valid.csv.gz", "");
  gz(root / "split/b/test.csv.gz", "0\n1\n");
  ConvertOptions o;
  o.format = InputFormat::ogb;
  o.input = root.string();
  o.output = dir.file("a.htg");
  run_convert(o);
  {
    GraphFile f(o.output);
    const GraphView& g = f.view();
    EXPECT_EQ(g.num_vertices, 3);
    EXPECT_EQ(g.num_edges, 3);  // as given: not symmetrized
    EXPECT_EQ(g.feature_row(0)[0], 0.5f);
    EXPECT_EQ(std::vector<int32_t>(g.labels.begin(), g.labels.end()), (std::vector<int32_t>{1, -1, 0}));
    EXPECT_EQ(std::vector<uint8_t>(g.split.begin(), g.split.end()), (std::vector<uint8_t>{1, 2, 3}));
  }
  o.split_name = "b";
  o.output = dir.file("b.htg");
  run_convert(o);
  GraphFile f(o.output);
  EXPECT_EQ(std::vector<uint8_t>(f.view().split.begin(), f.view().split.end()), (std::vector<uint8_t>{3, 3, 1}));
  o.split_name = "c";
  EXPECT_NE(error_of([&] { run_convert(o); }).find("'c' is not a folder of"), std::string::npos);
}

}  // namespace
}  // namespace ht::data
