// ht-convert end to end on small inputs written by the tests: relabeling
// (orig_ids kept), the transformations (symmetrize, duplicates, self-loops,
// feature normalization), the header flags written, the MUSAE, Planetoid
// (through the Python helper) and npz readers, --inspect, and bad
// inputs / outputs leaving no file behind.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zip.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "datasets/convert.hpp"
#include "datasets/inspect.hpp"
#include "datasets/relabel.hpp"
#include "graph/build.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"

namespace ht::data {
namespace {

using test::error_of;
using test::write_file;

// A version-1 .npy of little-endian values (descr e.g. "<f4", "<i8").
template <typename T>
std::string npy_bytes(const std::string& descr, const std::vector<T>& v, const std::string& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  out += dict;
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  return out;
}
template <typename T>
void write_npy(const std::string& path, const std::string& descr, const std::vector<T>& v, const std::string& shape) {
  write_file(path, npy_bytes(descr, v, shape));
}

// A zip archive of the given members (name, bytes), stored or deflated: an
// .npz as np.savez / np.savez_compressed write it.
void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& members, bool deflate) {
  std::filesystem::remove(path);
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_EXCL, &err);
  ASSERT_NE(z, nullptr) << err;
  for (const auto& [name, bytes] : members) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    ASSERT_NE(src, nullptr);
    const zip_int64_t i = zip_file_add(z, name.c_str(), src, ZIP_FL_ENC_UTF_8);
    ASSERT_GE(i, 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(i), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  ASSERT_EQ(zip_close(z), 0);  // the buffers are read here
}

// The (source, destination) pairs of a graph in CSC order.
std::vector<std::pair<vid_t, vid_t>> edges_of(const GraphView& g) {
  std::vector<std::pair<vid_t, vid_t>> e;
  for (int64_t v = 0; v < g.num_vertices; ++v)
    for (vid_t u : g.in_neighbors(v)) e.emplace_back(u, static_cast<vid_t>(v));
  return e;
}
using Edges = std::vector<std::pair<vid_t, vid_t>>;

// Files of `dir` other than the ones named (to spot leftovers of a failed run).
std::vector<std::string> files_in(const test::TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool python_has_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy, scipy' >/dev/null 2>&1") == 0;
}

// Runs the Python `script` (saved as make.py in `dir`) with `dir` as its
// argument, to write a test input; returns std::system's status (0 = done).
int run_input_script(const test::TempDir& dir, const char* script) {
  write_file(dir.file("make.py"), script);
  return std::system(("/usr/bin/python3 " + dir.file("make.py") + " " + dir.path().string()).c_str());
}

ConvertOptions edgelist(const test::TempDir& dir, const std::string& input) {
  ConvertOptions o;
  o.format = InputFormat::edgelist;
  o.input = dir.file(input);
  o.output = dir.file("out.htg");
  return o;
}

// --- ids ---------------------------------------------------------------------

RawEdges raw(std::vector<uint64_t> s, std::vector<uint64_t> d) {
  RawEdges e;
  e.src = std::move(s);
  e.dst = std::move(d);
  return e;
}

TEST(ConvertIds, DenseIdsAreKept) {
  std::vector<int64_t> orig;
  IdPolicy p;
  EdgeList el = to_dense_ids(raw({0, 2, 1}, {1, 0, 2}), p, orig);
  EXPECT_EQ(el.num_vertices, 3);
  EXPECT_TRUE(orig.empty());
  EXPECT_EQ(el.src, (std::vector<vid_t>{0, 2, 1}));
}

TEST(ConvertIds, SparseIdsAreRelabeledInOrder) {
  std::vector<int64_t> orig;
  IdPolicy p;
  EdgeList el = to_dense_ids(raw({10, 30, 20}, {30, 10, 50}), p, orig);
  EXPECT_EQ(el.num_vertices, 4);
  EXPECT_EQ(orig, (std::vector<int64_t>{10, 20, 30, 50}));
  EXPECT_EQ(el.src, (std::vector<vid_t>{0, 2, 1}));
  EXPECT_EQ(el.dst, (std::vector<vid_t>{2, 0, 3}));
  // Huge ids take the sorting path and give the same mapping.
  EdgeList big = to_dense_ids(raw({uint64_t{1} << 50, 7}, {7, (uint64_t{1} << 50) + 1}), p, orig);
  EXPECT_EQ(big.num_vertices, 3);
  EXPECT_EQ(orig, (std::vector<int64_t>{7, int64_t{1} << 50, (int64_t{1} << 50) + 1}));
  EXPECT_EQ(big.src, (std::vector<vid_t>{1, 0}));
  EXPECT_EQ(big.dst, (std::vector<vid_t>{0, 2}));
}

TEST(ConvertIds, KeepIdsAndKnownVertexCount) {
  std::vector<int64_t> orig;
  IdPolicy keep;
  keep.keep_ids = true;
  EXPECT_EQ(to_dense_ids(raw({0, 5}, {5, 2}), keep, orig).num_vertices, 6);
  EXPECT_TRUE(orig.empty());
  keep.input = "big.txt";
  EXPECT_NE(error_of([&] { to_dense_ids(raw({uint64_t{1} << 40}, {0}), keep, orig); }).find("--keep-ids"),
            std::string::npos);
  IdPolicy known;
  known.known_vertices = 10;
  EXPECT_EQ(to_dense_ids(raw({0}, {3}), known, orig).num_vertices, 10);
  known.input = "g.txt";
  EXPECT_NE(error_of([&] { to_dense_ids(raw({0}, {10}), known, orig); }).find("out of range (N = 10)"),
            std::string::npos);
}

// --- transformations through files ------------------------------------------------

// 0->1 twice, 1->1 (loop), 2->0, 3->2 (sources of one direction only).
const char* kMessy = "0 1\n0 1\n1 1\n2 0\n3 2\n";

TEST(ConvertTransforms, AsGivenByDefault) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), kMessy);
  ConvertOptions o = edgelist(dir, "g.txt");
  run_convert(o);
  GraphFile f(o.output);
  EXPECT_EQ(edges_of(f.view()), (Edges{{2, 0}, {0, 1}, {0, 1}, {1, 1}, {3, 2}}));
  EXPECT_TRUE(f.view().flags.has_self_loops);
  EXPECT_FALSE(f.view().flags.no_duplicates);
  EXPECT_FALSE(f.view().flags.symmetric);
  EXPECT_TRUE(f.view().flags.sorted_neighbors);
  EXPECT_TRUE(f.view().orig_ids.empty());
}

