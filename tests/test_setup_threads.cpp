// ht-train's setup threads by graph size (train/setup_threads.hpp): small
// graphs on many cores take a few, large ones all; the count is given back.
#include <omp.h>

#include <gtest/gtest.h>

#include "train/setup_threads.hpp"

namespace ht {
namespace {

TEST(SetupThreads, OnePer8MEdgesWithinFourAndAll) {
  EXPECT_EQ(setup_thread_count(121774100, 64), 15);   // community in memory on a 64-core host
  EXPECT_EQ(setup_thread_count(123718280, 64), 15);   // products-like
  EXPECT_EQ(setup_thread_count(2500000000, 64), 64);  // friendster-like: every core
  EXPECT_EQ(setup_thread_count(121774100, 16), 15);
  EXPECT_EQ(setup_thread_count(1000, 64), 4);  // at least four
  EXPECT_EQ(setup_thread_count(1000, 2), 2);   // (or what there is)
  EXPECT_EQ(setup_thread_count(0, 1), 1);
  EXPECT_EQ(setup_thread_count(kEdgesPerSetupThread * 10 + 1, 64), 11);
}

TEST(SetupThreads, CapsThisThreadAndGivesTheCountBack) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(32);
  {
    SetupThreads s(kEdgesPerSetupThread * 6);
    EXPECT_EQ(s.threads(), 6);
    EXPECT_EQ(omp_get_max_threads(), 6);
    s.restore();
    EXPECT_EQ(omp_get_max_threads(), 32);
    omp_set_num_threads(7);  // (restored once: the destructor leaves this alone)
  }
  EXPECT_EQ(omp_get_max_threads(), 7);
  {
    SetupThreads s(kEdgesPerSetupThread * 6);
    EXPECT_EQ(omp_get_max_threads(), 6);
  }
  EXPECT_EQ(omp_get_max_threads(), 7);  // the destructor gives it back
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace ht
