#include "datasets/stratified_split.hpp"

#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "graph/types.hpp"

namespace ht::data {

void check_split_fractions(double train_fraction, double val_fraction) {
  if (!(train_fraction >= 0 && val_fraction >= 0 && train_fraction + val_fraction <= 1))
    throw option_error("--train-fraction/--val-fraction",
                       fmt::format("fractions {} and {} must be >= 0 with a sum <= 1", train_fraction, val_fraction));
}

std::vector<uint8_t> stratified_split(std::span<const int32_t> labels, int32_t num_classes, double train_fraction,
                                      double val_fraction, uint64_t seed) {
  check_split_fractions(train_fraction, val_fraction);
  std::vector<std::vector<int64_t>> members(num_classes);
  for (size_t v = 0; v < labels.size(); ++v)
    if (labels[v] >= 0 && labels[v] < num_classes) members[labels[v]].push_back(static_cast<int64_t>(v));
  std::vector<uint8_t> split(labels.size(), static_cast<uint8_t>(Split::none));
  for (int32_t c = 0; c < num_classes; ++c) {
    auto& m = members[c];
    rng::Stream rng(seed, static_cast<uint64_t>(c));
    for (size_t i = m.size(); i > 1; --i) std::swap(m[i - 1], m[rng.below(i)]);
    const size_t n = m.size();
    const size_t n_train = static_cast<size_t>(std::llround(train_fraction * static_cast<double>(n)));
    const size_t n_val = std::min(n - n_train, static_cast<size_t>(std::llround(val_fraction * static_cast<double>(n))));
    for (size_t i = 0; i < n; ++i)
      split[m[i]] = static_cast<uint8_t>(i < n_train ? Split::train : i < n_train + n_val ? Split::val : Split::test);
  }
  return split;
}

}  // namespace ht::data