TEST(ConvertTransforms, SymmetrizeDropsDuplicatesKeepsLoops) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), kMessy);
  ConvertOptions o = edgelist(dir, "g.txt");
  o.symmetrize = 1;
  run_convert(o);
  GraphFile f(o.output);
  EXPECT_EQ(edges_of(f.view()), (Edges{{1, 0}, {2, 0}, {0, 1}, {1, 1}, {0, 2}, {3, 2}, {2, 3}}));
  EXPECT_TRUE(f.view().flags.symmetric);
  EXPECT_TRUE(f.view().flags.no_duplicates);
  EXPECT_TRUE(f.view().flags.has_self_loops);
}

TEST(ConvertTransforms, DropDuplicatesAndSelfLoops) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), kMessy);
  ConvertOptions o = edgelist(dir, "g.txt");
  o.drop_duplicates = 1;
  o.self_loops = SelfLoopChoice::drop;
  run_convert(o);
  GraphFile f(o.output);
  EXPECT_EQ(edges_of(f.view()), (Edges{{2, 0}, {0, 1}, {3, 2}}));
  EXPECT_FALSE(f.view().flags.has_self_loops);
  EXPECT_TRUE(f.view().flags.no_duplicates);
}

TEST(ConvertTransforms, AddSelfLoopsOncePerVertex) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), kMessy);
  ConvertOptions o = edgelist(dir, "g.txt");
  o.self_loops = SelfLoopChoice::add;
  run_convert(o);
  GraphFile f(o.output);
  EXPECT_EQ(edges_of(f.view()),
            (Edges{{0, 0}, {2, 0}, {0, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 2}, {3, 3}}));
  EXPECT_TRUE(f.view().flags.has_self_loops);
}

