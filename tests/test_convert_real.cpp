// Real datasets from ../shared/datasets (README.md there gives the counts
// checked here): Cora and CiteSeer (Planetoid pickles, through the Python
// helper), Facebook Page-Page (MUSAE csv/json) and heterophilous-benchmark
// npz archives (read in C++, no Python). Skipped when absent.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/timer.hpp"
#include "datasets/convert.hpp"
#include "datasets/graph_stats.hpp"
#include "graph/graph_file.hpp"
#include "test_util.hpp"

namespace ht::data {
namespace {

std::string raw_dir(const std::string& name) { return test::datasets_dir() + "/" + name + "/raw"; }

bool python_has_numpy() {
  return std::system("/usr/bin/python3 -c 'import numpy, scipy' >/dev/null 2>&1") == 0;
}

// Converts with the format's defaults; returns the statistics of the file.
GraphStats convert(ConvertOptions o, const test::TempDir& dir, const char* what) {
  o.output = dir.file("out.htg");
  Timer t;
  run_convert(o);
  const double seconds = t.seconds();
  std::printf("[ timing   ] %s conversion: %.2f s\n", what, seconds);
  const GraphFile f(o.output);
  EXPECT_TRUE(f.view().flags.symmetric);
  EXPECT_FALSE(f.view().flags.has_self_loops);
  EXPECT_TRUE(f.view().flags.no_duplicates);
  return compute_stats(f.view());
}

ConvertOptions planetoid(const std::string& name) {
  ConvertOptions o;
  o.format = InputFormat::planetoid;
  o.input = raw_dir(name);
  o.name = name;
  return o;
}

TEST(ConvertReal, Cora) {
  if (!std::filesystem::exists(raw_dir("cora") + "/ind.cora.graph"))
    GTEST_SKIP() << "Cora not found under " << test::datasets_dir() << " (set HT_DATASETS)";
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy/scipy";
  test::TempDir dir;
  const GraphStats s = convert(planetoid("cora"), dir, "Cora");
  EXPECT_EQ(s.num_vertices, 2708);
  EXPECT_EQ(s.num_edges, 10556);
  EXPECT_EQ(s.self_loops, 0);
  EXPECT_EQ(s.duplicate_edges, 0);
  EXPECT_TRUE(s.symmetric);
  EXPECT_EQ(s.feature_dim, 1433);
  EXPECT_EQ(s.feature_nonzeros, 49216);
  EXPECT_EQ(s.num_classes, 7);
  EXPECT_EQ(s.class_counts, (std::vector<int64_t>{351, 217, 418, 818, 426, 298, 180}));
  EXPECT_EQ(s.unlabeled, 0);
  EXPECT_EQ(s.split_counts[1], 140);
  EXPECT_EQ(s.split_counts[2], 500);
  EXPECT_EQ(s.split_counts[3], 1000);
}

TEST(ConvertReal, CiteSeer) {
  if (!std::filesystem::exists(raw_dir("citeseer") + "/ind.citeseer.graph"))
    GTEST_SKIP() << "CiteSeer not found under " << test::datasets_dir() << " (set HT_DATASETS)";
  if (!python_has_numpy()) GTEST_SKIP() << "/usr/bin/python3 lacks numpy/scipy";
  test::TempDir dir;
  const GraphStats s = convert(planetoid("citeseer"), dir, "CiteSeer");
  EXPECT_EQ(s.num_vertices, 3327);
  EXPECT_EQ(s.num_edges, 9104);
  EXPECT_EQ(s.self_loops, 0);
  EXPECT_EQ(s.feature_dim, 3703);
  EXPECT_EQ(s.feature_nonzeros, 105165);
  EXPECT_EQ(s.num_classes, 6);
  EXPECT_EQ(s.class_counts, (std::vector<int64_t>{249, 590, 668, 701, 596, 508}));
  EXPECT_EQ(s.unlabeled, 15);         // the test ids missing from test.index
  EXPECT_EQ(s.isolated_vertices, 48);  // no neighbor other than itself
  EXPECT_EQ(s.split_counts[1], 120);
  EXPECT_EQ(s.split_counts[2], 500);
  EXPECT_EQ(s.split_counts[3], 1000);
}

TEST(ConvertReal, FacebookPagePage) {
  if (!std::filesystem::exists(raw_dir("facebook") + "/facebook_edges.csv"))
    GTEST_SKIP() << "Facebook not found under " << test::datasets_dir() << " (set HT_DATASETS)";
  test::TempDir dir;
  ConvertOptions o;
  o.format = InputFormat::facebook;
  o.input = raw_dir("facebook");
  const GraphStats s = convert(o, dir, "Facebook");
  EXPECT_EQ(s.num_vertices, 22470);
  EXPECT_EQ(s.num_edges, 2 * 170823);  // 171,002 rows less 179 self-loops, both directions
  EXPECT_EQ(s.feature_dim, 4714);
  EXPECT_EQ(s.feature_nonzeros, 314583);
  EXPECT_EQ(s.num_classes, 4);  // company, government, politician, tvshow
  EXPECT_EQ(s.class_counts, (std::vector<int64_t>{6495, 6880, 5768, 3327}));
  // Default stratified split 0.1 / 0.1: round(0.1 * n_c) per class.
  int64_t per_class = 0;
  for (int64_t n : s.class_counts) per_class += std::llround(0.1 * static_cast<double>(n));
  EXPECT_EQ(s.split_counts[1], per_class);
  EXPECT_EQ(s.split_counts[2], per_class);
  EXPECT_EQ(s.split_counts[3], 22470 - 2 * per_class);
}

TEST(ConvertReal, HeterophilousNpz) {
  const std::string dir_npz = test::datasets_dir() + "/heterophilous/raw";
  if (!std::filesystem::exists(dir_npz + "/chameleon.npz"))
    GTEST_SKIP() << "heterophilous npz not found under " << test::datasets_dir() << " (set HT_DATASETS)";
  setenv("HT_PYTHON", "/nonexistent/python", 1);  // no Python needed
  struct Case {
    const char* file;
    int64_t n, f, classes, train, val, test;
  };
  // The dataset README's table (split 0).
  for (const Case& c : {Case{"chameleon", 2277, 2325, 5, 1092, 729, 456}, Case{"texas_4_classes", 183, 1703, 5, 87, 58, 37},
                        Case{"minesweeper", 10000, 7, 2, 5000, 2500, 2500}}) {
    SCOPED_TRACE(c.file);
    test::TempDir dir;
    ConvertOptions o;
    o.format = InputFormat::npz;
    o.input = dir_npz + "/" + c.file + ".npz";
    const GraphStats s = convert(o, dir, c.file);
    EXPECT_EQ(s.num_vertices, c.n);
    EXPECT_EQ(s.feature_dim, c.f);
    EXPECT_EQ(s.num_classes, c.classes);
    EXPECT_EQ(s.split_counts[1], c.train);
    EXPECT_EQ(s.split_counts[2], c.val);
    EXPECT_EQ(s.split_counts[3], c.test);
  }
  unsetenv("HT_PYTHON");
}

}  // namespace
}  // namespace ht::data
