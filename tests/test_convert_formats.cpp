// Input readers of ht-convert on small files written by each test: text edge
// lists (separators, comments, headers, weights, exact error lines, the
// parallel block parser), Matrix Market, .npy (dtypes, header versions, bad
// headers), vertex arrays, CSV with quotes, MUSAE feature JSON.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "datasets/csv.hpp"
#include "datasets/edge_list_reader.hpp"
#include "datasets/id_lists_json.hpp"
#include "datasets/mtx_reader.hpp"
#include "datasets/npy.hpp"
#include "datasets/vertex_arrays.hpp"
#include "test_util.hpp"

namespace ht::data {
namespace {

using test::error_of;
using test::write_file;

// A .npy file: magic, version, header dict padded to a multiple of 64, data.
std::string npy_bytes(const std::string& descr, const std::string& shape, const void* data, size_t bytes,
                      int major = 1, bool fortran = false) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                     ", 'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t len = static_cast<uint32_t>(dict.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += dict;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

template <typename T>
std::string npy_of(const std::string& descr, const std::vector<T>& v, const std::string& shape, int major = 1) {
  return npy_bytes(descr, shape, v.data(), v.size() * sizeof(T), major);
}

std::vector<std::pair<uint64_t, uint64_t>> pairs(const RawEdges& e) {
  std::vector<std::pair<uint64_t, uint64_t>> p;
  for (int64_t i = 0; i < e.size(); ++i) p.emplace_back(e.src[i], e.dst[i]);
  return p;
}

using Pairs = std::vector<std::pair<uint64_t, uint64_t>>;

// --- text edge lists --------------------------------------------------------

TEST(ConvertEdgeList, SnapStyleWithCommentsBlanksTabsAndCrlf) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  write_file(path, "# Directed graph\n% another comment\n\n0\t1\r\n  1 2\n2   0  \n   # indented comment\n3 3\n");
  const RawEdges e = read_edge_list(path);
  EXPECT_EQ(pairs(e), (Pairs{{0, 1}, {1, 2}, {2, 0}, {3, 3}}));
  EXPECT_TRUE(e.weight.empty());
}

TEST(ConvertEdgeList, CommaSeparatedCsvHeaderDetectedAndWeights) {
  test::TempDir dir;
  const std::string path = dir.file("g.csv");
  write_file(path, "id_1,id_2,w\n0,1,0.5\n1 , 2 , 2\n2,0,-1.5e1\n");
  const RawEdges e = read_edge_list(path);
  EXPECT_EQ(pairs(e), (Pairs{{0, 1}, {1, 2}, {2, 0}}));
  EXPECT_EQ(e.weight, (std::vector<float>{0.5f, 2.0f, -15.0f}));
  EdgeListOptions no_weights;
  no_weights.keep_weights = false;
  EXPECT_TRUE(read_edge_list(path, no_weights).weight.empty());
  // A numeric first line of a .csv is data, not a header.
  write_file(path, "5,6\n6,7\n");
  EXPECT_EQ(read_edge_list(path).size(), 2);
}

TEST(ConvertEdgeList, HeaderOnlyWhenAskedForNonCsv) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  write_file(path, "# comment\nsrc dst\n0 1\n");
  const std::string msg = error_of([&] { read_edge_list(path); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--header"), std::string::npos) << msg;
  EdgeListOptions opt;
  opt.header = HeaderMode::yes;
  EXPECT_EQ(pairs(read_edge_list(path, opt)), (Pairs{{0, 1}}));
  // --header on a file whose first line is data drops that line.
  write_file(path, "7 8\n0 1\n");
  EXPECT_EQ(pairs(read_edge_list(path, opt)), (Pairs{{0, 1}}));
}

TEST(ConvertEdgeList, SixtyFourBitIds) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  write_file(path, "1000000000000 5\n18446744073709551615 0\n");
  const RawEdges e = read_edge_list(path);
  EXPECT_EQ(pairs(e), (Pairs{{1000000000000ULL, 5}, {18446744073709551615ULL, 0}}));
  write_file(path, "18446744073709551616 0\n");
  EXPECT_NE(error_of([&] { read_edge_list(path); }).find("does not fit in 64 bits"), std::string::npos);
}

TEST(ConvertEdgeList, ErrorsNameFileAndLine) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  struct Case {
    std::string text, where, what;
  };
  const Case cases[] = {
      {"0 1\n1 x2\n", ":2:", "non-numeric token 'x2' in column 2"},
      {"0 1\n# c\n\n1 2 3 4\n", ":4:", "found 4"},
      {"0 1\n1\n", ":2:", "found 1"},
      {"0 1 1.0\n1 2\n", ":2:", "expected 3 columns"},
      {"0 1\n-3 2\n", ":2:", "negative vertex id -3"},
      {"0 1\n1 2 abc\n", ":2:", "found 3"},  // the first data line fixes the column count
      {"0,1\n1,\n", ":2:", "empty field in column 2"},
      {"0,1\n,1\n", ":2:", "empty field in column 1"},
      {"0 1 0.5\n1 2 w\n", ":2:", "expected a weight"},
      {"0 1\n2 1.5\n", ":2:", "non-numeric token '1.5'"},
  };
  for (const Case& c : cases) {
    write_file(path, c.text);
    const std::string msg = error_of([&] { read_edge_list(path); });
    EXPECT_NE(msg.find(path + c.where), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.text << " -> " << msg;
  }
}

TEST(ConvertEdgeList, IdLimitGivesLineAndReason) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  write_file(path, "0 1\n1 2\n2 9\n");
  EdgeListOptions opt;
  opt.id_limit = 5;
  opt.limit_note = "N = 5 from f.npy";
  const std::string msg = error_of([&] { read_edge_list(path, opt); });
  EXPECT_NE(msg.find(path + ":3: vertex id 9 in column 2 is out of range (N = 5 from f.npy)"), std::string::npos)
      << msg;
}