TEST(ConvertTransforms, RelabelKeepsOrigIdsAndWeights) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), "# sparse 64-bit ids\n100 300 0.5\n5000000000 100 2\n");
  ConvertOptions o = edgelist(dir, "g.txt");
  run_convert(o);
  GraphFile f(o.output);
  const GraphView& g = f.view();
  ASSERT_EQ(g.num_vertices, 3);
  EXPECT_EQ(std::vector<int64_t>(g.orig_ids.begin(), g.orig_ids.end()), (std::vector<int64_t>{100, 300, 5000000000}));
  EXPECT_EQ(edges_of(g), (Edges{{2, 0}, {0, 1}}));
  EXPECT_EQ(std::vector<float>(g.weights.begin(), g.weights.end()), (std::vector<float>{2.0f, 0.5f}));
  // --keep-ids refuses: 5e9 does not fit 32-bit ids.
  o.keep_ids = true;
  EXPECT_NE(error_of([&] { run_convert(o); }).find("--keep-ids"), std::string::npos);
}

TEST(ConvertTransforms, VertexArraysFixNAndFeaturesNormalize) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), "0 1\n1 0\n");
  write_npy<float>(dir.file("x.npy"), "<f4", {1, 3, 2, 2, 0, 0, 5, 0}, "(4, 2)");
  write_npy<int64_t>(dir.file("y.npy"), "<i8", {0, 1, 1, -1}, "(4,)");
  write_npy<uint8_t>(dir.file("s.npy"), "|u1", {1, 2, 3, 0}, "(4,)");
  ConvertOptions o = edgelist(dir, "g.txt");
  o.arrays.features = dir.file("x.npy");
  o.arrays.labels = dir.file("y.npy");
  o.arrays.split = dir.file("s.npy");
  o.normalize_features = true;
  run_convert(o);
  GraphFile f(o.output);
  const GraphView& g = f.view();
  EXPECT_EQ(g.num_vertices, 4);  // vertices 2 and 3 are isolated
  EXPECT_EQ(g.feature_dim, 2);
  EXPECT_EQ(std::vector<float>(g.features.begin(), g.features.end()),
            (std::vector<float>{0.25f, 0.75f, 0.5f, 0.5f, 0, 0, 1, 0}));
  EXPECT_TRUE(g.flags.features_normalized);
  EXPECT_EQ(g.num_classes, 2);
  EXPECT_EQ(std::vector<int32_t>(g.labels.begin(), g.labels.end()), (std::vector<int32_t>{0, 1, 1, -1}));
  EXPECT_EQ(std::vector<uint8_t>(g.split.begin(), g.split.end()), (std::vector<uint8_t>{1, 2, 3, 0}));
}

// --- bad inputs leave nothing behind ------------------------------------------------

TEST(ConvertErrors, IdBeyondTheArraysNamesBothFilesAndLeavesNoOutput) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), "0 1\n1 4\n");
  write_npy<float>(dir.file("x.npy"), "<f4", {1, 2, 3}, "(3,)");
  ConvertOptions o = edgelist(dir, "g.txt");
  o.arrays.features = dir.file("x.npy");
  const std::string msg = error_of([&] { run_convert(o); });
  EXPECT_NE(msg.find(dir.file("g.txt") + ":2: vertex id 4 in column 2 is out of range (N = 3 from " + dir.file("x.npy")),
            std::string::npos)
      << msg;
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"g.txt", "x.npy"}));
}

