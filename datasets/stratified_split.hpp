#pragma once
// Seeded stratified random split: within each class, the vertices are
// shuffled (Fisher-Yates driven by ht::rng::Stream(seed, class)); the first
// round(train * n_c) become train, the next round(val * n_c) validation, the
// rest test. Unlabeled vertices (-1) get no split. Deterministic for a seed.
#include <cstdint>
#include <span>
#include <vector>

namespace ht::data {

// Throws an option error unless both fractions are >= 0 with a sum <= 1.
void check_split_fractions(double train_fraction, double val_fraction);

std::vector<uint8_t> stratified_split(std::span<const int32_t> labels, int32_t num_classes, double train_fraction,
                                      double val_fraction, uint64_t seed);

}  // namespace ht::data