// Several MiB so that the parallel parser uses many blocks: the result must
// equal the input in order, and an error far down must carry its exact line.
TEST(ConvertEdgeList, ManyBlocksKeepOrderAndExactErrorLines) {
  test::TempDir dir;
  const std::string path = dir.file("big.txt");
  const int64_t lines = 1200000;
  std::string text;
  text.reserve(lines * 16);
  for (int64_t i = 0; i < lines; ++i) {
    if (i % 1000 == 7) text += "# comment line\n";
    text += std::to_string(i * 7 % 100003) + ' ' + std::to_string(i) + '\n';
  }
  write_file(path, text);
  const RawEdges e = read_edge_list(path);
  ASSERT_EQ(e.size(), lines);
  bool in_order = true;
  for (int64_t i = 0; i < lines; ++i) in_order &= e.src[i] == static_cast<uint64_t>(i * 7 % 100003) && e.dst[i] == static_cast<uint64_t>(i);
  EXPECT_TRUE(in_order);

  // Corrupt one line near the end and one in the middle: the earlier wins.
  const size_t late = text.rfind("\n", text.size() - 2 - 16 * 1000) + 1;
  text.replace(late, 1, "x");
  const int64_t late_line = 1 + std::count(text.begin(), text.begin() + late, '\n');
  write_file(path, text);
  std::string msg = error_of([&] { read_edge_list(path); });
  EXPECT_NE(msg.find(path + ":" + std::to_string(late_line) + ":"), std::string::npos) << msg;
  const size_t mid = text.find("\n", text.size() / 2) + 1;
  text.replace(mid, 1, "-");
  const int64_t mid_line = 1 + std::count(text.begin(), text.begin() + mid, '\n');
  write_file(path, text);
  msg = error_of([&] { read_edge_list(path); });
  EXPECT_NE(msg.find(path + ":" + std::to_string(mid_line) + ":"), std::string::npos) << msg;
}