TEST(ConvertErrors, MatrixSizeAgainstArrays) {
  test::TempDir dir;
  write_file(dir.file("m.mtx"), "%%MatrixMarket matrix coordinate pattern general\n4 4 1\n1 2\n");
  write_npy<int32_t>(dir.file("y.npy"), "<i4", {0, 1, 0}, "(3,)");
  ConvertOptions o = edgelist(dir, "m.mtx");
  o.format = InputFormat::mtx;
  o.arrays.labels = dir.file("y.npy");
  const std::string msg = error_of([&] { run_convert(o); });
  EXPECT_NE(msg.find("y.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("m.mtx is a 4 x 4 matrix"), std::string::npos) << msg;
  EXPECT_FALSE(file_exists(o.output));
}

TEST(ConvertErrors, UnwritableOutputFailsBeforeReading) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), "0 1\n");
  ConvertOptions o = edgelist(dir, "g.txt");
  o.output = dir.file("no/such/dir/out.htg");
  EXPECT_NE(error_of([&] { run_convert(o); }).find("does not exist"), std::string::npos);
  o.output = dir.path().string();
  EXPECT_NE(error_of([&] { run_convert(o); }).find("is a directory"), std::string::npos);
  o.output = "";
  EXPECT_NE(error_of([&] { run_convert(o); }).find("--output"), std::string::npos);
  o.input = dir.file("missing.txt");
  o.output = dir.file("out.htg");
  EXPECT_NE(error_of([&] { run_convert(o); }).find("missing.txt: input file not found"), std::string::npos);
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"g.txt"}));
}

// --- MUSAE (Facebook layout) -----------------------------------------------------------

void write_tiny_musae(const test::TempDir& dir) {
  write_file(dir.file("tiny_edges.csv"), "id_1,id_2\n0,1\n1,2\n2,2\n3,4\n4,5\n5,0\n1,0\n");
  write_file(dir.file("tiny_features.json"), "{\"0\": [0, 3], \"1\": [1], \"2\": [2], \"3\": [3], \"4\": [0], \"5\": [1, 2]}");
  write_file(dir.file("tiny_target.csv"),
             "id,facebook_id,page_name,page_type\n0,11,\"Acme, Inc.\",tvshow\n1,12,Bob,company\n"
             "2,13,\"The \"\"Best\"\" Page\",tvshow\n3,14,x,government\n4,15,y,company\n5,16,\"a,b,c\",company\n");
}

TEST(ConvertMusae, ClassesSortedFeaturesBinarySymmetricNoLoops) {
  test::TempDir dir;
  write_tiny_musae(dir);
  ConvertOptions o;
  o.format = InputFormat::facebook;
  o.input = dir.path().string();
  o.name = "tiny";
  o.output = dir.file("out.htg");
  o.train_fraction = 0.5;
  o.val_fraction = 0.0;
  run_convert(o);
  GraphFile f(o.output);
  const GraphView& g = f.view();
  EXPECT_EQ(g.num_vertices, 6);
  EXPECT_EQ(g.num_classes, 3);  // company 0, government 1, tvshow 2
  EXPECT_EQ(std::vector<int32_t>(g.labels.begin(), g.labels.end()), (std::vector<int32_t>{2, 0, 2, 1, 0, 0}));
  EXPECT_EQ(g.feature_dim, 4);
  EXPECT_EQ(std::vector<float>(g.feature_row(5).begin(), g.feature_row(5).end()), (std::vector<float>{0, 1, 1, 0}));
  EXPECT_TRUE(g.flags.symmetric);
  EXPECT_FALSE(g.flags.has_self_loops);
  EXPECT_EQ(g.num_edges, 10);  // 5 undirected pairs (0-1 listed twice, 2-2 dropped)
  // Stratified: half of each class in train, the rest test.
  int64_t train[3] = {0, 0, 0}, total[3] = {0, 0, 0};
  for (int64_t v = 0; v < 6; ++v) {
    ++total[g.labels[v]];
    train[g.labels[v]] += g.split[v] == static_cast<uint8_t>(Split::train);
    EXPECT_NE(g.split[v], static_cast<uint8_t>(Split::val));
  }
  EXPECT_EQ(train[0], 2);  // round(0.5 * 3)
  EXPECT_EQ(train[1], 1);  // round(0.5 * 1)
  EXPECT_EQ(train[2], 1);
}

