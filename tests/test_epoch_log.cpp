// ht-train's per-epoch lines (train/epoch_log.hpp): which evaluated epochs
// are printed at the default verbosity, the "epoch i/N" prefix and the time
// left from the medians so far.
#include <gtest/gtest.h>

#include <vector>

#include "train/epoch_log.hpp"

namespace ht {
namespace {

std::vector<int> shown_epochs(const EpochLog& log, int first, int epochs, int eval_every) {
  std::vector<int> out;
  for (int e = first; e < epochs; ++e) {
    const bool evaluated = (e + 1) % eval_every == 0 || e + 1 == epochs;
    if (evaluated && log.shown(e, false)) out.push_back(e);
  }
  return out;
}

TEST(EpochLog, AtMostTwentyLinesPlusFirstAndLast) {
  const EpochLog log(0, 200, 1, false);
  EXPECT_EQ(log.stride(), 10);
  const std::vector<int> shown = shown_epochs(log, 0, 200, 1);
  ASSERT_EQ(shown.size(), 21u);  // epoch 0, then 9, 19, ..., 199
  EXPECT_EQ(shown.front(), 0);
  EXPECT_EQ(shown[1], 9);
  EXPECT_EQ(shown.back(), 199);
}

TEST(EpochLog, ShortRunsPrintEveryEvaluation) {
  const EpochLog log(0, 20, 1, false);
  EXPECT_EQ(shown_epochs(log, 0, 20, 1).size(), 20u);
  const EpochLog odd(0, 7, 3, false);  // evaluated: 2, 5 and the last, 6
  EXPECT_EQ(shown_epochs(odd, 0, 7, 3), (std::vector<int>{2, 5, 6}));
}

TEST(EpochLog, StrideIsAMultipleOfEvalEvery) {
  const EpochLog log(0, 1000, 7, false);  // 143 evaluations: every 8th, 56 epochs apart
  EXPECT_EQ(log.stride() % 7, 0);
  const std::vector<int> shown = shown_epochs(log, 0, 1000, 7);
  EXPECT_LE(shown.size(), 22u);
  EXPECT_EQ(shown.front(), 6);   // the first evaluation
  EXPECT_EQ(shown.back(), 999);  // the last epoch
}

TEST(EpochLog, ResumedRunCountsFromItsFirstEpoch) {
  const EpochLog log(150, 200, 1, false);  // 50 evaluations left: every 3rd
  const std::vector<int> shown = shown_epochs(log, 150, 200, 1);
  EXPECT_EQ(shown.front(), 150);
  EXPECT_EQ(shown.back(), 199);
  EXPECT_LE(shown.size(), 22u);
}

TEST(EpochLog, AllAndLastAreShown) {
  const EpochLog all(0, 200, 1, true);
  EXPECT_EQ(shown_epochs(all, 0, 200, 1).size(), 200u);
  const EpochLog log(0, 200, 1, false);
  EXPECT_FALSE(log.shown(54, false));
  EXPECT_TRUE(log.shown(54, true));  // an early stop after epoch 54
}

TEST(EpochLog, TimeLeftFromMedians) {
  EpochLog log(0, 10, 2, false);
  log.add(1.0, 0.0, false);   // epoch 0: 1 s
  log.add(1.5, 0.5, true);    // epoch 1: 1 s training, 0.5 s evaluation
  log.add(9.0, 0.0, false);   // epoch 2: an outlier the median ignores
  log.add(1.5, 0.5, true);    // epoch 3
  // After epoch 3: 6 epochs left at 1 s, evaluations after epochs 5, 7, 9 at 0.5 s.
  EXPECT_DOUBLE_EQ(log.seconds_left(3), 6 * 1.0 + 3 * 0.5);
  EXPECT_DOUBLE_EQ(log.seconds_left(9), 0.0);
}

TEST(EpochLog, PrefixAndDurations) {
  const EpochLog log(0, 200, 1, false);
  EXPECT_EQ(log.prefix(7), "epoch   7/200 | ");
  EXPECT_EQ(log.prefix(155), "epoch 155/200 | ");
  EXPECT_EQ(duration_text(0.44), "0.4 s");
  EXPECT_EQ(duration_text(12.4), "12 s");
  EXPECT_EQ(duration_text(185), "3 min 05 s");
  EXPECT_EQ(duration_text(7625), "2 h 07 min");
  EXPECT_EQ(duration_text(-1), "0.0 s");
}

}  // namespace
}  // namespace ht