TEST(ConvertEdgeList, MissingAndEmptyFiles) {
  test::TempDir dir;
  EXPECT_NE(error_of([&] { read_edge_list(dir.file("nope.txt")); }).find("nope.txt"), std::string::npos);
  write_file(dir.file("empty.txt"), "# nothing\n");
  EXPECT_EQ(read_edge_list(dir.file("empty.txt")).size(), 0);
}

// A UTF-8 byte-order mark at the start is skipped (line numbers unchanged);
// CR-only (classic Mac) line ends are refused with a message naming them,
// not read as one long line with a confusing token.
TEST(ConvertEdgeList, ByteOrderMarkAcceptedAndCrOnlyLineEndsNamed) {
  test::TempDir dir;
  const std::string path = dir.file("g.txt");
  write_file(path, "\xEF\xBB\xBF" "0 1\n1 2\n");
  EXPECT_EQ(pairs(read_edge_list(path)), (Pairs{{0, 1}, {1, 2}}));
  write_file(dir.file("g.csv"), "\xEF\xBB\xBF" "src,dst\n0,1\n");
  EXPECT_EQ(pairs(read_edge_list(dir.file("g.csv"))), (Pairs{{0, 1}}));
  write_file(path, "\xEF\xBB\xBF" "0 1\n1 x\n");
  EXPECT_NE(error_of([&] { read_edge_list(path); }).find("g.txt:2: non-numeric token 'x'"), std::string::npos);
  write_file(path, "\xEF\xBB\xBF" "0 1\r\n1 2\r\n");
  EXPECT_EQ(pairs(read_edge_list(path)), (Pairs{{0, 1}, {1, 2}}));
  for (const std::string text : {"0 1\r1 2\r", "# c\r0 1\r1 2", "\xEF\xBB\xBF" "0 1\r1 2\r"}) {
    write_file(path, text);
    const std::string msg = error_of([&] { read_edge_list(path); });
    EXPECT_NE(msg.find("g.txt:1: the file uses CR line ends"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  write_file(path, "0 1\r");  // one line ended by a CR: nothing ambiguous
  EXPECT_EQ(pairs(read_edge_list(path)), (Pairs{{0, 1}}));
  const std::string mtx = dir.file("m.mtx");
  write_file(mtx, "\xEF\xBB\xBF%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n");
  EXPECT_EQ(pairs(read_matrix_market(mtx).edges), (Pairs{{0, 1}}));
  write_file(mtx, "%%MatrixMarket matrix coordinate pattern general\r2 2 1\r1 2\r");
  EXPECT_NE(error_of([&] { read_matrix_market(mtx); }).find("m.mtx:1: the file uses CR line ends"),
            std::string::npos);
}

// --- Matrix Market -----------------------------------------------------------

TEST(ConvertMatrixMarket, GeneralRealIsRowToColumnWithWeights) {
  test::TempDir dir;
  const std::string path = dir.file("m.mtx");
  write_file(path, "%%MatrixMarket matrix coordinate real general\n% comment\n3 3 3\n1 2 0.5\n3 1 2\n2 2 1e-1\n");
  const MtxData m = read_matrix_market(path);
  EXPECT_EQ(m.num_vertices, 3);
  EXPECT_EQ(pairs(m.edges), (Pairs{{0, 1}, {2, 0}, {1, 1}}));
  EXPECT_EQ(m.edges.weight, (std::vector<float>{0.5f, 2.0f, 0.1f}));
}

TEST(ConvertMatrixMarket, SymmetricPatternMirrorsOffDiagonal) {
  test::TempDir dir;
  const std::string path = dir.file("m.mtx");
  write_file(path, "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 3\n4 2\n");
  const MtxData m = read_matrix_market(path);
  EXPECT_EQ(m.num_vertices, 4);
  EXPECT_EQ(pairs(m.edges), (Pairs{{1, 0}, {2, 2}, {3, 1}, {0, 1}, {1, 3}}));
  EXPECT_TRUE(m.edges.weight.empty());
}

TEST(ConvertMatrixMarket, IntegerSymmetricKeepsWeightsOnBothDirections) {
  test::TempDir dir;
  const std::string path = dir.file("m.mtx");
  write_file(path, "%%MatrixMarket matrix coordinate integer symmetric\n2 2 1\n2 1 7\n");
  const MtxData m = read_matrix_market(path);
  EXPECT_EQ(pairs(m.edges), (Pairs{{1, 0}, {0, 1}}));
  EXPECT_EQ(m.edges.weight, (std::vector<float>{7.0f, 7.0f}));
}

TEST(ConvertMatrixMarket, Errors) {
  test::TempDir dir;
  const std::string path = dir.file("m.mtx");
  struct Case {
    std::string text, what;
  };
  const Case cases[] = {
      {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "only 'matrix coordinate'"},
      {"%%MatrixMarket matrix coordinate complex general\n", "unsupported field 'complex'"},
      {"%%MatrixMarket matrix coordinate real hermitian\n", "unsupported symmetry"},
      {"hello\n", ":1: not a Matrix Market file"},
      {"%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 1\n", ":2: the matrix is 3 x 4"},
      {"%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1\n2 3 1\n", "announces 3 entries but the file has 2"},
      {"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n2 4 1\n", ":4: vertex id 4 in column 2 is out of range"},
      {"%%MatrixMarket matrix coordinate real general\n3 3 1\n0 2 1\n", ":3: vertex id 0 in column 1 is below 1"},
      {"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 1\n", ":3: expected 2 columns (row, column)"},
      {"%%MatrixMarket matrix coordinate real general\n", "no size line"},
  };
  for (const Case& c : cases) {
    write_file(path, c.text);
    const std::string msg = error_of([&] { read_matrix_market(path); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << c.text << " -> " << msg;
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
  }
}

// --- .npy ----------------------------------------------------------------------

TEST(ConvertNpy, EveryDtypeAndHeaderVersion) {
  test::TempDir dir;
  const std::string path = dir.file("a.npy");
  for (int major : {1, 2, 3}) {
    write_file(path, npy_of<float>("<f4", {1.5f, -2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, "(3, 2)", major));
    NpyArray f4(path);
    EXPECT_EQ(f4.type(), NpyType::f4);
    EXPECT_EQ(f4.rows(), 3);
    EXPECT_EQ(f4.cols(), 2);
    EXPECT_EQ(f4.to_float32(), (std::vector<float>{1.5f, -2.0f, 3.0f, 4.0f, 5.0f, 6.0f}));
  }
  write_file(path, npy_of<double>("<f8", {0.25, 1e10}, "(2,)"));
  EXPECT_EQ(NpyArray(path).to_float32(), (std::vector<float>{0.25f, 1e10f}));
  write_file(path, npy_of<int32_t>("<i4", {-1, 7}, "(2,)"));
  EXPECT_EQ(NpyArray(path).as_int64(0), -1);
  write_file(path, npy_of<int64_t>("<i8", {int64_t{1} << 40, 3}, "(2,)"));
  EXPECT_EQ(NpyArray(path).as_int64(0), int64_t{1} << 40);
  write_file(path, npy_of<uint8_t>("|u1", {255, 3}, "(2,)"));
  EXPECT_EQ(NpyArray(path).as_int64(0), 255);
  write_file(path, npy_of<uint8_t>("|b1", {1, 0, 1}, "(3,)"));
  NpyArray b(path);
  EXPECT_EQ(b.type(), NpyType::b1);
  EXPECT_EQ(b.to_float32(), (std::vector<float>{1, 0, 1}));
  write_file(path, npy_of<float>("<f4", {}, "(0, 5)"));
  EXPECT_EQ(NpyArray(path).count(), 0);
}

TEST(ConvertNpy, BadHeadersNameFileAndOffset) {
  test::TempDir dir;
  const std::string path = dir.file("a.npy");
  const std::vector<float> v{1, 2, 3, 4};
  struct Case {
    std::string bytes, what;
  };
  std::string version4 = npy_of<float>("<f4", v, "(4,)");
  version4[6] = 4;
  std::string short_header = npy_of<float>("<f4", v, "(4,)").substr(0, 40);
  std::string truncated = npy_of<float>("<f4", v, "(4,)");
  truncated.resize(truncated.size() - 3);
  const Case cases[] = {
      {"PK\x03\x04 not numpy at all", "(byte 0): not a NumPy .npy file"},
      {version4, "(byte 6): unsupported .npy format version 4.0"},
      {short_header, "truncated .npy header"},
      {truncated, "needs 16 data bytes, the file has 13 (truncated file)"},
      {npy_of<float>(">f4", v, "(4,)"), "unsupported dtype '>f4'"},
      {npy_of<float>("<c8", v, "(2,)"), "unsupported dtype '<c8'"},
      {npy_of<float>("<f4", v, "(1, 2, 2)"), "3-D array"},
      {npy_of<float>("<f4", v, "(5,)"), "needs 20 data bytes, the file has 16"},
  };
  for (const Case& c : cases) {
    write_file(path, c.bytes);
    const std::string msg = error_of([&] { NpyArray a(path); });
    EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
  }
}

// Fortran order (np.savez of a transposed array: the heterophilous masks):
// elements still addressed row-major, offsets where they are stored.
TEST(ConvertNpy, FortranOrderReadsByRow) {
  test::TempDir dir;
  const std::string path = dir.file("f.npy");
  const std::vector<float> stored{1, 4, 2, 5, 3, 6};  // columns of [[1, 2, 3], [4, 5, 6]]
  write_file(path, npy_bytes("<f4", "(2, 3)", stored.data(), 24, 1, true));
  const NpyArray a(path);
  EXPECT_EQ(a.rows(), 2);
  EXPECT_EQ(a.cols(), 3);
  EXPECT_EQ(a.to_float32(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(a.as_double(1), 2.0);
  EXPECT_EQ(a.offset_of(1), a.offset_of(0) + 8);  // element (0, 1) is the third stored
  const std::vector<uint8_t> mask{1, 0, 0, 1, 1, 0};  // (3, 2) bool, Fortran: columns [1 0 0], [1 1 0]
  write_file(path, npy_bytes("|b1", "(3, 2)", mask.data(), 6, 1, true));
  const NpyArray b(path);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < 6; ++i) rows.push_back(b.as_int64(i));
  EXPECT_EQ(rows, (std::vector<int64_t>{1, 1, 0, 1, 0, 0}));
}

// --- vertex arrays ---------------------------------------------------------------

TEST(ConvertVertexArrays, LoadsAndChecksEveryArray) {
  test::TempDir dir;
  write_file(dir.file("x.npy"), npy_of<double>("<f8", {1, 2, 3, 4, 5, 6}, "(3, 2)"));
  write_file(dir.file("y.npy"), npy_of<int64_t>("<i8", {2, -1, 0}, "(3,)"));
  write_file(dir.file("s.npy"), npy_of<uint8_t>("|u1", {1, 2, 3}, "(3,)"));
  VertexArrayPaths p;
  p.features = dir.file("x.npy");
  p.labels = dir.file("y.npy");
  p.split = dir.file("s.npy");
  VertexData d;
  load_vertex_arrays(p, d);
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.feature_dim, 2);
  EXPECT_EQ(d.features, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(d.labels, (std::vector<int32_t>{2, -1, 0}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.split, (std::vector<uint8_t>{1, 2, 3}));

  p.num_classes = 5;
  VertexData d5;
  load_vertex_arrays(p, d5);
  EXPECT_EQ(d5.num_classes, 5);
}

TEST(ConvertVertexArrays, MasksBecomeCodes) {
  test::TempDir dir;
  write_file(dir.file("tr.npy"), npy_of<uint8_t>("|b1", {1, 0, 0, 0}, "(4,)"));
  write_file(dir.file("va.npy"), npy_of<uint8_t>("|b1", {0, 1, 0, 0}, "(4,)"));
  write_file(dir.file("te.npy"), npy_of<uint8_t>("|b1", {0, 0, 1, 0}, "(4,)"));
  VertexArrayPaths p;
  p.train_mask = dir.file("tr.npy");
  p.val_mask = dir.file("va.npy");
  p.test_mask = dir.file("te.npy");
  VertexData d;
  load_vertex_arrays(p, d);
  EXPECT_EQ(d.split, (std::vector<uint8_t>{1, 2, 3, 0}));
  // A vertex in two masks names both files.
  write_file(dir.file("te.npy"), npy_of<uint8_t>("|b1", {0, 1, 1, 0}, "(4,)"));
  VertexData again;
  const std::string msg = error_of([&] { load_vertex_arrays(p, again); });
  EXPECT_NE(msg.find("te.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("va.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vertex 1"), std::string::npos) << msg;
}

TEST(ConvertVertexArrays, ErrorsNameTheFiles) {
  test::TempDir dir;
  write_file(dir.file("x.npy"), npy_of<float>("<f4", {1, 2, 3, 4, 5, 6}, "(3, 2)"));
  write_file(dir.file("y4.npy"), npy_of<int32_t>("<i4", {0, 1, 0, 1}, "(4,)"));
  write_file(dir.file("yneg.npy"), npy_of<int32_t>("<i4", {0, -2, 1}, "(3,)"));
  write_file(dir.file("y9.npy"), npy_of<int32_t>("<i4", {0, 9, 1}, "(3,)"));
  write_file(dir.file("yf.npy"), npy_of<float>("<f4", {0, 1.5f, 1}, "(3,)"));
  write_file(dir.file("s7.npy"), npy_of<uint8_t>("|u1", {0, 7, 1}, "(3,)"));
  write_file(dir.file("y2d.npy"), npy_of<int32_t>("<i4", {0, 1, 0, 1, 0, 1}, "(3, 2)"));
  auto load = [&](const std::string& labels, const std::string& split, int32_t classes = 0) {
    VertexArrayPaths p;
    p.features = dir.file("x.npy");
    p.labels = labels.empty() ? "" : dir.file(labels);
    p.split = split.empty() ? "" : dir.file(split);
    p.num_classes = classes;
    VertexData d;
    return error_of([&] { load_vertex_arrays(p, d); });
  };
  std::string msg = load("y4.npy", "");
  EXPECT_NE(msg.find("y4.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("x.npy has 3"), std::string::npos) << msg;
  EXPECT_NE(load("yneg.npy", "").find("label -2 of vertex 1 is negative"), std::string::npos);
  EXPECT_NE(load("y9.npy", "", 5).find("label 9 of vertex 1 is out of range (--classes 5)"), std::string::npos);
  EXPECT_NE(load("yf.npy", "").find("not an integer"), std::string::npos);
  EXPECT_NE(load("", "s7.npy").find("split code 7 of vertex 1"), std::string::npos);
  EXPECT_NE(load("y2d.npy", "").find("must be a 1-D array"), std::string::npos);
  EXPECT_TRUE(load("y9.npy", "").empty());  // without --classes, C = max + 1
}

TEST(ConvertVertexArrays, NormalizeRowsToSumOne) {
  std::vector<float> f{1, 3, 0, 0, 2, 2};
  normalize_feature_rows(f, 2);
  EXPECT_EQ(f, (std::vector<float>{0.25f, 0.75f, 0, 0, 0.5f, 0.5f}));
}

// --- CSV and MUSAE JSON -------------------------------------------------------

TEST(ConvertCsv, QuotedFieldsWithCommasQuotesAndNewlines) {
  const std::string text =
      "id,name,type\r\n0,\"Acme, Inc.\",company\n1,\"He said \"\"hi\"\"\",tvshow\n2,\"two\nlines\",x\n\n3,,y";
  CsvReader csv(text, "t.csv");
  std::vector<std::string> row;
  ASSERT_TRUE(csv.next(row));
  EXPECT_EQ(row, (std::vector<std::string>{"id", "name", "type"}));
  EXPECT_EQ(csv_column(row, "type", "t.csv"), 2);
  ASSERT_TRUE(csv.next(row));
  EXPECT_EQ(row, (std::vector<std::string>{"0", "Acme, Inc.", "company"}));
  ASSERT_TRUE(csv.next(row));
  EXPECT_EQ(row[1], "He said \"hi\"");
  ASSERT_TRUE(csv.next(row));
  EXPECT_EQ(row[1], "two\nlines");
  EXPECT_EQ(csv.record_line(), 4);
  ASSERT_TRUE(csv.next(row));
  EXPECT_EQ(csv.record_line(), 7);
  EXPECT_EQ(row, (std::vector<std::string>{"3", "", "y"}));
  EXPECT_FALSE(csv.next(row));
}

TEST(ConvertCsv, Errors) {
  std::vector<std::string> row;
  CsvReader open_quote("a,b\n1,\"never closed\n", "t.csv");
  ASSERT_TRUE(open_quote.next(row));
  EXPECT_NE(error_of([&] { open_quote.next(row); }).find("t.csv:2: unterminated quoted field"), std::string::npos);
  CsvReader stray("1,ab\"c\n", "t.csv");
  EXPECT_NE(error_of([&] { stray.next(row); }).find("t.csv:1:"), std::string::npos);
  EXPECT_NE(error_of([&] { csv_column({"id", "x"}, "page_type", "t.csv"); }).find("no column 'page_type'"),
            std::string::npos);
}

TEST(ConvertIdListsJson, ParsesAndLocatesErrors) {
  test::TempDir dir;
  const std::string path = dir.file("f.json");
  write_file(path, "{\"0\": [1, 5], \"2\": [],\n \"1\": [3]}\n");
  const IdLists l = read_id_lists_json(path);
  EXPECT_EQ(l.keys, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 2, 2, 3}));
  EXPECT_EQ(l.values, (std::vector<int64_t>{1, 5, 3}));
  EXPECT_EQ(l.max_value, 5);
  write_file(path, "{\"0\": [1, 5],\n \"1\": [3, x]}");
  const std::string msg = error_of([&] { read_id_lists_json(path); });
  EXPECT_NE(msg.find(path + ":2: byte 24: syntax error"), std::string::npos) << msg;
  write_file(path, "{\"0\": [1]} extra");
  EXPECT_NE(error_of([&] { read_id_lists_json(path); }).find(":1: byte 11: trailing text"), std::string::npos)
      << error_of([&] { read_id_lists_json(path); });
  // Valid JSON of another shape: the byte where it goes wrong.
  const std::pair<const char*, const char*> wrong[] = {
      {"[1, 2]", ":1: byte 0: found an array where the file must hold one object"},
      {"{\"0\": [1, -2]}", "byte 10: feature id -2 is negative"},
      {"{\"0\": [1.5]}", "byte 7: feature id 1.5 is not an integer"},
      {"{\"x1\": [1]}", "byte 1: key \"x1\" is not a vertex id"},
      {"{\"0\": {\"a\": 1}}", "byte 6: found an object as a vertex's value"},
      {"{\"0\": 7}", "byte 6: found a number as a vertex's value"},
      {"{\"0\": [[1]]}", "byte 7: found an array in a feature list"},
      {"", "byte 0: syntax error"},
  };
  for (const auto& [text, expect] : wrong) {
    write_file(path, text);
    const std::string m = error_of([&] { read_id_lists_json(path); });
    EXPECT_NE(m.find(expect), std::string::npos) << text << " -> " << m;
  }
  write_file(path, "{}");
  EXPECT_TRUE(read_id_lists_json(path).keys.empty());
  EXPECT_EQ(read_id_lists_json(path).offsets, (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace ht::data