TEST(ConvertMusae, SplitDependsOnSeedOnly) {
  test::TempDir dir;
  write_tiny_musae(dir);
  auto split_with = [&](uint64_t seed) {
    ConvertOptions o;
    o.format = InputFormat::facebook;
    o.input = dir.path().string();
    o.name = "tiny";
    o.output = dir.file("s.htg");
    o.train_fraction = 0.34;
    o.val_fraction = 0.33;
    o.seed = seed;
    run_convert(o);
    GraphFile f(o.output);
    return std::vector<uint8_t>(f.view().split.begin(), f.view().split.end());
  };
  EXPECT_EQ(split_with(1), split_with(1));
  bool differs = false;
  for (uint64_t s = 2; s < 12 && !differs; ++s) differs = split_with(s) != split_with(1);
  EXPECT_TRUE(differs);
}

TEST(ConvertMusae, TargetErrors) {
  test::TempDir dir;
  write_tiny_musae(dir);
  write_file(dir.file("tiny_target.csv"), "id,page_type\n0,a\nzero,b\n");
  ConvertOptions o;
  o.format = InputFormat::facebook;
  o.input = dir.path().string();
  o.name = "tiny";
  o.output = dir.file("out.htg");
  EXPECT_NE(error_of([&] { run_convert(o); }).find("tiny_target.csv:3: 'zero' in column 'id'"), std::string::npos);
  o.target_label_column = "kind";
  EXPECT_NE(error_of([&] { run_convert(o); }).find("no column 'kind'"), std::string::npos);
  EXPECT_FALSE(file_exists(o.output));
}

// --- Planetoid through the Python helper, npz ------------------------------------------

// A Planetoid-format dataset with the CiteSeer quirk: test ids 4, 6, 7 of
// the range 4..7 (5 is missing), written as protocol-2 pickles.
const char* kTinyPlanetoid = R"(
import pickle, sys, collections
import numpy as np, scipy.sparse as sp
d = sys.argv[1]
def dump(name, obj):
    with open(d + '/ind.tiny.' + name, 'wb') as f:
        pickle.dump(obj, f, protocol=2)
allx = sp.csr_matrix(np.array([[1,0,0],[0,1,0],[0,0,1],[1,1,0]], dtype=np.float32))
ally = np.eye(2, dtype=np.int32)[[0,1,0,1]]
tx = sp.csr_matrix(np.array([[0,1,1],[1,0,1],[1,1,1]], dtype=np.float32))
ty = np.eye(2, dtype=np.int32)[[1,1,0]]
dump('x', allx[:2]); dump('y', ally[:2]); dump('allx', allx); dump('ally', ally); dump('tx', tx); dump('ty', ty)
g = collections.defaultdict(list, {0: [1, 1, 0], 1: [0, 2], 2: [1], 3: [], 4: [5], 5: [4], 6: [7], 7: [6]})
dump('graph', g)
open(d + '/ind.tiny.test.index', 'w').write('7\n4\n6\n')
)";

TEST(ConvertPlanetoid, KipfAssemblyWithMissingTestIds) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy/scipy: Planetoid helper not tested";
  test::TempDir dir;
  ASSERT_EQ(run_input_script(dir, kTinyPlanetoid), 0);
  ConvertOptions o;
  o.format = InputFormat::planetoid;
  o.input = dir.path().string();  // name detected from ind.tiny.graph
  o.output = dir.file("out.htg");
  run_convert(o);
  GraphFile f(o.output);
  const GraphView& g = f.view();
  ASSERT_EQ(g.num_vertices, 8);  // 4 allx rows + test range 4..7
  EXPECT_EQ(g.feature_dim, 3);
  // Node test.index[k] gets tx[k]: 7 <- [0,1,1], 4 <- [1,0,1], 6 <- [1,1,1]; 5 is zero.
  auto row = [&](int v) { return std::vector<float>(g.feature_row(v).begin(), g.feature_row(v).end()); };
  EXPECT_EQ(row(7), (std::vector<float>{0, 1, 1}));
  EXPECT_EQ(row(4), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(row(6), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(row(5), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(g.labels.begin(), g.labels.end()), (std::vector<int32_t>{0, 1, 0, 1, 1, -1, 0, 1}));
  // Split: train = 0..len(y)-1, val = the next 500 (here 2..3), test = test.index.
  EXPECT_EQ(std::vector<uint8_t>(g.split.begin(), g.split.end()), (std::vector<uint8_t>{1, 1, 2, 2, 3, 0, 3, 3}));
  // Symmetrized, duplicates and the self-loop 0-0 dropped.
  EXPECT_EQ(edges_of(g), (Edges{{1, 0}, {0, 1}, {2, 1}, {1, 2}, {5, 4}, {4, 5}, {7, 6}, {6, 7}}));
  EXPECT_TRUE(g.flags.symmetric && g.flags.no_duplicates && !g.flags.has_self_loops);
}

TEST(ConvertPlanetoid, ScriptErrorsAreOneLine) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy/scipy: Planetoid helper not tested";
  test::TempDir dir;
  write_file(dir.file("ind.tiny.graph"), "not a pickle");
  ConvertOptions o;
  o.format = InputFormat::planetoid;
  o.input = dir.path().string();
  o.output = dir.file("out.htg");
  const std::string msg = error_of([&] { run_convert(o); });
  EXPECT_NE(msg.find("ind.tiny.x: file not found"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  // No interpreter: a clear message naming HT_PYTHON.
  setenv("HT_PYTHON", "/nonexistent/python", 1);
  const std::string no_python = error_of([&] { run_convert(o); });
  unsetenv("HT_PYTHON");
  EXPECT_NE(no_python.find("HT_PYTHON"), std::string::npos) << no_python;
  EXPECT_FALSE(file_exists(o.output));
}

const char* kTinyNpz = R"(
import sys, numpy as np
x = np.arange(12, dtype=np.float32).reshape(4, 3)
y = np.array([0, 1, 2, 1])
e = np.array([[0, 1], [1, 2], [3, 3]])
tr = np.zeros((10, 4), bool); va = np.zeros((10, 4), bool); te = np.zeros((10, 4), bool)
tr[:, 0] = True; va[:, 1] = True; te[:, 2] = True
tr[1] = [False, False, False, True]; te[1] = [True, False, False, False]
for name in ('tiny.npz', 'tiny_directed.npz'):
    np.savez_compressed(sys.argv[1] + '/' + name, node_features=x, node_labels=y, edges=e,
                        train_masks=tr, val_masks=va, test_masks=te)
)";

TEST(ConvertNpz, UndirectedSymmetrizedDirectedKeptSplitIndexChosen) {
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy: npz helper not tested";
  test::TempDir dir;
  ASSERT_EQ(run_input_script(dir, kTinyNpz), 0);
  ConvertOptions o;
  o.format = InputFormat::npz;
  o.input = dir.file("tiny.npz");
  o.output = dir.file("u.htg");
  o.split_index = 1;
  run_convert(o);
  GraphFile u(o.output);
  EXPECT_EQ(u.view().num_vertices, 4);
  EXPECT_EQ(u.view().feature_dim, 3);
  EXPECT_EQ(u.view().feature_row(3)[2], 11.0f);
  EXPECT_EQ(u.view().num_classes, 3);
  EXPECT_EQ(edges_of(u.view()), (Edges{{1, 0}, {0, 1}, {2, 1}, {1, 2}, {3, 3}}));
  EXPECT_EQ(std::vector<uint8_t>(u.view().split.begin(), u.view().split.end()), (std::vector<uint8_t>{3, 2, 0, 1}));

  o.input = dir.file("tiny_directed.npz");
  o.output = dir.file("d.htg");
  o.split_index = 0;
  run_convert(o);
  GraphFile d(o.output);
  EXPECT_EQ(edges_of(d.view()), (Edges{{0, 1}, {1, 2}, {3, 3}}));
  EXPECT_EQ(std::vector<uint8_t>(d.view().split.begin(), d.view().split.end()), (std::vector<uint8_t>{1, 2, 3, 0}));

  o.split_index = 10;
  EXPECT_NE(error_of([&] { run_convert(o); }).find("--split-index 10 is outside 0..9"), std::string::npos);
}

// The same archive as kTinyNpz, written here (no Python): members stored or
// deflated; `drop` leaves one member out, `edges` replaces the edge list.
std::vector<std::pair<std::string, std::string>> tiny_npz_members(const std::string& drop = "",
                                                                   std::vector<int64_t> edges = {0, 1, 1, 2, 3, 3}) {
  std::vector<uint8_t> tr(40, 0), va(40, 0), te(40, 0);
  for (int s = 0; s < 10; ++s) {
    tr[s * 4 + 0] = 1;
    va[s * 4 + 1] = 1;
    te[s * 4 + 2] = 1;
  }
  tr[4 + 0] = 0, tr[4 + 3] = 1, te[4 + 2] = 0, te[4 + 0] = 1;  // split 1: train {3}, val {1}, test {0}
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i);
  std::vector<std::pair<std::string, std::string>> m = {
      {"node_features.npy", npy_bytes<float>("<f4", x, "(4, 3)")},
      {"node_labels.npy", npy_bytes<int64_t>("<i8", {0, 1, 2, 1}, "(4,)")},
      {"edges.npy", npy_bytes<int64_t>("<i8", edges, fmt::format("({}, 2)", edges.size() / 2))},
      {"train_masks.npy", npy_bytes<uint8_t>("|b1", tr, "(10, 4)")},
      {"val_masks.npy", npy_bytes<uint8_t>("|b1", va, "(10, 4)")},
      {"test_masks.npy", npy_bytes<uint8_t>("|b1", te, "(10, 4)")}};
  std::erase_if(m, [&](const auto& e) { return e.first == drop + ".npy"; });
  return m;
}

TEST(ConvertNpz, ReadInCppStoredOrDeflated) {
  test::TempDir dir;
  for (bool deflate : {false, true}) {
    SCOPED_TRACE(deflate ? "deflated" : "stored");
    write_zip(dir.file("tiny.npz"), tiny_npz_members(), deflate);
    ConvertOptions o;
    o.format = InputFormat::npz;
    o.input = dir.file("tiny.npz");
    o.output = dir.file("u.htg");
    o.split_index = 1;
    setenv("HT_PYTHON", "/nonexistent/python", 1);  // no Python needed
    run_convert(o);
    unsetenv("HT_PYTHON");
    GraphFile u(o.output);
    EXPECT_EQ(u.view().num_vertices, 4);
    EXPECT_EQ(u.view().feature_dim, 3);
    EXPECT_EQ(u.view().feature_row(3)[2], 11.0f);
    EXPECT_EQ(u.view().num_classes, 3);
    EXPECT_EQ(edges_of(u.view()), (Edges{{1, 0}, {0, 1}, {2, 1}, {1, 2}, {3, 3}}));
    EXPECT_EQ(std::vector<uint8_t>(u.view().split.begin(), u.view().split.end()), (std::vector<uint8_t>{3, 2, 0, 1}));
  }
}

TEST(ConvertNpz, ErrorsNameTheArchiveMemberAndOffset) {
  test::TempDir dir;
  const std::string path = dir.file("tiny.npz");
  ConvertOptions o;
  o.format = InputFormat::npz;
  o.input = path;
  o.output = dir.file("out.htg");
  auto error = [&] { return error_of([&] { run_convert(o); }); };

  write_file(path, "not a zip archive at all");
  EXPECT_NE(error().find("tiny.npz: not a readable .npz (zip) archive"), std::string::npos) << error();

  write_zip(path, tiny_npz_members("edges"), true);
  EXPECT_NE(error().find("tiny.npz: no 'edges' array (keys: node_features, node_labels, test_masks"),
            std::string::npos)
      << error();

  write_zip(path, tiny_npz_members("", {0, 1, 1, 9}), true);
  EXPECT_NE(error().find("tiny.npz:edges.npy (byte 144): edge 1 (1 -> 9) has an id outside 0..3"), std::string::npos)
      << error();

  auto members = tiny_npz_members();
  members[1].second[0] = 'X';  // node_labels.npy's magic
  write_zip(path, members, false);
  EXPECT_NE(error().find("tiny.npz:node_labels.npy (byte 0): not a NumPy .npy file"), std::string::npos) << error();

  members = tiny_npz_members();
  members[5].second[128] = 1;  // split 0: vertex 0 in the test mask too (train has it)
  write_zip(path, members, true);
  EXPECT_NE(error().find("split 0: node 0 is in two masks"), std::string::npos) << error();

  // A damaged deflate stream (or CRC): the member is named.
  write_zip(path, tiny_npz_members(), true);
  std::vector<char> bytes = test::read_bytes(path);
  const std::string needle = "node_features.npy";
  const std::string next_header = "PK\x03\x04";
  const auto data = std::search(bytes.begin(), bytes.end(), needle.begin(), needle.end()) + needle.size();
  const auto end = std::search(data, bytes.end(), next_header.begin(), next_header.end());  // the next member
  ASSERT_GT(end - data, 40);
  for (auto i = end - 30; i < end - 10; ++i) *i ^= 0x5A;  // inside the compressed data
  test::write_bytes(path, bytes);
  EXPECT_NE(error().find("tiny.npz:node_features.npy: cannot read the member"), std::string::npos) << error();
  EXPECT_FALSE(file_exists(o.output));
}

// --- --inspect -------------------------------------------------------------------------

TEST(ConvertInspect, TextAndJsonCarryTheStatistics) {
  test::TempDir dir;
  write_file(dir.file("g.txt"), kMessy);
  write_npy<int32_t>(dir.file("y.npy"), "<i4", {0, 1, 1, -1}, "(4,)");
  ConvertOptions o = edgelist(dir, "g.txt");
  o.arrays.labels = dir.file("y.npy");
  run_convert(o);
  InspectOptions i;
  i.path = o.output;
  const std::string text = inspect_graph_file(i);
  EXPECT_NE(text.find("vertices             4"), std::string::npos) << text;
  EXPECT_NE(text.find("self-loops           1"), std::string::npos) << text;
  EXPECT_NE(text.find("duplicate edges      1"), std::string::npos) << text;
  EXPECT_NE(text.find("2 (1, 2), 1 unlabeled"), std::string::npos) << text;
  i.json = true;
  i.verify_checksums = false;
  const std::string json = inspect_graph_file(i);
  EXPECT_NE(json.find("\"num_edges\":5"), std::string::npos) << json;
  EXPECT_NE(json.find("\"in_degree\":{\"min\":0,\"mean\":1.25,\"max\":3}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"isolated_vertices\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"class_counts\":[1,2]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"checksums_verified\":false"), std::string::npos) << json;
  EXPECT_NE(json.find("\"split\":null"), std::string::npos) << json;
}

TEST(ConvertInspect, HeaderFlagThatLiesIsAnError) {
  test::TempDir dir;
  EdgeList el;
  el.num_vertices = 3;
  el.src = {0, 1};
  el.dst = {1, 2};
  Graph g = csc_from_edges(std::move(el));
  g.flags = detect_flags(g.view());
  g.flags.symmetric = true;  // false claim
  write_graph(dir.file("bad.htg"), g.view());
  InspectOptions i;
  i.path = dir.file("bad.htg");
  EXPECT_NE(error_of([&] { inspect_graph_file(i); }).find("header flag 'symmetric' is set"), std::string::npos);
  i.path = dir.file("missing.htg");
  EXPECT_NE(error_of([&] { inspect_graph_file(i); }).find("missing.htg"), std::string::npos);
}

TEST(ConvertInspect, UnsortedListsUnderASortedFlagAreAnError) {
  test::TempDir dir;
  Graph g;
  g.num_vertices = 3;
  g.offsets = {0, 0, 2, 2};
  g.sources = {2, 0};  // vertex 1's in-list, descending
  g.flags.sorted_neighbors = true;  // false claim
  write_graph(dir.file("bad.htg"), g.view());
  InspectOptions i;
  i.path = dir.file("bad.htg");
  const std::string err = error_of([&] { inspect_graph_file(i); });
  EXPECT_NE(err.find("header flag 'sorted' is set"), std::string::npos) << err;
}

}  // namespace
}  // namespace ht::data
